"""Convolution and pooling: `im2col`/`col2im` (F.unfold / F.fold), `conv1d`, `conv2d`,
`conv_transpose2d`, `max_pool2d` (with indices), `avg_pool2d` (and its adjoint) and
`adaptive_avg_pool2d`.

Every kernel is vectorised. The sliding windows of an image are one strided view of the padded
array (`_windows`), so a convolution is one im2col copy plus one GEMM per group; the adjoints
(col2im, transposed convolution, average-pooling backward) add the blocks back with a loop over
the kernel's positions only, never over pixels or the batch. Inputs may be unbatched (no N dim),
as in PyTorch; the rules validate every argument with PyTorch's messages and the kernels call
them, so eager calls, the executor and the compiler raise the same errors.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import dtypes as dt
from ..errors import OpRuntimeError, fmt_shape
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


_POOL_FORMS = {"kernel_size": "must either be a single int, or a tuple of two ints",
               "stride": "must either be omitted, a single int, or a tuple of two ints",
               "padding": "must either be a single int, or a tuple of two ints",
               "dilation": "must be either a single int, or a tuple of two ints"}


def pool_param(op: str, name: str, value) -> tuple:
    """A pooling argument as 2 ints (PyTorch's message names the accepted forms)."""
    v = _ints(value)
    if len(v) not in (1, 2):
        raise OpRuntimeError(f"{op}: {name} {_POOL_FORMS[name]}")
    return v * 2 if len(v) == 1 else v


def _fold_param(name: str, value) -> tuple:
    v = _ints(value)
    if len(v) not in (1, 2):
        raise OpRuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
    return v * 2 if len(v) == 1 else v


def _c_name(dtype) -> str:
    """The C type name PyTorch prints in conv's bias-dtype message."""
    return {dt.float32: "float", dt.float64: "double", dt.int32: "int", dt.int64: "long int",
            dt.bool_: "bool"}[dtype]


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

def _as4d(x, nd: int):
    """A (N, C, *spatial) array as 4-D: a missing batch dim and a missing H dim (1-D ops) become 1."""
    if x.ndim == nd + 1:
        x = x[None]
    return x[:, :, None] if nd == 1 else x


def _pad(x, pads, value=0):
    """(N, C, H, W) `x` inside a border of `value`: `pads` = ((top, bottom), (left, right))."""
    (top, bottom), (left, right) = pads
    if not (top or bottom or left or right):
        return x
    n, c, h, w = x.shape
    out = np.full((n, c, h + top + bottom, w + left + right), value, x.dtype)
    out[:, :, top:top + h, left:left + w] = x
    return out


def _windows(xp, kernel, dilation, stride, out):
    """The sliding blocks of a padded (N, C, H, W) array: a read-only view (N, C, kh, kw, OH, OW)."""
    sn, sc, sh, sw = xp.strides
    return as_strided(xp, xp.shape[:2] + tuple(kernel) + tuple(out),
                      (sn, sc, sh * dilation[0], sw * dilation[1], sh * stride[0], sw * stride[1]),
                      writeable=False)


def _im2col(x, kernel, dilation, padding, stride, out, batch_inner: bool = False):
    """(N, C, H, W) -> columns, one per output position, in a fresh array: (N, C*kh*kw, OH*OW)
    (F.unfold's layout), or with `batch_inner` (C*kh*kw, N*OH*OW), which makes a convolution one
    GEMM per group."""
    n, c = x.shape[:2]
    windows = _windows(_pad(x, ((padding[0],) * 2, (padding[1],) * 2)), kernel, dilation, stride, out)
    if batch_inner:
        cols = np.empty((c * kernel[0] * kernel[1], n * out[0] * out[1]), x.dtype)
        np.copyto(cols.reshape((c,) + tuple(kernel) + (n,) + tuple(out)), windows.transpose(1, 2, 3, 0, 4, 5))
    else:
        cols = np.empty((n, c * kernel[0] * kernel[1], out[0] * out[1]), x.dtype)
        np.copyto(cols.reshape((n, c) + tuple(kernel) + tuple(out)), windows)
    return cols


def _fold(blocks, size, dilation, padding, stride):
    """Add blocks (N, C, kh, kw, OH, OW) back onto the (N, C, H, W) image they were cut from
    (the adjoint of `_windows`); parts falling into the padding are dropped."""
    n, c, kh, kw, oh, ow = blocks.shape
    span = [dilation[i] * (k - 1) + stride[i] * (o - 1) + 1 for i, (k, o) in enumerate(((kh, oh), (kw, ow)))]
    out = np.zeros((n, c, max(size[0] + 2 * padding[0], span[0]), max(size[1] + 2 * padding[1], span[1])),
                   blocks.dtype)
    if oh and ow:
        for i, j in product(range(kh), range(kw)):
            r, q = i * dilation[0], j * dilation[1]
            out[:, :, r:r + stride[0] * (oh - 1) + 1:stride[0], q:q + stride[1] * (ow - 1) + 1:stride[1]] += \
                blocks[:, :, i, j]
    return np.ascontiguousarray(out[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]])


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


