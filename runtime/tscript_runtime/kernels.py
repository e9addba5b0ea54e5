"""Launching generated fusion-group kernels from Python: broadcast shapes, per-array element
strides (broadcast = 0) and pointers. The sizes and strides are packed once per input layout and
shared by all threads; each thread fills in pointers and scalars in its own buffers, so several
threads may run one kernel at once (the ctypes call releases the GIL while native code runs).

A kernel is described by its KernelSpec (kernel_specs.py: read off its subgraph's types); every
call's arrays are checked against it (dtypes, ranks, static sizes), so a kernel reads and writes only
memory of the types and shapes its code was generated for.

Elementwise kernels loop over the iteration dims in the order `loop_order.plan` picks for each
layout (transposed inputs next to the innermost dim, contiguous dims merged); a row kernel's order
is fixed.
"""
from __future__ import annotations

import ctypes
import sys
import threading

import numpy as np

from . import dtypes as dt, loop_order
from .errors import OpIndexError, OpRuntimeError
from .kernel_specs import KernelSpec
from .native import library

_SIG = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_MAX_PLANS = 256  # layouts remembered per kernel (dynamic dims make new ones)


class _Plan:
    __slots__ = ("out_shape", "sizes", "strides", "halves", "offsets")


SPLIT_ALIGN = 16  # halves of long dims start at a multiple of this (whole vectors and kernel tiles)


