"""The native im2col and max-pool kernels (tscript_runtime/native/library/conv.py) against the op library's
reference kernels, bit for bit: every kernel size 1..4, stride 1..3 (the contiguous, even-lane and
gather paths), padding, dilation, ceil mode, odd and 1x1 images, rows shorter and longer than a
vector; NaN (the first one in a window wins), -inf and signed zeros for pooling; inputs that end
or start at an unmapped page (no read outside x) and outputs inside guards (no write outside)."""
import ctypes
import mmap
from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from llvmlite import ir

from tscript_runtime.native import target
from tscript_runtime.ops import OPS, accelerated
from tscript_runtime.native.library.conv import define_im2col, define_max_pool2d

from tests.codegen.helpers import link_module

DTYPES = (np.float32, np.float64)
SUFFIX = {np.float32: "f32", np.float64: "f64"}
class _Reference:
    """An op's numpy reference kernel (never the kernel library under test, which eager ops may use)."""

    def __init__(self, name: str):
        self.op = OPS[name]
        self.shape = self.op.shape

    def kernel(self, *args):
        previous = accelerated.set_enabled(False)
        try:
            return self.op.kernel(*args)
        finally:
            accelerated.set_enabled(previous)


POOL, IM2COL = _Reference("aten::max_pool2d"), _Reference("aten::im2col")


def _module() -> ir.Module:
    module = ir.Module("conv_kernels")
    module.triple = target.host()["triple"]
    for dtype in DTYPES:
        define_im2col(module, dtype)
        define_max_pool2d(module, dtype)
    return module


@pytest.fixture(scope="module")
def kernels():
    """name -> ctypes function, for the four kernels compiled once."""
    module = _module()
    names = [f.name for f in module.functions if not f.is_declaration]
    library = link_module(module, names)
    signature = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    functions = {name: signature(library.address(name)) for name in names}
    functions["library"] = library  # keep the code alive
    return functions


def _call(kernels, name, geometry, x, out):
    kernels[name]((ctypes.c_int64 * 13)(*geometry), x.ctypes.data, out.ctypes.data)


def max_pool(kernels, x, kernel, stride, padding, dilation, ceil_mode, out=None):
    """The native max_pool2d of (N, C, H, W) `x` into `out` (a fresh array by default)."""
    shape = POOL.shape(x, kernel, stride, padding, dilation, ceil_mode)
    out = np.empty(shape, x.dtype) if out is None else out
    planes = x.shape[0] * x.shape[1]
    _call(kernels, f"tscript_max_pool2d_{SUFFIX[x.dtype.type]}",
          (planes, *x.shape[2:], *kernel, *stride, *padding, *dilation, *shape[2:]), x, out)
    return out


