"""What the kernel templates (native/pointwise.py, native/row.py) require of a group's subgraph, and
the launch spec read off it: the kernel's rank, the kinds, dtypes and static shapes of its inputs and
outputs. Subgraphs come from files, so every requirement is checked here (a ModelError names the
first one that fails) before anything is emitted; the launcher (kernels.py) then checks each call's
arrays against the spec, so what a kernel reads and writes is what its code was generated for.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import dtypes as dt
from .errors import ModelError, OpError
from .ops import OPS
from .ops.facts import node_compute_dtype, representative
from .ops.registry import TensorMeta
from .typed_graph import Graph, Node
from .types import ScalarType, TensorType

# What kernels load, compute and store. Not (yet) float16/bfloat16 (they would load and store the narrow
# type and compute in float32, rounding each op's result), 8/16-bit integers or complex: a plan with
# such a kernel is refused, and the compiler puts none in one (ir/passes/fuse.py).
DTYPES = (dt.float32, dt.float64, dt.int64, dt.int32, dt.bool_)
SCALARS = ("int", "float", "bool")
MAX_NODES = 10_000  # nodes of one kernel's subgraph
CONSTANTS = (bool, int, float, str, list, tuple, np.dtype)  # what a kernel's constants may be (values: scalars)
_NOT_CONSTANT = object()


@dataclass(frozen=True)
class KernelSpec:
    """How to launch a generated kernel: its loop rank, per input "tensor" or "scalar", the dtypes and
    declared shapes (ints, or None/str for sizes known only at run time) of its tensor inputs, the
    dtypes of its outputs, the declared shape of its iteration space, and for row kernels which
    outputs hold one value per row and whether a row may not be empty (an amax/amin output)."""
    rank: int
    inputs: tuple
    in_dtypes: tuple
    in_shapes: tuple
    out_dtypes: tuple
    iteration: tuple
    row: bool = False
    out_row: bool = False
    nonempty_rows: bool = False


def kernel_spec(template: str, graph: Graph) -> KernelSpec:
    """The spec of `graph` (a group's subgraph) under `template` ("pointwise" or "row"), after
    checking everything the template requires of it."""
    if len(graph.nodes) > MAX_NODES:
        raise ModelError(f"a kernel of {len(graph.nodes)} nodes (at most {MAX_NODES})")
    tensors = [_tensor(v, "input") for v in graph.inputs if isinstance(v.type, TensorType)]
    for v in graph.inputs:
        if not isinstance(v.type, TensorType) and not (isinstance(v.type, ScalarType) and v.type.name in SCALARS):
            raise ModelError(f"kernel input %{v.name} has type {v.type} (tensors and int/float/bool scalars only)")
    outputs = [_tensor(o, "output") for o in graph.outputs]
    if not outputs or not tensors:
        raise ModelError("a kernel needs at least one tensor input and one output")
    kinds = tuple("tensor" if isinstance(v.type, TensorType) else "scalar" for v in graph.inputs)
    if template == "pointwise":
        iteration = outputs[0].shape
        if any(not _compatible(o.shape, iteration) for o in outputs):
            raise ModelError("the outputs of a pointwise kernel must all have one shape")
        _check_nodes(graph, iteration, row=False)
        return KernelSpec(len(iteration), kinds, tuple(t.dtype for t in tensors), tuple(t.shape for t in tensors),
                          tuple(o.dtype for o in outputs), iteration)
    iteration = max((t.shape for t in tensors), key=len)
    if not iteration:
        raise ModelError("a row kernel needs inputs of rank 1 or more")
    for o in outputs:
        if not _compatible(o.shape, iteration) and not _compatible(o.shape, iteration[:-1] + (1,)):
            raise ModelError(f"row kernel output of shape {o.shape}: neither the row shape {iteration} nor "
                             f"one value per row")
    out_row = outputs[0].shape[-1] == 1
    if any((o.shape[-1] == 1) != out_row for o in outputs):
        raise ModelError("the outputs of a row kernel must all be full rows or all one value per row")
    _check_nodes(graph, iteration, row=True)
    # an amax/amin the kernel outputs must raise on an empty row, as eager does (inside softmax it
    # need not: the output is empty)
    nonempty = any(o.node is not None and o.node.kind in ("aten::amax", "aten::amin") for o in graph.outputs)
    return KernelSpec(len(iteration), kinds, tuple(t.dtype for t in tensors), tuple(t.shape for t in tensors),
                      tuple(o.dtype for o in outputs), iteration, row=True, out_row=out_row, nonempty_rows=nonempty)


def _compatible(a: tuple, b: tuple) -> bool:
    """Shapes of one rank whose static sizes agree (types may carry the example's size where a dim is
    dynamic: only sizes of 1 change the generated code, and the launcher checks those)."""
    return len(a) == len(b) and all(x == y or not (type(x) is int and type(y) is int) for x, y in zip(a, b))


def _tensor(v, what: str) -> TensorType:
    t = v.type
    if not isinstance(t, TensorType) or t.dtype not in DTYPES or t.shape is None:
        raise ModelError(f"kernel {what} %{v.name} has type {t} (a tensor of known rank and dtype "
                         f"{'/'.join(dt.NAMES[d] for d in DTYPES)} is needed)")
    return t


def _check_nodes(graph: Graph, iteration: tuple, row: bool) -> None:
    constants: dict = {}
    for node in graph.nodes:
        if node.kind == "prim::Constant":
            value = node.attrs.get("value")
            if len(node.outputs) != 1 or not (value is None or isinstance(value, CONSTANTS)):
                raise ModelError(f"kernel constant {value!r} is not a scalar, a dtype, a string or a list of ints")
            constants[node.output] = value
            continue
        op = OPS.get(node.kind)
        facts = op.facts if op is not None else None
        if facts is None or not (facts.pointwise or row and facts.row_reduction):
            raise ModelError(f"{node.kind} cannot be computed in a {'row' if row else 'pointwise'} kernel")
        if len(node.outputs) != 1:
            raise ModelError(f"{node.kind} in a kernel must have one output")
        out = _tensor(node.output, "value")
        if facts.pointwise:
            _check_pointwise(node, facts.pointwise, constants)
        else:
            _check_row_reduction(node, iteration, constants)
        if len(out.shape) > len(iteration):
            raise ModelError(f"{node.kind} output of rank {len(out.shape)} in a kernel of rank {len(iteration)}")
        _check_types(node, op, constants)
    for o in graph.outputs:
        if o in constants:
            raise ModelError("a kernel output must be computed, not a constant")


def _check_pointwise(node: Node, pw, constants: dict) -> None:
    args = [constants.get(v, _NOT_CONSTANT) for v in node.inputs]
    if any(a is _NOT_CONSTANT for a in args[pw.n_values:]) or len(node.inputs) < pw.n_values:
        raise ModelError(f"{node.kind} in a kernel: inputs after the first {pw.n_values} must be constants")
    schema = OPS[node.kind].schema.args
    for v, arg in zip(node.inputs[:pw.n_values], schema):
        if v not in constants and not isinstance(v.type, TensorType):
            if not (isinstance(v.type, ScalarType) and v.type.name in SCALARS):
                raise ModelError(f"{node.kind} in a kernel reads %{v.name} of type {v.type}")
        elif v in constants and not (constants[v] is None and arg.optional or
                                     isinstance(constants[v], (bool, int, float))):
            raise ModelError(f"{node.kind} in a kernel reads the constant {constants[v]!r} as its '{arg.name}'")
    try:
        cdt = node_compute_dtype(pw, node, {v: c for v, c in constants.items() if v in node.inputs})
    except (OpError, TypeError, ValueError, KeyError, IndexError) as e:
        raise ModelError(f"{node.kind} in a kernel: no compute dtype ({e})") from None
    if cdt not in DTYPES or pw.when is not None and not pw.when(args, cdt):
        raise ModelError(f"{node.kind} in a kernel: not pointwise for these inputs")


def _check_row_reduction(node: Node, iteration: tuple, constants: dict) -> None:
    """A reduction over the last dim with keepdim, of a value of the full row shape, in floats (all /
    any: to bools)."""
    src, out = node.inputs[0].type, node.output.type
    args = [constants.get(v, _NOT_CONSTANT) for v in node.inputs]
    var, extremum = node.kind == "aten::var", node.kind in ("aten::amax", "aten::amin", "aten::all", "aten::any")
    logical = node.kind in ("aten::all", "aten::any")
    if len(args) != (3 if extremum else 4) or not isinstance(src, TensorType) or \
            not _compatible(src.shape, iteration) or not _compatible(out.shape, iteration[:-1] + (1,)) or \
            out.shape[-1] != 1 or not (out.dtype == dt.bool_ if logical else dt.is_float(out.dtype)):
        raise ModelError(f"{node.kind} in a row kernel must reduce a value of the row shape {iteration} "
                         f"({'to bools' if logical else 'in floats'})")
    dims, keep = args[1], args[3 if var else 2]
    dims = list(dims) if isinstance(dims, (list, tuple)) else [dims]
    if len(dims) != 1 or type(dims[0]) is not int or dims[0] not in (-1, len(iteration) - 1) or keep is not True:
        raise ModelError(f"{node.kind} in a row kernel must reduce the last dim with keepdim=True")
    correction = args[2] if var else None
    if var and not (correction is None or isinstance(correction, (int, float)) and not isinstance(correction, bool)) \
            or not var and not extremum and args[3] is not None:
        raise ModelError(f"{node.kind} in a row kernel: unsupported argument {args[2 if var else 3]!r}")


def _check_types(node: Node, op, constants: dict) -> None:
    """The node's declared output dtype (and static sizes, where the input shapes are all known or
    symbolic) are the ones the op table's rules give."""
    args = [constants[v] if v in constants else TensorMeta(v.type.shape, v.type.dtype)
            if isinstance(v.type, TensorType) else representative(v, {}) for v in node.inputs]
    out = node.output.type
    try:
        dtype = op.dtype(*args)
        shape = op.shape(*args) if not any(None in a.shape for a in args if isinstance(a, TensorMeta)) else None
    except (OpError, TypeError, ValueError, KeyError, IndexError) as e:
        raise ModelError(f"{node.kind} in a kernel: its inputs break the op's rules ({e})") from None
    if dtype != out.dtype or shape is not None and (len(shape) != len(out.shape) or any(
            isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(shape, out.shape))):
        raise ModelError(f"{node.kind} in a kernel is declared {out}, but the op's rules give "
                         f"{dt.NAMES.get(dtype, dtype)}{list(shape) if shape is not None else ''}")
