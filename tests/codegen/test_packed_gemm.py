"""The packed GEMM of the kernel library (tscript_runtime/native/library/packed_gemm.py:
`tscript_sgemm_f32`, CBLAS's row-major sgemm with alpha 1) against numpy: every remainder of its
6 x 64 register tiles (16- and 8-float last vectors) and of its K, N and M blocks, a row-major B read
in place and packed, all four transpose combinations, leading dimensions larger than the rows, beta
0 (C only written), 1 and others, an empty K, NaN and inf propagating as in BLAS, products big enough
to run in two halves at once, and nothing written outside C's rows and columns, into A or B, or
outside `pack_bytes` of scratch."""
import ctypes
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tscript_runtime.native import library, target
from tscript_runtime.native.library.blocking import pack_bytes
from tscript_runtime.native.library.packed_gemm import BLOCKING, NAME, define_sgemm

from tests.conftest import run_in_threads

NO_TRANS, TRANS, CONJ_TRANS = 111, 112, 113
GUARD = 3  # rows and columns of padding around C (and 64-byte lines after the scratch)
_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int32, *[ctypes.c_int64] * 3, ctypes.c_void_p,
                              ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p,
                              ctypes.c_int64, ctypes.c_void_p)


@pytest.fixture(scope="module")
def sgemm():
    library.parallel2()  # start the worker: big products run their halves on two threads
    return _SIGNATURE(library.addresses()[NAME])


def _operand(rng, rows, cols, transposed, pad):
    """op(X) of shape (rows, cols) as a view of a float32 array whose rows are `pad` floats longer,
    stored transposed when `transposed`; returns (view of op(X), stored array, flag)."""
    shape = (cols, rows) if transposed else (rows, cols)
    stored = rng.standard_normal((shape[0], shape[1] + pad)).astype(np.float32)[:, :shape[1]]
    return (stored.T if transposed else stored), stored, TRANS if transposed else NO_TRANS


def _guarded(rng, m, n, fill=None):
    """C (m, n) inside a buffer with GUARD rows and columns all around it; returns (C, buffer)."""
    buf = rng.standard_normal((m + 2 * GUARD, n + 2 * GUARD)).astype(np.float32)
    c = buf[GUARD:GUARD + m, GUARD:GUARD + n]
    if fill is not None:
        c[...] = fill
    return c, buf


