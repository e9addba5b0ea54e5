"""Convolution and pooling: `im2col`/`col2im` (F.unfold / F.fold), `conv1d`, `conv2d`,
`conv_transpose2d`, `max_pool2d` (with indices), `avg_pool2d` (and its adjoint) and
`adaptive_avg_pool2d`, written for any number of spatial dims (conv_nd.py registers the 3-D ops
and conv_transpose1d with the same functions).

Every kernel is vectorised. The sliding windows of a padded (N, C, *spatial) array are one strided
view (N, C, *kernel, *out) (`_windows`), so a convolution is one im2col copy plus one GEMM per
group; the adjoints (col2im, transposed convolution, average-pooling backward) add the blocks back
with a loop over the kernel's positions only, never over pixels or the batch. Inputs may be unbatched (no N dim),
as in PyTorch; the rules validate every argument with PyTorch's messages and the kernels call
them, so eager calls, the executor and the compiler raise the same errors.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from math import prod

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import dtypes as dt
from ..errors import OpRuntimeError, fmt_shape
from . import accelerated
from .registry import register
from .rules import check_float

# -- argument normalisation ----------------------------------------------------------------------

def _ints(value) -> tuple:
    """An int or a sequence of ints as a tuple. Anything else is a TypeError, which the dispatcher
    turns into the schema's message naming the argument."""
    if isinstance(value, (int, np.integer)):
        return (int(value),)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, (int, np.integer)) for v in value):
        raise TypeError(f"expected an int or a sequence of ints, got {value!r}")
    return tuple(int(v) for v in value)


def conv_param(op: str, name: str, value, n: int) -> tuple:
    """A convolution's int-or-list argument as `n` ints (a single value is repeated)."""
    v = _ints(value)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise OpRuntimeError(f"{op}: expected {name} to be a single integer value or a list of {n} values to "
                             f"match the convolution dimensions, but got {name}={list(v)}")
    return v


_POOL_FORMS = {"kernel_size": "must either be a single int, or a tuple of {} ints",
               "stride": "must either be omitted, a single int, or a tuple of {} ints",
               "padding": "must either be a single int, or a tuple of {} ints",
               "dilation": "must be either a single int, or a tuple of {} ints"}
_AVG3D_FORMS = {"kernel_size": "must be a single int, or a tuple of three ints",  # PyTorch words these without "either"
                "stride": "must be omitted, a single int, or a tuple of three ints",
                "padding": "must be a single int, or a tuple of three ints"}


def pool_param(op: str, name: str, value, nd: int = 2) -> tuple:
    """A pooling argument as `nd` ints (PyTorch's message names the accepted forms)."""
    v = _ints(value)
    if len(v) not in (1, nd):
        form = _AVG3D_FORMS[name] if op.startswith("avg_pool3d") else _POOL_FORMS[name].format(_NUMBERS[nd])
        raise OpRuntimeError(f"{op}: {name} {form}")
    return v * nd if len(v) == 1 else v


_NUMBERS = {2: "two", 3: "three"}


def _fold_param(name: str, value) -> tuple:
    v = _ints(value)
    if len(v) not in (1, 2):
        raise OpRuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
    return v * 2 if len(v) == 1 else v


def _c_name(dtype) -> str:
    """The C type name PyTorch prints in conv's bias-dtype message."""
    return dt.C_NAMES[dtype]


def _pair_text(values, sep: str = " x ") -> str:
    return "(" + sep.join(str(v) for v in values) + ")"


# -- geometry ------------------------------------------------------------------------------------

def conv_out_size(size, k: int, s: int, p: int, d: int):
    """How many windows of `k` taps (dilation `d`) fit in `size` + 2 `p` at stride `s`."""
    if isinstance(size, str):
        return f"({size}+{2 * p - d * (k - 1) - 1})//{s}+1"
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _pool_out_size(size, k: int, s: int, p: int, d: int, ceil_mode: bool):
    """PyTorch's pooling output length: in ceil mode the last window must start inside the
    input or its left padding."""
    if isinstance(size, str):
        return f"pool({size},{k},{s},{p},{d},{int(ceil_mode)})"
    n = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (n - 1) * s >= size + p:
        n -= 1
    return n


def _batched(x) -> tuple:
    """The shape of `x` with a batch dim of 1 added when it is unbatched (as PyTorch's messages show it)."""
    return tuple(x.shape) if x.ndim == 4 else (1,) + tuple(x.shape)


def _known(*sizes) -> bool:
    return all(isinstance(s, int) for s in sizes)


# -- array helpers -------------------------------------------------------------------------------

_ALL = (slice(None), slice(None))  # the batch and channel dims of an index


def _with_batch(x, nd: int):
    """An (N, C, *spatial) array: `x` with a batch dim of 1 added when it is unbatched."""
    return x if x.ndim == nd + 2 else x[None]


def _pad(x, pads, value=0):
    """(N, C, *spatial) `x` inside a border of `value`; `pads` = ((before, after), ...) per spatial dim."""
    if not any(before or after for before, after in pads):
        return x
    out = np.full(x.shape[:2] + tuple(s + b + a for s, (b, a) in zip(x.shape[2:], pads)), value, x.dtype)
    out[_ALL + tuple(slice(b, b + s) for s, (b, _) in zip(x.shape[2:], pads))] = x
    return out


def _windows(xp, kernel, dilation, stride, out):
    """The sliding blocks of a padded (N, C, *spatial) array: a read-only view (N, C, *kernel, *out)."""
    steps = xp.strides[2:]
    return as_strided(xp, xp.shape[:2] + tuple(kernel) + tuple(out),
                      xp.strides[:2] + tuple(s * d for s, d in zip(steps, dilation))
                      + tuple(s * t for s, t in zip(steps, stride)), writeable=False)


