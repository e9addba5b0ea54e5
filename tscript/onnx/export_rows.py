"""THE export table: one row per IR op, translating a node of the optimized graph into ONNX nodes.

A row is `row(ctx, node)` (ctx: export_context.ExportContext) returning the ONNX name of the node's
output, a tuple of names for several outputs, a list of names for one `List[Tensor]` output, or None
when it emits nothing (constants and int lists are made where they are read). Arguments are read
in schema order (`node.inputs[i]`); compile-time arguments with `ctx.const`.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Node
from ..ir.types import ListType, TensorType, TupleType
from .export_context import INT64, ExportContext

INT64_MAX = np.iinfo(np.int64).max
ROWS: dict = {}


def row(*kinds: str):
    def deco(fn):
        for kind in kinds:
            ROWS[kind] = fn
        return fn
    return deco


def _out_dtype(ctx: ExportContext, node: Node) -> np.dtype:
    """The dtype a node computes in: its output's, else its operands' promoted one."""
    return ctx.dtype(node.outputs[0]) or ctx.promoted(node.inputs)


# -- structure: constants, lists, tuples -----------------------------------------------------------------

@row("prim::Constant")
def _constant(ctx, node):
    return None  # made where it is read


@row("prim::ListConstruct", "prim::TupleConstruct")
def _list_construct(ctx, node):
    t = node.output.type
    elems = t.elems if isinstance(t, TupleType) else [t.elem] if isinstance(t, ListType) else []
    if any(isinstance(e, TensorType) for e in elems):
        return [ctx.tensor(v) for v in node.inputs]
    return None  # int lists are read by ctx.shape_of / ctx.const


@row("prim::ListUnpack", "prim::TupleUnpack")
def _list_unpack(ctx, node):
    return tuple(ctx.tensors(node.inputs[0]))


@row("aten::contiguous", "aten::clone", "aten::detach", "aten::alias")
def _identity(ctx, node):
    return ctx.tensor(node.inputs[0])  # ONNX values are immutable: no copy needed


@row("aten::to")
def _to(ctx, node):
    x, dtype = node.inputs[0], ctx.const(node.inputs[1])
    return ctx.tensor(x) if dtype is None else ctx.cast(ctx.tensor(x), ctx.value_dtype(x), dtype)


# -- sizes and int arithmetic (ints are 0-d int64 tensors) -----------------------------------------------

@row("aten::size")
def _size(ctx, node):
    shape = ctx.emit("Shape", [ctx.tensor(node.inputs[0])])
    return ctx.emit("Gather", [shape, ctx.scalar(ctx.const(node.inputs[1]), INT64)], axis=0)


@row("aten::numel")
def _numel(ctx, node):
    return ctx.emit("Size", [ctx.tensor(node.inputs[0])])


@row("aten::Int")
def _int(ctx, node):
    return ctx.emit("Identity", [ctx.operand(node.inputs[0], INT64)])


def _int_binary(op_type: str):
    def translate(ctx, node):
        a, b = (ctx.operand(v, INT64) for v in node.inputs)
        if op_type == "FloorDiv":  # exact for ints: a - a mod b is a multiple of b
            return ctx.emit("Div", [ctx.emit("Sub", [a, ctx.emit("Mod", [a, b], fmod=0)]), b])
        return ctx.emit(op_type, [a, b])
    return translate


for _kind, _op in {"aten::add.int": "Add", "aten::sub.int": "Sub", "aten::mul.int": "Mul",
                   "aten::floordiv.int": "FloorDiv"}.items():
    ROWS[_kind] = _int_binary(_op)


# -- elementwise ----------------------------------------------------------------------------------------

def _binary(op_type: str, compare: bool = False):
    def translate(ctx, node):
        dtype = ctx.promoted(node.inputs[:2]) if compare else _out_dtype(ctx, node)
        a, b = (ctx.operand(v, dtype) for v in node.inputs[:2])
        return ctx.emit(op_type, [a, b])
    return translate


for _kind, _op in {"aten::mul": "Mul", "aten::pow": "Pow", "aten::maximum": "Max", "aten::minimum": "Min",
                   "aten::logical_and": "And", "aten::logical_or": "Or", "aten::logical_xor": "Xor",
                   "aten::bitwise_and": "And", "aten::bitwise_or": "Or", "aten::bitwise_xor": "Xor"}.items():
    ROWS[_kind] = _binary(_op)
for _kind, _op in {"aten::eq": "Equal", "aten::lt": "Less", "aten::le": "LessOrEqual", "aten::gt": "Greater",
                   "aten::ge": "GreaterOrEqual"}.items():
    ROWS[_kind] = _binary(_op, compare=True)


@row("aten::ne")
def _ne(ctx, node):
    return ctx.emit("Not", [_binary("Equal", compare=True)(ctx, node)])


def _scaled(ctx, v, alpha_value, dtype) -> str:
    """`alpha * v` (just `v` when alpha is 1)."""
    alpha = ctx.const(alpha_value)
    x = ctx.operand(v, dtype)
    return x if alpha == 1 else ctx.emit("Mul", [x, ctx.scalar(alpha, dtype)])


@row("aten::add", "aten::sub")
def _add_sub(ctx, node):
    dtype = _out_dtype(ctx, node)
    a, b = ctx.operand(node.inputs[0], dtype), _scaled(ctx, node.inputs[1], node.inputs[2], dtype)
    return ctx.emit("Add" if node.kind == "aten::add" else "Sub", [a, b])


@row("aten::rsub")
def _rsub(ctx, node):
    dtype = _out_dtype(ctx, node)
    return ctx.emit("Sub", [ctx.operand(node.inputs[1], dtype), _scaled(ctx, node.inputs[0], node.inputs[2], dtype)])


@row("aten::div")
def _div(ctx, node):
    mode = ctx.const(node.inputs[2])
    dtype = _out_dtype(ctx, node)
    a, b = (ctx.operand(v, dtype) for v in node.inputs[:2])
    if mode is None or dtype.kind not in "fc":
        if mode == "floor":
            return ctx.emit("Div", [ctx.emit("Sub", [a, ctx.emit("Mod", [a, b], fmod=0)]), b])
        return ctx.emit("Div", [a, b])  # ONNX truncates integer quotients, as rounding_mode="trunc"
    q = ctx.emit("Div", [a, b])
    if mode == "floor":
        return ctx.emit("Floor", [q])
    return ctx.emit("Mul", [ctx.emit("Sign", [q]), ctx.emit("Floor", [ctx.emit("Abs", [q])])])


_UNARY = {"aten::neg": "Neg", "aten::relu": "Relu", "aten::sigmoid": "Sigmoid", "aten::tanh": "Tanh",
          "aten::erf": "Erf", "aten::exp": "Exp", "aten::log": "Log", "aten::sqrt": "Sqrt", "aten::abs": "Abs",
          "aten::reciprocal": "Reciprocal", "aten::floor": "Floor", "aten::ceil": "Ceil", "aten::sin": "Sin",
          "aten::cos": "Cos", "aten::sign": "Sign", "aten::round": "Round", "aten::logical_not": "Not",
          "aten::bitwise_not": "Not"}


def _unary(op_type: str):
    return lambda ctx, node: ctx.emit(op_type, [ctx.tensor(node.inputs[0])])


for _kind, _op in _UNARY.items():
    ROWS[_kind] = _unary(_op)


@row("aten::rsqrt")
def _rsqrt(ctx, node):
    return ctx.emit("Reciprocal", [ctx.emit("Sqrt", [ctx.tensor(node.inputs[0])])])


@row("aten::log1p", "aten::expm1")
def _log1p_expm1(ctx, node):
    x, dtype = ctx.tensor(node.inputs[0]), _out_dtype(ctx, node)
    if node.kind == "aten::log1p":
        return ctx.emit("Log", [ctx.emit("Add", [x, ctx.scalar(1, dtype)])])
    return ctx.emit("Sub", [ctx.emit("Exp", [x]), ctx.scalar(1, dtype)])


@row("aten::clamp")
def _clamp(ctx, node):
    dtype = _out_dtype(ctx, node)
    x = ctx.operand(node.inputs[0], dtype)
    lo, hi = node.inputs[1], node.inputs[2]
    tensor_bound = any(isinstance(v.type, TensorType) for v in (lo, hi))
    if not tensor_bound:
        bounds = [None if ctx.is_const(v) and ctx.const(v) is None else ctx.operand(v, dtype) for v in (lo, hi)]
        return ctx.emit("Clip", [x, *bounds])
    if not (ctx.is_const(lo) and ctx.const(lo) is None):
        x = ctx.emit("Max", [x, ctx.operand(lo, dtype)])
    if not (ctx.is_const(hi) and ctx.const(hi) is None):
        x = ctx.emit("Min", [x, ctx.operand(hi, dtype)])
    return x


@row("aten::where")
def _where(ctx, node):
    dtype = _out_dtype(ctx, node)
    cond = ctx.cast(ctx.tensor(node.inputs[0]), ctx.value_dtype(node.inputs[0]), bool)
    return ctx.emit("Where", [cond, ctx.operand(node.inputs[1], dtype), ctx.operand(node.inputs[2], dtype)])


@row("aten::masked_fill")
def _masked_fill(ctx, node):
    dtype = _out_dtype(ctx, node)
    x, mask = ctx.operand(node.inputs[0], dtype), ctx.tensor(node.inputs[1])
    return ctx.emit("Where", [mask, ctx.operand(node.inputs[2], dtype), x])


# -- linear algebra and convolution ---------------------------------------------------------------------

@row("aten::linear")
def _linear(ctx, node):
    x, w, b = node.inputs
    has_bias = not (ctx.is_const(b) and ctx.const(b) is None)
    if ctx.shape(x) is not None and len(ctx.shape(x)) == 2:
        return ctx.emit("Gemm", [ctx.tensor(x), ctx.tensor(w)] + ([ctx.tensor(b)] if has_bias else []), transB=1)
    if ctx.is_const(w):  # a weight constant is stored transposed: one MatMul, no Transpose at run time
        wt = ctx.initializer(ctx.const(w).T, ctx.hint(w) + "_t")
    else:
        wt = ctx.emit("Transpose", [ctx.tensor(w)], perm=[1, 0])
    y = ctx.emit("MatMul", [ctx.tensor(x), wt])
    return ctx.emit("Add", [y, ctx.tensor(b)]) if has_bias else y


@row("aten::matmul", "aten::mm", "aten::bmm", "aten::mv", "aten::dot")
def _matmul(ctx, node):
    return ctx.emit("MatMul", [ctx.tensor(node.inputs[0]), ctx.tensor(node.inputs[1])])


@row("aten::addmm")
def _addmm(ctx, node):
    c, a, b = (ctx.tensor(v) for v in node.inputs[:3])
    beta, alpha = float(ctx.const(node.inputs[3])), float(ctx.const(node.inputs[4]))
    return ctx.emit("Gemm", [a, b, c], alpha=alpha, beta=beta)


@row("aten::t")
def _t(ctx, node):
    x = node.inputs[0]
    if ctx.rank(x) < 2:
        return ctx.emit("Identity", [ctx.tensor(x)])
    return ctx.emit("Transpose", [ctx.tensor(x)], perm=[1, 0])


def _conv_inputs(ctx, node) -> list:
    bias = node.inputs[2]
    return [ctx.tensor(node.inputs[0]), ctx.tensor(node.inputs[1])] + \
        ([] if ctx.is_const(bias) and ctx.const(bias) is None else [ctx.tensor(bias)])


@row("aten::conv1d", "aten::conv2d")
def _conv(ctx, node):
    n = 1 if node.kind == "aten::conv1d" else 2
    padding = ctx.const(node.inputs[4])
    if isinstance(padding, str):
        raise ctx.unsupported(f"padding={padding!r}: export a model with explicit padding")
    pads = ctx.const_ints(node.inputs[4], n)
    return ctx.emit("Conv", _conv_inputs(ctx, node), strides=ctx.const_ints(node.inputs[3], n), pads=pads + pads,
                    dilations=ctx.const_ints(node.inputs[5], n), group=ctx.const(node.inputs[6]))


@row("aten::conv_transpose2d")
def _conv_transpose(ctx, node):
    pads = ctx.const_ints(node.inputs[4], 2)
    return ctx.emit("ConvTranspose", _conv_inputs(ctx, node), strides=ctx.const_ints(node.inputs[3], 2),
                    pads=pads + pads, output_padding=ctx.const_ints(node.inputs[5], 2),
                    group=ctx.const(node.inputs[6]), dilations=ctx.const_ints(node.inputs[7], 2))


@row("aten::max_pool2d")
def _max_pool(ctx, node):
    kernel = ctx.const_ints(node.inputs[1], 2)
    stride = ctx.const_ints(node.inputs[2], 2) or kernel
    pads = ctx.const_ints(node.inputs[3], 2)
    return ctx.emit("MaxPool", [ctx.tensor(node.inputs[0])], kernel_shape=kernel, strides=stride, pads=pads + pads,
                    dilations=ctx.const_ints(node.inputs[4], 2), ceil_mode=int(bool(ctx.const(node.inputs[5]))))


@row("aten::avg_pool2d")
def _avg_pool(ctx, node):
    if ctx.const(node.inputs[6]) is not None:
        raise ctx.unsupported("divisor_override has no ONNX AveragePool equivalent")
    kernel = ctx.const_ints(node.inputs[1], 2)
    stride = ctx.const_ints(node.inputs[2], 2) or kernel
    pads = ctx.const_ints(node.inputs[3], 2)
    return ctx.emit("AveragePool", [ctx.tensor(node.inputs[0])], kernel_shape=kernel, strides=stride,
                    pads=pads + pads, ceil_mode=int(bool(ctx.const(node.inputs[4]))),
                    count_include_pad=int(bool(ctx.const(node.inputs[5]))))


@row("aten::adaptive_avg_pool2d")
def _adaptive_avg_pool(ctx, node):
    x, out = node.inputs[0], ctx.const_ints(node.inputs[1], 2)
    if out == [1, 1]:
        return ctx.emit("GlobalAveragePool", [ctx.tensor(x)])
    size = [ctx.dim(x, -2), ctx.dim(x, -1)]
    if any(o is None or s % o for s, o in zip(size, out)):
        raise ctx.unsupported(f"output size {out} does not divide the input size {size}")
    kernel = [s // o for s, o in zip(size, out)]
    return ctx.emit("AveragePool", [ctx.tensor(x)], kernel_shape=kernel, strides=kernel)


# -- movement -------------------------------------------------------------------------------------------

@row("aten::reshape", "aten::view")
def _reshape(ctx, node):
    return ctx.emit("Reshape", [ctx.tensor(node.inputs[0]), ctx.shape_of(node.inputs[1])])


@row("aten::flatten")
def _flatten(ctx, node):
    x = node.inputs[0]
    start, end = ctx.const(node.inputs[1]), ctx.const(node.inputs[2])
    if start == 1 and end == -1:
        return ctx.emit("Flatten", [ctx.tensor(x)], axis=1)
    rank = ctx.rank(x)
    start, end = start % max(rank, 1), end % max(rank, 1)
    shape = ctx.emit("Shape", [ctx.tensor(x)])
    parts = [ctx.emit("Slice", [shape, ctx.ints([0]), ctx.ints([start])]), ctx.ints([-1]),
             ctx.emit("Slice", [shape, ctx.ints([end + 1]), ctx.ints([INT64_MAX])])]
    return ctx.emit("Reshape", [ctx.tensor(x), ctx.emit("Concat", parts, axis=0)])


@row("aten::transpose")
def _transpose(ctx, node):
    x = node.inputs[0]
    rank = ctx.rank(x)
    perm = list(range(rank))
    a, b = ctx.const(node.inputs[1]) % rank, ctx.const(node.inputs[2]) % rank
    perm[a], perm[b] = perm[b], perm[a]
    return ctx.emit("Transpose", [ctx.tensor(x)], perm=perm)


@row("aten::permute")
def _permute(ctx, node):
    rank = ctx.rank(node.inputs[0])
    return ctx.emit("Transpose", [ctx.tensor(node.inputs[0])], perm=[d % rank for d in ctx.const_ints(node.inputs[1])])


@row("aten::unsqueeze")
def _unsqueeze(ctx, node):
    return ctx.unsqueeze(ctx.tensor(node.inputs[0]), [ctx.const(node.inputs[1])])


@row("aten::squeeze")
def _squeeze(ctx, node):
    x, dims = node.inputs[0], ctx.const(node.inputs[1])
    if dims is None:
        return ctx.squeeze(ctx.tensor(x), None)
    shape = ctx.shape(x)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if shape is not None:  # PyTorch leaves a dim whose size is not 1 alone; ONNX would fail
        dims = [d for d in dims if shape[d] == 1 or not isinstance(shape[d], int)]
    return ctx.squeeze(ctx.tensor(x), dims) if dims else ctx.emit("Identity", [ctx.tensor(x)])


@row("aten::expand")
def _expand(ctx, node):
    shape = ctx.shape_of(node.inputs[1], items=lambda s: 1 if s == -1 else s)  # 1 broadcasts: keeps the dim
    return ctx.emit("Expand", [ctx.tensor(node.inputs[0]), shape])


@row("aten::repeat")
def _repeat(ctx, node):
    x, repeats = node.inputs[0], ctx.const_ints(node.inputs[1])
    name, extra = ctx.tensor(x), len(repeats) - ctx.rank(x)
    if extra > 0:
        name = ctx.unsqueeze(name, list(range(extra)))
    return ctx.emit("Tile", [name, ctx.ints(repeats, "repeats")])


@row("aten::select")
def _select(ctx, node):
    index = node.inputs[2]
    return ctx.emit("Gather", [ctx.tensor(node.inputs[0]), ctx.operand(index, INT64)], axis=ctx.const(node.inputs[1]))


def _slice_bound(ctx, v, default: int) -> str:
    if ctx.is_const(v) and ctx.const(v) is None:
        return ctx.ints([default])
    if ctx.is_const(v):
        return ctx.ints([min(max(ctx.const(v), -INT64_MAX), INT64_MAX)])
    return ctx.unsqueeze(ctx.operand(v, INT64), [0])


@row("aten::slice")
def _slice(ctx, node):
    x, dim, start, end, step = node.inputs
    return ctx.emit("Slice", [ctx.tensor(x), _slice_bound(ctx, start, 0), _slice_bound(ctx, end, INT64_MAX),
                              ctx.ints([ctx.const(dim)]), ctx.ints([ctx.const(step)])])


@row("aten::narrow")
def _narrow(ctx, node):
    x, dim, start, length = node.inputs
    begin = ctx.unsqueeze(ctx.operand(start, INT64), [0])
    end = ctx.emit("Add", [begin, ctx.unsqueeze(ctx.operand(length, INT64), [0])])
    return ctx.emit("Slice", [ctx.tensor(x), begin, end, ctx.ints([ctx.const(dim)])])


@row("aten::flip")
def _flip(ctx, node):
    dims = ctx.const_ints(node.inputs[1])
    n = len(dims)
    return ctx.emit("Slice", [ctx.tensor(node.inputs[0]), ctx.ints([-1] * n), ctx.ints([-INT64_MAX] * n),
                              ctx.ints(dims), ctx.ints([-1] * n)])


def _pieces(size: int, piece: int) -> list[int]:
    return [min(piece, size - i) for i in range(0, size, piece)] if piece > 0 else [size]


@row("aten::split")
def _split(ctx, node):
    x, sizes, dim = node.inputs[0], ctx.const(node.inputs[1]), ctx.const(node.inputs[2])
    if isinstance(sizes, int):
        sizes = _pieces(ctx.dim(x, dim), sizes)
    return ctx.split(ctx.tensor(x), list(sizes), dim)


@row("aten::chunk")
def _chunk(ctx, node):
    x, chunks, dim = node.inputs[0], ctx.const(node.inputs[1]), ctx.const(node.inputs[2])
    size = ctx.dim(x, dim)
    return ctx.split(ctx.tensor(x), _pieces(size, -(-size // chunks)), dim)


@row("aten::unbind")
def _unbind(ctx, node):
    x, dim = node.inputs[0], ctx.const(node.inputs[1])
    pieces = ctx.split(ctx.tensor(x), [1] * ctx.dim(x, dim), dim)
    return [ctx.squeeze(p, [dim]) for p in pieces]


@row("aten::cat")
def _cat(ctx, node):
    dtype, tensors = _out_dtype(ctx, node), node.inputs[0]
    if tensors.node is not None and tensors.node.kind == "prim::ListConstruct":  # PyTorch promotes the pieces
        names = [ctx.operand(v, dtype) for v in tensors.node.inputs]
    else:
        names = ctx.tensors(tensors)
    return ctx.emit("Concat", names, axis=ctx.const(node.inputs[1]))


@row("aten::stack")
def _stack(ctx, node):
    dim = ctx.const(node.inputs[1])
    names = ctx.tensors(node.inputs[0])
    return ctx.emit("Concat", [ctx.unsqueeze(n, [dim]) for n in names], axis=dim)


@row("aten::index_select")
def _index_select(ctx, node):
    return ctx.emit("Gather", [ctx.tensor(node.inputs[0]), ctx.tensor(node.inputs[2])], axis=ctx.const(node.inputs[1]))


@row("aten::gather")
def _gather(ctx, node):
    return ctx.emit("GatherElements", [ctx.tensor(node.inputs[0]), ctx.tensor(node.inputs[2])],
                    axis=ctx.const(node.inputs[1]))


@row("aten::tril", "aten::triu")
def _trilu(ctx, node):
    ctx.require_opset(14, "Trilu")
    k = ctx.scalar(ctx.const(node.inputs[1]), INT64)
    return ctx.emit("Trilu", [ctx.tensor(node.inputs[0]), k], upper=int(node.kind == "aten::triu"))


# -- reductions -----------------------------------------------------------------------------------------

def _dims(ctx, v) -> list | None:
    dims = ctx.const(v)
    return None if dims is None else [dims] if isinstance(dims, int) else list(dims) or None


def _reduction(op_type: str):
    def translate(ctx, node):
        x = ctx.tensor(node.inputs[0])
        dtype = ctx.const(node.inputs[3]) if len(node.inputs) > 3 and node.kind != "aten::var" else None
        if dtype is not None:
            x = ctx.cast(x, ctx.value_dtype(node.inputs[0]), dtype)
        return ctx.reduce(op_type, x, _dims(ctx, node.inputs[1]), bool(ctx.const(node.inputs[2])))
    return translate


for _kind, _op in {"aten::mean": "ReduceMean", "aten::sum": "ReduceSum", "aten::amax": "ReduceMax",
                   "aten::amin": "ReduceMin", "aten::logsumexp": "ReduceLogSumExp"}.items():
    ROWS[_kind] = _reduction(_op)


@row("aten::prod")
def _prod(ctx, node):
    dim = ctx.const(node.inputs[1])
    return ctx.reduce("ReduceProd", ctx.tensor(node.inputs[0]), None if dim is None else [dim],
                      bool(ctx.const(node.inputs[2])))


@row("aten::max", "aten::min")
def _max_all(ctx, node):
    return ctx.reduce("ReduceMax" if node.kind == "aten::max" else "ReduceMin", ctx.tensor(node.inputs[0]), None, False)


@row("aten::max.dim", "aten::min.dim")
def _max_dim(ctx, node):
    x, dim, keep = ctx.tensor(node.inputs[0]), ctx.const(node.inputs[1]), bool(ctx.const(node.inputs[2]))
    big = node.kind == "aten::max.dim"
    values = ctx.reduce("ReduceMax" if big else "ReduceMin", x, [dim], keep)
    return values, ctx.emit("ArgMax" if big else "ArgMin", [x], axis=dim, keepdims=int(keep))


@row("aten::argmax", "aten::argmin")
def _argmax(ctx, node):
    x, dim, keep = ctx.tensor(node.inputs[0]), ctx.const(node.inputs[1]), bool(ctx.const(node.inputs[2]))
    op = "ArgMax" if node.kind == "aten::argmax" else "ArgMin"
    if dim is None:
        return ctx.emit(op, [ctx.emit("Reshape", [x, ctx.ints([-1])])], axis=0, keepdims=0)
    return ctx.emit(op, [x], axis=dim, keepdims=int(keep))


@row("aten::var", "aten::std")
def _var(ctx, node):
    """mean((x - mean(x))^2) * n / (n - correction), n the number of reduced elements."""
    v, dims = node.inputs[0], _dims(ctx, node.inputs[1])
    correction, keep = ctx.const(node.inputs[2]), bool(ctx.const(node.inputs[3]))
    correction = 1 if correction is None else correction
    dtype, x = _out_dtype(ctx, node), ctx.tensor(v)
    d = ctx.emit("Sub", [x, ctx.reduce("ReduceMean", x, dims, True)])
    out = ctx.reduce("ReduceMean", ctx.emit("Mul", [d, d]), dims, keep)
    if correction:
        n = _reduced_count(ctx, v, dims)
        out = ctx.emit("Mul", [out, ctx.scalar(n / (n - correction) if n > correction else math.inf, dtype)])
    return ctx.emit("Sqrt", [out]) if node.kind == "aten::std" else out


def _reduced_count(ctx, v, dims) -> int:
    rank = ctx.rank(v)
    count = 1
    for d in (range(rank) if dims is None else dims):
        count *= ctx.dim(v, d)
    return count


@row("aten::softmax", "aten::log_softmax")
def _softmax(ctx, node):
    x, dim, dtype = ctx.tensor(node.inputs[0]), ctx.const(node.inputs[1]), ctx.const(node.inputs[2])
    if dtype is not None:
        x = ctx.cast(x, ctx.value_dtype(node.inputs[0]), dtype)
    return ctx.emit("Softmax" if node.kind == "aten::softmax" else "LogSoftmax", [x], axis=dim)


@row("aten::cumsum")
def _cumsum(ctx, node):
    x, dtype = ctx.tensor(node.inputs[0]), ctx.const(node.inputs[2])
    if dtype is not None:
        x = ctx.cast(x, ctx.value_dtype(node.inputs[0]), dtype)
    return ctx.emit("CumSum", [x, ctx.scalar(ctx.const(node.inputs[1]), INT64)])


@row("aten::topk")
def _topk(ctx, node):
    x, k, dim, largest, ordered = node.inputs
    return ctx.emit("TopK", [ctx.tensor(x), ctx.unsqueeze(ctx.operand(k, INT64), [0])], 2, axis=ctx.const(dim),
                    largest=int(bool(ctx.const(largest))), sorted=int(bool(ctx.const(ordered))))


# -- creation -------------------------------------------------------------------------------------------

def _fill(ctx, node, shape: str, value) -> str:
    dtype = ctx.dtype(node.output) or np.dtype(np.float32)
    tensor = ctx.numpy_helper.from_array(np.array([value], dtype=dtype), "value")
    return ctx.emit("ConstantOfShape", [shape], value=tensor)


@row("aten::zeros", "aten::ones", "aten::full")
def _full(ctx, node):
    value = {"aten::zeros": 0, "aten::ones": 1}.get(node.kind)
    if value is None:
        value = ctx.const(node.inputs[1])
    return _fill(ctx, node, ctx.shape_of(node.inputs[0]), value)


@row("aten::zeros_like", "aten::ones_like", "aten::full_like")
def _full_like(ctx, node):
    value = {"aten::zeros_like": 0, "aten::ones_like": 1}.get(node.kind)
    if value is None:
        value = ctx.const(node.inputs[1])
    return _fill(ctx, node, ctx.emit("Shape", [ctx.tensor(node.inputs[0])]), value)


@row("aten::arange")
def _arange(ctx, node):
    start, end, step = node.inputs[:3]
    dtype = _out_dtype(ctx, node)
    if ctx.is_const(end) and ctx.const(end) is None:
        start, end = None, start
    begin = ctx.scalar(0, dtype) if start is None else ctx.operand(start, dtype)
    return ctx.emit("Range", [begin, ctx.operand(end, dtype), ctx.operand(step, dtype)])


from . import export_recurrent  # noqa: E402,F401  (rows of the recurrent sequence ops)
