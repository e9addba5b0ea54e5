"""Sorting ops: sort, argsort, topk and unique.

Every sort here is stable, so equal elements keep their order (PyTorch's `stable=True`, and what
its CPU kernels give anyway). NaN sorts as the largest value: last ascending, first descending.
"""
import numpy as np

from .. import dtypes as dt
from ..errors import OpIndexError, OpRuntimeError
from .reductions import values_indices
from .registry import register
from .rules import shape_of, wrap_dim


def stable_argsort(x, axis: int, descending: bool = False):
    """Indices sorting `x` along `axis`, equal elements in their original order either way."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    # Sorting the reversed input ascending and reversing the result puts the largest (NaN) first
    # and keeps ties in order, without negating (which bools and NaN would not survive).
    reversed_order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (x.shape[axis] - 1) - np.flip(reversed_order, axis)


def _sorted_along(self, dim, descending, op):
    """(values, int64 indices) of `self` sorted along `dim`."""
    if self.ndim == 0:
        wrap_dim(dim, 0, op)
        return self.copy(), np.zeros((), dt.int64)
    d = wrap_dim(dim, self.ndim, op)
    index = stable_argsort(self, d, descending)
    return np.take_along_axis(self, index, d), index.astype(dt.int64, copy=False)


def _sort_shape(self, dim=-1, descending=False, stable=False):
    wrap_dim(dim, self.ndim, "sort")
    return shape_of(self), shape_of(self)


@register("aten::sort(Tensor self, int dim=-1, bool descending=False, *, bool? stable=False)"
          " -> (Tensor values, Tensor indices)", shape=_sort_shape,
          dtype=lambda self, *rest: (self.dtype, dt.int64), namedtuple=values_indices("sort"))
def sort(self, dim=-1, descending=False, stable=False):
    return _sorted_along(self, dim, descending, "sort")


@register("aten::argsort(Tensor self, int dim=-1, bool descending=False, *, bool stable=False) -> Tensor",
          shape=lambda self, dim=-1, *rest: _sort_shape(self, dim)[0], dtype=lambda self, *rest: dt.int64)
def argsort(self, dim=-1, descending=False, stable=False):
    return _sorted_along(self, dim, descending, "argsort")[1]


def _topk_shape(self, k, dim=-1, largest=True, sorted=True):
    if self.dtype == dt.bool_:
        raise OpRuntimeError("topk does not support bool dtypes on CPU")
    d = wrap_dim(dim, self.ndim, "topk")
    size = self.shape[d] if self.ndim else 1
    if not isinstance(size, str) and not 0 <= k <= size:
        raise OpRuntimeError(f"topk(): selected index k out of range (k = {k}, size of dim {d} = {size})")
    shape = shape_of(self)[:d] + (k,) + shape_of(self)[d + 1:] if self.ndim else ()
    return shape, shape


@register("aten::topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True)"
          " -> (Tensor values, Tensor indices)", shape=_topk_shape,
          dtype=lambda self, *rest: (self.dtype, dt.int64), namedtuple=values_indices("topk"))
def topk(self, k, dim=-1, largest=True, sorted=True):
    """The k largest (smallest) elements along `dim`, always in sorted order; among equal
    elements the first ones win (PyTorch leaves that choice unspecified)."""
    _topk_shape(self, k, dim, largest, sorted)
    values, index = _sorted_along(self, dim, largest, "topk")
    if self.ndim == 0:
        return values, index
    first_k = (slice(None),) * wrap_dim(dim, self.ndim) + (slice(0, k),)
    return values[first_k].copy(), index[first_k].copy()


# unique's output length depends on the data: the compiler sees it as this symbolic size.
UNIQUE_SIZE = "num_unique"


def _unique_dim(self, dim):
    """`dim` of unique(dim=...) wrapped, with PyTorch's errors for 0-dim and empty inputs."""
    if self.ndim == 0:
        raise OpIndexError(f"unique(): Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, self.ndim, "unique")
    if any(s == 0 for i, s in enumerate(self.shape) if i != d):
        raise OpRuntimeError("unique(): There are 0 sized dimensions, and they aren't selected, so unique "
                             "cannot be applied")
    return d


def _unique_shape(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    if dim is None:
        return (UNIQUE_SIZE,), shape_of(self), (UNIQUE_SIZE,)
    d = _unique_dim(self, dim)
    shape = shape_of(self)
    return shape[:d] + (UNIQUE_SIZE,) + shape[d + 1:], (shape[d],), (UNIQUE_SIZE,)


@register("aten::unique(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False, "
          "int? dim=None) -> (Tensor, Tensor, Tensor)", shape=_unique_shape,
          dtype=lambda self, *rest: (self.dtype, dt.int64, dt.int64))
def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """(sorted unique values, inverse indices, counts), always all three; NaNs are all distinct.
    With `dim`, the unique slices along it in lexicographic order."""
    if dim is None:
        values, inverse, counts = np.unique(self.reshape(-1), return_inverse=True, return_counts=True,
                                            equal_nan=False)
        inverse = inverse.reshape(self.shape)
    else:
        d = _unique_dim(self, dim)
        if self.shape[d] == 0:
            return self.copy(), np.zeros(0, dt.int64), np.zeros(0, dt.int64)
        values, inverse, counts = np.unique(self, return_inverse=True, return_counts=True, axis=d,
                                            equal_nan=False)
        inverse = inverse.reshape(-1)
    return values, inverse.astype(dt.int64, copy=False), counts.astype(dt.int64, copy=False)
