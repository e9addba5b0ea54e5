"""Binary search: `searchsorted` (per row of a sorted sequence) and `bucketize` (in 1-D boundaries)."""
import numpy as np

from .. import dtypes as dt
from ..errors import OpRuntimeError
from ._cast import as_array
from .registry import register
from .rules import shape_of


def _side(right: bool, side) -> str:
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise OpRuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise OpRuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                             "while right was True")
    return side


def _index_dtype(out_int32: bool):
    return dt.int32 if out_int32 else dt.int64


def _searchsorted_shape(sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
    _side(right, side)
    values = shape_of(self)
    if sorted_sequence.ndim > 1 and tuple(sorted_sequence.shape[:-1]) != tuple(values[:-1]):
        raise OpRuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                             f"dimensions of boundaries tensor and input value tensor must match, but we got "
                             f"boundaries tensor {list(sorted_sequence.shape)} and input value tensor {list(values)}")
    if sorter is not None and tuple(sorter.shape) != tuple(sorted_sequence.shape):
        raise OpRuntimeError("torch.searchsorted(): boundary and sorter must have the same size")
    return values


@register("aten::searchsorted(Tensor sorted_sequence, Tensor|Scalar self, *, bool out_int32=False, bool right=False, "
          "str? side=None, Tensor? sorter=None) -> Tensor", shape=_searchsorted_shape,
          dtype=lambda sorted_sequence, self, out_int32=False, *rest: _index_dtype(out_int32))
def searchsorted(sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
    """Where each value of `self` would be inserted in (its row of) `sorted_sequence` to keep it sorted."""
    _searchsorted_shape(sorted_sequence, self, out_int32, right, side, sorter)
    side = _side(right, side)
    values = np.asarray(self)
    if sorted_sequence.ndim <= 1:
        out = np.searchsorted(sorted_sequence, values, side=side, sorter=sorter)
    else:
        rows, cols = sorted_sequence.reshape(-1, sorted_sequence.shape[-1]), values.reshape(-1, values.shape[-1])
        order = [None] * len(rows) if sorter is None else sorter.reshape(rows.shape)
        out = np.stack([np.searchsorted(r, v, side=side, sorter=s) for r, v, s in zip(rows, cols, order)])
        out = out.reshape(values.shape)
    return as_array(out, _index_dtype(out_int32))


def _bucketize_shape(self, boundaries, out_int32=False, right=False):
    if boundaries.ndim != 1:
        raise OpRuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return shape_of(self)


@register("aten::bucketize(Tensor|Scalar self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor",
          shape=_bucketize_shape, dtype=lambda self, boundaries, out_int32=False, *rest: _index_dtype(out_int32))
def bucketize(self, boundaries, out_int32=False, right=False):
    """The bucket of each value: i with boundaries[i-1] < v <= boundaries[i] (< v, <= with `right`)."""
    _bucketize_shape(self, boundaries)
    out = np.searchsorted(boundaries, np.asarray(self), side="right" if right else "left")
    return as_array(out, _index_dtype(out_int32))
