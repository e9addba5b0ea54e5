"""The recurrent step's product (native/library/recurrent_gemm.py): W's rows packed as W^T's panels of 32
columns, then C = A @ W^T from the panels, against numpy: every row remainder of the 10-row tiles, last
panels of 1..32 columns, K of any length, C's rows wider than its columns; nothing outside C is written."""
import ctypes

import numpy as np
from hypothesis import given, settings, strategies as st

from tscript_runtime.native import library

P, I = ctypes.c_void_p, ctypes.c_int64


def functions():
    found = library.addresses(["tscript_rgemm_f32", "tscript_rgemm_pack_f32"])
    return (ctypes.CFUNCTYPE(None, P, I, I, I, P)(found["tscript_rgemm_pack_f32"]),
            ctypes.CFUNCTYPE(None, I, I, I, P, I, P, P, I)(found["tscript_rgemm_f32"]))


def aligned(floats: int) -> tuple[np.ndarray, int]:
    """A float32 buffer and the address of its first 64-byte aligned element, `floats` from there."""
    buf = np.zeros(floats + 16, np.float32)
    return buf, buf.ctypes.data + (-buf.ctypes.data % 64)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 33), n=st.integers(1, 70), k=st.integers(1, 80), extra=st.integers(0, 5), seed=st.integers(0, 9))
def test_product_of_packed_panels(m, n, k, extra, seed):
    pack, product = functions()
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k + extra)).astype(np.float32)  # rows ldw = k + extra apart, k used
    buf, packed = aligned(-(-n // 32) * 32 * k)
    pack(w.ctypes.data, k + extra, k, n, packed)
    c = np.full((m, n + extra + 1), 7.0, np.float32)             # rows ldc apart, the columns past n untouched
    product(m, n, k, a.ctypes.data, k, packed, c.ctypes.data, n + extra + 1)
    np.testing.assert_allclose(c[:, :n], a @ w[:, :k].T, rtol=1e-5, atol=1e-5)
    assert (c[:, n:] == 7.0).all()


def test_panels_are_zero_padded():
    pack, _ = functions()
    w = np.arange(1, 1 + 5 * 3, dtype=np.float32).reshape(5, 3)
    buf, packed = aligned(32 * 3)
    view = np.frombuffer((ctypes.c_float * (32 * 3)).from_address(packed), np.float32).reshape(3, 32)
    view[...] = np.nan
    pack(w.ctypes.data, 3, 3, 5, packed)
    np.testing.assert_array_equal(view[:, :5], w.T)
    assert (view[:, 5:] == 0).all()
