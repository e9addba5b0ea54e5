"""Inlining: every `prim::CallMethod` / `prim::CallFunction` node that carries its callee graph is
replaced by a copy of that graph's nodes, wired to the call's inputs. Afterwards the graph holds no
calls (guarantee), so it can be saved and executed on its own."""
from __future__ import annotations

from ..graph import Graph, Node, clone_node

CALLS = ("prim::CallMethod", "prim::CallFunction")


def inline_calls(graph: Graph) -> Graph:
    """Inline all calls in `graph` (in place, nested calls too); returns the graph."""
    work = [n for n in graph.all_nodes() if n.kind in CALLS and hasattr(n, "callee")]
    while work:
        node = work.pop()
        work.extend(_inline_one(node))
    return graph


def _inline_one(call: Node) -> list[Node]:
    """Replace one call by its callee's nodes; returns the calls found among the copies."""
    callee: Graph = call.callee
    value_map = dict(zip(callee.inputs, call.inputs))
    block, copies = call.owner, []
    for n in callee.nodes:
        new = clone_node(n, block, value_map)
        new.move_before(call)
        copies.append(new)
    for out, ret in zip(call.outputs, callee.outputs):
        out.replace_all_uses_with(value_map.get(ret, ret))
    call.destroy()
    for name, t in callee.constants.items():
        assert call.graph.constants.setdefault(name, t) is t, f"tensor constant name {name} clashes"
    nested = []
    for n in copies:
        stack = [n]
        while stack:
            m = stack.pop()
            if m.kind in CALLS and hasattr(m, "callee"):
                nested.append(m)
            stack.extend(x for b in m.blocks for x in b.nodes)
    return nested
