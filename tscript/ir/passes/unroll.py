"""Loop unrolling: a `prim::Loop` that runs a constant number of times (constant max trip count,
constant true initial condition, body condition a constant true: a `for i in range(n)` loop) is
replaced by `n` copies of its body, each reading the iteration number as a constant and the
previous copy's loop-carried values. Inner loops are unrolled before the loops around them.

Guarantees: the same values for every input (the body runs the same ops in the same order);
a loop is only unrolled when trip count x body size <= `MAX_UNROLLED_NODES`, so the graph grows
by a bounded amount per loop; other loops are left as they are.
"""
from __future__ import annotations

from ..graph import Block, Graph, Node, clone_node
from .constant_propagation import constant_value

MAX_UNROLLED_NODES = 512  # trip count x nodes in the body (nested nodes included)


def unroll_loops(graph: Graph) -> bool:
    """Unroll every small constant-trip-count loop in place; True if any was unrolled."""
    return _block(graph, graph.block)


def _block(graph: Graph, block: Block) -> bool:
    changed = False
    for node in list(block.nodes):
        for b in node.blocks:
            changed |= _block(graph, b)
        if node.kind == "prim::Loop":
            trips = _trip_count(graph, node)
            if trips is not None and trips * _size(node.blocks[0]) <= MAX_UNROLLED_NODES:
                _unroll(graph, node, trips)
                changed = True
    return changed


def _trip_count(graph: Graph, loop: Node) -> int | None:
    """The loop's exact number of iterations, or None when it is not known at compile time."""
    (ok_n, n), (ok_c, cond) = constant_value(graph, loop.inputs[0]), constant_value(graph, loop.inputs[1])
    body_ok, body_cond = constant_value(graph, loop.blocks[0].returns[0])
    if not (ok_n and ok_c and body_ok) or cond is not True or body_cond is not True:
        return None
    return max(n, 0) if isinstance(n, int) and not isinstance(n, bool) else None


def _size(block: Block) -> int:
    return sum(1 + sum(_size(b) for b in n.blocks) for n in block.nodes)


def _unroll(graph: Graph, loop: Node, trips: int) -> None:
    body = loop.blocks[0]
    counter, params = body.params[0], body.params[1:]
    carried = list(loop.inputs[2:])
    for i in range(trips):
        with graph.inserting_before(loop):
            value_map = {counter: graph.constant(i)}
        value_map.update(zip(params, carried))
        for n in body.nodes:
            copy = clone_node(n, loop.owner, value_map)
            copy.move_before(loop)
            for v in copy.outputs:
                if v.name.split(".")[0].isdigit():  # numbered values get fresh numbers, not `%3.1`
                    v.rename(None)
        carried = [value_map.get(r, r) for r in body.returns[1:]]
    for out, value in zip(loop.outputs, carried):
        out.replace_all_uses_with(value)
    loop.destroy()
