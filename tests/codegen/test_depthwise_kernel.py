"""The kernel library's direct depthwise convolution (native/library/depthwise.py) against the op library's
reference conv2d: channel multipliers 1..3, kernels 1..5, strides 1..3 (the contiguous, even-lane and
gather paths), padding, dilation, rows shorter and longer than a vector, with and without a bias, float32
and float64; a range of planes computes only those planes; two calls sharing a counter split the planes
between them; reads stay inside x."""
import ctypes
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from llvmlite import ir

from tscript_runtime.entry_steps import CONV_SLOTS
from tscript_runtime.native import target
from tscript_runtime.native.library.depthwise import define_depthwise, scratch_bytes
from tscript_runtime.ops import OPS

from tests.codegen.helpers import link_module
from tests.codegen.test_conv_kernels import _guarded

DTYPES = (np.float32, np.float64)
SUFFIX = {np.float32: "f32", np.float64: "f64"}
CONV = OPS["aten::conv2d"]


@pytest.fixture(scope="module")
def kernels():
    module = ir.Module("depthwise")
    module.triple = target.host()["triple"]
    for dtype in DTYPES:
        define_depthwise(module, dtype)
    names = [f.name for f in module.functions if not f.is_declaration]
    library = link_module(module, names)
    signature = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    functions = {name: signature(library.address(name)) for name in names}
    functions["library"] = library  # keep the code alive
    return functions


def depthwise(kernels, x, w, bias, stride, padding, dilation, planes=None, out=None, part=0, shared=None):
    """The native conv2d of (N, G, H, W) `x` by (G*O, 1, kh, kw) `w` with groups G (`shared`: a
    ctypes.c_int64 through which the call claims its chunks of planes, or None)."""
    n, groups, h, wd = x.shape
    kh, kw = w.shape[2:]
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.full((n, w.shape[0], oh, ow), 7.0, x.dtype) if out is None else out
    mult = w.shape[0] // groups
    slots = dict(C=1, H=h, W=wd, kh=kh, kw=kw, sh=stride[0], sw=stride[1], ph=padding[0], pw=padding[1],
                 dh=dilation[0], dw=dilation[1], OH=oh, OW=ow, N=n, O=mult, K=kh * kw, L=oh * ow, G=groups,
                 scratch=0, pack=0)
    dims = (ctypes.c_int64 * len(CONV_SLOTS))(*(slots[s] for s in CONV_SLOTS))
    planes = ((0, n * w.shape[0]) if planes is None else planes) + (part, 0 if shared is None else ctypes.addressof(shared))
    size = scratch_bytes(slots, x.itemsize)
    scratch = np.full(size + 128, np.nan, x.dtype)  # garbage around: padding must be written, not assumed
    at = scratch[16:].ctypes.data
    ptrs = (ctypes.c_void_p * 7)(x.ctypes.data, w.ctypes.data, None if bias is None else bias.ctypes.data,
                                 out.ctypes.data, at, None, None)  # (no epilogue)
    kernels[f"tscript_depthwise2d_scratch_{SUFFIX[x.dtype.type]}"]((ctypes.c_int64 * 4)(*planes), ptrs, dims, None)
    assert np.isnan(scratch[:16]).all() and np.isnan(scratch[16 + size // x.itemsize:]).all()  # inside scratch
    return out


def reference(x, w, bias, stride, padding, dilation):
    return CONV.kernel(x, w, bias, stride, padding, dilation, x.shape[1])


@st.composite
def cases(draw):
    kernel = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.integers(0, k // 2 + 1)) for k in kernel)
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    size = tuple(draw(st.integers(max(1, d * (k - 1) + 1 - 2 * p), 40)) for k, p, d in zip(kernel, padding, dilation))
    return (draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(1, 3))) + size, kernel, stride, \
        padding, dilation, draw(st.booleans()), draw(st.sampled_from(DTYPES))


@settings(max_examples=60, deadline=None)
@given(cases())
def test_matches_the_reference(kernels, case):
    (n, groups, mult, h, wd), kernel, stride, padding, dilation, with_bias, dtype = case
    rng = np.random.default_rng(h * 41 + wd)
    x = rng.standard_normal((n, groups, h, wd)).astype(dtype)
    w = rng.standard_normal((groups * mult, 1) + kernel).astype(dtype)
    bias = rng.standard_normal(groups * mult).astype(dtype) if with_bias else None
    np.testing.assert_allclose(depthwise(kernels, x, w, bias, stride, padding, dilation),
                               reference(x, w, bias, stride, padding, dilation), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, stride", [((32, 112, 112), 1), ((96, 112, 112), 2), ((960, 7, 7), 1),
                                           ((8, 14, 14), 2), ((3, 1, 1), 1)])
def test_mobilenet_shapes(kernels, dtype, shape, stride):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1,) + shape).astype(dtype)
    w = rng.standard_normal((shape[0], 1, 3, 3)).astype(dtype)
    bias = rng.standard_normal(shape[0]).astype(dtype)
    np.testing.assert_allclose(depthwise(kernels, x, w, bias, (stride, stride), (1, 1), (1, 1)),
                               reference(x, w, bias, (stride, stride), (1, 1), (1, 1)), rtol=1e-5, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(0, 3), st.integers(0, 3), st.integers(3, 70), st.integers(3, 40),
       st.booleans(), st.sampled_from(DTYPES))
