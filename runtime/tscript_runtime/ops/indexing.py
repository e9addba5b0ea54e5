"""Indexing ops: advanced indexing (`index`, `index_put`), `gather`/`scatter`, `index_select`,
`masked_fill`, `nonzero`, and `alias` (the fresh view `x[...]` returns).

`indices` lists follow PyTorch's `Tensor?[]` convention: entry k indexes the next dimension(s) of
`self`; None keeps a dimension whole, an integer tensor picks along one dimension, a bool mask
covers as many dimensions as it has. Results follow NumPy's placement rule for the picked
dimensions (in place when the index tensors are adjacent, in front otherwise).
"""
from typing import NamedTuple

import numpy as np

from .. import dtypes as dt
from ..errors import OpIndexError, OpRuntimeError, fmt_shape
from .registry import register
from .rules import broadcast_shapes, int64, numel, same_dtype, shape_of, wrap_dim

# The size of a dimension that depends on data (how many elements of a mask are true) when a
# rule sees only a TensorMeta.
NNZ = "nnz"
_INT_INDEX = (dt.int32, dt.int64)
_C_NAMES = dt.C_NAMES  # PyTorch names dtypes by their C types in masked_fill's message


def true_count(mask):
    """How many elements of `mask` are nonzero: exact for an array, `NNZ` for a meta."""
    return int(np.count_nonzero(mask)) if isinstance(mask, np.ndarray) else NNZ


def check_bounds(index: np.ndarray, size: int, dim: int, error=OpIndexError, negative=True) -> None:
    """Raise `error` naming the first entry of `index` outside `[-size, size)` (or `[0, size)`)."""
    low = -size if negative else 0
    if index.size and (index.max() >= size or index.min() < low):
        bad = index[(index >= size) | (index < low)].flat[0]
        raise error(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def fill_value(value, dtype) -> np.ndarray:
    """A scalar or 0-dim array as a 0-dim array of `dtype`: tensors are cast as PyTorch casts them,
    Python numbers that do not fit raise (OverflowError) instead of wrapping around."""
    return value.astype(dtype) if isinstance(value, np.ndarray) else np.array(value, dtype)


def _broadcastable(src, dst) -> bool:
    """Can a tensor of shape `src` be broadcast to exactly `dst`?"""
    if len(src) > len(dst):
        return False
    return all(s == 1 or s == d or isinstance(s, str) or isinstance(d, str)
               for s, d in zip(reversed(src), reversed(dst)))


# -- index / index_put ------------------------------------------------------------------------------

def _check_mask(mask, shape, start: int) -> None:
    for j, size in enumerate(mask.shape):
        own = shape[start + j]
        if size != own and not isinstance(size, str) and not isinstance(own, str):
            raise OpIndexError(f"The shape of the mask {fmt_shape(mask.shape)} at index {j} does not match "
                               f"the shape of the indexed tensor {fmt_shape(shape)} at index {start + j}")


class _Picked(NamedTuple):
    """One index tensor of an `indices` list, as the shape rule sees it."""
    position: int      # its entry in the list
    start: int         # the first dimension of `self` it indexes
    ndim: int          # how many dimensions it covers (a mask's ndim, else 1)
    shape: tuple       # the shape of what it picks (a mask picks a vector of its true count)


def _advanced(self, indices) -> list:
    """Validate `indices` against `self`; the index tensors among them as `_Picked`s."""
    if not indices:
        raise OpIndexError("at least one index must be provided")
    covered = sum(1 if i is None or i.dtype != dt.bool_ else i.ndim for i in indices)
    if covered > self.ndim:
        raise OpIndexError(f"too many indices for tensor of dimension {self.ndim} (got {covered})")
    out, d = [], 0
    for pos, idx in enumerate(indices):
        if idx is None:
            d += 1
        elif idx.dtype == dt.bool_:
            _check_mask(idx, self.shape, d)
            out.append(_Picked(pos, d, idx.ndim, (true_count(idx),)))
            d += idx.ndim
        elif idx.dtype in _INT_INDEX:
            out.append(_Picked(pos, d, 1, tuple(idx.shape)))
            d += 1
        else:
            raise OpIndexError("tensors used as indices must be long, int, byte or bool tensors")
    return out


def _picked_shape(shapes) -> tuple:
    try:
        return broadcast_shapes(*shapes)
    except OpRuntimeError:
        raise OpIndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                           + ", ".join(fmt_shape(s) for s in shapes)) from None