def im2col(kernels, x, kernel, stride, padding, dilation, out=None):
    """The native im2col of one (C, H, W) image."""
    shape = IM2COL.shape(x, kernel, dilation, padding, stride)
    out = np.empty(shape, x.dtype) if out is None else out
    oh = (x.shape[1] + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    _call(kernels, f"tscript_im2col_{SUFFIX[x.dtype.type]}",
          (*x.shape, *kernel, *stride, *padding, *dilation, oh, shape[1] // oh), x, out)
    return out


def assert_same_bits(got, want):
    np.testing.assert_array_equal(got, want)
    bits = np.uint32 if got.dtype == np.float32 else np.uint64
    np.testing.assert_array_equal(got.view(bits), want.view(bits))  # NaN payloads and signed zeros too


def nan(dtype, payload: int):
    """A quiet NaN of `dtype` carrying `payload` in its low mantissa bits."""
    bits = np.uint32 if dtype == np.float32 else np.uint64
    return (np.array([np.nan], dtype).view(bits) | bits(payload)).view(dtype)[0]


def pool_values(rng, shape, dtype):
    """Normal values with NaNs (of distinct payloads), -infs and signed zeros sprinkled in."""
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    for k, at in enumerate(rng.integers(0, x.size, max(1, x.size // 20))):
        flat[at] = nan(dtype, k + 1)
    flat[rng.integers(0, x.size, max(1, x.size // 20))] = -np.inf
    flat[rng.integers(0, x.size, max(1, x.size // 10))] = 0.0
    flat[rng.integers(0, x.size, max(1, x.size // 10))] = -0.0
    return x


def geometries():
    """(kernel, stride, padding, dilation) with every kernel 1..4, stride 1..3 and allowed padding."""
    strides, dilations = [(1, 1), (2, 2), (3, 3), (1, 2), (2, 3)], [(1, 1), (2, 2), (1, 2)]
    for (kh, kw), stride, dilation in product(product(range(1, 5), repeat=2), strides, dilations):
        for padding in sorted({(0, 0), (kh // 2, kw // 2), (0, kw // 2)}):
            yield (kh, kw), stride, padding, dilation


IMAGES = [(1, 1, 1, 1), (2, 1, 7, 9), (1, 3, 5, 33), (1, 2, 2, 17), (1, 1, 11, 40)]


def _fits(shape, kernel, padding, dilation) -> bool:
    return all(n + 2 * p >= d * (k - 1) + 1 for n, k, p, d in zip(shape[2:], kernel, padding, dilation))


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool_matches_the_reference(kernels, dtype):
    rng = np.random.default_rng(0)
    checked = 0
    for (kernel, stride, padding, dilation), shape, ceil_mode in product(geometries(), IMAGES, (False, True)):
        if not _fits(shape, kernel, padding, dilation) or any(p > (d * (k - 1) + 1) // 2
                                                            for k, p, d in zip(kernel, padding, dilation)):
            continue
        x = pool_values(rng, shape, dtype)
        want = POOL.kernel(x, kernel, stride, padding, dilation, ceil_mode)
        assert_same_bits(max_pool(kernels, x, kernel, stride, padding, dilation, ceil_mode), want)
        checked += 1
    assert checked > 1000


@pytest.mark.parametrize("dtype", DTYPES)
def test_im2col_matches_the_reference(kernels, dtype):
    rng = np.random.default_rng(1)
    checked = 0
    for (kernel, stride, padding, dilation), shape in product(geometries(), IMAGES):
        if not _fits(shape, kernel, padding, dilation):
            continue
        x = rng.standard_normal(shape[1:]).astype(dtype)
        want = IM2COL.kernel(x[None], kernel, dilation, padding, stride)[0]
        assert_same_bits(im2col(kernels, x, kernel, stride, padding, dilation), want)
        checked += 1
    assert checked > 500


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(DTYPES), st.integers(1, 3), st.integers(1, 24), st.integers(1, 40),
       st.tuples(st.integers(1, 5), st.integers(1, 5)), st.tuples(st.integers(1, 4), st.integers(1, 4)),
       st.tuples(st.integers(1, 3), st.integers(1, 3)), st.tuples(st.integers(0, 2), st.integers(0, 2)),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_random_geometries(kernels, dtype, channels, h, w, kernel, stride, dilation, padding, ceil_mode, seed):
    padding = tuple(min(p, k // 2) for p, k in zip(padding, kernel))
    shape = (1, channels, h, w)
    if not _fits(shape, kernel, padding, dilation):
        return
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape[1:]).astype(dtype)
    assert_same_bits(im2col(kernels, x, kernel, stride, padding, dilation),
                     IM2COL.kernel(x[None], kernel, dilation, padding, stride)[0])
    if all(p <= (d * (k - 1) + 1) // 2 for k, p, d in zip(kernel, padding, dilation)):
        x = pool_values(rng, shape, dtype)
        assert_same_bits(max_pool(kernels, x, kernel, stride, padding, dilation, ceil_mode),
                         POOL.kernel(x, kernel, stride, padding, dilation, ceil_mode))


@pytest.mark.parametrize("dtype", DTYPES)
def test_pooling_nan_and_infinity(kernels, dtype):
    nan1, nan2 = nan(dtype, 1), nan(dtype, 2)
    x = np.full((1, 1, 4, 40), -np.inf, dtype)     # all -inf: -inf
    x[0, 0, 0, 2:4] = [nan1, nan2]                 # two NaNs in one window: the first (row-major) wins
    x[0, 0, 1, 5] = nan2                           # a NaN in the second row of a window
    x[0, 0, 0, 8:10] = [-0.0, 0.0]                 # equal maxima: the later tap
    x[0, 0, 1, 10:12] = [0.0, -0.0]
    x[0, 0, 2, 20:22] = [1.0, np.nan]
    got = max_pool(kernels, x, (2, 2), (2, 2), (0, 0), (1, 1), False)
    assert_same_bits(got, POOL.kernel(x, (2, 2), (2, 2), (0, 0), (1, 1), False))
    assert np.isneginf(got[0, 0, 0, 0]) and np.isnan(got[0, 0, 0, 1]) and np.isnan(got[0, 0, 0, 2])


@pytest.mark.parametrize("dtype", DTYPES)
def test_windows_without_inputs_give_minus_infinity(kernels, dtype):
    """Padding wider than PyTorch allows leaves corner windows in the padding only: -inf, no reads."""
    x = np.array([[[[5.0]]]], dtype)
    out = np.empty((1, 1, 3, 3), dtype)
    _call(kernels, f"tscript_max_pool2d_{SUFFIX[dtype]}", (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3), x, out)
    want = np.full((3, 3), -np.inf, dtype)
    want[1, 1] = 5.0
    np.testing.assert_array_equal(out[0, 0], want)


def _guarded(nbytes: int, at_end: bool):
    """A writable buffer of `nbytes` right before (at_end) or right after an unreadable page, as
    (mmap, numpy uint8 view)."""
    page = mmap.PAGESIZE
    span = -(-nbytes // page) * page
    memory = mmap.mmap(-1, span + 2 * page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    libc = ctypes.CDLL(None)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    for guard in (base, base + span + page):
        assert libc.mprotect(guard, page, 0) == 0  # PROT_NONE
    offset = page + span - nbytes if at_end else page
    return memory, np.frombuffer(memory, np.uint8, nbytes, offset)


@pytest.mark.parametrize("at_end", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_reads_stay_inside_the_input(kernels, dtype, at_end):
    """x placed against an unreadable page: the unmasked and wide (stride 2) loads must not cross it."""
    rng = np.random.default_rng(2)
    for (h, w), kernel, stride, padding in product([(4, 16), (5, 7), (2, 33)], [(2, 2), (3, 3), (1, 4)],
                                                   [(1, 1), (2, 2), (3, 3)], [(0, 0), (1, 1)]):
        padding = tuple(min(p, k // 2) for p, k in zip(padding, kernel))
        if not _fits((1, 1, h, w), kernel, padding, (1, 1)):
            continue
        values = rng.standard_normal((2, 3, h, w)).astype(dtype)
        memory, raw = _guarded(values.nbytes, at_end)
        x = raw.view(dtype).reshape(values.shape)
        x[...] = values
        assert_same_bits(max_pool(kernels, x, kernel, stride, padding, (1, 1), True),
                         POOL.kernel(values, kernel, stride, padding, (1, 1), True))
        assert_same_bits(im2col(kernels, x[1], kernel, stride, padding, (1, 1)),
                         IM2COL.kernel(values[1][None], kernel, (1, 1), padding, stride)[0])
        del x, raw
        memory.close()


@pytest.mark.parametrize("dtype", DTYPES)
def test_writes_stay_inside_the_output(kernels, dtype):
    x = np.random.default_rng(3).standard_normal((2, 3, 9, 21)).astype(dtype)
    for fill, run in ((POOL.shape(x, (2, 2), (2, 2), (0, 0), (1, 1), True),
                       lambda out: max_pool(kernels, x, (2, 2), (2, 2), (0, 0), (1, 1), True, out)),
                      (IM2COL.shape(x[0], (3, 3), (1, 1), (1, 1), (1, 1)),
                       lambda out: im2col(kernels, x[0], (3, 3), (1, 1), (1, 1), (1, 1), out))):
        guarded = np.full(int(np.prod(fill)) + 64, 7.0, dtype)
        run(guarded[32:-32].reshape(fill))
        assert (guarded[:32] == 7.0).all() and (guarded[-32:] == 7.0).all()


def test_defined_once_per_module_with_external_names():
    module = ir.Module("twice")
    for define in (define_im2col, define_max_pool2d):
        for dtype in (np.float32, np.dtype(np.float64)):
            fn = define(module, dtype)
            assert define(module, dtype) is fn and fn.linkage == ""
    assert sorted(f.name for f in module.functions if not f.is_declaration) == [
        "tscript_im2col_f32", "tscript_im2col_f64", "tscript_max_pool2d_f32", "tscript_max_pool2d_f64"]


def test_im2col_copies_with_vector_moves():
    module = ir.Module("im2col_asm")
    module.triple = target.host()["triple"]
    define_im2col(module, np.float32)
    asm = target.assembly(str(module))
    assert "zmm" in asm or "ymm" in asm
