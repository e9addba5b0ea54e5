"""What passes need to know about a node beyond its inputs and outputs, derived from the op table
(never from per-op special cases): does it write memory, draw random numbers, raise, or alias."""
from __future__ import annotations

from tscript_runtime.ops import OPS

from ..graph import Graph, Node, Value

_EFFECT_PRIMS = {"prim::RaiseException", "prim::CallMethod", "prim::CallFunction", "prim::Print"}
_PURE_PRIMS = {"prim::Constant", "prim::GetAttr", "prim::ListConstruct", "prim::TupleConstruct",
               "prim::DictConstruct", "prim::ListUnpack", "prim::TupleUnpack", "prim::TupleIndex",
               "aten::__getitem__", "aten::len", "aten::dim", "prim::dtype", "prim::unchecked_cast"}


def is_random(node: Node) -> bool:
    """Does the op draw from a random generator (so two calls differ and removing one shifts the stream)?"""
    op = OPS.get(node.kind)
    return op is not None and any(a.base_type == "Generator" for a in op.schema.args)


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


def view_source(node: Node) -> Value | None:
    """The input that the node's (single) output is a view of, if any (`Tensor(a)` in the schema)."""
    op = OPS.get(node.kind)
    if op is None or op.out_alias is None or op.mutates is not None:
        return None
    return node.inputs[op.out_alias]


def mutated_values(graph: Graph) -> set:
    """Every value that an in-place op may change: written values and all their view relatives."""
    written = set()
    for n in graph.all_nodes():
        op = OPS.get(n.kind)
        if op is not None and op.mutates is not None:
            written.add(n.inputs[op.mutates])
    return alias_closure(graph, written)


def alias_closure(graph: Graph, values: set) -> set:
    """`values` plus everything that shares memory with them through view ops (both directions)."""
    parent: dict = {}
    for n in graph.all_nodes():
        src = view_source(n)
        if src is not None:
            parent[n.output] = src
        if writes_memory(n):  # an in-place op returns its input
            parent[n.output] = n.inputs[OPS[n.kind].mutates]

    def root(v):
        while v in parent:
            v = parent[v]
        return v
    roots = {root(v) for v in values}
    everything = {v for n in graph.all_nodes() for v in n.outputs} | set(graph.inputs)
    return {v for v in everything if root(v) in roots}
