"""Inlining: every `prim::CallMethod` / `prim::CallFunction` node that carries its callee graph (and
every traced `autograd.Function` call: a `prim::PythonOp` with a callee) is replaced by a copy of that
graph's nodes, wired to the call's inputs. Afterwards the graph holds no calls (guarantee), so it
can be saved and executed on its own. Calls are inlined in program order
and copied values with numeric names get fresh numbers, so the result reads top-down like a graph
recorded flat (`%weight.1`, `%bias.1` keep their names)."""
from __future__ import annotations

from ..graph import Block, Graph, Node, clone_node

CALLS = ("prim::CallMethod", "prim::CallFunction", "prim::PythonOp")


def inline_calls(graph: Graph, keep: tuple = ()) -> bool:
    """Inline all calls in `graph` (in place, nested calls too) except those of the kinds in `keep`;
    True if there were any."""
    copies: list[Node] = []
    changed = _inline_block(graph.block, copies, keep)
    _renumber(graph, {id(m) for n in copies if n.owner is not None for m in _with_nested(n)})
    return changed


def _inline_block(block: Block, copies: list, keep: tuple) -> bool:
    changed, node = False, block.first
    while node is not None:
        if node.kind in CALLS and node.kind not in keep and hasattr(node, "callee"):
            node, changed = _inline_one(node, copies), True  # go on with the copies: they may call too
            continue
        for b in node.blocks:
            changed = _inline_block(b, copies, keep) or changed
        node = node.next
    return changed


def _with_nested(node: Node) -> list[Node]:
    return [node] + [m for b in node.blocks for n in b.nodes for m in _with_nested(n)]


def _inline_one(call: Node, copies: list) -> Node | None:
    """Replace one call by its callee's nodes; returns the first copy (or the node after the call)."""
    callee: Graph = call.callee
    value_map = dict(zip(callee.inputs, call.inputs))
    block, first = call.owner, None
    for n in callee.nodes:
        new = clone_node(n, block, value_map)
        new.move_before(call)
        copies.append(new)
        first = first or new
    for out, ret in zip(call.outputs, callee.outputs):
        out.replace_all_uses_with(value_map.get(ret, ret))
    after = call.next
    call.destroy()
    for name, t in callee.constants.items():
        assert call.graph.constants.setdefault(name, t) is t, f"tensor constant name {name} clashes"
    return first or after


def _renumber(graph: Graph, copies: set) -> None:
    """Fresh numbers, in program order, for the copied values that only had a number as a name
    (`%3` in the callee); named values (`%weight.1`) keep theirs."""
    values = [v for n in graph.all_nodes() if id(n) in copies
              for v in n.outputs + [p for b in n.blocks for p in b.params] if v.name.split(".")[0].isdigit()]
    for v in values:  # release all first, so the numbers can start low
        graph.release_name(v.name)
    for v in values:
        v.name = graph.unique_name(None)
