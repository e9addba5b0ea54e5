"""The register-blocked GEMM kernels (tscript_runtime/native/library/gemm.py: C = A @ B^T and C = A @ B)
against numpy: every remainder of the row and column blocking and of the 16-float vector loops,
leading dimensions larger than the rows, and accumulation into C (what a bias prefill relies on)."""
import ctypes

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from llvmlite import ir

from tscript_runtime.native import target
from tscript_runtime.native.library.gemm import NAME, NN_NAME, define_gemm_nn, define_gemm_nt

from tests.codegen.helpers import link_module


@pytest.fixture(scope="module")
def library():
    return link_module(_module(), [NAME, NN_NAME])


def _kernel(library, name: str, transposed: bool):
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 3, *[ctypes.c_int64] * 6, ctypes.c_bool)(library.address(name))

    def run(a, b, c, accumulate):
        n = b.shape[0] if transposed else b.shape[1]
        fn(a.ctypes.data, b.ctypes.data, c.ctypes.data, a.shape[0], n, a.shape[1],
           a.strides[0] // 4, b.strides[0] // 4, c.strides[0] // 4, accumulate)
    return run


@pytest.fixture(scope="module")
def gemm_nt(library):
    return _kernel(library, NAME, transposed=True)


@pytest.fixture(scope="module")
def gemm_nn(library):
    return _kernel(library, NN_NAME, transposed=False)


def _rows(rng, rows, cols, pad):
    """A (rows, cols) float32 view whose rows are `cols + pad` floats apart."""
    return rng.standard_normal((rows, cols + pad)).astype(np.float32)[:, :cols]


def _check(kernel, a, b, c, want_product, accumulate):
    """Run `kernel`; C must be (C +) the product, and the padding between C's rows untouched."""
    want = (c if accumulate else 0) + want_product
    before = c.base.copy()
    kernel(a, b, c, accumulate)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(c.base[:, c.shape[1]:], before[:, c.shape[1]:])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 9), st.integers(0, 9), st.integers(0, 40), st.integers(0, 3), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_nt_matches_numpy(gemm_nt, m, n, k, pad, accumulate, seed):
    rng = np.random.default_rng(seed)
    a, b, c = _rows(rng, m, k, pad), _rows(rng, n, k, pad), _rows(rng, m, n, pad)
    _check(gemm_nt, a, b, c, a.astype(np.float64) @ b.T.astype(np.float64), accumulate)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 9), st.integers(0, 70), st.integers(0, 9), st.integers(0, 3), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_nn_matches_numpy(gemm_nn, m, n, k, pad, accumulate, seed):
    rng = np.random.default_rng(seed)
    a, b, c = _rows(rng, m, k, pad), _rows(rng, k, n, pad), _rows(rng, m, n, pad)
    _check(gemm_nn, a, b, c, a.astype(np.float64) @ b.astype(np.float64), accumulate)


def test_a_linear_layer(gemm_nt, gemm_nn):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((13, 784), dtype=np.float32), rng.standard_normal((512, 784), dtype=np.float32)
    out = np.empty((13, 512), np.float32)
    gemm_nt(x, w, out, False)
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-4, atol=1e-4)
    wt = np.ascontiguousarray(w.T)
    gemm_nn(x, wt, out, False)
    np.testing.assert_allclose(out, x @ wt, rtol=1e-4, atol=1e-4)


def test_the_vector_loops_use_16_float_fma():
    asm = target.assembly(str(_module()))
    assert "vfmadd" in asm and "zmm" in asm


def _module():
    module = ir.Module("gemm")
    module.triple = target.host()["triple"]
    define_gemm_nt(module)
    define_gemm_nn(module)
    return module
