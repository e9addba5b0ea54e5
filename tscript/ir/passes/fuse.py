"""Fusion grouping: maximal groups of elementwise ops (with broadcasting) become one
`tscript::FusionGroup` node holding the group as a subgraph (attribute `subgraph`), so the code
generator emits one loop over the group's output instead of one pass over memory per op.

A node joins the group of its consumer when it is lowerable (a row in codegen's LOWERINGS), its
output is used only inside the group, its shape broadcasts into the group's output, and nothing
it reads is mutated in place anywhere (moving it would then be unsafe). Guarantee: the executor
gives the same results before and after (a group can always be run by interpreting its subgraph).
"""
from __future__ import annotations

from ..graph import Block, Graph, Node, Value, clone_node
from ..types import ScalarType, TensorType
from .constant_propagation import constant_value
from .effects import mutated_values

SUPPORTED_DTYPES = {"float32", "float64", "int64", "int32", "bool"}
GROUP = "tscript::FusionGroup"


def _lowerings():
    from ...codegen.elementwise import LOWERINGS  # the codegen's table decides what can fuse
    return LOWERINGS


def _known_tensor(v: Value) -> bool:
    t = v.type
    return isinstance(t, TensorType) and t.dtype is not None and t.shape is not None and t.dtype.name in SUPPORTED_DTYPES


def fusible(graph: Graph, node: Node, mutable: set) -> bool:
    """Can `node` be computed inside a fusion group?"""
    low = _lowerings().get(node.kind)
    if low is None or len(node.outputs) != 1 or not _known_tensor(node.output):
        return False
    if any(v in mutable for v in node.inputs):
        return False
    for v in node.inputs[:low.n_values]:
        if not (_known_tensor(v) or isinstance(v.type, ScalarType) and v.type.name in ("int", "float", "bool")
                or constant_value(graph, v)[0] and not isinstance(v.type, TensorType)):
            return False
    attrs = []
    for v in node.inputs:
        ok, value = constant_value(graph, v)
        attrs.append(value if ok else _NOT_CONSTANT)
    if any(a is _NOT_CONSTANT for a in attrs[low.n_values:]):
        return False
    return low.accepts is None or low.accepts(attrs)


_NOT_CONSTANT = object()


def _broadcasts_into(shape, target) -> bool:
    if len(shape) > len(target):
        return False
    return all(s == 1 or s == t for s, t in zip(reversed(shape), reversed(target)))


def fuse(graph: Graph) -> bool:
    """Form fusion groups in every block; True if any group was made."""
    mutable = mutated_values(graph)
    return _block(graph, graph.block, mutable)


def _block(graph: Graph, block: Block, mutable: set) -> bool:
    changed = False
    grouped: set = set()
    for node in list(block.reversed_nodes()):
        for b in node.blocks:
            changed |= _block(graph, b, mutable)
        if node in grouped or node.owner is None or not fusible(graph, node, mutable):
            continue
        members = _grow(graph, node, block, mutable, grouped)
        _make_group(graph, node, members)
        changed = True
    return changed


def _grow(graph: Graph, anchor: Node, block: Block, mutable: set, grouped: set) -> list[Node]:
    """The anchor plus the producers that can join it (in original order)."""
    members = {anchor}
    shape = anchor.output.type.shape
    work = list(anchor.inputs)
    while work:
        v = work.pop()
        p = v.node
        if p is None or p in members or p in grouped or p.owner is not block or p.kind == "prim::Constant":
            continue
        if not fusible(graph, p, mutable) or not _broadcasts_into(p.output.type.shape, shape):
            continue
        if any(u.node not in members for u in p.output.uses):
            continue
        members.add(p)
        work.extend(p.inputs)
    grouped.update(members)
    return [n for n in block.nodes if n in members]


def _make_group(graph: Graph, anchor: Node, members: list[Node]) -> Node:
    sub = Graph()
    value_map: dict = {}
    inputs: list[Value] = []
    member_set = set(members)
    for n in members:
        for v in n.inputs:
            if v in value_map or (v.node is not None and v.node in member_set):
                continue
            ok, value = constant_value(graph, v)
            if ok and not isinstance(v.type, TensorType):
                value_map[v] = sub.constant(value)  # scalar constants live inside the group
            else:
                value_map[v] = sub.add_input(v.type, v.name)
                inputs.append(v)
    for n in members:
        clone_node(n, sub.block, value_map)
    sub.add_output(value_map[anchor.output])
    with graph.inserting_before(anchor):
        group = graph.insert(GROUP, inputs, 1, {"subgraph": sub}, [anchor.output.type])
    group.source, group.scope = anchor.source, anchor.scope
    anchor.output.replace_all_uses_with(group.output)
    for n in reversed(members):
        n.destroy()
    return group
