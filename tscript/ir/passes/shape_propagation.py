"""Shape and dtype propagation: output types computed from input types with the op library's
shape/dtype rules (the same functions eager uses to explain errors), so dumps read
`Float(batch, 10)`. Sizes read with aten::size and simple int arithmetic are tracked as ints or
symbols. Guarantee: a type is only ever made more precise; unknown stays unknown (never guessed)."""
from __future__ import annotations

from tscript_runtime.ops import OPS, TensorMeta

from ..graph import Graph, Node, Value
from ..types import TensorType, TupleType, tensor_type
from .constant_propagation import constant_value

_UNKNOWN = object()


def mark_dynamic(graph: Graph, dynamic: dict) -> None:
    """Make dims of graph inputs symbolic: {input index: [dims]}; dim 0 becomes "batch"."""
    tensor_inputs = [v for v in graph.inputs if isinstance(v.type, TensorType)]
    for index, dims in dynamic.items():
        if not isinstance(index, int) or not 0 <= index < len(tensor_inputs):
            raise ValueError(f"dynamic: no tensor input {index!r} (the graph has {len(tensor_inputs)})")
        v = tensor_inputs[index]
        if v.type.shape is None:
            raise ValueError(f"dynamic: the shape of tensor input {index} ('{v.name}') is unknown; give example "
                             f"inputs of the shapes to compile for")
        shape = list(v.type.shape)
        for d in dims:
            shape[d] = "batch" if d == 0 else f"{v.name.split('.')[0]}_{d}"
        v.type = tensor_type(v.type.dtype, shape)


def fold_static_sizes(graph: Graph) -> bool:
    """`aten::size(x, d)` of a dim whose size is a known int becomes that constant."""
    changed = False
    for node in list(graph.all_nodes()):
        if node.kind != "aten::size" or not isinstance(node.inputs[0].type, TensorType):
            continue
        shape = node.inputs[0].type.shape
        ok, dim = constant_value(graph, node.inputs[1])
        if shape is None or not ok or not isinstance(dim, int) or not -len(shape) <= dim < len(shape):
            continue
        size = shape[dim]
        if isinstance(size, int):
            with graph.inserting_before(node):
                node.output.replace_all_uses_with(graph.constant(size))
            node.destroy()
            changed = True
    return changed


def propagate_shapes(graph: Graph) -> bool:
    """Refine output types in place; True if any type changed."""
    known: dict[Value, object] = {}
    changed = False
    for node in graph.all_nodes():
        changed |= _node(graph, node, known)
    return changed


def _arg(graph: Graph, v: Value, known: dict):
    if v in known:
        return known[v]
    if isinstance(v.type, TensorType):
        if v.type.dtype is None or v.type.shape is None or None in v.type.shape:
            return _UNKNOWN
        return TensorMeta(v.type.shape, v.type.dtype)
    ok, value = constant_value(graph, v)
    return value if ok else _UNKNOWN


def _node(graph: Graph, node: Node, known: dict) -> bool:
    if node.kind == "prim::TupleConstruct":  # its type follows its items' (symbolic dims included)
        new = TupleType(tuple(v.type for v in node.inputs))
        if isinstance(node.output.type, TupleType) and new != node.output.type:
            node.output.type = new
            return True
        return False
    if node.kind == "prim::ListConstruct":
        items = [_arg(graph, v, known) for v in node.inputs]
        if all(i is not _UNKNOWN for i in items):
            known[node.output] = items
        return False
    op = OPS.get(node.kind)
    if op is None:
        return False
    args = [_arg(graph, v, known) for v in node.inputs]
    if any(a is _UNKNOWN for a in args):
        return False
    if op.shape is None:  # ops on Python numbers: evaluate on ints, keep symbols symbolic
        if all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args):
            try:
                known[node.output] = op.kernel(*args)
            except Exception:
                pass
        elif node.kind == "aten::size":
            shape, dim = args[0].shape, args[1]
            known[node.output] = shape[dim]
        return False
    try:
        shapes, dtypes = op.shape(*args), op.dtype(*args)
    except Exception:  # symbolic sizes a rule cannot reason about: leave the type as it is
        return False
    multi = isinstance(dtypes, tuple)
    shapes, dtypes = (shapes, dtypes) if multi else ((shapes,), (dtypes,))
    changed = False
    for out, shape, dtype in zip(node.outputs, shapes, dtypes):
        if isinstance(out.type, TensorType):
            new = tensor_type(dtype, shape)
            if new != out.type:
                out.type, changed = new, True
    return changed