def _im2col(x, kernel, dilation, padding, stride, out):
    """(N, C, H, W) -> columns, one per output position, in a fresh array: (N, C*kh*kw, OH*OW)
    (F.unfold's layout); the kernel library's copy when installed (accelerated.py)."""
    cols = accelerated.call("im2col", x, kernel, dilation, padding, stride, out)
    if cols is not None:
        return cols
    n, c = x.shape[:2]
    windows = _windows(_pad(x, ((padding[0],) * 2, (padding[1],) * 2)), kernel, dilation, stride, out)
    cols = np.empty((n, c * kernel[0] * kernel[1], out[0] * out[1]), x.dtype)
    np.copyto(cols.reshape((n, c) + tuple(kernel) + tuple(out)), windows)
    return cols


def _fold(blocks, size, dilation, padding, stride):
    """Add blocks (N, C, *kernel, *out) back onto the (N, C, *size) input they were cut from (the
    adjoint of `_windows`); parts falling into the padding are dropped."""
    nd = len(size)
    kernel, out = blocks.shape[2:2 + nd], blocks.shape[2 + nd:]
    span = [d * (k - 1) + s * (o - 1) + 1 for k, o, d, s in zip(kernel, out, dilation, stride)]
    full = np.zeros(blocks.shape[:2] + tuple(max(n + 2 * p, w) for n, p, w in zip(size, padding, span)),
                    blocks.dtype)
    if all(out):
        for tap in product(*map(range, kernel)):
            where = tuple(slice(t * d, t * d + s * (o - 1) + 1, s) for t, d, s, o in zip(tap, dilation, stride, out))
            full[_ALL + where] += blocks[_ALL + tap]
    return np.ascontiguousarray(full[_ALL + tuple(slice(p, p + n) for p, n in zip(padding, size))])


# -- im2col / col2im -----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Blocks:
    """Normalised arguments of a sliding-block op and the block grid they give."""
    kernel: tuple
    dilation: tuple
    padding: tuple
    stride: tuple
    grid: tuple       # number of blocks along H and W


def _check_block_params(kernel, dilation, padding, stride) -> None:
    checks = ((kernel, lambda v: v > 0, "kernel size should be greater than zero", "kernel"),
              (stride, lambda v: v > 0, "stride should be greater than zero", "stride"),
              (dilation, lambda v: v > 0, "dilation should be greater than zero", "dilation"),
              (padding, lambda v: v >= 0, "padding should be non-negative", "pad"))
    for values, ok, text, label in checks:
        if not all(ok(v) for v in values):
            names = ("kernel_height", "kernel_width") if label == "kernel" else \
                (f"{label}_height", f"{label}_width")
            raise OpRuntimeError(f"{text}, but got {names[0]}: {values[0]} {names[1]}: {values[1]}")


def _blocks(kernel_size, dilation, padding, stride, size=None) -> _Blocks:
    k, d, p, s = (_fold_param(n, v) for n, v in (("kernel_size", kernel_size), ("dilation", dilation),
                                                 ("padding", padding), ("stride", stride)))
    _check_block_params(k, d, p, s)
    grid = tuple(conv_out_size(size[i], k[i], s[i], p[i], d[i]) for i in range(2)) if size else ()
    return _Blocks(k, d, p, s, grid)


