"""The register-blocked C = A @ B^T kernel (tscript/codegen/gemm_kernel.py) against numpy: every
remainder of the 4x4 / 2 / 1 blocking and of the 16-float vector loop, leading dimensions larger
than the rows, and accumulation into C (what a bias prefill relies on)."""
import ctypes

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from llvmlite import ir

from tscript_runtime import native
from tscript.codegen.gemm_kernel import NAME, define_gemm_nt


@pytest.fixture(scope="module")
def gemm_nt():
    module = ir.Module("gemm_nt")
    module.triple = native.host()["triple"]
    define_gemm_nt(module)
    library = native.NativeLibrary(native.compile_cached(str(module)), [NAME], set())
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 3, *[ctypes.c_int64] * 6, ctypes.c_bool)(library.address(NAME))

    def run(a, b, c, accumulate):
        fn(a.ctypes.data, b.ctypes.data, c.ctypes.data, a.shape[0], b.shape[0], a.shape[1],
           a.strides[0] // 4, b.strides[0] // 4, c.strides[0] // 4, accumulate)
    run.library = library  # keep the code alive
    return run


def _rows(rng, rows, cols, pad):
    """A (rows, cols) float32 view whose rows are `cols + pad` floats apart."""
    return rng.standard_normal((rows, cols + pad)).astype(np.float32)[:, :cols]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 9), st.integers(0, 9), st.integers(0, 40), st.integers(0, 3), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_matches_numpy(gemm_nt, m, n, k, pad, accumulate, seed):
    rng = np.random.default_rng(seed)
    a, b, c = _rows(rng, m, k, pad), _rows(rng, n, k, pad), _rows(rng, m, n, pad)
    want = (c if accumulate else 0) + a.astype(np.float64) @ b.T.astype(np.float64)
    before = c.base.copy()
    gemm_nt(a, b, c, accumulate)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    if pad:  # the padding between rows is untouched
        np.testing.assert_array_equal(c.base[:, n:], before[:, n:])


def test_a_linear_layer(gemm_nt):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((13, 784), dtype=np.float32), rng.standard_normal((512, 784), dtype=np.float32)
    out = np.empty((13, 512), np.float32)
    gemm_nt(x, w, out, False)
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-4, atol=1e-4)


def test_the_vector_loop_uses_16_float_fma(gemm_nt):
    asm = native.assembly(str(_module()))
    assert "vfmadd" in asm and "zmm" in asm


def _module():
    module = ir.Module("gemm_nt_asm")
    module.triple = native.host()["triple"]
    define_gemm_nt(module)
    return module
