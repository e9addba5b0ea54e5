"""The packed GEMM of a convolution that never writes its im2col matrix (tscript_runtime/native/library/
implicit_gemm.py: `tscript_sgemm_conv_f32`) against the op library's im2col reference kernel times
numpy's product: random geometries (strides, paddings larger than the kernel's reach, dilations,
kernels larger than the image, several images side by side), K not a multiple of KC, N not a multiple
of 64 and over several NC blocks, outputs narrower than a vector, beta 0 (C only written), 1 and
others, products cut over both cores (N cut inside an output row, or M cut); the epilogue on every
final block once; nothing read outside the images, nothing written outside C or `pack_bytes` of
scratch; the micro-kernels shared with the packed GEMM, not built twice."""
import ctypes

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from llvmlite import ir

from tscript_runtime.native import library
from tscript_runtime.native.library.implicit_gemm import CONV_NAME, define_sgemm_conv
from tscript_runtime.native.library.blocking import pack_bytes
from tscript_runtime.native.library.packed_gemm import BLOCKING, define_sgemm

from tests.codegen.epilogue_check import BlockCheck
from tests.codegen.test_conv_kernels import IM2COL, _guarded

GUARD = 3  # rows and columns of padding around C (and 64-byte lines after the scratch)
_SIGNATURE = ctypes.CFUNCTYPE(None, *[ctypes.c_int64] * 3, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                              ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p, ctypes.c_int64,
                              ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


@pytest.fixture(scope="module")
def conv():
    library.parallel2()  # start the worker: big products run their halves on two threads
    return _SIGNATURE(library.addresses()[CONV_NAME])


class Case:
    """A convolution's images, weights as (M, K) and geometry; `columns` is the reference's im2col."""

    def __init__(self, rng, images, channels, size, m, kernel, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
        self.x = rng.standard_normal((images, channels) + tuple(size)).astype(np.float32)
        self.kernel, self.stride, self.padding, self.dilation = kernel, stride, padding, dilation
        self.out = tuple((s + 2 * p - d * (k - 1) - 1) // st_ + 1
                         for s, k, st_, p, d in zip(size, kernel, stride, padding, dilation))
        self.k = channels * kernel[0] * kernel[1]
        self.n = images * self.out[0] * self.out[1]
        self.a = rng.standard_normal((m, self.k)).astype(np.float32)
        self.geo = np.array([channels, *size, *kernel, *stride, *padding, *dilation, *self.out], np.int64)

    def columns(self) -> np.ndarray:
        cols = IM2COL.kernel(self.x.astype(np.float64), self.kernel, self.dilation, self.padding, self.stride)
        return np.concatenate(list(cols), axis=1) if len(cols) else np.zeros((self.k, 0))

    def expected(self) -> np.ndarray:
        return self.a.astype(np.float64) @ self.columns()

    def run(self, conv, c, beta=0.0, epilogue=None, x=None):
        """C (a view whose rows may be longer) = A @ columns + beta C, with exactly pack_bytes() of
        scratch followed by a guard that must stay untouched."""
        m, size = self.a.shape[0], pack_bytes(self.a.shape[0], self.n, self.k)
        scratch = np.full(size + 64 * GUARD, 0xAB, np.uint8)
        x = self.x if x is None else x
        conv(m, self.n, self.k, self.a.ctypes.data, self.k, self.geo.ctypes.data, x.ctypes.data, x[0].size, beta,
             c.ctypes.data, c.strides[0] // 4, scratch.ctypes.data, epilogue, None)
        assert (scratch[size:] == 0xAB).all(), "wrote past pack_bytes() of scratch"


def _guarded_c(rng, m, n, fill=None):
    """C (m, n) inside a buffer with GUARD rows and columns all around it; returns (C, buffer)."""
    buf = rng.standard_normal((m + 2 * GUARD, n + 2 * GUARD)).astype(np.float32)
    c = buf[GUARD:GUARD + m, GUARD:GUARD + n]
    if fill is not None:
        c[...] = fill
    return c, buf


def check(conv, case: Case, beta: float, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    c, buf = _guarded_c(rng, case.a.shape[0], case.n, np.nan if beta == 0 else None)
    before, x = buf.copy(), case.x.copy()
    want = case.expected() + (0 if beta == 0 else beta * c.astype(np.float64))
    case.run(conv, c, beta)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=2e-6 * max(case.k, 1) * 4)
    inner = np.zeros(buf.shape, bool)
    inner[GUARD:-GUARD, GUARD:-GUARD] = True
    np.testing.assert_array_equal(buf[~inner], before[~inner])
    np.testing.assert_array_equal(case.x, x)


@st.composite
def geometries(draw):
    """Random convolutions: paddings up to past the kernel's reach, kernels up to larger than the
    image (with enough padding for one output), several images (their columns side by side)."""
    kernel = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.integers(0, d * (k - 1) + 2)) for k, d in zip(kernel, dilation))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    size = tuple(draw(st.integers(max(1, d * (k - 1) + 1 - 2 * p), 30)) for k, p, d in zip(kernel, padding, dilation))
    return dict(images=draw(st.integers(1, 4)), channels=draw(st.integers(1, 9)), size=size,
                m=draw(st.sampled_from([1, 2, 5, 6, 7, 13, 40])), kernel=kernel, stride=stride, padding=padding,
                dilation=dilation)


@settings(max_examples=60, deadline=None)
@given(geometries(), st.sampled_from([0.0, 1.0, -0.5]), st.integers(0, 2**16))
def test_matches_im2col_then_product(conv, geometry, beta, seed):
    check(conv, Case(np.random.default_rng(seed), **geometry), beta, seed)


@pytest.mark.parametrize("geometry", [
    dict(images=1, channels=30, size=(20, 21), m=9, kernel=(3, 3), padding=(1, 1)),   # K 270: a last KC of 14
    dict(images=1, channels=57, size=(9, 9), m=7, kernel=(3, 3)),                     # K 513: three steps of K
    dict(images=1, channels=3, size=(45, 47), m=8, kernel=(3, 3), padding=(1, 1)),    # N 2115: 5 NC blocks
    dict(images=8, channels=16, size=(7, 7), m=20, kernel=(3, 3), padding=(1, 1)),    # 392 columns of 7-wide rows
    dict(images=3, channels=4, size=(3, 5), m=6, kernel=(5, 5), padding=(3, 2)),      # kernel larger than the image
    dict(images=2, channels=5, size=(6, 6), m=11, kernel=(2, 2), padding=(4, 5)),     # outputs all padding
    dict(images=2, channels=64, size=(14, 14), m=130, kernel=(1, 1), stride=(2, 2)),  # more rows than in_place_rows
    dict(images=1, channels=3, size=(64, 64), m=16, kernel=(4, 4), stride=(2, 2), padding=(1, 1)),
    dict(images=2, channels=6, size=(33, 29), m=7, kernel=(3, 2), stride=(3, 2), dilation=(2, 3), padding=(2, 1)),
])
@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_blocks_and_remainders(conv, geometry, beta):
    check(conv, Case(np.random.default_rng(len(geometry)), **geometry), beta)


@pytest.mark.parametrize("geometry", [
    dict(images=1, channels=16, size=(56, 56), m=64, kernel=(3, 3), padding=(1, 1)),   # N cut inside an output row
    dict(images=3, channels=8, size=(7, 7), m=300, kernel=(3, 3), padding=(1, 1)),     # M cut: both pack all of B
    dict(images=2, channels=3, size=(40, 40), m=24, kernel=(7, 7), stride=(2, 2), padding=(3, 3)),
])
def test_big_enough_to_run_on_both_cores(conv, geometry):
    case = Case(np.random.default_rng(1), **geometry)
    assert case.a.shape[0] * case.n * case.k >= BLOCKING.split_min
    check(conv, case, 0.0)


@pytest.mark.parametrize("geometry", [
    dict(images=1, channels=5, size=(30, 40), m=13, kernel=(3, 3), padding=(1, 1)),
    dict(images=4, channels=40, size=(9, 9), m=70, kernel=(3, 3), stride=(2, 2), padding=(1, 1)),
    dict(images=1, channels=16, size=(56, 56), m=64, kernel=(3, 3), padding=(1, 1)),
])
def test_epilogue_sees_each_final_block_once(conv, geometry):
    case = Case(np.random.default_rng(2), **geometry)
    expected, (m, n) = case.expected(), (case.a.shape[0], case.n)
    check = BlockCheck(np.full((m, n), np.nan, np.float32), expected)
    case.run(conv, check.c, 0.0, check.callback)
    check.verify()


def test_empty_products(conv):
    """No rows or no columns: nothing written; no channels (K = 0): C = beta C."""
    rng = np.random.default_rng(3)
    case = Case(rng, 1, 2, (5, 5), 4, (3, 3))
    c, buf = _guarded_c(rng, 4, case.n)
    before = buf.copy()
    for m, n in ((0, case.n), (4, 0)):
        conv(m, n, case.k, case.a.ctypes.data, case.k, case.geo.ctypes.data, case.x.ctypes.data, 50, 0.0,
             c.ctypes.data, c.strides[0] // 4, np.zeros(64, np.uint8).ctypes.data, None, None)
    np.testing.assert_array_equal(buf, before)
    conv(4, case.n, 0, case.a.ctypes.data, case.k, case.geo.ctypes.data, case.x.ctypes.data, 50, 0.5,
         c.ctypes.data, c.strides[0] // 4, np.zeros(64, np.uint8).ctypes.data, None, None)
    np.testing.assert_array_equal(c, before[GUARD:-GUARD, GUARD:-GUARD] * np.float32(0.5))


@pytest.mark.parametrize("at_end", [True, False])
def test_reads_stay_inside_the_images(conv, at_end):
    """The images placed against an unreadable page: unmasked and wide (stride 2) loads must not cross it."""
    rng = np.random.default_rng(4)
    for size, kernel, stride, padding in [((4, 16), (3, 3), (1, 1), (1, 1)), ((5, 7), (2, 2), (2, 2), (0, 0)),
                                          ((2, 33), (1, 4), (3, 3), (0, 1)), ((6, 40), (3, 3), (2, 2), (1, 1))]:
        case = Case(rng, 2, 3, size, 7, kernel, stride, padding)
        memory, raw = _guarded(case.x.nbytes, at_end)
        x = raw.view(np.float32).reshape(case.x.shape)
        x[...] = case.x
        c = np.empty((7, case.n), np.float32)
        case.run(conv, c, 0.0, x=x)
        np.testing.assert_allclose(c, case.expected(), rtol=1e-4, atol=1e-4)
        del x, raw
        memory.close()


@pytest.mark.parametrize("conv_first", [True, False])
def test_micro_kernels_are_shared_with_the_packed_gemm(conv_first):
    module = ir.Module("both")
    defines = [define_sgemm_conv, define_sgemm]
    for define in defines if conv_first else defines[::-1]:
        fn = define(module)
        assert define(module) is fn
    names = [f.name for f in module.functions if not f.is_declaration]
    assert len(names) == len(set(names))
    assert sum(name.endswith("_kernel6x4") for name in names) == 1
    assert {CONV_NAME, "tscript_sgemm_f32", "tscript_sgemm_epilogue_f32"} <= set(names)