def index_shape(self, indices) -> tuple:
    """Shape of `self[indices]`: the picked dims replace the indexed ones when the index tensors
    are adjacent in the list, and go in front otherwise (NumPy's rule)."""
    adv = _advanced(self, indices)
    shape = tuple(self.shape)
    if not adv:
        return shape
    picked = _picked_shape([a.shape for a in adv])
    positions = [a.position for a in adv]
    if positions == list(range(positions[0], positions[-1] + 1)):
        return shape[:adv[0].start] + picked + shape[adv[-1].start + adv[-1].ndim:]
    covered = {d for a in adv for d in range(a.start, a.start + a.ndim)}
    return picked + tuple(s for d, s in enumerate(shape) if d not in covered)


def _numpy_key(self, indices) -> tuple:
    """`indices` as a NumPy index tuple, after checking integer entries against their dimension."""
    key, d = [], 0
    for idx in indices:
        if idx is None:
            key.append(slice(None))
            d += 1
        elif idx.dtype == dt.bool_:
            key.append(idx)
            d += idx.ndim
        else:
            check_bounds(idx, self.shape[d], d)
            key.append(idx)
            d += 1
    return tuple(key)


@register("aten::index(Tensor self, Tensor?[] indices) -> Tensor", shape=index_shape, dtype=same_dtype)
def index(self, indices):
    index_shape(self, indices)
    if all(i is None for i in indices):
        return self.copy()
    return self[_numpy_key(self, indices)]


def _index_put_dtype(self, indices, values, accumulate=False):
    if values.dtype != self.dtype:
        raise OpRuntimeError(f"Index put requires the source and destination dtypes match, got "
                             f"{dt.TORCH_NAMES[self.dtype]} for the destination and "
                             f"{dt.TORCH_NAMES[values.dtype]} for the source.")
    return self.dtype


def _index_put_shape(self, indices, values, accumulate=False):
    target = index_shape(self, indices)
    if not _broadcastable(values.shape, target):
        raise OpRuntimeError(f"shape mismatch: value tensor of shape {fmt_shape(values.shape)} cannot be "
                             f"broadcast to indexing result of shape {fmt_shape(target)}")
    return shape_of(self)


@register("aten::index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) "
          "-> Tensor(a!)", shape=_index_put_shape, dtype=_index_put_dtype, functional="aten::index_put")
def index_put_(self, indices, values, accumulate=False):
    _index_put_dtype(self, indices, values)
    _index_put_shape(self, indices, values)
    key = _numpy_key(self, indices)
    if accumulate:
        np.add.at(self, key, values)
    else:
        self[key] = values
    return self


@register("aten::index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
          shape=_index_put_shape, dtype=_index_put_dtype)
def index_put(self, indices, values, accumulate=False):
    return index_put_(self.copy(), indices, values, accumulate)


@register("aten::alias(Tensor(a) self) -> Tensor(a)", shape=shape_of, dtype=same_dtype)
def alias(self):
    return self.view()


# -- gather / scatter ---------------------------------------------------------------------------------

def _check_index_dtype(op: str, index) -> None:
    if index.dtype not in _INT_INDEX:
        raise OpRuntimeError(f"{op}(): Expected dtype int32/int64 for index")


def _rank(x) -> int:
    """PyTorch's `ensure_nonempty_dim`: a 0-dim tensor counts as 1-dim in gather/scatter."""
    return max(x.ndim, 1)


def _sizes(x) -> tuple:
    return tuple(x.shape) or (1,)


def _gather_shape(self, dim, index, sparse_grad=False):
    d = wrap_dim(dim, self.ndim, "gather")
    _check_index_dtype("gather", index)
    if _rank(index) != _rank(self):
        raise OpRuntimeError("gather(): Index tensor must have the same number of dimensions as input tensor")
    for i, (n, own) in enumerate(zip(_sizes(index), _sizes(self))):
        if i != d and n > own:
            raise OpRuntimeError(f"gather(): Size does not match at dimension {i} expected index "
                                 f"{fmt_shape(index.shape)} to be no larger than self {fmt_shape(self.shape)} "
                                 f"apart from dimension {d}")
    return shape_of(index)