def _im2col_geometry(self, kernel_size, dilation, padding, stride) -> _Blocks:
    if self.ndim not in (3, 4) or 0 in tuple(self.shape[-3:]):
        raise OpRuntimeError("im2col: Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                             f"and other non-zero dimensions for input, but got: {fmt_shape(self.shape)}")
    b = _blocks(kernel_size, dilation, padding, stride, tuple(self.shape[-2:]))
    if _known(*b.grid) and min(b.grid) < 1:
        raise OpRuntimeError(f"im2col: Given input with spatial size {tuple(self.shape[-2:])}, kernel_size="
                             f"{b.kernel}, dilation={b.dilation}, padding={b.padding}, calculated shape of "
                             f"the array of sliding blocks as {b.grid}, but its components must be at least one.")
    return b


def _im2col_shape(self, kernel_size, dilation, padding, stride):
    b = _im2col_geometry(self, kernel_size, dilation, padding, stride)
    c = self.shape[-3]
    rows = c * b.kernel[0] * b.kernel[1] if _known(c) else f"{c}*{b.kernel[0] * b.kernel[1]}"
    cols = b.grid[0] * b.grid[1] if _known(*b.grid) else f"{b.grid[0]}*{b.grid[1]}"
    return tuple(self.shape[:-3]) + (rows, cols)


def _float_dtype(op: str):
    def rule(self, *rest):
        check_float(op, self.dtype)
        return self.dtype
    return rule


@register("aten::im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor",
          shape=_im2col_shape, dtype=_float_dtype("im2col"))
def im2col(self, kernel_size, dilation, padding, stride):
    """F.unfold: the sliding blocks of (N, C, H, W) as columns (N, C*kh*kw, L)."""
    check_float("im2col", self.dtype)
    b = _im2col_geometry(self, kernel_size, dilation, padding, stride)
    out = _im2col(self if self.ndim == 4 else self[None], b.kernel, b.dilation, b.padding, b.stride, b.grid)
    return out if self.ndim == 4 else out[0]


def _im2col_rows_shape(self, kernel_size, dilation, padding, stride):
    if self.ndim != 4:
        raise OpRuntimeError(f"_im2col_rows: expected a 4D (batch mode) tensor, but got: {fmt_shape(self.shape)}")
    n, rows, cols = _im2col_shape(self, kernel_size, dilation, padding, stride)
    return rows, n, cols


@register("aten::_im2col_rows(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) "
          "-> Tensor", shape=_im2col_rows_shape, dtype=_float_dtype("_im2col_rows"))
def _im2col_rows(self, kernel_size, dilation, padding, stride):
    """im2col(self).transpose(0, 1), C-contiguous: (C*kh*kw, N, L), each row every image's positions
    in turn, so a convolution's weight gradient is one GEMM over N*L without a transposing copy."""
    _im2col_rows_shape(self, kernel_size, dilation, padding, stride)
    return np.ascontiguousarray(im2col(self, kernel_size, dilation, padding, stride).transpose(1, 0, 2))


def _col2im_geometry(self, output_size, kernel_size, dilation, padding, stride) -> _Blocks:
    if self.ndim not in (2, 3) or 0 in tuple(self.shape[-2:]):
        raise OpRuntimeError("col2im: Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size "
                             f"and non-zero dimensions for input, but got: {fmt_shape(self.shape)}")
    size = _fold_param("output_size", output_size)
    b = _blocks(kernel_size, dilation, padding, stride, size)
    rows, length = self.shape[-2:]
    taps = b.kernel[0] * b.kernel[1]
    if _known(rows) and rows % taps:
        raise OpRuntimeError(f"col2im: Expected size of input's dimension 1 to be divisible by the product of "
                             f"kernel_size, but got input.size(1)={rows} and kernel_size={b.kernel}.")
    if _known(length, *b.grid) and (min(b.grid) < 1 or length != b.grid[0] * b.grid[1]):
        raise OpRuntimeError(f"col2im: Given output_size={size}, kernel_size={b.kernel}, dilation={b.dilation}, "
                             f"padding={b.padding}, stride={b.stride}, expected size of input's dimension 2 to "
                             f"match the calculated number of sliding blocks {b.grid[0]} * {b.grid[1]} = "
                             f"{b.grid[0] * b.grid[1]}, but got input.size(2)={length}.")
    return b


def _col2im_shape(self, output_size, kernel_size, dilation, padding, stride):
    b = _col2im_geometry(self, output_size, kernel_size, dilation, padding, stride)
    rows = self.shape[-2]
    c = rows // (b.kernel[0] * b.kernel[1]) if _known(rows) else f"{rows}//{b.kernel[0] * b.kernel[1]}"
    return tuple(self.shape[:-2]) + (c,) + _fold_param("output_size", output_size)


@register("aten::col2im(Tensor self, int[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, "
          "int[2] stride) -> Tensor", shape=_col2im_shape, dtype=_float_dtype("col2im"))
def col2im(self, output_size, kernel_size, dilation, padding, stride):
    """F.fold: sum columns (N, C*kh*kw, L) back into (N, C, H, W) (the adjoint of im2col)."""
    check_float("col2im", self.dtype)
    b = _col2im_geometry(self, output_size, kernel_size, dilation, padding, stride)
    cols = self if self.ndim == 3 else self[None]
    n, rows = cols.shape[:2]
    blocks = cols.reshape((n, rows // (b.kernel[0] * b.kernel[1])) + b.kernel + b.grid)
    out = _fold(blocks, _fold_param("output_size", output_size), b.dilation, b.padding, b.stride)
    return out if self.ndim == 3 else out[0]


# -- convolutions --------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Conv:
    """Normalised arguments of a convolution and its output's spatial size."""
    stride: tuple
    padding: tuple
    dilation: tuple
    output_padding: tuple
    out: tuple


_DIMS = {1: ("2D", "3D"), 2: ("3D", "4D"), 3: ("4D", "5D")}


def _check_conv_input(op: str, nd: int, input, weight) -> None:
    if input.ndim not in (nd + 1, nd + 2):
        unbatched, batched = _DIMS[nd]
        raise OpRuntimeError(f"Expected {unbatched} (unbatched) or {batched} (batched) input to {op}, but got "
                             f"input of size: {fmt_shape(input.shape)}")
    if weight.ndim != nd + 2:
        raise OpRuntimeError(f"{op}: expected weight to be {nd + 2}-dimensional, but got weight of size "
                             f"{fmt_shape(weight.shape)}")


def _check_conv_params(stride, padding, dilation, groups) -> None:
    if any(p < 0 for p in padding):
        raise OpRuntimeError("negative padding is not supported")
    if any(s <= 0 for s in stride):
        raise OpRuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise OpRuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if groups <= 0:
        raise OpRuntimeError("non-positive groups is not supported")


def _check_conv_weight(input, weight, bias, groups: int, transposed: bool) -> None:
    w, x = fmt_shape(weight.shape), fmt_shape(_batched(input))
    first, channels = weight.shape[0], input.shape[-weight.ndim + 1]
    if _known(first) and first < groups:
        raise OpRuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, "
                             f"but got weight of size {w} instead")
    if _known(first) and first % groups:
        raise OpRuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                             f"but got weight of size {w} instead")
    expected = first if transposed else weight.shape[1] * groups if _known(weight.shape[1]) else channels
    if _known(channels, expected) and channels != expected:
        given = "transposed=1" if transposed else f"groups={groups}"
        raise OpRuntimeError(f"Given {given}, weight of size {w}, expected input{x} to have {expected} channels, "
                             f"but got {channels} channels instead")
    out_channels = first if not transposed else weight.shape[1] * groups if _known(weight.shape[1]) else None
    if bias is not None and (bias.ndim != 1 or (_known(bias.shape[0], out_channels)
                                                and bias.shape[0] != out_channels)):
        given = "transposed=1, weight" if transposed else "weight"
        raise OpRuntimeError(f"Given {given} of size {w}, expected bias to be 1-dimensional with {out_channels} "
                             f"elements, but got bias of size {fmt_shape(bias.shape)} instead")


def _conv_geometry(op: str, nd: int, input, weight, bias, stride, padding, dilation, groups) -> _Conv:
    _check_conv_input(op, nd, input, weight)
    stride, padding, dilation = (conv_param(op, n, v, nd) for n, v in
                                 (("stride", stride), ("padding", padding), ("dilation", dilation)))
    _check_conv_params(stride, padding, dilation, groups)
    _check_conv_weight(input, weight, bias, groups, transposed=False)
    size, kernel = tuple(input.shape[-nd:]), tuple(weight.shape[-nd:])
    padded = tuple(s + 2 * p if _known(s) else s for s, p in zip(size, padding))
    effective = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel))
    if any(_known(p) and p < e for p, e in zip(padded, effective)):
        raise OpRuntimeError(f"Calculated padded input size per channel: {_pair_text(padded)}. Kernel size: "
                             f"{_pair_text(effective)}. Kernel size can't be greater than actual input size")
    out = tuple(conv_out_size(*a) for a in zip(size, kernel, stride, padding, dilation))
    return _Conv(stride, padding, dilation, (0,) * nd, out)