def test_stride_two_three_by_three(kernels, mult, ph, pw, wd, h, with_bias, dtype):
    """3x3 stride 2 (rows split in even and odd columns): every padding parity, rows shorter and longer
    than the two-vector spans the split copies, against the reference."""
    rng = np.random.default_rng(wd * 7 + h + ph + 5 * pw)
    x = rng.standard_normal((2, 3, h, wd)).astype(dtype)
    w = rng.standard_normal((3 * mult, 1, 3, 3)).astype(dtype)
    bias = rng.standard_normal(3 * mult).astype(dtype) if with_bias else None
    np.testing.assert_allclose(depthwise(kernels, x, w, bias, (2, 2), (ph, pw), (1, 1)),
                               reference(x, w, bias, (2, 2), (ph, pw), (1, 1)), rtol=1e-5, atol=1e-5)


def test_a_range_of_planes_writes_only_those(kernels):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 9, 20)).astype(np.float32)
    w = rng.standard_normal((6, 1, 3, 3)).astype(np.float32)
    out = depthwise(kernels, x, w, None, (1, 1), (1, 1), (1, 1), planes=(3, 9), part=1)
    want = reference(x, w, None, (1, 1), (1, 1), (1, 1)).reshape(12, 9, 20)
    flat = out.reshape(12, 9, 20)
    np.testing.assert_allclose(flat[3:9], want[3:9], rtol=1e-5, atol=1e-5)
    assert (flat[:3] == 7.0).all() and (flat[9:] == 7.0).all()


@pytest.mark.parametrize("mult, stride", [(1, 1), (2, 2), (3, 1)])
def test_two_calls_sharing_a_counter_compute_every_plane(kernels, mult, stride):
    """Both parts claiming chunks through one counter, at once on two threads: every plane as the
    reference has it, whichever part computed it (a chunk starting inside a channel's multiplier copies
    its input plane too); the counter ends past the last plane."""
    rng = np.random.default_rng(mult)
    x = rng.standard_normal((2, 37, 12, 19)).astype(np.float32)
    w = rng.standard_normal((37 * mult, 1, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(37 * mult).astype(np.float32)
    want = reference(x, w, bias, (stride,) * 2, (1, 1), (1, 1))
    for _ in range(5):
        shared, out = ctypes.c_int64(0), np.full(want.shape, 7.0, np.float32)
        with ThreadPoolExecutor(2) as pool:
            for call in [pool.submit(depthwise, kernels, x, w, bias, (stride,) * 2, (1, 1), (1, 1), out=out, part=part,
                                     shared=shared) for part in (0, 1)]:
                call.result()
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
        assert shared.value >= out.shape[0] * out.shape[1]


def test_a_call_finding_every_chunk_claimed_writes_nothing(kernels):
    """The first call alone takes every chunk (its partner's worker was busy); the second, given the same
    counter afterwards, computes nothing."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 40, 9, 20)).astype(np.float32)
    w = rng.standard_normal((40, 1, 3, 3)).astype(np.float32)
    shared = ctypes.c_int64(0)
    out = depthwise(kernels, x, w, None, (1, 1), (1, 1), (1, 1), shared=shared)
    np.testing.assert_allclose(out, reference(x, w, None, (1, 1), (1, 1), (1, 1)), rtol=1e-5, atol=1e-5)
    later = depthwise(kernels, x, w, None, (1, 1), (1, 1), (1, 1), part=1, shared=shared)
    assert (later == 7.0).all()


@pytest.mark.parametrize("at_end", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_reads_stay_inside_the_input(kernels, dtype, at_end):
    """x placed against an unreadable page: the unmasked and wide (stride 2) loads must not cross it."""
    rng = np.random.default_rng(2)
    for (h, wd), stride, padding in [((5, 16), 1, 0), ((7, 33), 2, 1), ((4, 17), 2, 0), ((6, 9), 3, 1)]:
        values = rng.standard_normal((1, 2, h, wd)).astype(dtype)
        memory, raw = _guarded(values.nbytes, at_end)
        x = raw.view(dtype).reshape(values.shape)
        x[...] = values
        w = rng.standard_normal((2, 1, 3, 3)).astype(dtype)
        got = depthwise(kernels, x, w, None, (stride, stride), (padding, padding), (1, 1))
        np.testing.assert_allclose(got, reference(values, w, None, (stride,) * 2, (padding,) * 2, (1, 1)),
                                   rtol=1e-5, atol=1e-5)
        del x, raw
        memory.close()


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_allocating_variant(kernels, dtype):
    """tscript_depthwise2d_<f>: {x, w, bias, out} and planes [first, last), its row of zeros from malloc."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 13, 21)).astype(dtype)
    w = rng.standard_normal((10, 1, 3, 3)).astype(dtype)
    bias = rng.standard_normal(10).astype(dtype)
    out = np.full((2, 10, 7, 11), 7.0, dtype)
    slots = dict(C=1, H=13, W=21, kh=3, kw=3, sh=2, sw=2, ph=1, pw=1, dh=1, dw=1, OH=7, OW=11, N=2, O=2, K=9,
                 L=77, G=5, scratch=0, pack=0)
    dims = (ctypes.c_int64 * len(CONV_SLOTS))(*(slots[s] for s in CONV_SLOTS))
    ptrs = (ctypes.c_void_p * 4)(x.ctypes.data, w.ctypes.data, bias.ctypes.data, out.ctypes.data)
    kernels[f"tscript_depthwise2d_{SUFFIX[dtype]}"]((ctypes.c_int64 * 2)(1, 20), ptrs, dims, None)
    want = reference(x, w, bias, (2, 2), (1, 1), (1, 1))
    np.testing.assert_allclose(out.reshape(20, 7, 11)[1:], want.reshape(20, 7, 11)[1:], rtol=1e-5, atol=1e-5)
    assert (out.reshape(20, 7, 11)[0] == 7.0).all()