def _leading(x, shape) -> np.ndarray:
    """The corner of `x` (at least 1-d) with the extents of `shape`."""
    return x[tuple(slice(0, n) for n in shape)]


@register("aten::gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
          shape=_gather_shape, dtype=same_dtype)
def gather(self, dim, index, sparse_grad=False):
    shape = _gather_shape(self, dim, index)
    d = wrap_dim(dim, self.ndim)
    src, idx = np.atleast_1d(self), np.atleast_1d(index)
    check_bounds(idx, src.shape[d], d, OpRuntimeError, negative=False)
    corner = tuple(slice(None) if i == d else slice(0, n) for i, n in enumerate(idx.shape))
    return np.take_along_axis(src[corner], idx, axis=d).reshape(shape)


_REDUCE = {None: None, "add": np.add, "multiply": np.multiply}


def _scatter_check(op: str, self, dim, index, src, reduce=None):
    d = wrap_dim(dim, self.ndim, op)
    _check_index_dtype("scatter", index)
    tensor_src = hasattr(src, "dtype") and hasattr(src, "shape")
    if tensor_src and src.dtype != self.dtype:
        raise OpRuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
    if _rank(index) != _rank(self):
        raise OpRuntimeError(f"{op}(): Index tensor must have the same number of dimensions as self tensor")
    if tensor_src and _rank(index) != _rank(src):
        raise OpRuntimeError(f"{op}(): Index tensor must have the same number of dimensions as src tensor")
    _check_scatter_sizes(op, d, self, index, src if tensor_src else None)
    if reduce not in _REDUCE:
        raise OpRuntimeError(f"{op}(): reduce argument must be either add or multiply.")
    return self.dtype


def _check_scatter_sizes(op: str, d: int, self, index, src) -> None:
    too_big = any(i != d and n > own for i, (n, own) in enumerate(zip(_sizes(index), _sizes(self))))
    if src is not None:
        too_big = too_big or any(n > s for n, s in zip(_sizes(index), _sizes(src)))
    if too_big:
        also = "" if src is None else f" and to be no larger size than src {fmt_shape(src.shape)}"
        raise OpRuntimeError(f"{op}(): Expected index {fmt_shape(index.shape)} to be no larger than self "
                             f"{fmt_shape(self.shape)} apart from dimension {d}{also}")


def _scatter_into(out, dim, index, src, reduce=None):
    """Write `src` (array or scalar) into `out` at `index` along `dim`, combining with `reduce`."""
    d = wrap_dim(dim, out.ndim)
    target, idx = np.atleast_1d(out), np.atleast_1d(index)
    check_bounds(idx, target.shape[d], d, OpRuntimeError, negative=False)
    key = list(np.indices(idx.shape, sparse=True))
    key[d] = idx
    values = _leading(np.atleast_1d(src), idx.shape) if isinstance(src, np.ndarray) else \
        fill_value(src, out.dtype)
    ufunc = _REDUCE[reduce]
    if ufunc is None:
        target[tuple(key)] = values
    else:
        ufunc.at(target, tuple(key), values)
    return out


def _scatter_rules(op: str) -> dict:
    return dict(shape=lambda self, *rest: shape_of(self), dtype=lambda self, *rest: _scatter_check(op, self, *rest))


@register("aten::scatter_(Tensor(a!) self, int dim, Tensor index, Tensor|Scalar src, *, str? reduce=None) "
          "-> Tensor(a!)", **_scatter_rules("scatter_"), functional="aten::scatter")
def scatter_(self, dim, index, src, reduce=None):
    _scatter_check("scatter_", self, dim, index, src, reduce)
    return _scatter_into(self, dim, index, src, reduce)


@register("aten::scatter(Tensor self, int dim, Tensor index, Tensor|Scalar src, *, str? reduce=None) -> Tensor",
          **_scatter_rules("scatter"))
def scatter(self, dim, index, src, reduce=None):
    _scatter_check("scatter", self, dim, index, src, reduce)
    return _scatter_into(self.copy(), dim, index, src, reduce)


