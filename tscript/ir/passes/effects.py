"""What passes need to know about a node beyond its inputs and outputs, derived from the op table
(never from per-op special cases): does it write memory, draw random numbers, raise, or alias."""
from __future__ import annotations

from typing import Callable

from tscript_runtime.ops import OPS

from ..graph import Graph, Node, Value
from ..types import ScalarType

_EFFECT_PRIMS = {"prim::RaiseException", "prim::CallMethod", "prim::CallFunction", "prim::Print", "prim::PythonOp",
                 "aten::warn"}
_PURE_PRIMS = {"prim::Constant", "prim::GetAttr", "prim::ListConstruct", "prim::TupleConstruct",
               "prim::DictConstruct", "prim::ListUnpack", "prim::TupleUnpack", "prim::TupleIndex",
               "aten::__getitem__", "aten::len", "aten::dim", "prim::dtype", "prim::unchecked_cast",
               "prim::requires_grad"}


_CONTAINER_PRIMS = {"prim::ListConstruct", "prim::TupleConstruct", "prim::DictConstruct", "prim::ListUnpack",
                    "prim::TupleUnpack", "prim::TupleIndex", "aten::__getitem__", "prim::unchecked_cast"}


_RANDOM: dict[str, bool] = {}  # op name -> is_random (a cache: the schema says it once per op)


def is_random(node: Node) -> bool:
    """Does the op draw from a random generator (so two calls differ and removing one shifts the stream)?"""
    random = _RANDOM.get(node.kind)
    if random is None:
        op = OPS.get(node.kind)
        if op is None:
            return False
        random = _RANDOM[node.kind] = any(a.base_type == "Generator" for a in op.schema.args)
    return random


_EMPTIES = {"aten::empty", "aten::empty_like"}


def writes_memory(node: Node) -> bool:
    op = OPS.get(node.kind)
    return op is not None and op.mutates is not None


def has_side_effects(node: Node) -> bool:
    """Must the node stay even when its outputs are unused?"""
    if node.kind in _EFFECT_PRIMS or writes_memory(node) or is_random(node):
        return True
    return any(has_side_effects(n) for b in node.blocks for n in b.nodes)


def is_pure(node: Node) -> bool:
    """Same inputs -> same outputs, no effects, no nested blocks: safe to fold, dedupe or move."""
    if node.blocks or has_side_effects(node):
        return False
    return node.kind in OPS or node.kind in _PURE_PRIMS


def fresh_result(node: Node) -> bool:
    """Is the node an op that reads its inputs' values only: its result is new memory, neither a
    view of an input nor an input written in place (so it keeps no alias to what it read)?"""
    op = OPS.get(node.kind)
    return op is not None and op.out_alias is None and op.mutates is None


def view_source(node: Node) -> Value | None:
    """The input that the node's (single) output is a view of, if any (`Tensor(a)` in the schema)."""
    op = OPS.get(node.kind)
    if op is None or op.out_alias is None or op.mutates is not None:
        return None
    return node.inputs[op.out_alias]


def mutated_values(graph: Graph, initial_fills: bool = True) -> set:
    """Every value that an in-place op may change: written values and all their view relatives
    (empty at the cost of one walk when nothing is written in place, the usual case). Without
    `initial_fills`, filling a fresh `torch.empty` tensor that nothing else reads (`empty(...).uniform_()`)
    does not count: it only gives the tensor its first contents (for passes that move readers; passes
    that merge or drop nodes must count it, or two such tensors would become one)."""
    written = {n.inputs[OPS[n.kind].mutates] for n in graph.all_nodes()
               if writes_memory(n) and (initial_fills or not _initializes(n))}
    return alias_closure(graph, written) if written else set()


def _initializes(node: Node) -> bool:
    """Does the in-place `node` write the first contents of a fresh empty tensor read by nothing else?"""
    target = node.inputs[OPS[node.kind].mutates]
    return target.node is not None and target.node.kind in _EMPTIES and len(target.uses) == 1 and \
        OPS[node.kind].mutates == 0


def alias_closure(graph: Graph, values: set) -> set:
    """`values` plus everything that may share memory with them (see `alias_groups`)."""
    group = alias_groups(graph)
    everything = set(graph.inputs)
    for n in graph.all_nodes():
        everything.update(n.outputs)
        for b in n.blocks:
            everything.update(b.params)
    wanted = {group(v) for v in values}
    return {v for v in everything if group(v) in wanted}


def alias_groups(graph: Graph) -> Callable[[Value], Value]:
    """A function mapping each value to a representative shared by every value that may share
    memory with it: through view ops and in-place ops (both directions), lists and tuples holding
    tensors, and control flow (an If's outputs and its blocks' returns; a Loop's carried inputs,
    body parameters, body returns and outputs). Union-find: near-linear in the graph size."""
    parent: dict = {}

    def find(v):
        root = v
        while root in parent:
            root = parent[root]
        while v is not root:  # path compression
            parent[v], v = root, parent[v]
        return root

    for n in graph.all_nodes():
        for a, b in _alias_pairs(n):
            ra, rb = find(a), find(b)
            if ra is not rb:
                parent[ra] = rb
    return find


def _alias_pairs(node: Node):
    """Pairs of values that may share memory because of this node."""
    src = view_source(node)
    if src is not None:
        yield node.output, src
    op = OPS.get(node.kind)
    if op is not None and op.mutates is not None:  # an in-place op returns its input
        yield node.output, node.inputs[op.mutates]
    if node.kind in _CONTAINER_PRIMS:  # a list holds (and hands out) the tensors themselves
        values = [v for v in node.inputs + node.outputs if not isinstance(v.type, ScalarType)]
        yield from zip(values, values[1:])
    elif node.kind == "prim::If":
        for b in node.blocks:
            yield from zip(node.outputs, b.returns)
    elif node.kind == "prim::Loop":
        (body,) = node.blocks
        yield from zip(node.inputs[2:], body.params[1:])
        yield from zip(body.params[1:], body.returns[1:])
        yield from zip(node.outputs, body.returns[1:])
