"""Launching generated fusion-group kernels from Python: broadcast shapes, per-array element
strides (broadcast = 0) and pointers, packed once per input layout and reused (calls with the
same shapes only fill in pointers)."""
from __future__ import annotations

import ctypes

import numpy as np

from .errors import OpRuntimeError

_SIG = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


class _Plan:
    __slots__ = ("out_shape", "sizes", "strides", "ptrs", "scalars")


class FusedKernel:
    """A compiled fusion group: call it with the group's inputs (arrays and Python scalars)."""

    def __init__(self, address: int, rank: int, inputs: list, out_dtypes: list, out_row: bool = False):
        self.fn = _SIG(address)
        self.out_row = out_row  # row kernels may output one value per row (last dim of size 1)
        self.rank, self.kinds = rank, inputs
        self.out_dtypes = [np.dtype(d) for d in out_dtypes]
        self.n_scalars = sum(k == "scalar" for k in inputs)
        self._plans: dict = {}

    def __call__(self, *args):
        tensors = [a for a, k in zip(args, self.kinds) if k == "tensor"]
        key = tuple((a.shape, a.strides, a.dtype.num) for a in tensors)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan(tensors)
        outs = [np.empty(plan.out_shape, d) for d in self.out_dtypes]
        ptrs = plan.ptrs
        for i, a in enumerate(outs + tensors):
            ptrs[i] = a.__array_interface__["data"][0]
        if self.n_scalars:
            for j, x in enumerate(a for a, k in zip(args, self.kinds) if k == "scalar"):
                plan.scalars[j] = float(x)
        self.fn(plan.sizes, ptrs, plan.strides, plan.scalars)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _plan(self, tensors: list) -> _Plan:
        r = self.rank
        shape = np.broadcast_shapes(*(a.shape for a in tensors)) if tensors else ()
        if len(shape) > r:
            raise OpRuntimeError(f"fused kernel was compiled for rank {r}, got inputs of shapes "
                                 f"{[list(a.shape) for a in tensors]}")
        shape = (1,) * (r - len(shape)) + tuple(shape)
        plan = _Plan()
        iteration = tuple(shape[len(shape) - r:]) if r else ()
        plan.out_shape = iteration[:-1] + (1,) if self.out_row and r else iteration
        arrays_strides = []
        for dtype in self.out_dtypes:  # outputs are fresh C-contiguous arrays
            arrays_strides.append(_strides(plan.out_shape, np.empty(plan.out_shape, dtype).strides,
                                           dtype.itemsize, iteration))
        for a in tensors:
            arrays_strides.append(_strides(a.shape, a.strides, a.itemsize, iteration))
        n = len(arrays_strides)
        plan.sizes = (ctypes.c_int64 * max(r, 1))(*iteration)
        plan.strides = (ctypes.c_int64 * max(n * r, 1))(*[s for st in arrays_strides for s in st])
        plan.ptrs = (ctypes.c_void_p * n)()
        plan.scalars = (ctypes.c_double * max(self.n_scalars, 1))()
        return plan


def _strides(shape, byte_strides, itemsize: int, out_shape) -> list:
    """Element strides of an array read in the out_shape iteration space (0 where broadcast)."""
    r = len(out_shape)
    pad = r - len(shape)
    out = []
    for d in range(r):
        if d < pad or shape[d - pad] == 1:
            out.append(0)
        else:
            out.append(byte_strides[d - pad] // itemsize)
    return out
