"""The direct depthwise kernel (native/library/depthwise.py), which reads its input in place, against a
float64 numpy reference written out here (zero padding, then one multiply-add per tap): every path it
chooses between -- blocks of rows with unmasked loads inside the input, masked columns at its edges, a
row of zeros for rows above and below it; stride 2's spans; other strides' gathers; planes whose rows
are at most half a vector computed as one row (`_flat`), and too tall for its mask table -- on random
and chosen shapes: strides 1..3, paddings 0..2 (different down and across), dilations, 1x1, 3x3, 5x5
and 3x5 windows, channel multipliers, one image and several, images smaller than the window's reach,
rows of lengths that are not multiples of a vector, float32 and float64; both parts of a split call
(each its own row of zeros in scratch); nothing written outside scratch or the planes asked for."""
import ctypes

import numpy as np
import pytest

from tscript_runtime.entry_steps import CONV_SLOTS
from tscript_runtime.native.library.depthwise import FLAT_MASKS, scratch_bytes

from tests.codegen.test_depthwise_kernel import kernels  # noqa: F401 (the fixture)

DTYPES = (np.float32, np.float64)
SUFFIX = {np.float32: "f32", np.float64: "f64"}
LANES = {np.float32: 16, np.float64: 8}
TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12}


def reference(x, w, bias, stride, padding, dilation):
    """conv2d with groups = x's channels, in float64."""
    n, groups, h, wd = x.shape
    kh, kw = w.shape[2:]
    mult = w.shape[0] // groups
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    source = np.repeat(padded, mult, axis=1)  # output channel c reads input channel c // mult
    out = np.zeros((n, w.shape[0], oh, ow)) + (0 if bias is None else bias.astype(np.float64)[:, None, None])
    for i in range(kh):
        for j in range(kw):
            rows = source[:, :, i * dilation[0]:, j * dilation[1]:][:, :, :(oh - 1) * stride[0] + 1:stride[0],
                                                                    :(ow - 1) * stride[1] + 1:stride[1]]
            out += rows * w[:, 0, i, j].astype(np.float64)[:, None, None]
    return out


def native(kernels, x, w, bias, stride, padding, dilation, planes=None, part=0):
    """The scratch kernel over output planes `planes` (all by default) as part `part` of a call, into an
    output of 7s; scratch between NaN guards, which must stay NaN."""
    n, groups, h, wd = x.shape
    kh, kw = w.shape[2:]
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.full((n, w.shape[0], oh, ow), 7.0, x.dtype)
    slots = dict(C=1, H=h, W=wd, kh=kh, kw=kw, sh=stride[0], sw=stride[1], ph=padding[0], pw=padding[1],
                 dh=dilation[0], dw=dilation[1], OH=oh, OW=ow, N=n, O=w.shape[0] // groups, K=kh * kw, L=oh * ow,
                 G=groups, scratch=0, pack=0)
    dims = (ctypes.c_int64 * len(CONV_SLOTS))(*(slots[s] for s in CONV_SLOTS))
    size = scratch_bytes(slots, x.itemsize) // x.itemsize
    scratch = np.full(size + 32, np.nan, x.dtype)
    ptrs = (ctypes.c_void_p * 7)(x.ctypes.data, w.ctypes.data, None if bias is None else bias.ctypes.data,
                                 out.ctypes.data, scratch[16:].ctypes.data, None, None)
    planes = (0, n * w.shape[0]) if planes is None else planes
    kernels[f"tscript_depthwise2d_scratch_{SUFFIX[x.dtype.type]}"]((ctypes.c_int64 * 4)(*planes, part, 0), ptrs,
                                                                   dims, None)
    assert np.isnan(scratch[:16]).all() and np.isnan(scratch[16 + size:]).all()
    return out


def check(kernels, dtype, n, groups, mult, size, kernel, stride, padding, dilation, with_bias=True, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, groups) + size).astype(dtype)
    w = rng.standard_normal((groups * mult, 1) + kernel).astype(dtype)
    bias = rng.standard_normal(groups * mult).astype(dtype) if with_bias else None
    got = native(kernels, x, w, bias, stride, padding, dilation)
    np.testing.assert_allclose(got, reference(x, w, bias, stride, padding, dilation), rtol=TOLERANCE[dtype],
                               atol=TOLERANCE[dtype] * 10)


def test_random_shapes(kernels):
    """200 random convolutions: any kernel up to 5x5, stride 1..3, padding 0..2 each way, dilation 1..2,
    multiplier 1..3, 1 to 3 images, sides 1..40 (at least the window's reach with its padding)."""
    rng = np.random.default_rng(2024)
    for seed in range(200):
        kernel = tuple(int(k) for k in rng.integers(1, 6, 2))
        dilation = tuple(int(d) for d in rng.integers(1, 3, 2))
        padding = tuple(int(p) for p in rng.integers(0, 3, 2))
        stride = tuple(int(s) for s in rng.integers(1, 4, 2))
        size = tuple(int(rng.integers(max(1, d * (k - 1) + 1 - 2 * p), 41))
                     for k, p, d in zip(kernel, padding, dilation))
        check(kernels, DTYPES[seed % 2], int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 4)),
              size, kernel, stride, padding, dilation, with_bias=bool(seed % 3), seed=seed)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", [(1, 1), (3, 3), (5, 5), (3, 5)])
