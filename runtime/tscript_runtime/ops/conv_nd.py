"""Convolution and pooling over any number of spatial dims, for the ops conv.py's 2-D kernels do
not cover: `conv3d`, `conv_transpose1d`, `conv_transpose3d`, `max_pool3d` (with indices),
`avg_pool3d` and its adjoint.

The scheme of conv.py written once for N dims: the windows of a padded input are one strided view
(N, C, *kernel, *out); a convolution is one im2col copy plus one GEMM per group; a transposed
convolution is one GEMM per group plus the adjoint of the windows view (`fold`), which adds each
kernel tap's block back with a loop over the taps only, never over pixels or the batch. Argument
checks reuse conv.py's where they are N-d already, so messages are PyTorch's and those of the 2-D ops.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from math import prod

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import dtypes as dt
from ..errors import OpRuntimeError, fmt_shape
from .conv import (_Conv, _check_conv_input, _check_conv_params, _check_conv_weight, _conv_dtype,
                   _conv_geometry, _conv_shape, _divide, _first_inside, _ints, _known, _lowest, _pair_text,
                   _pool_dtype, _pool_out_size, _SizeOnly, conv_param)
from .registry import register
from .rules import check_float

_ALL = (slice(None), slice(None))  # the batch and channel dims of an index


# -- array helpers -------------------------------------------------------------------------------

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


def _channels_last(y, nd: int):
    """(C, N, *spatial) -> (N, C, *spatial), contiguous."""
    return np.ascontiguousarray(y.transpose((1, 0) + tuple(range(2, nd + 2))))


# -- convolution ---------------------------------------------------------------------------------

def _conv(x, weight, bias, g: _Conv, groups: int):
    """Batched N-d convolution: one im2col copy (C*taps, N*L) and one GEMM per group."""
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


def _conv_kernel(op: str, nd: int):
    def kernel(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        _conv_dtype(op, f"slow_conv{nd}d_cpu")(input, weight, bias)
        g = _conv_geometry(op, nd, input, weight, bias, stride, padding, dilation, groups)
        y = _conv(input if input.ndim == nd + 2 else input[None], weight, bias, g, groups)
        return y if input.ndim == nd + 2 else y[0]
    kernel.__doc__ = f"{nd}-D cross-correlation of (N, C, *spatial) with (O, C/groups, *kernel) weights, plus bias."
    return kernel


conv3d = register("aten::conv3d(Tensor input, Tensor weight, Tensor? bias=None, int[3] stride=1, int[3] padding=0, "
                  "int[3] dilation=1, int groups=1) -> Tensor",
                  shape=_conv_shape("conv3d", 3), dtype=_conv_dtype("conv3d", "slow_conv3d_cpu"))(
    _conv_kernel("conv3d", 3))


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


def _transposed_shape(op: str, nd: int):
    def rule(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        g = transposed_geometry(op, nd, input, weight, bias, stride, padding, output_padding, groups, dilation)
        channels = weight.shape[1] * groups if _known(weight.shape[1]) else f"{weight.shape[1]}*{groups}"
        return tuple(input.shape[:-nd - 1]) + (channels,) + g.out
    return rule


def _conv_transpose(x, weight, bias, g: _Conv, groups: int):
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
        y = _conv_transpose(input if input.ndim == nd + 2 else input[None], weight, bias, g, groups)
        return y if input.ndim == nd + 2 else y[0]
    kernel.__doc__ = (f"The adjoint of conv{nd}d w.r.t. its input (\"deconvolution\"); weight is "
                      f"(C_in, C_out/groups, *kernel).")
    return kernel


def _register_transposed(nd: int):
    op = f"conv_transpose{nd}d"
    return register(f"aten::{op}(Tensor input, Tensor weight, Tensor? bias=None, int[{nd}] stride=1, "
                    f"int[{nd}] padding=0, int[{nd}] output_padding=0, int groups=1, int[{nd}] dilation=1) -> Tensor",
                    shape=_transposed_shape(op, nd), dtype=_conv_dtype(op, f"slow_conv_transpose{nd}d_cpu"))(
        _transposed_kernel(op, nd))


conv_transpose1d = _register_transposed(1)
conv_transpose3d = _register_transposed(3)


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


_FORMS = {"max": {"kernel_size": "must either be a single int, or a tuple of three ints",
                  "stride": "must either be omitted, a single int, or a tuple of three ints",
                  "padding": "must either be a single int, or a tuple of three ints",
                  "dilation": "must be either a single int, or a tuple of three ints"},
          "avg": {"kernel_size": "must be a single int, or a tuple of three ints",
                  "stride": "must be omitted, a single int, or a tuple of three ints",
                  "padding": "must be a single int, or a tuple of three ints"}}


def _pool_param(op: str, name: str, value) -> tuple:
    v = _ints(value)
    if len(v) not in (1, 3):
        raise OpRuntimeError(f"{op}: {name} {_FORMS[op[:3]][name]}")
    return v * 3 if len(v) == 1 else v


def _check_pool_input(op: str, x) -> None:
    if x.ndim not in (4, 5):
        raise OpRuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    for d in range(x.ndim - 4, x.ndim):
        if x.shape[d] == 0:
            raise OpRuntimeError(f"{op}: Expected input's non-batch dimensions to have positive length, but input "
                                 f"has a shape of {fmt_shape(x.shape)} and non-batch dimension {d - x.ndim + 4} has "
                                 f"length zero!")


def _check_pool_params(kernel, stride, padding, dilation) -> None:
    if min(kernel) <= 0:
        raise OpRuntimeError("kernel size should be greater than zero, but got kT: {} kH: {} kW: {}".format(*kernel))
    if min(stride) == 0:
        raise OpRuntimeError("stride should not be zero")
    if min(stride) < 0:
        raise OpRuntimeError("stride should be greater than zero, but got dT: {} dH: {} dW: {}".format(*stride))
    if min(dilation) <= 0:
        raise OpRuntimeError("dilation should be greater than zero, but got dilationT: {} dilationH: {} "
                             "dilationW: {}".format(*dilation))
    for k, p, d in zip(kernel, padding, dilation):
        if p < 0:
            raise OpRuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > (d * (k - 1) + 1) // 2:
            raise OpRuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                                 f"kernel_size={k} and dilation={d}")


def _pool_geometry(op: str, self, kernel_size, stride, padding, dilation, ceil_mode) -> _Pool:
    _check_pool_input(op, self)
    kernel = _pool_param(op, "kernel_size", kernel_size)
    stride = _pool_param(op, "stride", stride) if len(_ints(stride)) else kernel
    padding = _pool_param(op, "padding", padding)
    dilation = _pool_param(op, "dilation", dilation) if op.startswith("max") else (1, 1, 1)
    _check_pool_params(kernel, stride, padding, dilation)
    size = tuple(self.shape[-3:])
    out = tuple(_pool_out_size(*a, ceil_mode) for a in zip(size, kernel, stride, padding, dilation))
    if _known(*out) and min(out) < 1:
        c = self.shape[-4]
        raise OpRuntimeError(f"Given input size: ({'x'.join(map(str, (c,) + size))}). Calculated output size: "
                             f"({'x'.join(map(str, (c,) + out))}). Output size is too small")
    return _Pool(kernel, stride, padding, dilation, out)


def _max_shape(op: str):
    def rule(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        return tuple(self.shape[:-3]) + _pool_geometry(op, self, kernel_size, stride, padding, dilation,
                                                        ceil_mode).out
    return rule


def _batched(x, nd: int):
    return x if x.ndim == nd + 2 else x[None]


# -- max pooling ---------------------------------------------------------------------------------

def _max_positions(win, nd: int):
    """The maximum of each window and its row-major tap number: the first maximum, or the last
    NaN (a NaN wins, as in PyTorch's kernel)."""
    taps = list(product(*map(range, win.shape[2:2 + nd])))
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


def _flat_indices(arg, best, g: _Pool, size):
    """Window tap numbers -> flat indices into each input volume. Only a window whose values are
    all the lowest value can have picked a padding tap; PyTorch points those at the window's first
    position inside the input."""
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


def _max_pool(self, kernel_size, stride, padding, dilation, ceil_mode, op: str, with_indices: bool):
    _pool_dtype(op)(self)
    g = _pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode)
    x = _batched(self, 3)
    win = _windows(_pad(x, g.pads(x.shape[2:]), _lowest(x.dtype)), g.kernel, g.dilation, g.stride, g.out)
    values, arg = _max_positions(win, 3)
    if not with_indices:
        return values if self.ndim == 5 else values[0]
    indices = _flat_indices(arg, values, g, x.shape[2:])
    return (values, indices) if self.ndim == 5 else (values[0], indices[0])


