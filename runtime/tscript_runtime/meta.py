"""Running graphs and ops for their shapes and dtypes only: an op whose result is a fresh tensor gives
zeros of the shape and dtype its rules say (np.zeros: untouched pages, nothing computed); views, in-place
ops, ops on Python values and shape reads run their kernels (on those zeros). A value that depends on
tensor data (a shape like `nonzero`'s, `x.item()`) raises DataDependent: the caller then runs for real.
Compilers use it where only the types of values matter (recording a backward graph)."""
from __future__ import annotations

import math
import mmap

import numpy as np

from .entry_steps import SHAPE_READS as ENTRY_SHAPE_READS
from .executor import ArrayDomain
from .ops.registry import TensorMeta


_PAGES_FROM = 1 << 16  # bytes from which zeros are fresh pages
SHAPE_READS = ENTRY_SHAPE_READS | {"aten::size.all", "aten::numel", "aten::is_floating_point", "aten::is_complex",
                                   "prim::device"}


class DataDependent(Exception):
    """A value that only the data can say."""


def computes_tensor(op) -> bool:
    """Does `op` make a fresh tensor (not a view, not a Python value) that its rules describe?"""
    return op.out_alias is None and op.mutates is None and op.shape is not None and \
        all(r.type == "Tensor" for r in op.schema.returns) and bool(op.schema.returns)


def meta_call(op, arrays: list):
    """`op`'s result on `arrays` (its arguments in schema order) as zeros of the right shapes and dtypes."""
    out = op.meta(*[_meta(a) for a in arrays])
    metas = out if isinstance(out, tuple) else (out,)
    if any(not isinstance(d, int) for m in metas for d in m.shape):
        raise DataDependent(f"{op.name}: its shape depends on the data")
    zeros = tuple(_zeros(m.shape, m.dtype) for m in metas)
    return zeros if isinstance(out, tuple) else zeros[0]


def _zeros(shape: tuple, dtype) -> np.ndarray:
    """Zeros that cost nothing until touched: large ones on fresh anonymous pages (np.zeros may clear
    memory taken back from the heap)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < _PAGES_FROM:
        return np.zeros(shape, dtype)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype).reshape(shape)


def reads_data(op) -> bool:
    """Does `op` turn tensor data into a Python value (`item`, `Int`, `tolist`, ...)?"""
    returns_values = any(r.type != "Tensor" and "Tensor" not in r.type for r in op.schema.returns)
    return bool(op.tensor_pos or op.list_pos) and returns_values and op.name not in SHAPE_READS


def _meta(a):
    if isinstance(a, np.ndarray):
        return TensorMeta(a.shape, a.dtype)
    if isinstance(a, list) and any(isinstance(x, np.ndarray) for x in a):
        return [_meta(x) for x in a]
    return a


class MetaDomain(ArrayDomain):
    """The executor's array domain computing shapes and dtypes only (see the module docstring)."""

    def op_runner(self, op):
        if reads_data(op):
            def refuse(*arrays):
                raise DataDependent(f"{op.name} reads tensor data")
            return refuse
        if not computes_tensor(op):
            return op.kernel
        return lambda *arrays: meta_call(op, list(arrays))

    def native_kernel(self, name: str):
        return None  # fusion groups: their subgraphs run in this domain
