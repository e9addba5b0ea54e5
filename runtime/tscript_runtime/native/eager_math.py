"""Eager matrix products and erf on the kernel library (installed into ops/accelerated.py by
`native/eager.py`'s `install()`), for float32 on hosts where the packed GEMM is tuned (AVX-512):

- `matmul(a, b)`: a @ b for operands of two or more dims, batch dims broadcast, one packed-GEMM call per
  product of the batch (it splits itself over both cores). Operands are read through their strides: a
  matrix whose rows or columns are contiguous goes in as it is, transposed or not (attention's `k.transpose(-2,
  -1)` and a head-split `q` are not copied); any other is copied once. numpy's matmul copies such stacks or
  loops without BLAS, and its OpenBLAS threads keep spinning after each call, taking a core from whatever
  runs next. Products under MIN_WORK multiply-adds stay on numpy (a ctypes call costs about a microsecond).
- `erf(x)`: the library's vectorized float32 erf (numpy has none).

Each returns None for what it does not cover, and the numpy kernel runs instead."""
from __future__ import annotations

import numpy as np

from .eager import NO_TRANS, _address, _scratch, functions

TRANS = 112
MIN_WORK = 1 << 15  # multiply-adds of one product from which the library runs it
MIN_MAP = 1 << 10   # elements from which erf runs natively


def matmul(a: np.ndarray, b: np.ndarray):
    """a @ b (both float32, two or more dims, batch dims broadcasting), or None."""
    lib = functions()
    if lib is None or "tscript_sgemm_f32" not in lib.fn or a.dtype != np.float32 or b.dtype != np.float32:
        return None
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        return None
    (m, k), n = a.shape[-2:], b.shape[-1]
    if m * n * k < MIN_WORK:
        return None
    if b.ndim == 2 and a.ndim > 2:  # one product over the flattened leading dims (a copy if they do not flatten)
        return _product(lib, (), a.reshape(-1, k), b, n).reshape(a.shape[:-1] + (n,))
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    return _product(lib, batch, np.broadcast_to(a, batch + (m, k)), np.broadcast_to(b, batch + (k, n)), n)


def _product(lib, batch: tuple, a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """out[i] = a[i] @ b[i] for every index i of `batch` (the packed GEMM per product)."""
    (m, k) = a.shape[-2:]
    out = np.empty(batch + (m, n), np.float32)
    if out.size == 0:
        return out
    _, pack = _scratch(0, lib.pack_bytes(m, n, k))
    sgemm, pack_at, out_at = lib.fn["tscript_sgemm_f32"], _address(pack), _address(out)
    for i, index in enumerate(np.ndindex(*batch)):  # (no batch dims: one index, ())
        ta, x_at, lda, _kept_a = _operand(a[index])
        tb, y_at, ldb, _kept_b = _operand(b[index])
        sgemm(ta, tb, m, n, k, x_at, lda, y_at, ldb, 0.0, out_at + 4 * i * m * n, n, pack_at)
    return out


def _operand(x: np.ndarray) -> tuple:
    """(transpose flag, address, leading dimension, array to keep alive) for a 2-d float32 matrix:
    read in place when its rows or its columns are contiguous, else from a C-contiguous copy."""
    rows, cols = x.shape
    s0, s1 = x.strides
    if (s1 == 4 or cols == 1) and s0 % 4 == 0 and (s0 >= 4 * cols or rows == 1):
        return NO_TRANS, _address(x), s0 // 4 if rows > 1 else cols, None
    if (s0 == 4 or rows == 1) and s1 % 4 == 0 and (s1 >= 4 * rows or cols == 1):
        return TRANS, _address(x), s1 // 4 if cols > 1 else rows, None
    x = np.ascontiguousarray(x)
    return NO_TRANS, _address(x), cols, x


def erf(x: np.ndarray):
    """erf of a float32 array, or None."""
    lib = functions()
    if lib is None or x.dtype != np.float32 or x.size < MIN_MAP or "tscript_erf_f32" not in lib.fn:
        return None
    x = np.ascontiguousarray(x)
    y = np.empty_like(x)
    lib.fn["tscript_erf_f32"](_address(x), _address(y), x.size)
    return y