@register("aten::scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)",
          **_scatter_rules("scatter_add_"), functional="aten::scatter_add")
def scatter_add_(self, dim, index, src):
    _scatter_check("scatter_add_", self, dim, index, src)
    return _scatter_into(self, dim, index, src, "add")


@register("aten::scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
          **_scatter_rules("scatter_add"))
def scatter_add(self, dim, index, src):
    _scatter_check("scatter_add", self, dim, index, src)
    return _scatter_into(self.copy(), dim, index, src, "add")


# -- index_select -------------------------------------------------------------------------------------

def _index_select_shape(self, dim, index):
    d = wrap_dim(dim, self.ndim, "index_select")
    if index.ndim > 1:
        raise OpIndexError("index_select(): Index is supposed to be a vector")
    if index.dtype not in _INT_INDEX:
        raise OpRuntimeError("index_select(): Expected dtype int32 or int64 for index")
    n = numel(index.shape)
    if self.ndim == 0:
        if n != 1:
            raise OpRuntimeError(f"index_select(): Index to scalar can have only 1 value, got {n} value(s)")
        return ()
    return tuple(self.shape[:d]) + (n,) + tuple(self.shape[d + 1:])


@register("aten::index_select(Tensor self, int dim, Tensor index) -> Tensor",
          shape=_index_select_shape, dtype=same_dtype)
def index_select(self, dim, index):
    shape = _index_select_shape(self, dim, index)
    d = wrap_dim(dim, self.ndim)
    src, idx = np.atleast_1d(self), index.reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= src.shape[d]):
        raise OpIndexError("index_select(): index out of range in self")
    return np.take(src, idx, axis=d).reshape(shape)


# -- masked_fill ---------------------------------------------------------------------------------------

def _masked_fill_dtype(self, mask, value):
    if mask.dtype != dt.bool_:
        raise OpRuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                             f"{_C_NAMES[mask.dtype]}")
    if getattr(value, "ndim", 0):
        raise OpRuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                             f"with {value.ndim} dimension(s).")
    return self.dtype


def _masked_fill_inplace_shape(self, mask, value):
    out = broadcast_shapes(shape_of(self), shape_of(mask))
    if out != shape_of(self):
        raise OpRuntimeError(f"masked_fill_: output with shape {fmt_shape(self.shape)} doesn't match the "
                             f"broadcast shape {fmt_shape(out)}")
    return out


@register("aten::masked_fill_(Tensor(a!) self, Tensor mask, Tensor|Scalar value) -> Tensor(a!)",
          shape=_masked_fill_inplace_shape, dtype=_masked_fill_dtype, functional="aten::masked_fill")
def masked_fill_(self, mask, value):
    _masked_fill_dtype(self, mask, value)
    _masked_fill_inplace_shape(self, mask, value)
    np.copyto(self, fill_value(value, self.dtype), where=mask)
    return self


@register("aten::masked_fill(Tensor self, Tensor mask, Tensor|Scalar value) -> Tensor",
          shape=lambda self, mask, value: broadcast_shapes(shape_of(mask), shape_of(self)),
          dtype=_masked_fill_dtype)
def masked_fill(self, mask, value):
    _masked_fill_dtype(self, mask, value)
    out = np.array(np.broadcast_to(self, broadcast_shapes(mask.shape, self.shape)))
    return masked_fill_(out, mask, value)


# -- nonzero -------------------------------------------------------------------------------------------

@register("aten::nonzero(Tensor self) -> Tensor", shape=lambda self: (true_count(self), self.ndim), dtype=int64)
def nonzero(self):
    return np.argwhere(self).astype(dt.int64, copy=False)


@register("aten::nonzero_numpy(Tensor self) -> Tensor[]",
          shape=lambda self: ((true_count(self),),) * _rank(self),
          dtype=lambda self: (dt.int64,) * _rank(self))
def nonzero_numpy(self):
    """`nonzero(as_tuple=True)`: one index vector per dimension (a 0-dim input counts as 1-dim)."""
    return [i.astype(dt.int64, copy=False) for i in np.nonzero(np.atleast_1d(self))]
