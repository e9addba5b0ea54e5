"""Joining ops: `cat` and `stack`, with PyTorch's dtype promotion across the inputs."""
from functools import reduce

import numpy as np

from .. import dtypes as dt
from ..errors import OpRuntimeError, OpValueError, fmt_shape
from .registry import register
from .rules import wrap_dim


def _joined_dtype(tensors, dim=0):
    """The promoted dtype of all inputs (skipped empty ones included, as in PyTorch)."""
    if not tensors:
        raise OpValueError("torch.cat(): expected a non-empty list of Tensors")
    return reduce(dt.promote_types, (t.dtype for t in tensors))


def _is_legacy_empty(t) -> bool:
    """PyTorch's cat ignores 1-d tensors of size 0 whatever the other shapes are."""
    return t.ndim == 1 and t.shape[0] == 0


def _sum_sizes(sizes):
    """The total of sizes that may be symbolic: an int, or a symbol spelling the sum."""
    if all(isinstance(s, int) for s in sizes):
        return sum(sizes)
    return "+".join(str(s) for s in sizes)


def _cat_parts(tensors, dim):
    """The inputs cat really joins (with their positions) and the wrapped dim."""
    _joined_dtype(tensors)
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise OpRuntimeError(f"cat(): zero-dimensional tensor (at position {i}) cannot be concatenated")
    kept = [(i, t) for i, t in enumerate(tensors) if not _is_legacy_empty(t)]
    if not kept:
        return kept, 0
    d = wrap_dim(dim, kept[0][1].ndim, "cat")
    first = kept[0][1]
    for i, t in kept[1:]:
        if t.ndim != first.ndim:
            raise OpRuntimeError(f"cat(): Tensors must have same number of dimensions: got {first.ndim} "
                                 f"and {t.ndim}")
        for k, (want, got) in enumerate(zip(first.shape, t.shape)):
            if k != d and want != got and isinstance(want, int) and isinstance(got, int):
                raise OpRuntimeError(f"cat(): Sizes of tensors must match except in dimension {d}. Expected "
                                     f"size {want} but got size {got} for tensor number {i} in the list.")
    return kept, d


def _cat_shape(tensors, dim=0):
    kept, d = _cat_parts(tensors, dim)
    if not kept:
        return (0,)
    first = tuple(kept[0][1].shape)
    return first[:d] + (_sum_sizes([t.shape[d] for _, t in kept]),) + first[d + 1:]


@register("aten::cat(Tensor[] tensors, int dim=0) -> Tensor", shape=_cat_shape, dtype=_joined_dtype)
def cat(tensors, dim=0):
    out = _joined_dtype(tensors)
    kept, d = _cat_parts(tensors, dim)
    if not kept:
        return np.empty((0,), out)
    return np.concatenate([t for _, t in kept], axis=d, dtype=out)


def _stack_dtype(tensors, dim=0):
    if not tensors:
        raise OpRuntimeError("stack expects a non-empty TensorList")
    return _joined_dtype(tensors)


def _stack_shape(tensors, dim=0):
    _stack_dtype(tensors)
    first = tuple(tensors[0].shape)
    for i, t in enumerate(tensors[1:], 1):
        if tuple(t.shape) != first:
            raise OpRuntimeError(f"stack expects each tensor to be equal size, but got {fmt_shape(first)} at "
                                 f"entry 0 and {fmt_shape(t.shape)} at entry {i}")
    d = wrap_dim(dim, len(first) + 1, "stack")
    return first[:d] + (len(tensors),) + first[d:]


@register("aten::stack(Tensor[] tensors, int dim=0) -> Tensor", shape=_stack_shape, dtype=_stack_dtype)
def stack(tensors, dim=0):
    _stack_shape(tensors, dim)
    return np.stack(tensors, axis=wrap_dim(dim, tensors[0].ndim + 1), dtype=_stack_dtype(tensors))
