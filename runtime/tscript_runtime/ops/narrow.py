"""float16 and bfloat16 kernels: compute in float32, round each result to the narrow type.

PyTorch's CPU kernels load half and bfloat16 values, compute in float32 and round what they store.
numpy does not: ml_dtypes sends `bfloat16 * 0.5` and bfloat16 matmuls to float32, and numpy's float16
arithmetic rounds Python scalars to float16 first (`x * 1e5` overflows before it multiplies). So the
kernel of every op that computes (not a view, not in place: those keep their input's memory) sees its
narrow inputs widened to float32, and its results are rounded to the dtypes the op's rule gives.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt

_ndarray = np.ndarray
NARROW_CHARS = "eE"  # dtype.char of float16 and of ml_dtypes' bfloat16


def computes(op) -> bool:
    """Does `op` compute values (so its kernel needs widening), rather than alias or write an input?"""
    return op.dtype is not None and bool(op.tensor_pos or op.list_pos) and op.out_alias is None \
        and op.mutates is None


def widening(kernel, rule, tensor_pos: tuple, list_pos: tuple):
    """`kernel` running narrow float inputs in float32, its results rounded to what `rule` says."""
    def widened(args):
        wide = list(args)
        for i in tensor_pos:
            if i < len(wide):
                wide[i] = _widen(wide[i])
        for i in list_pos:
            if i < len(wide) and wide[i] is not None:
                wide[i] = [_widen(a) for a in wide[i]]
        return _rounded(kernel(*wide), rule(*args))

    ndarray, narrow_chars = _ndarray, NARROW_CHARS  # (closure cells: every op call runs this check)

    def run(*args):
        n = len(args)
        for i in tensor_pos:
            if i < n:
                a = args[i]
                if a.__class__ is ndarray and a.dtype.char in narrow_chars:
                    return widened(args)
        for i in list_pos:
            if i < n and args[i] is not None and any(_is_narrow(a) for a in args[i]):
                return widened(args)
        return kernel(*args)
    run.__name__, run.__doc__, run.__wrapped__ = kernel.__name__, kernel.__doc__, kernel
    return run


def _is_narrow(a) -> bool:
    return a.__class__ is _ndarray and a.dtype.char in NARROW_CHARS


def _widen(a):
    return a.astype(dt.float32) if _is_narrow(a) else a


def _rounded(out, want):
    """Kernel results cast to the rule's dtype(s) where they differ (float32 -> the narrow type)."""
    if isinstance(want, tuple):
        return tuple(_rounded(o, w) for o, w in zip(out, want)) if isinstance(out, tuple) else out
    if isinstance(out, (list, tuple)):
        return out.__class__(_rounded(o, want) for o in out)
    if out.__class__ is _ndarray and want is not None and out.dtype != want and dt.is_narrow(want):
        return out.astype(want)
    return out
