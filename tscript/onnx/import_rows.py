"""THE import table: one row per ONNX op, translating an ONNX node into tscript ops.

A row is `row(ctx, node, attrs)` (ctx: import_context.ImportContext; `node.input`/`node.output` the
ONNX names, "" for an omitted optional input; `attrs` the node's attributes, tensors as arrays) and
returns the entry of its output, or a list of entries for several outputs (see import_context for
what an entry is). Shape arithmetic (Shape, Gather, Concat, Unsqueeze, Slice, arithmetic on ints...)
works on `Dims` and folds at import; everything else becomes tscript ops through `ctx.emit`.
Rows follow the ONNX operator specification (https://onnx.ai/onnx/operators/) for opsets 7 to 23.
"""
from __future__ import annotations

import math

import numpy as np

from tscript_runtime import dtypes as dt

from .import_context import Dims, ImportContext, optional_input as _opt, require_inputs as _need
from .import_recurrent import recurrent

ROWS: dict = {}
INT64 = np.dtype(np.int64)
INT64_MAX = int(np.iinfo(np.int64).max)
# ONNX TensorProto data types tscript has (the others are refused by name).
DTYPES = {1: np.dtype(np.float32), 2: dt.uint8, 3: dt.int8, 5: dt.int16, 6: np.dtype(np.int32), 7: INT64,
          9: np.dtype(np.bool_), 10: dt.float16, 11: np.dtype(np.float64), 14: dt.complex64, 15: dt.complex128,
          16: dt.bfloat16}
DTYPE_NAMES = {4: "uint16", 8: "string", 12: "uint32", 13: "uint64"}
HAVE = ", ".join(dt.NAMES[d] for d in DTYPES.values())  # for messages


def row(*op_types: str):
    """Register the decorated function as the row of `op_types`."""
    def deco(fn):
        for op_type in op_types:
            ROWS[op_type] = fn
        return fn
    return deco


def dtype_of(ctx: ImportContext, code: int) -> np.dtype:
    """The numpy dtype of an ONNX data type code (an error naming it when tscript lacks it)."""
    if code not in DTYPES:
        raise ctx.error(f"data type {DTYPE_NAMES.get(code, code)} is not supported (tscript has {HAVE})")
    return DTYPES[code]


def _axes(ctx, node, attrs, since: int, index: int = 1) -> list[int] | None:
    """Axes given as an attribute (before opset `since`) or as input `index` (from `since` on)."""
    if ctx.opset < since:
        axes = attrs.get("axes")
        return None if axes is None else [int(a) for a in axes]
    name = _opt(node, index)
    return None if name is None else [int(a) for a in ctx.const(name, "axes").reshape(-1)]


