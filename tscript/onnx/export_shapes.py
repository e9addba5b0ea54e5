"""Shapes for export: the exporter needs the static sizes of the optimized graph (to split a tensor
into pieces, to count what a variance averages over, to fold `aten::size` of a fixed dim), also when
some input dims are symbolic (dynamic_axes).

The pass pipeline's shape propagation is extended here in two ways: the pieces a `split`/`chunk`/
`unbind` list is unpacked into get their shapes, and where the op rules cannot follow a symbolic
size (a reshape to -1 of a dynamic dim, say) the graph is probed: its shapes are propagated with
the dynamic dims at the example's sizes and at other sizes: a dim that comes out the same in both
is taken as fixed, one that follows a dynamic dim gets its symbol, any other stays unknown.
"""
from __future__ import annotations

from tscript_runtime.ops import OPS, TensorMeta

from ..ir.graph import Graph
from ..ir.passes.constant_propagation import constant_value, propagate_constants
from ..ir.passes.shape_propagation import fold_static_sizes, propagate_shapes
from ..ir.types import TensorType, tensor_type

_MAX_ROUNDS = 16


def propagate_shapes_through_lists(graph: Graph) -> bool:
    """Shape propagation, plus the shapes of the pieces a `split`/`chunk`/`unbind` list is unpacked
    into (which the pass leaves as they are), repeated until no type changes."""
    changed = False
    for _ in range(_MAX_ROUNDS):
        if not (propagate_shapes(graph) | _unpacked_shapes(graph)):
            break
        changed = True
    return changed


def _unpacked_shapes(graph: Graph) -> bool:
    changed = False
    for node in graph.all_nodes():
        source = node.inputs[0].node if node.kind == "prim::ListUnpack" else None
        op = OPS.get(source.kind) if source is not None else None
        if op is None or op.shape is None:
            continue
        args = [_meta(graph, v) for v in source.inputs]
        if any(a is _UNKNOWN for a in args):
            continue
        try:
            shapes, dtype = op.shape(*args), op.dtype(*args)
        except Exception:  # symbolic sizes the rule cannot reason about: leave the types
            continue
        if len(shapes) != len(node.outputs):
            continue
        for out, shape in zip(node.outputs, shapes):
            new = tensor_type(dtype, shape)
            if isinstance(out.type, TensorType) and new != out.type:
                out.type, changed = new, True
    return changed


_UNKNOWN = object()


def _meta(graph: Graph, v):
    """What a shape rule takes for `v`: a TensorMeta for a tensor of known shape, a constant's value."""
    if isinstance(v.type, TensorType):
        t = v.type
        return _UNKNOWN if t.dtype is None or t.shape is None or None in t.shape else TensorMeta(t.shape, t.dtype)
    ok, value = constant_value(graph, v)
    return value if ok else _UNKNOWN


def settle_shapes(graph: Graph) -> bool:
    """Shapes, static sizes made constants, constants folded, again until nothing changes: a size
    folded late (e.g. read from a piece of a split) makes more shapes known."""
    changed = False
    for _ in range(_MAX_ROUNDS):
        step = propagate_shapes_through_lists(graph)
        step |= fold_static_sizes(graph)
        step |= propagate_constants(graph)
        if not step:
            break
        changed = True
    return changed



def forget_shapes(graph: Graph) -> None:
    """Every node output's dims unknown (ranks kept; constants keep theirs), for propagation to
    derive them again."""
    for node in graph.all_nodes():
        for v in node.outputs if node.kind != "prim::Constant" else ():
            if isinstance(v.type, TensorType) and v.type.shape is not None:
                v.type = tensor_type(v.type.dtype, (None,) * len(v.type.shape))


def fill_from_probes(graph: Graph, inputs: list, examples: list[tuple], dynamic: dict) -> bool:
    """Unknown dims of node outputs that come out equal when the graph's shapes are propagated at two
    sizes of every dynamic dim (the example's, and another) become those sizes, and those that follow
    one dynamic dim its symbol; True if any did.
    `inputs`: the graph's tensor inputs, `examples`: their example shapes, `dynamic`: {index: dims}."""
    probes = [_probe(graph, inputs, examples, dynamic, other) for other in (False, True)]
    symbols = _symbols_by_sizes(examples, dynamic)
    changed = False
    for node in graph.all_nodes():
        for v in node.outputs:
            t = v.type
            if not isinstance(t, TensorType) or t.shape is None or None not in t.shape:
                continue
            a, b = probes[0].get(v.name), probes[1].get(v.name)
            if a is None or b is None or len(a) != len(t.shape) or len(b) != len(t.shape):
                continue
            dims = tuple(s if s is not None else x if x == y else symbols.get((x, y)) for s, x, y in zip(t.shape, a, b))
            if dims != t.shape:
                v.type, changed = tensor_type(t.dtype, dims), True
    return changed


def _symbols_by_sizes(examples: list[tuple], dynamic: dict) -> dict:
    """{(example size, other size): symbol} of the dynamic dims (pairs two symbols share left out)."""
    found: dict = {}
    for i, dims in dynamic.items():
        for d, symbol in dims.items():
            size = examples[i][d]
            key = (size, _other_size(size))
            found[key] = symbol if found.get(key, symbol) == symbol else None
    return {k: v for k, v in found.items() if v is not None}


def _other_size(size: int) -> int:
    """The probe's second size of a dynamic dim: one less, as a model may not take more (a sequence
    longer than its position table); one more for sizes 1 and 2, which broadcast or pair."""
    return size + 1 if size <= 2 else size - 1


def _probe(graph: Graph, inputs: list, examples: list[tuple], dynamic: dict, other: bool) -> dict:
    """{value name: shape} of the node outputs whose shapes propagate with every dynamic dim at its
    example size, or with `other` at `_other_size`."""
    g = graph.copy()
    index = {v.name: i for i, v in enumerate(inputs)}
    for v in g.inputs:
        i = index.get(v.name)
        if i is not None:
            shape = [_other_size(s) if other and d in dynamic.get(i, {}) else s for d, s in enumerate(examples[i])]
            v.type = tensor_type(v.type.dtype, shape)
    forget_shapes(g)
    propagate_shapes_through_lists(g)
    return {v.name: v.type.shape for n in g.all_nodes() for v in n.outputs
            if isinstance(v.type, TensorType) and v.type.shape is not None and None not in v.type.shape}
