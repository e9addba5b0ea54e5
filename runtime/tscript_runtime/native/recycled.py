"""Output arrays of the eager native kernels (convolution, max pooling, elementwise ops), handed out
again once nothing holds them.

A fresh array at least as large as glibc's mmap threshold (dynamic, at most 32 MiB: the size of the
largest block freed so far) comes from the OS and costs a page fault per page its kernel first writes, on
every call: eager ResNet-18 at batch 8 took ~1800 faults per call this way, ~1200 of them in the batch
norms' products (5.6 of their 12 ms). Smaller ones come from malloc's free lists without faults, and
keeping them here only pins memory malloc would reuse for other shapes (MobileNetV2 at batch 8: 14.8k
faults per call when arrays from 1 MiB were kept, 10.3k with none, 5.7k from MIN_BYTES). Each thread keeps
the arrays of MIN_BYTES or more it handed out (but those too big for PER_SHAPE of them to fit in
KEPT_BYTES), up to PER_SHAPE per shape and dtype and KEPT_BYTES in all (the least recently asked-for shapes
dropped first), and hands one out again when its reference count shows no holder but the pool, as the
whole-graph kernels' outputs are (kernels.FusedKernel._output). A kept array no one holds is memory malloc
would have given back.
"""
from __future__ import annotations

import math
import sys
import threading
from collections import OrderedDict

import numpy as np

MIN_BYTES = 1 << 23   # smaller arrays come from malloc's free lists without faults
PER_SHAPE = 4         # arrays kept per shape and dtype (a residual block holds three of one shape at once)
KEPT_BYTES = 1 << 28  # bytes kept per thread, held or not
_local = threading.local()


def empty(shape: tuple, dtype) -> np.ndarray:
    """An uninitialized array of `shape` and `dtype` (the caller writes every element): a kept one no one
    holds any more, else a new one (kept when large)."""
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    if size < MIN_BYTES or size * PER_SHAPE > KEPT_BYTES:
        return np.empty(shape, dtype)
    pool = _pool()
    key = (tuple(shape), dtype)
    arrays = pool.get(key)
    if arrays is None:
        arrays = pool[key] = []
    pool.move_to_end(key)
    for arr in arrays:
        if sys.getrefcount(arr) == 3:  # the list, `arr` and getrefcount's argument
            return arr
    arr = np.empty(shape, dtype)
    arrays.append(arr)
    if len(arrays) > PER_SHAPE:
        del arrays[0]
    _trim(pool)
    return arr


def _pool() -> OrderedDict:
    """This thread's kept arrays: (shape, dtype) -> list, the shape asked for last at the end."""
    try:
        return _local.pool
    except AttributeError:
        _local.pool = OrderedDict()
        return _local.pool


def _trim(pool: OrderedDict) -> None:
    """Drop the least recently asked-for shapes' arrays until at most KEPT_BYTES are kept."""
    kept = sum(a.nbytes for arrays in pool.values() for a in arrays)
    while kept > KEPT_BYTES and len(pool) > 1:
        _, arrays = pool.popitem(last=False)
        kept -= sum(a.nbytes for a in arrays)