def _conv_shape(op: str, nd: int):
    def rule(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        g = _conv_geometry(op, nd, input, weight, bias, stride, padding, dilation, groups)
        return tuple(input.shape[:-nd - 1]) + (weight.shape[0],) + g.out
    return rule


def _conv_dtype(op: str, kernel_name: str):
    def rule(input, weight, bias=None, *rest):
        if input.dtype == dt.bool_:
            raise OpRuntimeError(f"{op}: \"{kernel_name}\" not implemented for 'Bool'")
        if weight.dtype != input.dtype:
            raise OpRuntimeError(f"{op}: expected scalar type {dt.TORCH_NAMES[input.dtype]} but found "
                                 f"{dt.TORCH_NAMES[weight.dtype]}")
        if bias is not None and bias.dtype != input.dtype:
            raise OpRuntimeError(f"{op}: Input type ({_c_name(input.dtype)}) and bias type "
                                 f"({_c_name(bias.dtype)}) should be the same")
        return input.dtype
    return rule


def _channels_last(y, nd: int):
    """(C, N, *spatial) -> (N, C, *spatial), contiguous."""
    return np.ascontiguousarray(y.transpose((1, 0) + tuple(range(2, nd + 2))))


def _conv(x, weight, bias, g: _Conv, groups: int):
    """Batched N-d convolution: the kernel library's for 1-D and 2-D when installed (accelerated.py;
    a 1-D one as 2-D over height-1 images), else numpy's (`_conv_numpy`)."""
    y = None
    if x.ndim == 3:
        y = accelerated.call("conv2d", x[:, :, None], weight[:, :, None], bias, (1,) + g.stride, (0,) + g.padding,
                             (1,) + g.dilation, groups, (1,) + g.out)
        y = None if y is None else y[:, :, 0]
    elif x.ndim == 4:
        y = accelerated.call("conv2d", x, weight, bias, g.stride, g.padding, g.dilation, groups, g.out)
    return _conv_numpy(x, weight, bias, g, groups) if y is None else y


def _conv_numpy(x, weight, bias, g: _Conv, groups: int):
    """Batched N-d convolution: one im2col copy (C*taps, N*L) and one GEMM per group (weights
    (O/G, K) times columns (K, N*L)); a single large GEMM is what BLAS does fastest."""
    nd = x.ndim - 2
    (n, c), o, kernel = x.shape[:2], weight.shape[0], weight.shape[2:]
    win = _windows(_pad(x, tuple((p, p) for p in g.padding)), kernel, g.dilation, g.stride, g.out)
    cols = np.empty((c,) + kernel + (n,) + g.out, x.dtype)
    np.copyto(cols, win.transpose((1,) + tuple(range(2, nd + 2)) + (0,) + tuple(range(nd + 2, 2 * nd + 2))))
    rows = c // groups * prod(kernel)
    y = np.matmul(weight.reshape(groups, o // groups, rows), cols.reshape(groups, rows, -1)).reshape((o, n) + g.out)
    if bias is not None:
        y += bias.reshape((-1,) + (1,) * (nd + 1))
    return _channels_last(y, nd)


def _conv_kernel_name(nd: int) -> str:
    return f"slow_conv{max(nd, 2)}d_cpu"  # PyTorch runs conv1d as a 2-D convolution


def _conv_kernel(op: str, nd: int):
    def kernel(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        _conv_dtype(op, _conv_kernel_name(nd))(input, weight, bias)
        g = _conv_geometry(op, nd, input, weight, bias, stride, padding, dilation, groups)
        y = _conv(_with_batch(input, nd), weight, bias, g, groups)
        return y if input.ndim == nd + 2 else y[0]
    kernel.__doc__ = f"{nd}-D cross-correlation of (N, C, *spatial) with (O, C/groups, *kernel) weights, plus bias."
    return kernel


def register_conv(nd: int):
    """Register aten::conv{nd}d."""
    op = f"conv{nd}d"
    return register(f"aten::{op}(Tensor input, Tensor weight, Tensor? bias=None, int[{nd}] stride=1, "
                    f"int[{nd}] padding=0, int[{nd}] dilation=1, int groups=1) -> Tensor",
                    shape=_conv_shape(op, nd), dtype=_conv_dtype(op, _conv_kernel_name(nd)))(_conv_kernel(op, nd))


conv2d = register_conv(2)
conv1d = register_conv(1)


# -- transposed convolution ----------------------------------------------------------------------

_AXES = {1: ("width",), 2: ("height", "width"), 3: ("depth", "height", "width")}


def _output_padding_text(nd: int, output_padding, stride, dilation) -> str:
    """PyTorch's listing (a 1-D op reports itself as 2-D with a height of one)."""
    values = {"output_padding": output_padding, "stride": stride, "dilation": dilation}
    axes = _AXES[max(nd, 2)]
    if nd == 1:
        values = {k: (0 if k == "output_padding" else 1,) + v for k, v in values.items()}
    return " ".join(f"{name}_{axis}: {v}" for name, vs in values.items() for axis, v in zip(axes, vs))


def transposed_geometry(op: str, nd: int, input, weight, bias, stride, padding, output_padding, groups,
                        dilation) -> _Conv:
    """Checked arguments of an N-d transposed convolution and its output's spatial size."""
    _check_conv_input(op, nd, input, weight)
    stride, padding, output_padding, dilation = (
        conv_param(op, n, v, nd) for n, v in (("stride", stride), ("padding", padding),
                                              ("output_padding", output_padding), ("dilation", dilation)))
    _check_conv_params(stride, padding, dilation, groups)
    if any(p < 0 for p in output_padding):
        raise OpRuntimeError("negative output_padding is not supported")
    if any(p >= s and p >= d for p, s, d in zip(output_padding, stride, dilation)):
        raise OpRuntimeError("output padding must be smaller than either stride or dilation, but got "
                             + _output_padding_text(nd, output_padding, stride, dilation))
    _check_conv_weight(input, weight, bias, groups, transposed=True)
    size, kernel = tuple(input.shape[-nd:]), tuple(weight.shape[-nd:])
    out = tuple((h - 1) * s - 2 * p + d * (k - 1) + q + 1 if _known(h) else f"({h}-1)*{s}+{d * (k - 1) + q + 1 - 2 * p}"
                for h, k, s, p, d, q in zip(size, kernel, stride, padding, dilation, output_padding))
    if _known(*out) and min(out) < 1:
        one = (1,) * (nd == 1)  # PyTorch runs 1-D as 2-D and says so
        raise OpRuntimeError(f"Given input size per channel: {_pair_text(one + size)}. Calculated output size per "
                             f"channel: {_pair_text(one + out)}. Output size is too small")
    return _Conv(stride, padding, dilation, output_padding, out)


def _transposed_geometry(input, weight, bias, stride, padding, output_padding, groups, dilation) -> _Conv:
    """transposed_geometry of conv_transpose2d (what the entry's planner asks)."""
    return transposed_geometry("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                               dilation)


def _transposed_shape(op: str, nd: int):
    def rule(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        g = transposed_geometry(op, nd, input, weight, bias, stride, padding, output_padding, groups, dilation)
        channels = weight.shape[1] * groups if _known(weight.shape[1]) else f"{weight.shape[1]}*{groups}"
        return tuple(input.shape[:-nd - 1]) + (channels,) + g.out
    return rule


def _conv_transpose(x, weight, bias, g: _Conv, groups: int):
    """The adjoint of the convolution w.r.t. its input: the kernel library's for 2-D when installed
    (accelerated.py), else one GEMM per group, then fold."""
    y = accelerated.call("conv_transpose2d", x, weight, bias, g.stride, g.padding, g.dilation, groups, g.out) \
        if x.ndim == 4 else None
    return _conv_transpose_numpy(x, weight, bias, g, groups) if y is None else y


def _conv_transpose_numpy(x, weight, bias, g: _Conv, groups: int):
    """The adjoint of the convolution w.r.t. its input: one GEMM per group, then fold."""
    nd = x.ndim - 2
    (n, cin), size = x.shape[:2], x.shape[2:]
    cog, kernel = weight.shape[1], weight.shape[2:]
    taps = weight.reshape(groups, cin // groups, cog * prod(kernel)).transpose(0, 2, 1)
    cols = np.matmul(taps, x.transpose((1, 0) + tuple(range(2, nd + 2))).reshape(groups, cin // groups, -1))
    blocks = cols.reshape((groups * cog,) + kernel + (n,) + size)
    blocks = blocks.transpose((nd + 1, 0) + tuple(range(1, nd + 1)) + tuple(range(nd + 2, 2 * nd + 2)))
    y = _fold(blocks, g.out, g.dilation, g.padding, g.stride)
    if bias is not None:
        y += bias.reshape((-1,) + (1,) * nd)
    return y


def _transposed_kernel(op: str, nd: int):
    def kernel(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        _conv_dtype(op, f"slow_conv_transpose{nd}d_cpu")(input, weight, bias)
        g = transposed_geometry(op, nd, input, weight, bias, stride, padding, output_padding, groups, dilation)
        y = _conv_transpose(_with_batch(input, nd), weight, bias, g, groups)
        return y if input.ndim == nd + 2 else y[0]
    kernel.__doc__ = (f"The adjoint of conv{nd}d w.r.t. its input (\"deconvolution\"); weight is "
                      f"(C_in, C_out/groups, *kernel).")
    return kernel


def register_transposed(nd: int):
    """Register aten::conv_transpose{nd}d."""
    op = f"conv_transpose{nd}d"
    return register(f"aten::{op}(Tensor input, Tensor weight, Tensor? bias=None, int[{nd}] stride=1, "
                    f"int[{nd}] padding=0, int[{nd}] output_padding=0, int groups=1, int[{nd}] dilation=1) -> Tensor",
                    shape=_transposed_shape(op, nd), dtype=_conv_dtype(op, f"slow_conv_transpose{nd}d_cpu"))(
        _transposed_kernel(op, nd))


conv_transpose2d = register_transposed(2)


# -- pooling -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Pool:
    """Normalised pooling arguments and the output's spatial size."""
    kernel: tuple
    stride: tuple
    padding: tuple
    dilation: tuple
    out: tuple

    def pads(self, size) -> tuple:
        """(before, after) padding per spatial dim, the after side long enough for ceil-mode windows."""
        return tuple((p, max(p, (o - 1) * s + d * (k - 1) + 1 - n - p))
                     for n, k, s, p, d, o in zip(size, self.kernel, self.stride, self.padding, self.dilation,
                                                 self.out))


def _check_pool2d_input(op: str, x) -> None:
    if x.ndim not in (3, 4) or 0 in tuple(x.shape[-3:]):
        raise OpRuntimeError(f"{op}: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for "
                             f"input, but got:{fmt_shape(x.shape)}")


def _check_pool3d_input(op: str, x) -> None:
    if x.ndim not in (4, 5):
        raise OpRuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    for d in range(x.ndim - 4, x.ndim):
        if x.shape[d] == 0:
            raise OpRuntimeError(f"{op}: Expected input's non-batch dimensions to have positive length, but input "
                                 f"has a shape of {fmt_shape(x.shape)} and non-batch dimension {d - x.ndim + 4} has "
                                 f"length zero!")


_CHECK_POOL_INPUT = {2: _check_pool2d_input, 3: _check_pool3d_input}  # PyTorch words them differently


def _listed(prefix: str, values) -> str:
    """PyTorch's 'kH: 2 kW: 3' (with a T for depth in 3-D)."""
    return " ".join(f"{prefix}{axis}: {v}" for axis, v in zip("THW"[-len(values):], values))


def _check_pool_params(kernel, stride, padding, dilation) -> None:
    if min(kernel) <= 0:
        raise OpRuntimeError(f"kernel size should be greater than zero, but got {_listed('k', kernel)}")
    if min(stride) == 0:
        raise OpRuntimeError("stride should not be zero")
    if min(stride) < 0:
        raise OpRuntimeError(f"stride should be greater than zero, but got {_listed('d', stride)}")
    if min(dilation) <= 0:
        raise OpRuntimeError(f"dilation should be greater than zero, but got {_listed('dilation', dilation)}")
    for k, p, d in zip(kernel, padding, dilation):
        if p < 0:
            raise OpRuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > (d * (k - 1) + 1) // 2:
            raise OpRuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                                 f"kernel_size={k} and dilation={d}")
    if len(kernel) == 2 and any(p > k // 2 for k, p in zip(kernel, padding)):  # only PyTorch's 2-D kernels ask
        raise OpRuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padW = "
                             f"{padding[1]}, padH = {padding[0]}, kW = {kernel[1]}, kH = {kernel[0]}")


def _pool_geometry(op: str, self, kernel_size, stride, padding, dilation, ceil_mode, nd: int = 2) -> _Pool:
    _CHECK_POOL_INPUT[nd](op, self)
    kernel = pool_param(op, "kernel_size", kernel_size, nd)
    stride = pool_param(op, "stride", stride, nd) if len(_ints(stride)) else kernel
    padding, dilation = pool_param(op, "padding", padding, nd), pool_param(op, "dilation", dilation, nd)
    _check_pool_params(kernel, stride, padding, dilation)
    size = tuple(self.shape[-nd:])
    out = tuple(_pool_out_size(*a, ceil_mode) for a in zip(size, kernel, stride, padding, dilation))
    if _known(*out) and min(out) < 1:
        c = self.shape[-nd - 1]
        raise OpRuntimeError(f"Given input size: ({'x'.join(map(str, (c,) + size))}). Calculated output size: "
                             f"({'x'.join(map(str, (c,) + out))}). Output size is too small")
    return _Pool(kernel, stride, padding, dilation, out)


def _pool_dtype(op: str, floats_only: bool = False):
    def rule(self, *rest):
        if floats_only:
            check_float(op, self.dtype)
        elif self.dtype == dt.bool_:
            raise OpRuntimeError(f"{op}: \"{op}\" not implemented for 'Bool'")
        return self.dtype
    return rule


def _lowest(dtype):
    return -np.inf if dt.is_float(dtype) else np.iinfo(dtype).min


def _taps(win, nd: int) -> list:
    """The row-major kernel positions of a windows view (N, C, *kernel, *out)."""
    return list(product(*map(range, win.shape[2:2 + nd])))


def _max_values(win, nd: int):
    """The maximum of each window (NaN wins, as in PyTorch)."""
    taps = _taps(win, nd)
    best = win[_ALL + taps[0]].copy()
    for tap in taps[1:]:
        np.maximum(best, win[_ALL + tap], out=best)
    return best


def _max_positions(win, nd: int):
    """The maximum of each window and its row-major tap number: the first maximum, or the last
    NaN (a NaN wins, as in PyTorch's kernel)."""
    taps = _taps(win, nd)
    best = win[_ALL + taps[0]].copy()
    arg = np.zeros(best.shape, np.int32)
    for t, tap in enumerate(taps[1:], start=1):
        v = win[_ALL + tap]
        take = v > best
        if win.dtype.kind == "f":
            take |= np.isnan(v)
        np.maximum(best, v, out=best)
        np.maximum(arg, np.multiply(take, t, dtype=np.int32), out=arg)  # taps come in increasing order
    return best, arg


def _first_inside(start, d: int):
    """The first tap position at or after `start` (stepping by `d`) that is not in the padding."""
    return np.where(start < 0, start + (-start + d - 1) // d * d, start)


def _flat_indices(arg, best, g: _Pool, size):
    """Window tap numbers -> flat indices into each input plane (volume in 3-D). Only a window whose
    values are all the lowest value can have picked a padding tap; PyTorch points those at the
    window's first position inside the input."""
    nd = len(size)
    starts = [(np.arange(o) * s - p).reshape((-1,) + (1,) * (nd - 1 - i))
              for i, (o, s, p) in enumerate(zip(g.out, g.stride, g.padding))]
    taps = np.unravel_index(arg, g.kernel)
    positions = [start + tap * d for start, tap, d in zip(starts, taps, g.dilation)]
    places = [prod(size[i + 1:]) for i in range(nd)]
    indices = sum(p * w for p, w in zip(positions, places))
    lowest = best == _lowest(best.dtype)
    if lowest.any():
        outside = np.logical_or.reduce([(p < 0) | (p >= n) for p, n in zip(positions, size)])
        first = sum(_first_inside(start, d) * w for start, d, w in zip(starts, g.dilation, places))
        indices = np.where(lowest & outside, first, indices)
    return indices.astype(np.int64)


def max_pool(self, kernel_size, stride, padding, dilation, ceil_mode, op: str, with_indices: bool, nd: int):
    """The kernel of max_pool{nd}d and max_pool{nd}d_with_indices."""
    _pool_dtype(op)(self)
    g = _pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode, nd)
    x = _with_batch(self, nd)
    values = accelerated.call("max_pool2d", x, g.kernel, g.stride, g.padding, g.dilation, g.out) \
        if nd == 2 and not with_indices else None
    if values is not None:
        return values if self.ndim == nd + 2 else values[0]
    win = _windows(_pad(x, g.pads(x.shape[2:]), _lowest(x.dtype)), g.kernel, g.dilation, g.stride, g.out)
    if not with_indices:
        values = _max_values(win, nd)
        return values if self.ndim == nd + 2 else values[0]
    values, arg = _max_positions(win, nd)
    indices = _flat_indices(arg, values, g, x.shape[2:])
    return (values, indices) if self.ndim == nd + 2 else (values[0], indices[0])


def pool_shape(op: str, nd: int = 2):
    """The shape rule of a max pooling op."""
    def rule(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False, *rest):
        return tuple(self.shape[:-nd]) + _pool_geometry(op, self, kernel_size, stride, padding, dilation,
                                                         ceil_mode, nd).out
    return rule


def with_indices_shape(nd: int):
    """The shape rule of max_pool{nd}d_with_indices: values and indices of one shape."""
    def rule(self, *args):
        shape = pool_shape(f"max_pool{nd}d_with_indices", nd)(self, *args)
        return shape, shape
    return rule


def with_indices_dtype(nd: int):
    def rule(self, *args):
        return _pool_dtype(f"max_pool{nd}d_with_indices")(self), dt.int64
    return rule


@register("aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
          "int[2] dilation=1, bool ceil_mode=False) -> Tensor",
          shape=pool_shape("max_pool2d"), dtype=_pool_dtype("max_pool2d"))
def max_pool2d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The maximum over each window (stride [] means kernel_size; padding counts as -inf)."""
    return max_pool(self, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d", False, 2)


@register("aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
          "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
          shape=with_indices_shape(2), dtype=with_indices_dtype(2))
def max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """max_pool2d and, per output, the flat index (into its H*W input plane) of the maximum."""
    return max_pool(self, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d_with_indices", True, 2)


def _max_pool_backward_shape(grad_output, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    pooled = pool_shape("max_pool2d_backward")(self, kernel_size, stride, padding, dilation, ceil_mode)
    if _known(*grad_output.shape, *pooled) and tuple(grad_output.shape) != tuple(pooled):
        raise OpRuntimeError(f"max_pool2d_backward: grad_output of shape {fmt_shape(grad_output.shape)} does not "
                             f"match the pooled shape {fmt_shape(pooled)}")
    return tuple(self.shape)


def _max_pool_backward_dtype(grad_output, self, *rest):
    check_float("max_pool2d_backward", self.dtype)
    if grad_output.dtype != self.dtype:
        raise OpRuntimeError(f"max_pool2d_backward: grad_output is {grad_output.dtype}, self is {self.dtype}")
    return self.dtype


@register("aten::_max_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride=[], "
          "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor",
          shape=_max_pool_backward_shape, dtype=_max_pool_backward_dtype)
def _max_pool2d_backward(grad_output, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The adjoint of max_pool2d: each output's gradient added at its window's maximum, found again in
    `self` as max_pool2d_with_indices finds it (no indices kept between forward and backward)."""
    _, indices = max_pool(self, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d_backward", True, 2)
    plane = self.shape[-1] * self.shape[-2]
    places = indices.reshape(-1, indices.shape[-2] * indices.shape[-1])
    flat = (places + np.arange(places.shape[0])[:, None] * plane).ravel()
    out = np.bincount(flat, weights=np.asarray(grad_output, np.float64).ravel(), minlength=self.size)
    return out.astype(self.dtype).reshape(self.shape)


# -- average pooling -----------------------------------------------------------------------------

def _avg_geometry(op: str, self, kernel_size, stride, padding, ceil_mode, divisor_override, nd: int = 2) -> _Pool:
    if divisor_override is not None and divisor_override == 0:
        raise OpRuntimeError("divisor must be not zero")
    return _pool_geometry(op, self, kernel_size, stride, padding, 1, ceil_mode, nd)


def _avg_divisors(g: _Pool, size, count_include_pad: bool, divisor_override):
    """What each window's sum is divided by, as an array of the output's spatial shape: the window's
    extent clipped to the padded input, or only its part inside the input; an empty window divides
    by 1 (its sum is 0)."""
    if divisor_override is not None:
        return np.full(g.out, divisor_override, np.int64)
    total = np.ones((), np.int64)
    for n, k, s, p, o in zip(size, g.kernel, g.stride, g.padding, g.out):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        inside = np.minimum(end, n) - np.maximum(start, 0)
        total = np.multiply.outer(total, end - start if count_include_pad else np.maximum(inside, 1))
    return total


def _divide(total, divisor, dtype):
    """total / divisor in `dtype`; integers divide truncating toward zero, as C does."""
    if dt.is_float(dtype):
        return total / divisor.astype(dtype)
    quotient = np.abs(total) // np.abs(divisor)
    return (quotient * np.sign(total) * np.sign(divisor)).astype(dtype)


def avg_shape(nd: int):
    """The shape rule of avg_pool{nd}d."""
    def rule(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
        g = _avg_geometry(f"avg_pool{nd}d", self, kernel_size, stride, padding, ceil_mode, divisor_override, nd)
        return tuple(self.shape[:-nd]) + g.out
    return rule


def avg_pool(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd: int):
    """The kernel of avg_pool{nd}d."""
    op = f"avg_pool{nd}d"
    _pool_dtype(op)(self)
    g = _avg_geometry(op, self, kernel_size, stride, padding, ceil_mode, divisor_override, nd)
    x = _with_batch(self, nd)
    total = accelerated.call("window_sums2d", x, g.kernel, g.stride, g.padding, g.out) if nd == 2 else None
    if total is None:
        win = _windows(_pad(x, g.pads(x.shape[2:])), g.kernel, g.dilation, g.stride, g.out)
        taps = _taps(win, nd)
        total = win[_ALL + taps[0]].astype(x.dtype if dt.is_float(x.dtype) else np.int64)
        for tap in taps[1:]:
            total += win[_ALL + tap]
    out = _divide(total, _avg_divisors(g, x.shape[2:], count_include_pad, divisor_override), x.dtype)
    return out if self.ndim == nd + 2 else out[0]


@register("aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
          "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
          shape=avg_shape(2), dtype=_pool_dtype("avg_pool2d"))
def avg_pool2d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean over each window (zero padding; see _avg_divisors for what it divides by)."""
    return avg_pool(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2)


class _SizeOnly:
    """A shape without data, to run a tensor rule on a size list."""
    def __init__(self, shape):
        self.shape, self.ndim = tuple(shape), len(shape)


def _avg_backward_geometry(nd: int, grad_output, input_size, kernel_size, stride, padding, ceil_mode,
                           divisor_override):
    op = f"avg_pool{nd}d_backward"
    size = _ints(input_size)
    g = _avg_geometry(op, _SizeOnly(size), kernel_size, stride, padding, ceil_mode, divisor_override, nd)
    expected = size[:-nd] + g.out
    if _known(*grad_output.shape) and tuple(grad_output.shape) != expected:
        raise OpRuntimeError(f"{op}: expected grad_output of size {fmt_shape(expected)}, but got "
                             f"{fmt_shape(grad_output.shape)}")
    return g, size


def avg_backward_shape(nd: int):
    """The shape rule of _avg_pool{nd}d_backward: the input's size."""
    def rule(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
        return _avg_backward_geometry(nd, grad_output, input_size, kernel_size, stride, padding, ceil_mode,
                                      divisor_override)[1]
    return rule


def avg_pool_backward(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override, nd: int):
    """The kernel of _avg_pool{nd}d_backward: each output's gradient spread evenly over its window."""
    check_float(f"avg_pool{nd}d_backward", grad_output.dtype)
    g, size = _avg_backward_geometry(nd, grad_output, input_size, kernel_size, stride, padding, ceil_mode,
                                     divisor_override)
    grad = _with_batch(grad_output, nd)
    share = _divide(grad, _avg_divisors(g, size[-nd:], count_include_pad, divisor_override), grad.dtype)
    blocks = np.broadcast_to(share[_ALL + (None,) * nd], share.shape[:2] + g.kernel + g.out)
    out = _fold(blocks, size[-nd:], g.dilation, g.padding, g.stride)
    return out if grad_output.ndim == nd + 2 else out[0]


@register("aten::_avg_pool2d_backward(Tensor grad_output, int[] input_size, int[2] kernel_size, int[2] stride, "
          "int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor",
          shape=avg_backward_shape(2), dtype=_float_dtype("avg_pool2d_backward"))
def _avg_pool2d_backward(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override):
    """The adjoint of avg_pool2d: each output's gradient spread evenly over its window."""
    return avg_pool_backward(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                             divisor_override, 2)


# -- adaptive average pooling --------------------------------------------------------------------

def adaptive_windows(size: int, out: int) -> tuple:
    """Start and end (exclusive) of each of `out` adaptive windows over `size` (PyTorch's rule)."""
    i = np.arange(out)
    return i * size // out, ((i + 1) * size + out - 1) // out


def _averaging_matrix(size: int, out: int, dtype):
    """(out, size) matrix whose row i averages adaptive window i."""
    start, end = adaptive_windows(size, out)
    pos = np.arange(size)
    inside = (pos >= start[:, None]) & (pos < end[:, None])
    return (inside / (end - start)[:, None]).astype(dtype)


def _adaptive_geometry(self, output_size) -> tuple:
    op = "adaptive_avg_pool2d"
    if self.ndim not in (3, 4):
        raise OpRuntimeError(f"{op}(): Expected 3D or 4D tensor, but got {fmt_shape(self.shape)}")
    for d in range(self.ndim - 3, self.ndim):
        if self.shape[d] == 0:
            raise OpRuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input "
                                 f"has sizes {fmt_shape(self.shape)} with dimension {d} being empty")
    out = _ints(output_size)
    if len(out) not in (1, 2):
        raise OpRuntimeError(f"{op}: output_size must be 2")
    out = out * 2 if len(out) == 1 else out
    if min(out) < 0:
        raise OpRuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                             f"{{{out[0]}, {out[1]}}}")
    return out


@register("aten::adaptive_avg_pool2d(Tensor self, int[2] output_size) -> Tensor",
          shape=lambda self, output_size: tuple(self.shape[:-2]) + _adaptive_geometry(self, output_size),
          dtype=_float_dtype("adaptive_avg_pool2d"))
def adaptive_avg_pool2d(self, output_size):
    """The mean over PyTorch's adaptive windows: reshape-and-mean when the sizes divide, else two
    small GEMMs with averaging matrices."""
    check_float("adaptive_avg_pool2d", self.dtype)
    (oh, ow), (h, w) = _adaptive_geometry(self, output_size), self.shape[-2:]
    if oh and ow and h % oh == 0 and w % ow == 0:
        return self.reshape(self.shape[:-2] + (oh, h // oh, ow, w // ow)).mean(axis=(-3, -1))
    rows, cols = _averaging_matrix(h, oh, self.dtype), _averaging_matrix(w, ow, self.dtype)
    return np.ascontiguousarray(np.matmul(np.matmul(rows, self), cols.T))
