"""`Tensor.unfold(dimension, size, step)`: the windows of `size` elements, `step` apart, along one dim,
as a view (the dim becomes the window count and a last dim of `size` is appended; windows may
overlap, as in PyTorch), and `unfold_backward`, its adjoint, which adds each window's gradient back.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import OpRuntimeError
from .registry import register
from .rules import same_dtype, wrap_dim


def _count(length, size: int, step: int):
    """How many windows fit (symbolic lengths give a symbolic count)."""
    if isinstance(length, str):
        return f"({length}-{size})//{step}+1"
    return (length - size) // step + 1


def _unfold_shape(self, dimension, size, step):
    shape = tuple(self.shape) or (1,)
    d = wrap_dim(dimension, len(self.shape), "unfold")
    length = shape[d]
    if size < 0:
        raise OpRuntimeError(f"size is {size} but must be >= 0")
    if isinstance(length, int) and size > length:
        raise OpRuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise OpRuntimeError(f"step is {step} but must be > 0")
    if not self.shape:  # a 0-dim tensor is one window of its one element
        return (size,)
    return shape[:d] + (_count(length, size, step),) + shape[d + 1:] + (size,)


@register("aten::unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)",
          shape=_unfold_shape, dtype=same_dtype, method_only=True)
def unfold(self, dimension, size, step):
    """Windows of `size` along `dimension`, `step` apart, as a strided view of `self`."""
    shape = _unfold_shape(self, dimension, size, step)
    if not self.ndim:
        return as_strided(self.reshape(1), shape=shape, strides=(self.itemsize,))
    x, d = self, wrap_dim(dimension, self.ndim, "unfold")
    strides = x.strides[:d] + (x.strides[d] * step,) + x.strides[d + 1:] + (x.strides[d],)
    return as_strided(x, shape=shape, strides=strides)


def _backward_shape(grad_in, input_sizes, dim, size, step):
    return tuple(input_sizes)


@register("aten::unfold_backward(Tensor grad_in, int[] input_sizes, int dim, int size, int step) -> Tensor",
          shape=_backward_shape, dtype=lambda grad_in, *rest: grad_in.dtype, method_only=True)
def unfold_backward(grad_in, input_sizes, dim, size, step):
    """The gradient of an input of `input_sizes` from the gradient of its windows: one strided
    add per position inside a window."""
    input_sizes = tuple(input_sizes)
    expected = _unfold_shape(np.empty(input_sizes, np.bool_), dim, size, step)
    if grad_in.shape != expected:
        raise OpRuntimeError(f"unfold_backward: gradient of shape {list(grad_in.shape)} does not fit the windows "
                             f"{list(expected)} of an input of size {list(input_sizes)}")
    if not input_sizes:
        return grad_in.sum(dtype=grad_in.dtype).reshape(())
    out = np.zeros(input_sizes, grad_in.dtype)
    d = wrap_dim(dim, len(input_sizes), "unfold_backward")
    count = expected[d]
    moved, target = np.moveaxis(grad_in, d, 0), np.moveaxis(out, d, 0)
    for k in range(size):
        target[k:k + step * (count - 1) + 1:step] += moved[..., k]
    return out
