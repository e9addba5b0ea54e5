"""Adaptive pooling beyond conv.py's `adaptive_avg_pool2d`: `adaptive_max_pool2d` and
`adaptive_max_pool3d` (values and indices) and `adaptive_avg_pool3d`.

Adaptive windows differ in length by at most one, so a max pool gathers every window at once with
index arrays (the shorter windows repeat their last position, which changes neither the maximum
nor which position is first to hold it) and reduces over the taps. The 3-D average is separable:
reshape-and-mean when the sizes divide, else one small averaging matrix applied along each axis.
"""
from __future__ import annotations

from math import prod

import numpy as np

from .. import dtypes as dt
from ..errors import OpNotImplementedError, OpRuntimeError, fmt_shape
from .conv import _averaging_matrix, _ints, adaptive_windows
from .registry import register


def _dims_text(nd: int) -> str:
    return f"{nd + 1}D or {nd + 2}D"


def adaptive_geometry(op: str, nd: int, self, output_size) -> tuple:
    """The checked output size (nd ints) of an adaptive pooling of `self`."""
    if self.ndim not in (nd + 1, nd + 2):
        sep = ":" if op.startswith("adaptive_max") else ""
        raise OpRuntimeError(f"{op}(): Expected {_dims_text(nd)} tensor, but got{sep} {fmt_shape(self.shape)}")
    for d in range(self.ndim - nd - 1, self.ndim):
        if self.shape[d] == 0:
            raise OpRuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input "
                                 f"has sizes {fmt_shape(self.shape)} with dimension {d} being empty")
    out = _ints(output_size)
    if len(out) not in (1, nd):
        raise OpRuntimeError(f"{op}: output_size must be {nd}")
    out = out * nd if len(out) == 1 else out
    if min(out) < 0:
        raise OpRuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                             f"{{{', '.join(map(str, out))}}}")
    return out


def _float_only(op: str, dtype) -> None:
    if not dt.is_float(dtype):
        raise OpNotImplementedError(f"\"{op}\" not implemented for '{dt.TORCH_NAMES.get(dtype, str(dtype))}'")


# -- adaptive max pooling ------------------------------------------------------------------------

def _window_positions(size: int, out: int):
    """(out, longest window) input positions of each adaptive window, the shorter ones padded with
    their last position."""
    start, end = adaptive_windows(size, out)
    width = int((end - start).max())
    return np.minimum(start[:, None] + np.arange(width), end[:, None] - 1)


def _gather(x, positions: list):
    """x (N, C, *size) -> (N, C, *out, taps): the values of every window, and each tap's flat index
    into the input volume (*out, taps)."""
    nd = len(positions)
    grids = [p.reshape((1,) * (2 * i) + p.shape + (1,) * (2 * (nd - 1 - i))) for i, p in enumerate(positions)]
    order = tuple(range(0, 2 * nd, 2)) + tuple(range(1, 2 * nd, 2))  # (o1, w1, o2, w2, ...) -> (o..., w...)
    taps = prod(p.shape[1] for p in positions)
    values = x[(slice(None), slice(None)) + tuple(grids)]
    values = values.transpose((0, 1) + tuple(2 + a for a in order))
    places = [prod(x.shape[3 + i:]) for i in range(nd)]
    flat = sum(g * w for g, w in zip(grids, places)).transpose(order)
    out = tuple(p.shape[0] for p in positions)
    return values.reshape(x.shape[:2] + out + (taps,)), flat.reshape(out + (taps,))


def _first_max(values):
    """Each window's tap holding the maximum: the first, or the last NaN (PyTorch's kernel)."""
    arg = np.argmax(values, axis=-1)
    if values.dtype.kind == "f":
        nan = np.isnan(values)
        if nan.any():
            last = values.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
            arg = np.where(nan.any(axis=-1), last, arg)
    return arg


def _adaptive_max(op: str, nd: int, self, output_size):
    _float_only(op, self.dtype)
    out = adaptive_geometry(op, nd, self, output_size)
    x = self if self.ndim == nd + 2 else self[None]
    if 0 in out:
        values, indices = np.empty(x.shape[:2] + out, x.dtype), np.empty(x.shape[:2] + out, np.int64)
    else:
        windows, flat = _gather(x, [_window_positions(n, o) for n, o in zip(x.shape[2:], out)])
        arg = _first_max(windows)[..., None]
        values = np.take_along_axis(windows, arg, -1)[..., 0]
        indices = np.take_along_axis(np.broadcast_to(flat, windows.shape), arg, -1)[..., 0].astype(np.int64)
    return (values, indices) if self.ndim == nd + 2 else (values[0], indices[0])


def _max_rules(op: str, nd: int):
    def shape(self, output_size):
        s = tuple(self.shape[:-nd]) + adaptive_geometry(op, nd, self, output_size)
        return s, s

    def dtype(self, output_size):
        _float_only(op, self.dtype)
        return self.dtype, dt.int64
    return dict(shape=shape, dtype=dtype)


def _register_max(nd: int):
    op = f"adaptive_max_pool{nd}d"

    def kernel(self, output_size):
        return _adaptive_max(op, nd, self, output_size)
    kernel.__doc__ = (f"The maximum over PyTorch's adaptive windows of (N, C, {nd} spatial dims) and its flat "
                      f"index into each input plane.")
    return register(f"aten::{op}(Tensor self, int[{nd}] output_size) -> (Tensor, Tensor)", **_max_rules(op, nd))(kernel)


adaptive_max_pool2d = _register_max(2)
adaptive_max_pool3d = _register_max(3)


# -- adaptive average pooling in 3-D -------------------------------------------------------------

def _along(x, matrix, axis: int):
    """`matrix` (out, size) applied along `axis` of `x`."""
    return np.moveaxis(np.tensordot(x, matrix, axes=([axis], [1])), -1, axis)


def _avg_shape(self, output_size):
    return tuple(self.shape[:-3]) + adaptive_geometry("adaptive_avg_pool3d", 3, self, output_size)


def _avg_dtype(self, output_size):
    _float_only("adaptive_avg_pool3d_cpu", self.dtype)
    return self.dtype


@register("aten::adaptive_avg_pool3d(Tensor self, int[3] output_size) -> Tensor", shape=_avg_shape, dtype=_avg_dtype)
def adaptive_avg_pool3d(self, output_size):
    """The mean over PyTorch's adaptive windows of (N, C, D, H, W) or (C, D, H, W)."""
    _avg_dtype(self, output_size)
    out = adaptive_geometry("adaptive_avg_pool3d", 3, self, output_size)
    size = self.shape[-3:]
    if all(o and n % o == 0 for n, o in zip(size, out)):
        split = sum(((o, n // o) for n, o in zip(size, out)), ())
        return self.reshape(self.shape[:-3] + split).mean(axis=(-5, -3, -1))
    y = self
    for axis, (n, o) in enumerate(zip(size, out), start=self.ndim - 3):
        y = _along(y, _averaging_matrix(n, o, self.dtype), axis)
    return np.ascontiguousarray(y)