def _run(sgemm, a_stored, ta, b_stored, tb, c, beta, m, n, k, offset=0):
    """C = op(A) @ op(B) + beta C with scratch of exactly pack_bytes(M, N, K) (starting `offset`
    bytes into a buffer), followed by a guard that must stay untouched."""
    size = pack_bytes(m, n, k)
    scratch = np.full(offset + size + 64 * GUARD, 0xAB, np.uint8)
    sgemm(ta, tb, m, n, k, a_stored.ctypes.data, a_stored.strides[0] // 4, b_stored.ctypes.data,
          b_stored.strides[0] // 4, beta, c.ctypes.data, c.strides[0] // 4, scratch.ctypes.data + offset)
    assert (scratch[offset + size:] == 0xAB).all(), "wrote past pack_bytes() of scratch"


def _check_guard(buf, before, m, n):
    inner = np.zeros(buf.shape, bool)
    inner[GUARD:GUARD + m, GUARD:GUARD + n] = True
    np.testing.assert_array_equal(buf[~inner], before[~inner])


def _product(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


def _case(sgemm, m, n, k, ta, tb, pad, beta, seed, offset=0):
    rng = np.random.default_rng(seed)
    a, a_stored, fa = _operand(rng, m, k, ta, pad)
    b, b_stored, fb = _operand(rng, k, n, tb, pad)
    c, buf = _guarded(rng, m, n, fill=np.nan if beta == 0 else None)
    before, inputs = buf.copy(), (a_stored.copy(), b_stored.copy())
    want = _product(a, b) + (0 if beta == 0 else beta * c.astype(np.float64))
    _run(sgemm, a_stored, fa, b_stored, fb, c, beta, m, n, k, offset)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=2e-6 * max(k, 1))
    _check_guard(buf, before, m, n)
    np.testing.assert_array_equal(a_stored, inputs[0])
    np.testing.assert_array_equal(b_stored, inputs[1])


sizes = st.one_of(st.integers(1, 300), st.sampled_from([1, 5, 6, 7, 15, 16, 17, 63, 64, 65, 255, 256, 257]))


@settings(max_examples=120, deadline=None)
@given(sizes, sizes, st.one_of(sizes, st.just(0)), st.booleans(), st.booleans(), st.integers(0, 3),
       st.sampled_from([0.0, 1.0]), st.integers(0, 2**32 - 1))
def test_matches_numpy(sgemm, m, n, k, ta, tb, pad, beta, seed):
    _case(sgemm, m, n, k, ta, tb, pad, beta, seed)


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("m,n,k", [(70, 1100, 600), (1100, 70, 300), (13, 700, 520), (300, 301, 257),
                                   (512, 49, 600), (129, 200, 64), (100, 300, 200)])
def test_blocks_of_k_and_columns_and_both_halves(sgemm, m, n, k, ta, tb):
    """More than one KC block of K and NC block of columns, products cut in two by columns (wide) and
    by rows (tall), a last panel of 3 vectors and 1 column (7 x 7 pixels), and a row-major B read in
    place (up to `in_place_rows` rows of C and `in_place_floats` values: (100, 300, 200)) or packed (more
    rows, or more values: (13, 700, 520))."""
    _case(sgemm, m, n, k, ta, tb, pad=1, beta=1.0, seed=m + n + k)


@pytest.mark.parametrize("m", [47, 48, 49, 96, 101, 150])
def test_transposed_a_in_blocks_of_48_rows(sgemm, m):
    """A transposed A is packed 48 rows at a time (Blocking.a_rows), the last rows' block partial, the
    tail rows (fewer than 6) read from the last block, K in 16-step blocks and a tail of 5."""
    _case(sgemm, m, 70, 277, True, False, pad=1, beta=0.0, seed=m)
    _case(sgemm, m, 700, 37, True, True, pad=0, beta=1.0, seed=m + 1)


@pytest.mark.parametrize("beta", [0.5, -2.0])
def test_any_beta_scales_c(sgemm, beta):
    _case(sgemm, 37, 90, 70, False, True, pad=2, beta=beta, seed=1)


@pytest.mark.parametrize("offset", [4, 20, 60])
def test_scratch_needs_no_alignment(sgemm, offset):
    _case(sgemm, 200, 300, 400, True, False, pad=0, beta=0.0, seed=2, offset=offset)


def test_conj_trans_is_trans(sgemm):
    rng = np.random.default_rng(3)
    a, a_stored, _ = _operand(rng, 20, 30, True, 0)
    b, b_stored, _ = _operand(rng, 30, 40, True, 0)
    c = np.empty((20, 40), np.float32)
    _run(sgemm, a_stored, CONJ_TRANS, b_stored, CONJ_TRANS, c, 0.0, 20, 40, 30)
    np.testing.assert_allclose(c, _product(a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("beta", [0.0, 1.0, 3.0])
def test_empty_k_scales_c(sgemm, beta):
    """K = 0: C = beta C, and C = 0 for beta 0 even where C held NaN."""
    rng = np.random.default_rng(4)
    c, buf = _guarded(rng, 9, 70)
    c[0, 0] = np.nan
    before, want = buf.copy(), (np.zeros_like(c) if beta == 0 else c * np.float32(beta))
    empty = np.zeros((1, 1), np.float32)
    _run(sgemm, empty, NO_TRANS, empty, NO_TRANS, c, beta, 9, 70, 0)
    np.testing.assert_array_equal(c, want)
    _check_guard(buf, before, 9, 70)


@pytest.mark.parametrize("m,n", [(0, 5), (5, 0)])
def test_empty_c_is_untouched(sgemm, m, n):
    rng = np.random.default_rng(5)
    c, buf = _guarded(rng, m, n)
    before = buf.copy()
    a = np.ones((max(m, 1), 4), np.float32)
    b = np.ones((4, max(n, 1)), np.float32)
    _run(sgemm, a, NO_TRANS, b, NO_TRANS, c, 0.0, m, n, 4)
    np.testing.assert_array_equal(buf, before)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_nan_and_inf_propagate_like_blas(sgemm, ta, tb):
    """A NaN in A makes its row of C NaN, an inf in B its column ±inf (NaN where +inf meets -inf),
    as in numpy's product; C's old NaNs do not leak through beta 0."""
    rng = np.random.default_rng(6)
    m, n, k = 70, 150, 300
    a, a_stored, fa = _operand(rng, m, k, ta, 0)
    b, b_stored, fb = _operand(rng, k, n, tb, 0)
    a[3, 17] = np.nan
    a[68, 299] = np.inf
    b[40, 64] = np.inf
    b[41, 64] = -np.inf
    b[0, 149] = -np.inf
    c, buf = _guarded(rng, m, n, fill=np.nan)
    before = buf.copy()
    _run(sgemm, a_stored, fa, b_stored, fb, c, 0.0, m, n, k)
    with np.errstate(invalid="ignore", over="ignore"):
        want = _product(a, b)
    np.testing.assert_array_equal(np.isnan(c), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(c), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(c), np.isneginf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(c[finite], want[finite], rtol=1e-4, atol=1e-3)
    _check_guard(buf, before, m, n)


def test_halves_equal_separate_calls(sgemm):
    """A product cut in two (by columns) gives bit for bit what separate calls on any two parts of its
    columns give: a column's value does not depend on how the columns are cut into panels."""
    m, n, k = 64, 100, 48
    assert m * n * k >= BLOCKING.split_min > m * 63 * k
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    whole, parts = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
    _run(sgemm, a, NO_TRANS, b, NO_TRANS, whole, 0.0, m, n, k)
    for lo, hi in ((0, 37), (37, n)):
        bb = np.ascontiguousarray(b[:, lo:hi])
        part = np.empty((m, hi - lo), np.float32)
        _run(sgemm, a, NO_TRANS, bb, NO_TRANS, part, 0.0, m, hi - lo, k)
        parts[:, lo:hi] = part
    np.testing.assert_array_equal(whole, parts)


def test_callers_on_several_threads(sgemm):
    """Concurrent callers (each with its own scratch) share the one worker or run both halves."""
    rng = np.random.default_rng(8)
    inputs = [(rng.standard_normal((300, 200)).astype(np.float32), rng.standard_normal((200, 400)).astype(np.float32))
              for _ in range(4)]
    bad = []

    def work(i):
        a, b = inputs[i]
        want = _product(a, b)
        for _ in range(20):
            c = np.empty((300, 400), np.float32)
            _run(sgemm, a, NO_TRANS, b, NO_TRANS, c, 0.0, 300, 400, 200)
            if not np.allclose(c, want, rtol=1e-4, atol=1e-3):
                bad.append(i)
    run_in_threads(work)
    assert not bad


def test_declared_for_module_code():
    from llvmlite import ir
    module = ir.Module()
    fn = library.declare(module, NAME)
    assert [str(t) for t in fn.function_type.args] == ["i32", "i32", "i64", "i64", "i64", "float*", "i64", "float*",
                                                        "i64", "float", "float*", "i64", "float*"]


def test_inner_loop_is_zmm_fmas_with_broadcasts_and_no_spills():
    """The 6 x 64 micro-kernel's K loop: 24 FMAs per step of K on zmm registers, A's values broadcast,
    no accumulator spilled to the stack (checked where the CPU has AVX-512)."""
    if "+avx512f" not in target.host()["features"]:
        pytest.skip("no AVX-512 on this CPU")
    from llvmlite import ir
    module = ir.Module("packed_gemm_asm")
    module.triple = target.host()["triple"]
    define_sgemm(module)
    asm = target.assembly(str(module))
    kernel = asm[asm.index(f"{NAME}_kernel{BLOCKING.mr}x{BLOCKING.nv}:"):]
    kernel = kernel[:kernel.index(".Lfunc_end")]
    loops = [body for label, body in re.findall(r"^(\.LBB\w+):\n(.*?)^\s+j\w+\s+\1$", kernel, re.M | re.S)]
    body = max(loops, key=lambda text: text.count("vfmadd231ps"))
    fmas = re.findall(r"vfmadd231ps\s+(\S+), %zmm\d+, %zmm\d+", body)
    assert len(fmas) == BLOCKING.mr * BLOCKING.nv * BLOCKING.unroll
    assert body.count("vbroadcastss") + sum("{1to16}" in f for f in fmas) == BLOCKING.mr * BLOCKING.unroll
    assert "rsp" not in body