@register("aten::max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
          "int[3] dilation=1, bool ceil_mode=False) -> Tensor",
          shape=_max_shape("max_pool3d"), dtype=_pool_dtype("max_pool3d"))
def max_pool3d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The maximum over each 3-D window (stride [] means kernel_size; padding counts as -inf)."""
    return _max_pool(self, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d", False)


def _with_indices_shape(self, *args):
    shape = _max_shape("max_pool3d_with_indices")(self, *args)
    return shape, shape


def _with_indices_dtype(self, *args):
    return _pool_dtype("max_pool3d_with_indices")(self), dt.int64


@register("aten::max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
          "int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
          shape=_with_indices_shape, dtype=_with_indices_dtype)
def max_pool3d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """max_pool3d and, per output, the flat index (into its D*H*W input volume) of the maximum."""
    return _max_pool(self, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d_with_indices", True)


# -- average pooling -----------------------------------------------------------------------------

def _avg_geometry(op: str, self, kernel_size, stride, padding, ceil_mode, divisor_override) -> _Pool:
    if divisor_override is not None and divisor_override == 0:
        raise OpRuntimeError("divisor must be not zero")
    return _pool_geometry(op, self, kernel_size, stride, padding, 1, ceil_mode)


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


def _avg_shape(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    g = _avg_geometry("avg_pool3d", self, kernel_size, stride, padding, ceil_mode, divisor_override)
    return tuple(self.shape[:-3]) + g.out


@register("aten::avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
          "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
          shape=_avg_shape, dtype=_pool_dtype("avg_pool3d"))
def avg_pool3d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean over each 3-D window (zero padding; see _avg_divisors for what it divides by)."""
    _pool_dtype("avg_pool3d")(self)
    g = _avg_geometry("avg_pool3d", self, kernel_size, stride, padding, ceil_mode, divisor_override)
    x = _batched(self, 3)
    win = _windows(_pad(x, g.pads(x.shape[2:])), g.kernel, g.dilation, g.stride, g.out)
    taps = list(product(*map(range, g.kernel)))
    total = win[_ALL + taps[0]].astype(x.dtype if dt.is_float(x.dtype) else np.int64)
    for tap in taps[1:]:
        total += win[_ALL + tap]
    out = _divide(total, _avg_divisors(g, x.shape[2:], count_include_pad, divisor_override), x.dtype)
    return out if self.ndim == 5 else out[0]