def _norm(ctx, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


# -- constants, identity, casts --------------------------------------------------------------------------

@row("Constant")
def _constant(ctx, node, attrs):
    for key, dtype in (("value", None), ("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in attrs:
            return np.array(attrs[key], dtype=dtype)
    raise ctx.error(f"Constant with attribute {sorted(attrs)} (supported: value, value_float(s), value_int(s))")


@row("Identity", "Dropout")
def _identity(ctx, node, attrs):
    if node.op_type == "Dropout" and len([o for o in node.output if o]) > 1:
        raise ctx.error("Dropout's mask output (training) is not supported")
    if node.op_type == "Dropout" and _opt(node, 2) is not None and ctx.array(node.input[2]) is not None \
            and bool(ctx.array(node.input[2])):
        raise ctx.error("Dropout in training mode is not supported")
    return ctx.entry(node.input[0])


@row("Cast", "CastLike")
def _cast(ctx, node, attrs):
    if node.op_type == "Cast":
        dtype = dtype_of(ctx, attrs.get("to", 0))
    else:
        _need(ctx, node, 2)
        dtype = ctx.dtype(ctx.tensor(node.input[1]))
    dims = ctx.dims(node.input[0])
    if dims is not None and dtype.kind == "i" and not isinstance(ctx.entry(node.input[0]), np.ndarray):
        return dims  # sizes stay sizes (int32 or int64)
    x = ctx.tensor(node.input[0])
    if isinstance(x, np.ndarray):
        return x.astype(dtype)
    return x if ctx.dtype(x) == dtype else ctx.emit("aten::to", x, dtype)


# -- shapes ------------------------------------------------------------------------------------------

@row("Shape")
def _shape(ctx, node, attrs):
    x = ctx.entry(node.input[0])
    if isinstance(x, Dims):
        items = () if x.scalar else (len(x.items),)
    else:
        items = tuple(ctx.size(x, d) for d in range(ctx.rank(x)))
    start, end = attrs.get("start", 0), attrs.get("end", None)
    return Dims(items[slice(start, end)])


@row("Size")
def _size(ctx, node, attrs):
    x = ctx.tensor(node.input[0])
    shape = ctx.shape(x)
    if shape is not None and all(isinstance(s, int) for s in shape):
        return Dims((int(np.prod(shape, dtype=np.int64)),), scalar=True)
    return Dims((ctx.emit("aten::numel", x),), scalar=True)


@row("Gather")
def _gather(ctx, node, attrs):
    _need(ctx, node, 2)
    axis = attrs.get("axis", 0)
    dims, index = ctx.dims(node.input[0]), ctx.array(node.input[1])
    if dims is not None and not dims.scalar and index is not None and index.ndim <= 1 and axis in (0, -1):
        n = len(dims.items)
        if np.any((index < -n) | (index >= n)):
            raise ctx.error(f"index {index.tolist()} out of range for {n} items")
        picked = tuple(dims.items[int(i)] for i in index.reshape(-1))
        return Dims(picked, scalar=index.ndim == 0)
    return _gather_tensor(ctx, ctx.tensor(node.input[0]), ctx.tensor(node.input[1]), axis)


def _gather_tensor(ctx, x, index, axis: int):
    rank = ctx.rank(x)
    axis = _norm(ctx, axis, rank)
    if isinstance(index, np.ndarray):
        size = ctx.shape(x)[axis]
        if isinstance(size, int):
            if np.any((index < -size) | (index >= size)):
                raise ctx.error(f"index out of range for a dim of size {size}")
            index = np.where(index < 0, index + size, index).astype(INT64)
        if index.ndim == 0:
            return ctx.emit("aten::select", x, axis, int(index))
    flat = ctx.emit("aten::reshape", index, [-1])
    size = ctx.shape(x)[axis]
    if not isinstance(index, np.ndarray) and isinstance(size, int):  # ONNX counts negative indices from the end
        flat = ctx.emit("aten::where", ctx.emit("aten::lt", flat, 0), ctx.emit("aten::add", flat, size), flat)
    picked = ctx.emit("aten::index_select", x, axis, flat)
    index_shape = ctx.shape(index)
    if index_shape is not None and len(index_shape) == 1:
        return picked
    sizes = [ctx.size(x, d) for d in range(axis)] + [ctx.size(index, d) for d in range(ctx.rank(index))] + \
        [ctx.size(x, d) for d in range(axis + 1, rank)]
    return ctx.emit("aten::reshape", picked, sizes)


@row("GatherElements")
def _gather_elements(ctx, node, attrs):
    _need(ctx, node, 2)
    x = ctx.tensor(node.input[0])
    return ctx.emit("aten::gather", x, _norm(ctx, attrs.get("axis", 0), ctx.rank(x)), ctx.tensor(node.input[1]))


@row("Unsqueeze")
def _unsqueeze(ctx, node, attrs):
    axes = _axes(ctx, node, attrs, 13)
    if axes is None:
        raise ctx.error("Unsqueeze needs axes")
    dims = ctx.dims(node.input[0])
    if dims is not None and dims.scalar and axes in ([0], [-1]):
        return Dims(dims.items)
    x = ctx.tensor(node.input[0])
    rank = ctx.rank(x) + len(axes)
    for a in sorted(_norm(ctx, a, rank) for a in axes):
        x = ctx.emit("aten::unsqueeze", x, a)
    return x


@row("Squeeze")
def _squeeze(ctx, node, attrs):
    axes = _axes(ctx, node, attrs, 13)
    dims = ctx.dims(node.input[0])
    if dims is not None and not dims.scalar and len(dims.items) == 1 and axes in (None, [0], [-1]):
        return Dims(dims.items, scalar=True)
    x = ctx.tensor(node.input[0])
    if axes is None:
        return ctx.emit("aten::squeeze", x, None)
    rank = ctx.rank(x)
    return ctx.emit("aten::squeeze", x, [_norm(ctx, a, rank) for a in axes])


@row("Concat")
def _concat(ctx, node, attrs):
    axis = attrs.get("axis")
    if axis is None:
        raise ctx.error("Concat needs an axis")
    names = [n for n in node.input if n]
    pieces = [ctx.dims(n) for n in names]
    if axis in (0, -1) and all(p is not None and not p.scalar for p in pieces) and \
            any(isinstance(ctx.entry(n), Dims) for n in names):
        return Dims(tuple(i for p in pieces for i in p.items))
    tensors = [ctx.tensor(n) for n in names]
    return ctx.emit("aten::cat", tensors, _norm(ctx, axis, ctx.rank(tensors[0])))


def _slice_params(ctx, node, attrs, rank: int) -> list[tuple]:
    """[(axis, start, end, step)] of a Slice (inputs from opset 10, attributes before)."""
    if ctx.opset < 10:
        starts, ends = attrs.get("starts", []), attrs.get("ends", [])
        axes, steps = attrs.get("axes", list(range(len(starts)))), [1] * len(starts)
    else:
        _need(ctx, node, 3)
        starts, ends = _items(ctx, node.input[1]), _items(ctx, node.input[2])
        axes = _items(ctx, _opt(node, 3), list(range(len(starts))))
        steps = _items(ctx, _opt(node, 4), [1] * len(starts))
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error("starts, ends, axes and steps of a Slice differ in length")
    for name, items in (("axes", axes), ("steps", steps)):
        if not all(isinstance(i, int) for i in items):
            raise ctx.error(f"the {name} of a Slice must be known at import")
    return [(_norm(ctx, a, rank), s, e, st) for a, s, e, st in zip(axes, starts, ends, steps)]


def _items(ctx, name, default=None) -> list:
    if name is None:
        return default
    dims = ctx.dims(name)
    if dims is None:
        raise ctx.error(f"'{name}' must be a list of ints known at import or sizes")
    return list(dims.items)


@row("Slice")
def _slice(ctx, node, attrs):
    dims = ctx.dims(node.input[0])
    if dims is not None and not dims.scalar and isinstance(ctx.entry(node.input[0]), Dims):
        (axis, start, end, step), = _slice_params(ctx, node, attrs, 1)
        if all(isinstance(v, int) for v in (start, end)) and step != 0:
            return Dims(dims.items[slice(start, end, step)])
    x = ctx.tensor(node.input[0])
    for axis, start, end, step in _slice_params(ctx, node, attrs, ctx.rank(x)):
        x = _slice_axis(ctx, x, axis, start, end, step)
    return x


def _slice_axis(ctx, x, axis: int, start, end, step: int):
    if step > 0:
        clamp = lambda v: min(max(v, -INT64_MAX), INT64_MAX) if isinstance(v, int) else v  # noqa: E731
        return ctx.emit("aten::slice", x, axis, clamp(start), clamp(end), step)
    size = ctx.shape(x)[axis]
    if step == 0 or not isinstance(start, int) or not isinstance(end, int):
        raise ctx.error(f"Slice with step {step} and bounds computed at run time")
    if not isinstance(size, int):  # only a whole reversal can be written without the size
        if step == -1 and start in (-1, INT64_MAX) and end <= -INT64_MAX:
            return ctx.emit("aten::flip", x, [axis])
        raise ctx.error(f"Slice with step {step} of a dim whose size is not known at import")
    first, stop, step = slice(start, end, step).indices(size)
    flipped = ctx.emit("aten::flip", x, [axis])  # x[first:stop:step] = flip(x)[size-1-first : size-1-stop : -step]
    if (first, stop, step) == (size - 1, -1, -1):
        return flipped
    return ctx.emit("aten::slice", flipped, axis, size - 1 - first, size - 1 - stop, -step)


@row("Reshape")
def _reshape(ctx, node, attrs):
    _need(ctx, node, 2)
    x, items = ctx.tensor(node.input[0]), _items(ctx, node.input[1])
    if not attrs.get("allowzero", 0):
        items = [ctx.size(x, i) if isinstance(s, int) and s == 0 else s for i, s in enumerate(items)]
    return ctx.emit("aten::reshape", x, items)


@row("Flatten")
def _flatten(ctx, node, attrs):
    x, axis = ctx.tensor(node.input[0]), attrs.get("axis", 1)
    if axis == 0:
        return ctx.emit("aten::reshape", x, [1, -1])
    if axis < 0:
        axis += ctx.rank(x)
    inner = ctx.emit("aten::flatten", x, axis, -1)
    return ctx.emit("aten::flatten", inner, 0, axis - 1)


@row("Transpose")
def _transpose(ctx, node, attrs):
    x = ctx.tensor(node.input[0])
    perm = attrs.get("perm")
    if perm is None:
        perm = list(range(ctx.rank(x)))[::-1]
    return ctx.emit("aten::permute", x, [int(p) for p in perm])


@row("Expand")
def _expand(ctx, node, attrs):
    _need(ctx, node, 2)
    x, items = ctx.tensor(node.input[0]), _items(ctx, node.input[1])
    rank = ctx.rank(x)
    if len(items) < rank:
        items = [-1] * (rank - len(items)) + items
    lead = len(items) - rank
    # ONNX broadcasts both ways: a 1 keeps the input's dim (PyTorch's -1)
    items = [-1 if i >= lead and isinstance(s, int) and s == 1 else s for i, s in enumerate(items)]
    return ctx.emit("aten::expand", x, items)


@row("Tile")
def _tile(ctx, node, attrs):
    _need(ctx, node, 2)
    return ctx.emit("aten::repeat", ctx.tensor(node.input[0]), _items(ctx, node.input[1]))


@row("ConstantOfShape")
def _constant_of_shape(ctx, node, attrs):
    items = _items(ctx, node.input[0])
    value = attrs.get("value", np.zeros(1, np.float32))
    dtype = np.asarray(value).dtype
    fill = np.asarray(value).reshape(-1)[0].item()
    return ctx.emit("aten::full", items, fill, dtype=dtype)


@row("Range")
def _range(ctx, node, attrs):
    _need(ctx, node, 3)
    arrays = [ctx.array(n) for n in node.input[:3]]
    dtype = next((a.dtype for a in arrays if a is not None), INT64)
    return ctx.emit("aten::arange", *(_scalar(ctx, n) for n in node.input[:3]), dtype=dtype)


def _scalar(ctx, name: str):
    """A one-element input as a number known at import, or an IR int value (a size)."""
    dims = ctx.dims(name)
    if dims is not None and len(dims.items) == 1:
        return dims.items[0]
    a = ctx.array(name)
    if a is not None and a.size == 1:
        return a.item()
    raise ctx.error(f"'{name}' must be a number known at import or a size")


# -- elementwise ---------------------------------------------------------------------------------------

_INT_OPS = {"Add": ("aten::add.int", lambda a, b: a + b), "Sub": ("aten::sub.int", lambda a, b: a - b),
            "Mul": ("aten::mul.int", lambda a, b: a * b),
            "Div": ("aten::floordiv.int", lambda a, b: int(a / b) if b else None)}  # sizes: >= 0


def _dims_arithmetic(ctx, node):
    """Add/Sub/Mul/Div of sizes item by item (None when the operands are not sizes)."""
    a, b = (ctx.dims(n) for n in node.input[:2])
    if a is None or b is None or not any(isinstance(ctx.entry(n), Dims) for n in node.input[:2]):
        return None
    if len(a.items) != len(b.items) and 1 not in (len(a.items), len(b.items)):
        return None
    kind, fn = _INT_OPS[node.op_type]
    n = max(len(a.items), len(b.items))
    left, right = (d.items * n if len(d.items) == 1 else d.items for d in (a, b))
    out = []
    for x, y in zip(left, right):
        value = fn(x, y) if isinstance(x, int) and isinstance(y, int) else None
        out.append(value if value is not None else ctx.emit(kind, x, y))
    return Dims(tuple(out), scalar=a.scalar and b.scalar)


@row("Add", "Sub", "Mul", "Div")
def _arithmetic(ctx, node, attrs):
    _need(ctx, node, 2)
    dims = _dims_arithmetic(ctx, node)
    if dims is not None:
        return dims
    a, b = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    kind = {"Add": "aten::add", "Sub": "aten::sub", "Mul": "aten::mul", "Div": "aten::div"}[node.op_type]
    if node.op_type == "Div" and (ctx.dtype(a) or np.dtype(np.float32)).kind in "iub":
        return ctx.emit(kind, a, b, rounding_mode="trunc")  # ONNX truncates integer quotients
    return ctx.emit(kind, a, b)


_BINARY = {"Pow": "aten::pow", "Equal": "aten::eq", "Less": "aten::lt", "LessOrEqual": "aten::le",
           "Greater": "aten::gt", "GreaterOrEqual": "aten::ge", "And": "aten::logical_and",
           "Or": "aten::logical_or", "Xor": "aten::logical_xor"}


@row(*_BINARY)
def _binary(ctx, node, attrs):
    _need(ctx, node, 2)
    return ctx.emit(_BINARY[node.op_type], ctx.tensor(node.input[0]), ctx.tensor(node.input[1]))


@row("Mod")
def _mod(ctx, node, attrs):
    _need(ctx, node, 2)
    a, b = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    if attrs.get("fmod", 0):
        raise ctx.error("Mod with fmod=1 (C's fmod) is not supported")
    return ctx.emit("aten::remainder", a, b)


_UNARY = {"Neg": "aten::neg", "Abs": "aten::abs", "Relu": "aten::relu", "Sigmoid": "aten::sigmoid",
          "Tanh": "aten::tanh", "Erf": "aten::erf", "Exp": "aten::exp", "Log": "aten::log", "Sqrt": "aten::sqrt",
          "Reciprocal": "aten::reciprocal", "Floor": "aten::floor", "Ceil": "aten::ceil", "Sin": "aten::sin",
          "Cos": "aten::cos", "Sign": "aten::sign", "Round": "aten::round", "Not": "aten::logical_not"}


@row(*_UNARY)
def _unary(ctx, node, attrs):
    return ctx.emit(_UNARY[node.op_type], ctx.tensor(node.input[0]))


@row("Where")
def _where(ctx, node, attrs):
    _need(ctx, node, 3)
    return ctx.emit("aten::where", *(ctx.tensor(n) for n in node.input[:3]))


@row("Max", "Min", "Sum", "Mean")
def _variadic(ctx, node, attrs):
    kind = {"Max": "aten::maximum", "Min": "aten::minimum", "Sum": "aten::add", "Mean": "aten::add"}[node.op_type]
    tensors = [ctx.tensor(n) for n in node.input if n]
    if not tensors:
        raise ctx.error("needs at least one input")
    out = tensors[0]
    for t in tensors[1:]:
        out = ctx.emit(kind, out, t)
    return ctx.emit("aten::div", out, float(len(tensors))) if node.op_type == "Mean" else out


@row("Clip")
def _clip(ctx, node, attrs):
    x = ctx.tensor(node.input[0])
    if ctx.opset < 11:
        return ctx.emit("aten::clamp", x, attrs.get("min"), attrs.get("max"))
    bounds = []
    for i in (1, 2):
        name = _opt(node, i)
        a = ctx.array(name) if name is not None else None
        bounds.append(None if name is None else a.item() if a is not None and a.size == 1 else ctx.tensor(name))
    return ctx.emit("aten::clamp", x, *bounds)


# -- activations written with core ops (as tscript.nn.functional writes them) ---------------------------

@row("Gelu")
def _gelu(ctx, node, attrs):
    x = ctx.tensor(node.input[0])
    if attrs.get("approximate", "none") == "tanh":
        inner = ctx.emit("aten::mul", ctx.emit("aten::add", x, ctx.emit("aten::mul", ctx.emit("aten::pow", x, 3),
                                                                             0.044715)), math.sqrt(2 / math.pi))
        return ctx.emit("aten::mul", ctx.emit("aten::mul", x, 0.5), ctx.emit("aten::add", ctx.emit("aten::tanh", inner), 1.0))
    erf = ctx.emit("aten::erf", ctx.emit("aten::mul", x, 1 / math.sqrt(2)))
    return ctx.emit("aten::mul", ctx.emit("aten::mul", x, 0.5), ctx.emit("aten::add", erf, 1.0))


@row("LeakyRelu", "PRelu", "Elu")
def _leaky(ctx, node, attrs):
    x = ctx.tensor(node.input[0])
    if node.op_type == "PRelu":
        _need(ctx, node, 2)
        negative = ctx.emit("aten::mul", x, ctx.tensor(node.input[1]))
    elif node.op_type == "Elu":
        negative = ctx.emit("aten::mul", ctx.emit("aten::expm1", x), float(attrs.get("alpha", 1.0)))
    else:
        negative = ctx.emit("aten::mul", x, float(attrs.get("alpha", 0.01)))
    return ctx.emit("aten::where", ctx.emit("aten::gt", x, 0), x, negative)


@row("HardSigmoid", "HardSwish")
def _hard(ctx, node, attrs):
    x = ctx.tensor(node.input[0])
    alpha, beta = (1 / 6, 0.5) if node.op_type == "HardSwish" else (attrs.get("alpha", 0.2), attrs.get("beta", 0.5))
    gate = ctx.emit("aten::clamp", ctx.emit("aten::add", ctx.emit("aten::mul", x, float(alpha)), float(beta)), 0.0, 1.0)
    return ctx.emit("aten::mul", x, gate) if node.op_type == "HardSwish" else gate


@row("Softplus", "Softsign")
def _soft(ctx, node, attrs):
    x = ctx.tensor(node.input[0])
    if node.op_type == "Softsign":
        return ctx.emit("aten::div", x, ctx.emit("aten::add", ctx.emit("aten::abs", x), 1.0))
    # log(1 + e^x), computed as x past 20 where e^x would overflow float32 (as PyTorch's softplus)
    return ctx.emit("aten::where", ctx.emit("aten::gt", x, 20.0), x,
                    ctx.emit("aten::log1p", ctx.emit("aten::exp", ctx.emit("aten::clamp", x, None, 20.0))))


@row("Softmax", "LogSoftmax")
def _softmax(ctx, node, attrs):
    x = ctx.tensor(node.input[0])
    kind = "aten::softmax" if node.op_type == "Softmax" else "aten::log_softmax"
    axis = attrs.get("axis", -1 if ctx.opset >= 13 else 1)
    if ctx.opset >= 13:
        return ctx.emit(kind, x, axis)
    rank = ctx.rank(x)
    axis = _norm(ctx, axis, rank)
    if axis == rank - 1:
        return ctx.emit(kind, x, -1)
    # before opset 13: over the dims from `axis` on, flattened into one
    sizes = [ctx.size(x, d) for d in range(rank)]
    flat = ctx.emit(kind, ctx.emit("aten::flatten", x, axis, -1), -1)
    return ctx.emit("aten::reshape", flat, sizes)


# -- linear algebra, convolution, normalization, pooling --------------------------------------------------

@row("MatMul")
def _matmul(ctx, node, attrs):
    _need(ctx, node, 2)
    return ctx.emit("aten::matmul", ctx.tensor(node.input[0]), ctx.tensor(node.input[1]))


@row("Gemm")
def _gemm(ctx, node, attrs):
    """alpha * A' B' + beta * C: a linear layer when B' is a weight read transposed (PyTorch's layout)."""
    _need(ctx, node, 2)
    a, b = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    c = ctx.tensor(node.input[2]) if _opt(node, 2) else None
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    if attrs.get("transA", 0):
        a = ctx.emit("aten::t", a)
    if not attrs.get("transB", 0):
        b = b.T.copy() if isinstance(b, np.ndarray) else ctx.emit("aten::t", b)
    if alpha != 1.0:
        b = b * np.array(alpha, b.dtype) if isinstance(b, np.ndarray) else ctx.emit("aten::mul", b, alpha)
    if c is not None and beta != 1.0:
        c = c * np.array(beta, c.dtype) if isinstance(c, np.ndarray) else ctx.emit("aten::mul", c, beta)
    if c is None or (ctx.shape(c) is not None and len(ctx.shape(c)) == 1):
        return ctx.emit("aten::linear", a, b, c)
    return ctx.emit("aten::add", ctx.emit("aten::linear", a, b, None), c)


def _pads(ctx, attrs, n: int, x, kernel: list, strides: list, dilations: list) -> list[int]:
    """The padding per spatial dim, begins then ends (explicit pads, or auto_pad on static sizes)."""
    auto = attrs.get("auto_pad", "NOTSET")
    if auto == "NOTSET":
        pads = list(attrs.get("pads", [0] * 2 * n))
    elif auto == "VALID":
        pads = [0] * 2 * n
    else:
        begin, end = [], []
        for d in range(n):
            size = ctx.shape(x)[2 + d]
            if not isinstance(size, int):
                raise ctx.error(f"auto_pad={auto} needs static spatial sizes")
            total = max(0, (-(-size // strides[d]) - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - size)
            small, big = total // 2, total - total // 2
            begin.append(small if auto == "SAME_UPPER" else big)
            end.append(big if auto == "SAME_UPPER" else small)
        pads = begin + end
    if len(pads) != 2 * n:
        raise ctx.error(f"pads {pads} for {n} spatial dims")
    return [int(p) for p in pads]


def _symmetric(ctx, pads: list[int], n: int) -> list[int]:
    if pads[:n] != pads[n:]:
        raise ctx.error(f"asymmetric padding {pads} is not supported here")
    return pads[:n]


def _pad_zeros(ctx, x, pads: list[int], n: int):
    """(x with the asymmetric part of `pads` added as zeros, the symmetric padding left)."""
    common = [min(b, e) for b, e in zip(pads[:n], pads[n:])]
    for d in range(n):
        for extra, first in ((pads[d] - common[d], True), (pads[n + d] - common[d], False)):
            if extra:
                sizes = [extra if i == 2 + d else ctx.size(x, i) for i in range(ctx.rank(x))]
                zeros = ctx.emit("aten::zeros", sizes, dtype=ctx.dtype(x))
                x = ctx.emit("aten::cat", [zeros, x] if first else [x, zeros], 2 + d)
    return x, common


def _window(ctx, node, attrs, x, weight_shape=None) -> tuple:
    """(spatial rank, kernel, strides, pads (begins, ends), dilations) of a Conv or pooling node."""
    kernel = attrs.get("kernel_shape")
    if kernel is None and weight_shape is not None:
        kernel = list(weight_shape[2:])
    if kernel is None:
        raise ctx.error("kernel_shape is missing")
    n = len(kernel)
    strides = list(attrs.get("strides", [1] * n))
    dilations = list(attrs.get("dilations", [1] * n))
    return n, [int(k) for k in kernel], strides, _pads(ctx, attrs, n, x, kernel, strides, dilations), dilations


@row("Conv")
def _conv(ctx, node, attrs):
    _need(ctx, node, 2)
    x, w = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    b = ctx.tensor(node.input[2]) if _opt(node, 2) else None
    n, _, strides, pads, dilations = _window(ctx, node, attrs, x, ctx.shape(w))
    if n not in (1, 2):
        raise ctx.error(f"Conv over {n} spatial dims (tscript has conv1d and conv2d)")
    x, pads = _pad_zeros(ctx, x, pads, n)  # SAME padding of an even total, as TensorFlow converters write
    kind = "aten::conv1d" if n == 1 else "aten::conv2d"
    return ctx.emit(kind, x, w, b, strides, pads, dilations, attrs.get("group", 1))


@row("ConvTranspose")
def _conv_transpose(ctx, node, attrs):
    _need(ctx, node, 2)
    x, w = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    b = ctx.tensor(node.input[2]) if _opt(node, 2) else None
    if "output_shape" in attrs or attrs.get("auto_pad", "NOTSET") != "NOTSET":
        raise ctx.error("ConvTranspose with output_shape or auto_pad is not supported (give pads)")
    n, _, strides, pads, dilations = _window(ctx, node, attrs, x, ctx.shape(w))
    if n != 2:
        raise ctx.error(f"ConvTranspose over {n} spatial dims (tscript has conv_transpose2d)")
    pads = _symmetric(ctx, pads, n)
    out_pad = list(attrs.get("output_padding", [0, 0]))
    return ctx.emit("aten::conv_transpose2d", x, w, b, strides, pads, out_pad, attrs.get("group", 1), dilations)


@row("BatchNormalization")
def _batch_norm(ctx, node, attrs):
    """Inference form: x * a + b per channel, a = scale / sqrt(var + eps), b = bias - mean * a (folds
    into the convolution before it when the statistics are constants)."""
    _need(ctx, node, 5)
    if len([o for o in node.output if o]) > 1 or attrs.get("training_mode", 0):
        raise ctx.error("BatchNormalization in training mode is not supported")
    x = ctx.tensor(node.input[0])
    scale, bias, mean, var = (ctx.tensor(n) for n in node.input[1:5])
    eps = float(attrs.get("epsilon", 1e-5))
    a = ctx.emit("aten::mul", scale, ctx.emit("aten::rsqrt", ctx.emit("aten::add", var, eps)))
    b = ctx.emit("aten::sub", bias, ctx.emit("aten::mul", mean, a))
    channel = [-1] + [1] * (ctx.rank(x) - 2)
    a, b = ctx.emit("aten::reshape", a, channel), ctx.emit("aten::reshape", b, channel)
    return ctx.emit("aten::add", ctx.emit("aten::mul", x, a), b)


@row("LayerNormalization")
def _layer_norm(ctx, node, attrs):
    """(x - mean) * rsqrt(var + eps) * scale + bias over the dims from `axis` on (as nn.LayerNorm)."""
    _need(ctx, node, 2)
    if len([o for o in node.output if o]) > 1:
        raise ctx.error("LayerNormalization's Mean and InvStdDev outputs are not supported")
    x, scale = ctx.tensor(node.input[0]), ctx.tensor(node.input[1])
    axis = attrs.get("axis", -1)
    dims = list(range(axis, 0)) if axis < 0 else list(range(axis, ctx.rank(x)))
    mean = ctx.emit("aten::mean", x, dims, True)
    var = ctx.emit("aten::var", x, dims, correction=0, keepdim=True)
    rstd = ctx.emit("aten::rsqrt", ctx.emit("aten::add", var, float(attrs.get("epsilon", 1e-5))))
    y = ctx.emit("aten::mul", ctx.emit("aten::mul", ctx.emit("aten::sub", x, mean), rstd), scale)
    return ctx.emit("aten::add", y, ctx.tensor(node.input[2])) if _opt(node, 2) else y


@row("MaxPool", "AveragePool")
def _pool(ctx, node, attrs):
    x = ctx.tensor(node.input[0])
    if len([o for o in node.output if o]) > 1:
        raise ctx.error("MaxPool's Indices output is not supported")
    n, kernel, strides, pads, dilations = _window(ctx, node, attrs, x)
    if n != 2:
        raise ctx.error(f"{node.op_type} over {n} spatial dims (tscript pools 2-d)")
    pads = _symmetric(ctx, pads, n)
    ceil = bool(attrs.get("ceil_mode", 0))
    if node.op_type == "MaxPool":
        if attrs.get("storage_order", 0):
            raise ctx.error("MaxPool with storage_order=1 is not supported")
        return ctx.emit("aten::max_pool2d", x, kernel, strides, pads, dilations, ceil)
    if dilations != [1, 1]:
        raise ctx.error("AveragePool with dilations is not supported")
    return ctx.emit("aten::avg_pool2d", x, kernel, strides, pads, ceil, bool(attrs.get("count_include_pad", 0)))


@row("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ctx, node, attrs):
    x = ctx.tensor(node.input[0])
    rank = ctx.rank(x)
    if node.op_type == "GlobalAveragePool" and rank == 4:
        return ctx.emit("aten::adaptive_avg_pool2d", x, [1, 1])
    kind = "aten::mean" if node.op_type == "GlobalAveragePool" else "aten::amax"
    return ctx.emit(kind, x, list(range(2, rank)), True)


# -- reductions ------------------------------------------------------------------------------------------

_REDUCE = {"ReduceMean": "aten::mean", "ReduceSum": "aten::sum", "ReduceMax": "aten::amax",
           "ReduceMin": "aten::amin", "ReduceLogSumExp": "aten::logsumexp", "ReduceSumSquare": "aten::sum",
           "ReduceL2": "aten::sum", "ReduceL1": "aten::sum", "ReduceProd": "aten::prod"}


@row(*_REDUCE)
def _reduce(ctx, node, attrs):
    x = ctx.tensor(node.input[0])
    axes = _axes(ctx, node, attrs, 13 if node.op_type == "ReduceSum" else 18)
    keep = bool(attrs.get("keepdims", 1))
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            return x
        axes = list(range(ctx.rank(x)))
    if node.op_type in ("ReduceSumSquare", "ReduceL2"):
        x = ctx.emit("aten::mul", x, x)
    elif node.op_type == "ReduceL1":
        x = ctx.emit("aten::abs", x)
    if node.op_type == "ReduceProd":
        return _prod(ctx, x, axes, keep)
    out = ctx.emit(_REDUCE[node.op_type], x, axes, keep)
    return ctx.emit("aten::sqrt", out) if node.op_type == "ReduceL2" else out


def _prod(ctx, x, axes: list[int], keep: bool):
    rank = ctx.rank(x)
    for a in sorted((_norm(ctx, a, rank) for a in axes), reverse=True):
        x = ctx.emit("aten::prod", x, a, keep)
    return x


@row("ArgMax", "ArgMin")
def _argmax(ctx, node, attrs):
    if attrs.get("select_last_index", 0):
        raise ctx.error("select_last_index=1 is not supported")
    kind = "aten::argmax" if node.op_type == "ArgMax" else "aten::argmin"
    return ctx.emit(kind, ctx.tensor(node.input[0]), attrs.get("axis", 0), bool(attrs.get("keepdims", 1)))


@row("CumSum")
def _cumsum(ctx, node, attrs):
    _need(ctx, node, 2)
    if attrs.get("exclusive", 0) or attrs.get("reverse", 0):
        raise ctx.error("CumSum with exclusive or reverse is not supported")
    return ctx.emit("aten::cumsum", ctx.tensor(node.input[0]), int(ctx.const(node.input[1], "axis").item()))


@row("TopK")
def _topk(ctx, node, attrs):
    _need(ctx, node, 2)
    k = int(ctx.const(node.input[1], "K").reshape(-1)[0])
    values, indices = ctx.emit("aten::topk", ctx.tensor(node.input[0]), k, attrs.get("axis", -1),
                               bool(attrs.get("largest", 1)), bool(attrs.get("sorted", 1)))
    return [values, indices]


@row("Trilu")
def _trilu(ctx, node, attrs):
    k = int(ctx.const(node.input[1], "k").item()) if _opt(node, 1) else 0
    kind = "aten::triu" if attrs.get("upper", 1) else "aten::tril"
    return ctx.emit(kind, ctx.tensor(node.input[0]), k)


@row("Split")
def _split(ctx, node, attrs):
    x = ctx.tensor(node.input[0])
    n = len(node.output)
    axis = _norm(ctx, attrs.get("axis", 0), ctx.rank(x))
    sizes = attrs.get("split") if ctx.opset < 13 else (_items(ctx, _opt(node, 1)) if _opt(node, 1) else None)
    size = ctx.shape(x)[axis]
    if sizes is None and isinstance(size, int):
        piece = -(-size // n)
        sizes = [min(piece, size - i * piece) for i in range(n)]
    if sizes is None:
        return ctx.unpack(ctx.emit("aten::chunk", x, n, axis), n)
    if len(sizes) != n:
        raise ctx.error(f"{len(sizes)} split sizes for {n} outputs")
    return ctx.unpack(ctx.emit("aten::split", x, [int(s) for s in sizes], axis), n)


@row("Einsum")
def _einsum(ctx, node, attrs):
    return ctx.emit("aten::einsum", attrs.get("equation", ""), [ctx.tensor(n) for n in node.input if n])


ROWS["LSTM"] = ROWS["GRU"] = ROWS["RNN"] = recurrent