class FusedKernel:
    """A compiled fusion group: call it with the group's inputs (arrays and Python scalars). Launches
    of `split_min` elements or more run as two halves on two threads. `owner` (the native library
    holding the code at `address`) is kept alive as long as the kernel."""

    def __init__(self, address: int, spec: KernelSpec, split_min: int, name: str = "fused kernel", owner=None):
        self.owner = owner
        self.fn = _SIG(address)
        self.address = address
        self.name = name
        self.spec = spec
        self.split_min = split_min
        self.row = spec.row  # a row kernel: its last dim is reduced, so its loop order is fixed
        self.out_row = spec.out_row  # row kernels may output one value per row (last dim of size 1)
        self.rank, self.kinds = spec.rank, list(spec.inputs)
        self.out_dtypes = [np.dtype(d) for d in spec.out_dtypes]
        self.in_dtypes = [np.dtype(d) for d in spec.in_dtypes]
        self.n_scalars = sum(k == "scalar" for k in self.kinds)
        self.n_ptrs = len(self.out_dtypes) + len(self.kinds) - self.n_scalars
        self._sizes_t = ctypes.c_int64 * max(self.rank, 1)
        self._strides_t = ctypes.c_int64 * max(self.n_ptrs * self.rank, 1)
        self._plans: dict = {}  # layout -> _Plan; plans are never changed once made
        self._local = threading.local()  # per-thread pointer and scalar buffers
        self._buffers()  # made now for the loading thread: a first call costs what later ones do

    def __call__(self, *args):
        tensors = [a if isinstance(a, np.ndarray) else np.asarray(a) for a, k in zip(args, self.kinds)
                   if k == "tensor"]
        key = tuple((a.shape, a.strides, a.dtype.num) for a in tensors)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._new_plan(key, tensors)
        outs = [self._output(plan.out_shape, d) for d in self.out_dtypes]
        ptrs, scalars = self._buffers()
        for i, a in enumerate(outs + tensors):
            ptrs[i] = a.__array_interface__["data"][0]
        if self.n_scalars:
            for j, x in enumerate(a for a, k in zip(args, self.kinds) if k == "scalar"):
                scalars[j] = float(x)
        if plan.halves is None:
            self.fn(plan.sizes, ptrs, plan.strides, scalars)
        else:
            self._run_halves(plan, ptrs, scalars)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _run_halves(self, plan, ptrs, scalars) -> None:
        """The two halves of the split dim at once, the second on the native worker thread."""
        local = self._local
        try:
            second = local.second
        except AttributeError:
            second = local.second = (ctypes.c_void_p * self.n_ptrs)()
        for i, off in enumerate(plan.offsets):
            second[i] = ptrs[i] + off
        first_sizes, second_sizes = plan.halves
        library.parallel2()(self.address, first_sizes, ptrs, second_sizes, second, plan.strides, scalars)

    def _output(self, shape: tuple, dtype) -> np.ndarray:
        """An output array: this thread's previous one for the same shape when nothing else holds it
        any more (a fresh large array costs a page fault per 4 KiB; LLVM_NOTES.md), else a new one."""
        local = self._local
        try:
            recycle = local.recycle
        except AttributeError:
            recycle = local.recycle = {}
        key = (shape, dtype)
        arr = recycle.get(key)
        if arr is not None and sys.getrefcount(arr) == 3:  # the dict, `arr` and getrefcount's argument
            return arr
        arr = recycle[key] = np.empty(shape, dtype)
        return arr

    def _buffers(self):
        local = self._local
        try:
            return local.ptrs, local.scalars
        except AttributeError:
            local.ptrs = (ctypes.c_void_p * self.n_ptrs)()
            local.scalars = (ctypes.c_double * max(self.n_scalars, 1))()
            return local.ptrs, local.scalars

    def _new_plan(self, key: tuple, tensors: list) -> _Plan:
        plan = self._plan(tensors)
        if len(self._plans) >= _MAX_PLANS:
            self._plans.clear()
        self._plans[key] = plan
        return plan

    def _plan(self, tensors: list) -> _Plan:
        r = self.rank
        got = [a.dtype for a in tensors]
        if got != self.in_dtypes:
            raise OpRuntimeError(f"{self.name}: compiled for inputs of dtypes "
                                 f"{[dt.NAMES.get(d, str(d)) for d in self.in_dtypes]}, got "
                                 f"{[dt.NAMES.get(d, str(d)) for d in got]}")
        for a, shape in zip(tensors, self.spec.in_shapes):
            self._check_static(a.shape, shape, "input")
        iteration = self._broadcast([a.shape for a in tensors])
        self._check_static(iteration, self.spec.iteration, "iteration space")
        if self.spec.nonempty_rows and iteration and iteration[-1] == 0:
            raise OpIndexError(f"{self.name}: amax(): Expected reduction dim {r - 1} to have non-zero size.")
        plan = _Plan()
        plan.out_shape = iteration[:-1] + (1,) if self.out_row and r else iteration
        out_strides = _strides(plan.out_shape, _contiguous(plan.out_shape), 1, iteration)  # fresh C-contiguous
        arrays_strides = [list(out_strides) for _ in self.out_dtypes]
        for a in tensors:
            arrays_strides.append(_strides(a.shape, a.strides, a.itemsize, iteration))
        sizes = list(iteration)
        if not self.row:  # a row kernel's last dim is the reduced one
            sizes, arrays_strides = loop_order.plan(sizes, arrays_strides, len(self.out_dtypes))
        plan.sizes = self._sizes_t(*sizes)
        plan.strides = self._strides_t(*[s for st in arrays_strides for s in st])
        items = [t.itemsize for t in self.out_dtypes] + [a.itemsize for a in tensors]
        plan.halves, plan.offsets = self._halves(sizes, arrays_strides, items)
        return plan

    def _halves(self, sizes: list, arrays_strides: list, items: list) -> tuple:
        """(sizes of each half, byte offsets of the second half's arrays) when the work is large enough
        to split over two threads, else (None, None). The split dim is the outermost one of size > 1
        (a row kernel's dim 0, never its reduced last dim)."""
        if self.row:
            d = 0 if len(sizes) >= 2 and sizes[0] >= 2 else None
        else:
            d = next((d for d, n in enumerate(sizes) if n >= 2), None)
        if d is None or int(np.prod(sizes)) < self.split_min:
            return None, None
        n = sizes[d]
        cut = n // 2 if n < 4 * SPLIT_ALIGN else n // 2 // SPLIT_ALIGN * SPLIT_ALIGN
        halves = tuple(self._sizes_t(*sizes[:d], m, *sizes[d + 1:]) for m in (cut, n - cut))
        return halves, [cut * st[d] * size for st, size in zip(arrays_strides, items)]

    def _check_static(self, got: tuple, declared: tuple, what: str) -> None:
        """`got` fits the shape the code was generated for: the rank of `declared`, and size 1 where it
        has size 1 (the code reads such dims with the constant stride 0)."""
        if len(got) != len(declared) or any(d == 1 and g != 1 for g, d in zip(got, declared)):
            raise OpRuntimeError(f"{self.name}: compiled for an {what} of shape {list(declared)}, got {list(got)}")

    def _broadcast(self, shapes: list) -> tuple:
        """The iteration space: the inputs' broadcast shape, padded with leading 1s to the kernel's rank."""
        r = self.rank
        out = [1] * r
        for shape in shapes:
            if len(shape) > r:
                raise OpRuntimeError(f"{self.name} was compiled for rank {r}, got inputs of shapes "
                                     f"{[list(s) for s in shapes]}")
            for d, n in enumerate(shape, r - len(shape)):
                if n != 1:
                    if out[d] not in (1, n):
                        raise OpRuntimeError(f"{self.name}: input shapes {[list(s) for s in shapes]} do not "
                                             f"broadcast together")
                    out[d] = n
        return tuple(out)


def _contiguous(shape: tuple) -> list:
    """Element strides of a C-contiguous array of `shape`."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


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