def _avg_backward_geometry(grad_output, input_size, kernel_size, stride, padding, ceil_mode, divisor_override):
    size = _ints(input_size)
    g = _avg_geometry("avg_pool3d_backward", _SizeOnly(size), kernel_size, stride, padding, ceil_mode,
                      divisor_override)
    expected = size[:-3] + g.out
    if _known(*grad_output.shape) and tuple(grad_output.shape) != expected:
        raise OpRuntimeError(f"avg_pool3d_backward: expected grad_output of size {fmt_shape(expected)}, but got "
                             f"{fmt_shape(grad_output.shape)}")
    return g, size


def _avg_backward_shape(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    return _avg_backward_geometry(grad_output, input_size, kernel_size, stride, padding, ceil_mode,
                                  divisor_override)[1]


def _float_dtype(op: str):
    def rule(self, *rest):
        check_float(op, self.dtype)
        return self.dtype
    return rule


@register("aten::_avg_pool3d_backward(Tensor grad_output, int[] input_size, int[3] kernel_size, int[3] stride, "
          "int[3] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor",
          shape=_avg_backward_shape, dtype=_float_dtype("avg_pool3d_backward"))
def _avg_pool3d_backward(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override):
    """The adjoint of avg_pool3d: each output's gradient spread evenly over its window."""
    check_float("avg_pool3d_backward", grad_output.dtype)
    g, size = _avg_backward_geometry(grad_output, input_size, kernel_size, stride, padding, ceil_mode,
                                     divisor_override)
    grad = _batched(grad_output, 3)
    share = _divide(grad, _avg_divisors(g, size[-3:], count_include_pad, divisor_override), grad.dtype)
    blocks = np.broadcast_to(share[_ALL + (None,) * 3], share.shape[:2] + g.kernel + g.out)
    out = _fold(blocks, size[-3:], g.dilation, g.padding, g.stride)
    return out if grad_output.ndim == 5 else out[0]
