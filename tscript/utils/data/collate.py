"""`default_collate`: merge a list of samples into a batch, as PyTorch's.

Tensors are stacked along a new first dimension; numpy arrays and numbers become tensors (Python
floats float64, ints int64, bools bool); strings stay a list; dicts, named tuples and sequences
are collated field by field (a tuple sample gives a list of batches, as in PyTorch).
"""
from __future__ import annotations

import collections.abc
import copy

import numpy as np

from ..._tensor import Tensor

_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def default_collate(batch: list):
    """Merge the samples of `batch` (a list) into one batch."""
    from ... import as_tensor, stack, tensor
    from ..._dtype import float64
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "SaUO":
            raise TypeError(_ERROR.format(elem.dtype))
        return default_collate([as_tensor(b) for b in batch])
    if isinstance(elem, (np.bool_, np.number)):
        return as_tensor(np.asarray(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _collate_mapping(elem, batch)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        return _collate_sequence(elem, batch)
    raise TypeError(_ERROR.format(type(elem)))


def _collate_mapping(elem, batch: list):
    merged = {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, collections.abc.MutableMapping):
        clone = copy.copy(elem)
        clone.update(merged)
        return clone
    return _rebuild(elem, merged)


def _collate_sequence(elem, batch: list):
    size = len(elem)
    if any(len(sample) != size for sample in batch):
        raise RuntimeError("each element in list of batch should be of equal size")
    merged = [default_collate(list(samples)) for samples in zip(*batch)]
    if isinstance(elem, tuple):
        return merged  # PyTorch returns a list for tuple samples (backwards compatibility)
    if isinstance(elem, collections.abc.MutableSequence):
        clone = copy.copy(elem)
        clone[:] = merged
        return clone
    return _rebuild(elem, merged)


def default_convert(data):
    """Convert numpy arrays (also nested in dicts and sequences) to tensors, leaving the rest; the
    collate function when automatic batching is off (`batch_size=None`)."""
    from ... import as_tensor
    if isinstance(data, np.ndarray) and data.dtype.kind not in "SaUO":
        return as_tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {key: default_convert(value) for key, value in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(d) for d in data])
    return data


def _rebuild(like, items):
    """`items` in the container type of `like` when that type can be built from them."""
    try:
        return type(like)(items)
    except TypeError:
        return items