@pytest.mark.parametrize("stride", [1, 2, 3])
@pytest.mark.parametrize("padding", [(0, 0), (1, 1), (2, 2), (1, 2), (2, 0)])
def test_windows_strides_paddings(kernels, dtype, kernel, stride, padding):
    """Every chosen window, stride and padding on rows shorter than a vector, a little longer, and
    several vectors long (7, 17, 50 columns), two images, multiplier 2."""
    for width in (7, 17, 50):
        height = max(kernel[0] - 2 * padding[0], 1) + 5
        if width + 2 * padding[1] >= kernel[1]:
            check(kernels, dtype, 2, 3, 2, (height, width), kernel, (stride, stride), padding, (1, 1), seed=width)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dilation", [(2, 2), (1, 3), (2, 1)])
@pytest.mark.parametrize("stride", [1, 2])
def test_dilations(kernels, dtype, dilation, stride):
    check(kernels, dtype, 2, 2, 1, (13, 35), (3, 3), (stride, stride), (2, 2), dilation)
    check(kernels, dtype, 1, 2, 3, (11, 9), (3, 5), (stride, stride), (1, 2), dilation)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [(1, 1), (2, 2), (1, 5), (3, 2)])
@pytest.mark.parametrize("stride", [1, 2, 3])
def test_images_smaller_than_the_window(kernels, dtype, size, stride):
    """Every window reaches past the whole image: most taps read padding (rows of zeros, masked columns)."""
    check(kernels, dtype, 2, 3, 1, size, (5, 5), (stride, stride), (2, 2), (1, 1))
    check(kernels, dtype, 1, 2, 2, size, (3, 3), (stride, stride), (1, 1), (1, 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("side", [1, 2, 3, 4, 5, 7, 8, 9])
def test_planes_as_one_row(kernels, dtype, side):
    """Stride 1 with rows as long as the input's: up to half a vector (8 floats, 4 doubles) the plane is
    computed as one row; longer, row by row. 3x3 and 5x5 windows (padding 1 and 2), a 3x5 one, dilated,
    and taller planes than wide."""
    check(kernels, dtype, 3, 5, 2, (side, side), (3, 3), (1, 1), (1, 1), (1, 1), seed=side)
    check(kernels, dtype, 2, 3, 1, (side, side), (5, 5), (1, 1), (2, 2), (1, 1), seed=side)
    check(kernels, dtype, 1, 2, 1, (3 * side + 1, side), (3, 5), (1, 1), (0, 2), (1, 1), seed=side)
    check(kernels, dtype, 1, 2, 1, (2 * side + 5, side), (3, 3), (1, 1), (2, 2), (2, 2), seed=side)


@pytest.mark.parametrize("dtype", DTYPES)
def test_planes_too_tall_for_the_mask_table(kernels, dtype):
    """A plane of rows short enough to be computed as one row, but needing more than FLAT_MASKS masks:
    row by row instead."""
    lanes = LANES[dtype]
    width = lanes // 2
    height = FLAT_MASKS * lanes // (10 * width) + 8  # more than FLAT_MASKS masks: (3*3 + 1) a chunk
    check(kernels, dtype, 1, 2, 1, (height, width), (3, 3), (1, 1), (1, 1), (1, 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, stride", [((32, 112, 112), 1), ((8, 112, 112), 2), ((16, 56, 56), 2),
                                           ((24, 28, 28), 1), ((24, 28, 28), 2), ((32, 14, 14), 1),
                                           ((32, 14, 14), 2), ((48, 7, 7), 1)])
def test_mobilenet_layers(kernels, dtype, shape, stride):
    """MobileNetV2's depthwise layers (3x3, padding 1), fewer channels, batch 1 and 3."""
    for n in (1, 3):
        check(kernels, dtype, n, shape[0], 1, shape[1:], (3, 3), (stride, stride), (1, 1), (1, 1), seed=n)


@pytest.mark.parametrize("part", [0, 1])
def test_a_part_computes_its_planes_only(kernels, part):
    """Planes 5..11 of a call's part 0 or 1 (each writes its own row of zeros): those planes are the
    reference's, the others untouched."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 9, 21)).astype(np.float32)
    w = rng.standard_normal((8, 1, 3, 3)).astype(np.float32)
    got = native(kernels, x, w, None, (1, 1), (1, 1), (1, 1), planes=(5, 11), part=part).reshape(16, 9, 21)
    want = reference(x, w, None, (1, 1), (1, 1), (1, 1)).reshape(16, 9, 21)
    np.testing.assert_allclose(got[5:11], want[5:11], rtol=2e-5, atol=2e-4)
    assert (got[:5] == 7.0).all() and (got[11:] == 7.0).all()