def _conv4d(x, weight, bias, stride, padding, dilation, groups, out):
    """Batched 2-D convolution of 4-D arrays: one im2col copy and one GEMM per group (weights
    (O/G, K) times columns (K, N*L)); a single large GEMM is what BLAS does fastest."""
    n, o, (cg, kh, kw) = x.shape[0], weight.shape[0], weight.shape[1:]
    cols = _im2col(x, (kh, kw), dilation, padding, stride, out, batch_inner=True)
    y = np.matmul(weight.reshape(groups, o // groups, cg * kh * kw), cols.reshape(groups, cg * kh * kw, -1))
    y = y.reshape(o, -1)
    if bias is not None:
        y += bias[:, None]
    return np.ascontiguousarray(y.reshape((o, n) + tuple(out)).transpose(1, 0, 2, 3))


def _conv_nd(op: str, nd: int, input, weight, bias, stride, padding, dilation, groups):
    _conv_dtype(op, "slow_conv2d_cpu")(input, weight, bias)
    g = _conv_geometry(op, nd, input, weight, bias, stride, padding, dilation, groups)
    one = (1,) * (2 - nd)  # conv1d runs as a conv2d over a height-1 image
    y = _conv4d(_as4d(input, nd), _as4d(weight, nd), bias, one + g.stride, (0,) * (2 - nd) + g.padding,
                one + g.dilation, groups, one + g.out)
    y = y[:, :, 0] if nd == 1 else y
    return y if input.ndim == nd + 2 else y[0]


@register("aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, "
          "int[2] dilation=1, int groups=1) -> Tensor",
          shape=_conv_shape("conv2d", 2), dtype=_conv_dtype("conv2d", "slow_conv2d_cpu"))
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation of (N, C, H, W) with (O, C/groups, kh, kw) weights, plus bias."""
    return _conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@register("aten::conv1d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] padding=0, "
          "int[1] dilation=1, int groups=1) -> Tensor",
          shape=_conv_shape("conv1d", 1), dtype=_conv_dtype("conv1d", "slow_conv2d_cpu"))
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D cross-correlation of (N, C, L) with (O, C/groups, k) weights, plus bias."""
    return _conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def _transposed_geometry(input, weight, bias, stride, padding, output_padding, groups, dilation) -> _Conv:
    op = "conv_transpose2d"
    _check_conv_input(op, 2, input, weight)
    stride, padding, output_padding, dilation = (
        conv_param(op, n, v, 2) for n, v in (("stride", stride), ("padding", padding),
                                             ("output_padding", output_padding), ("dilation", dilation)))
    _check_conv_params(stride, padding, dilation, groups)
    if any(p < 0 for p in output_padding):
        raise OpRuntimeError("negative output_padding is not supported")
    if any(p >= s and p >= d for p, s, d in zip(output_padding, stride, dilation)):
        (ph, pw), (sh, sw), (dh, dw) = output_padding, stride, dilation
        raise OpRuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                             f"output_padding_height: {ph} output_padding_width: {pw} stride_height: {sh} "
                             f"stride_width: {sw} dilation_height: {dh} dilation_width: {dw}")
    _check_conv_weight(input, weight, bias, groups, transposed=True)
    size, kernel = tuple(input.shape[-2:]), tuple(weight.shape[-2:])
    out = tuple((h - 1) * s - 2 * p + d * (k - 1) + q + 1 if _known(h) else f"({h}-1)*{s}+{d * (k - 1) + q + 1 - 2 * p}"
                for h, k, s, p, d, q in zip(size, kernel, stride, padding, dilation, output_padding))
    if _known(*out) and min(out) < 1:
        raise OpRuntimeError(f"Given input size per channel: {_pair_text(size)}. Calculated output size per "
                             f"channel: {_pair_text(out)}. Output size is too small")
    return _Conv(stride, padding, dilation, output_padding, out)


def _transposed_shape(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    g = _transposed_geometry(input, weight, bias, stride, padding, output_padding, groups, dilation)
    channels = weight.shape[1] * groups if _known(weight.shape[1]) else f"{weight.shape[1]}*{groups}"
    return tuple(input.shape[:-3]) + (channels,) + g.out


@register("aten::conv_transpose2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
          "int[2] padding=0, int[2] output_padding=0, int groups=1, int[2] dilation=1) -> Tensor",
          shape=_transposed_shape, dtype=_conv_dtype("conv_transpose2d", "slow_conv_transpose2d_cpu"))
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The adjoint of conv2d w.r.t. its input ("deconvolution"): one GEMM per group, then col2im."""
    _conv_dtype("conv_transpose2d", "slow_conv_transpose2d_cpu")(input, weight, bias)
    g = _transposed_geometry(input, weight, bias, stride, padding, output_padding, groups, dilation)
    x = input if input.ndim == 4 else input[None]
    n, cin, h, w = x.shape
    cog, kh, kw = weight.shape[1:]
    taps = weight.reshape(groups, cin // groups, cog * kh * kw).transpose(0, 2, 1)
    cols = np.matmul(taps, x.transpose(1, 0, 2, 3).reshape(groups, cin // groups, n * h * w))
    blocks = cols.reshape(groups * cog, kh, kw, n, h, w).transpose(3, 0, 1, 2, 4, 5)
    y = _fold(blocks, g.out, g.dilation, g.padding, g.stride)
    if bias is not None:
        y += bias.reshape(-1, 1, 1)
    return y if input.ndim == 4 else y[0]


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


def _check_pool_input(op: str, x) -> None:
    if x.ndim not in (3, 4) or 0 in tuple(x.shape[-3:]):
        raise OpRuntimeError(f"{op}: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for "
                             f"input, but got:{fmt_shape(x.shape)}")


def _check_pool_params(kernel, stride, padding, dilation) -> None:
    if min(kernel) <= 0:
        raise OpRuntimeError(f"kernel size should be greater than zero, but got kH: {kernel[0]} kW: {kernel[1]}")
    if min(stride) == 0:
        raise OpRuntimeError("stride should not be zero")
    if min(stride) < 0:
        raise OpRuntimeError(f"stride should be greater than zero, but got dH: {stride[0]} dW: {stride[1]}")
    if min(dilation) <= 0:
        raise OpRuntimeError(f"dilation should be greater than zero, but got dilationH: {dilation[0]} "
                             f"dilationW: {dilation[1]}")
    for k, p, d in zip(kernel, padding, dilation):
        if p < 0:
            raise OpRuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > (d * (k - 1) + 1) // 2:
            raise OpRuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                                 f"kernel_size={k} and dilation={d}")
    if any(p > k // 2 for k, p in zip(kernel, padding)):
        raise OpRuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padW = "
                             f"{padding[1]}, padH = {padding[0]}, kW = {kernel[1]}, kH = {kernel[0]}")


def _pool_geometry(op: str, self, kernel_size, stride, padding, dilation, ceil_mode) -> _Pool:
    _check_pool_input(op, self)
    kernel = pool_param(op, "kernel_size", kernel_size)
    stride = pool_param(op, "stride", stride) if len(_ints(stride)) else kernel
    padding, dilation = pool_param(op, "padding", padding), pool_param(op, "dilation", dilation)
    _check_pool_params(kernel, stride, padding, dilation)
    size = tuple(self.shape[-2:])
    out = tuple(_pool_out_size(*a, ceil_mode) for a in zip(size, kernel, stride, padding, dilation))
    if _known(*out) and min(out) < 1:
        c = self.shape[-3]
        raise OpRuntimeError(f"Given input size: ({c}x{size[0]}x{size[1]}). Calculated output size: "
                             f"({c}x{out[0]}x{out[1]}). Output size is too small")
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


def _max_values(win):
    """The maximum of each window (NaN wins, as in PyTorch)."""
    best = win[:, :, 0, 0].copy()
    for i, j in list(product(*map(range, win.shape[2:4])))[1:]:
        np.maximum(best, win[:, :, i, j], out=best)
    return best


def _max_positions(win):
    """The maximum of each window and its first position (row-major tap number); a NaN wins, the
    last one as in PyTorch's kernel."""
    best = win[:, :, 0, 0].copy()
    arg = np.zeros(best.shape, np.int32)
    for t, (i, j) in list(enumerate(product(*map(range, win.shape[2:4]))))[1:]:
        v = win[:, :, i, j]
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
    """Window tap numbers -> flat indices into each input plane: a window's start plus its tap's
    offset. Only a window whose values are all the lowest value can have picked a padding tap;
    PyTorch points those at the window's first position inside the input."""
    kw, width = g.kernel[1], size[1]
    start_h = np.arange(g.out[0])[:, None] * g.stride[0] - g.padding[0]
    start_w = np.arange(g.out[1]) * g.stride[1] - g.padding[1]
    taps = np.arange(g.kernel[0] * kw)
    offsets = taps // kw * g.dilation[0] * width + taps % kw * g.dilation[1]
    indices = start_h * width + start_w + np.take(offsets, arg)
    lowest = best == _lowest(best.dtype)
    if lowest.any():
        ih, iw = start_h + arg // kw * g.dilation[0], start_w + arg % kw * g.dilation[1]
        outside = (ih < 0) | (ih >= size[0]) | (iw < 0) | (iw >= width)
        first = _first_inside(start_h, g.dilation[0]) * width + _first_inside(start_w, g.dilation[1])
        indices = np.where(lowest & outside, first, indices)
    return indices


def _max_pool(self, kernel_size, stride, padding, dilation, ceil_mode, op: str, with_indices: bool):
    _pool_dtype(op)(self)
    g = _pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode)
    x = self if self.ndim == 4 else self[None]
    win = _windows(_pad(x, g.pads(x.shape[2:]), _lowest(x.dtype)), g.kernel, g.dilation, g.stride, g.out)
    if not with_indices:
        values = _max_values(win)
        return values if self.ndim == 4 else values[0]
    values, arg = _max_positions(win)
    indices = _flat_indices(arg, values, g, x.shape[2:])
    return (values, indices) if self.ndim == 4 else (values[0], indices[0])


def _pool_shape(op: str):
    def rule(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False, *rest):
        return tuple(self.shape[:-2]) + _pool_geometry(op, self, kernel_size, stride, padding, dilation,
                                                        ceil_mode).out
    return rule


@register("aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
          "int[2] dilation=1, bool ceil_mode=False) -> Tensor",
          shape=_pool_shape("max_pool2d"), dtype=_pool_dtype("max_pool2d"))
def max_pool2d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The maximum over each window (stride [] means kernel_size; padding counts as -inf)."""
    return _max_pool(self, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d", False)


def _with_indices_shape(self, *args):
    shape = _pool_shape("max_pool2d_with_indices")(self, *args)
    return shape, shape


def _with_indices_dtype(self, *args):
    return _pool_dtype("max_pool2d_with_indices")(self), dt.int64


@register("aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
          "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
          shape=_with_indices_shape, dtype=_with_indices_dtype)
def max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """max_pool2d and, per output, the flat index (into its H*W input plane) of the maximum."""
    return _max_pool(self, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d_with_indices", True)


# -- average pooling -----------------------------------------------------------------------------

def _avg_geometry(op: str, self, kernel_size, stride, padding, ceil_mode, divisor_override) -> _Pool:
    if divisor_override is not None and divisor_override == 0:
        raise OpRuntimeError(f"{op}: divisor must be not zero")
    return _pool_geometry(op, self, kernel_size, stride, padding, 1, ceil_mode)


def _avg_divisors(g: _Pool, size, count_include_pad: bool, divisor_override):
    """What each window's sum is divided by, as an (OH, OW) array: the window's extent clipped to
    the padded input, or only its part inside the input; an empty window divides by 1 (its sum is 0)."""
    if divisor_override is not None:
        return np.full(g.out, divisor_override, np.int64)
    extents = []
    for n, k, s, p, o in zip(size, g.kernel, g.stride, g.padding, g.out):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        inside = np.minimum(end, n) - np.maximum(start, 0)
        extents.append(end - start if count_include_pad else np.maximum(inside, 1))
    return extents[0][:, None] * extents[1][None, :]


def _divide(total, divisor, dtype):
    """total / divisor in `dtype`; integers divide truncating toward zero, as C does."""
    if dt.is_float(dtype):
        return total / divisor.astype(dtype)
    quotient = np.abs(total) // np.abs(divisor)
    return (quotient * np.sign(total) * np.sign(divisor)).astype(dtype)


def _avg_shape(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    g = _avg_geometry("avg_pool2d", self, kernel_size, stride, padding, ceil_mode, divisor_override)
    return tuple(self.shape[:-2]) + g.out


@register("aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
          "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
          shape=_avg_shape, dtype=_pool_dtype("avg_pool2d"))
def avg_pool2d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean over each window (zero padding; see _avg_divisors for what it divides by)."""
    _pool_dtype("avg_pool2d")(self)
    g = _avg_geometry("avg_pool2d", self, kernel_size, stride, padding, ceil_mode, divisor_override)
    x = self if self.ndim == 4 else self[None]
    win = _windows(_pad(x, g.pads(x.shape[2:])), g.kernel, g.dilation, g.stride, g.out)
    total = win[:, :, 0, 0].astype(x.dtype if dt.is_float(x.dtype) else np.int64)
    for i, j in list(product(*map(range, g.kernel)))[1:]:
        total += win[:, :, i, j]
    out = _divide(total, _avg_divisors(g, x.shape[2:], count_include_pad, divisor_override), x.dtype)
    return out if self.ndim == 4 else out[0]


class _SizeOnly:
    """A shape without data, to run a tensor rule on a size list."""
    def __init__(self, shape):
        self.shape, self.ndim = tuple(shape), len(shape)


def _avg_backward_geometry(grad_output, input_size, kernel_size, stride, padding, ceil_mode, divisor_override):
    size = _ints(input_size)
    g = _avg_geometry("avg_pool2d_backward", _SizeOnly(size), kernel_size, stride, padding, ceil_mode,
                      divisor_override)
    expected = size[:-2] + g.out
    if _known(*grad_output.shape) and tuple(grad_output.shape) != expected:
        raise OpRuntimeError(f"avg_pool2d_backward: expected grad_output of size {fmt_shape(expected)}, but got "
                             f"{fmt_shape(grad_output.shape)}")
    return g, size


def _avg_backward_shape(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    return _avg_backward_geometry(grad_output, input_size, kernel_size, stride, padding, ceil_mode,
                                  divisor_override)[1]


@register("aten::_avg_pool2d_backward(Tensor grad_output, int[] input_size, int[2] kernel_size, int[2] stride, "
          "int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor",
          shape=_avg_backward_shape, dtype=_float_dtype("avg_pool2d_backward"))
def _avg_pool2d_backward(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override):
    """The adjoint of avg_pool2d: each output's gradient spread evenly over its window."""
    check_float("avg_pool2d_backward", grad_output.dtype)
    g, size = _avg_backward_geometry(grad_output, input_size, kernel_size, stride, padding, ceil_mode,
                                     divisor_override)
    grad = grad_output if grad_output.ndim == 4 else grad_output[None]
    share = _divide(grad, _avg_divisors(g, size[-2:], count_include_pad, divisor_override), grad.dtype)
    blocks = np.broadcast_to(share[:, :, None, None], share.shape[:2] + g.kernel + g.out)
    out = _fold(blocks, size[-2:], g.dilation, g.padding, g.stride)
    return out if grad_output.ndim == 4 else out[0]


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
