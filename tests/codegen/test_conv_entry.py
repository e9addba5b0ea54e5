"""Convolutions in the whole-graph entry against the reference kernels, through one native call: one input
channel per group (depthwise with channel multipliers 1..3, a single-channel image's convolution) on the
kernel library's direct kernel, split over two threads or not; 1x1 stride-1 unpadded convolutions that
read their input as the GEMM's columns (no im2col); random shapes, strides, paddings, dilations, batch
sizes, with and without a bias, float32 and float64."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
import tscript.nn.functional as F

from tests.codegen.test_window_steps import check


@st.composite
def depthwise_cases(draw):
    kernel = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.integers(0, k // 2 + 1)) for k in kernel)
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    size = tuple(draw(st.integers(max(1, d * (k - 1) + 1 - 2 * p), 24)) for k, p, d in zip(kernel, padding, dilation))
    shape = (draw(st.integers(1, 3)), draw(st.integers(1, 5))) + size
    return shape, draw(st.integers(1, 3)), kernel, stride, padding, dilation, draw(st.booleans()), \
        draw(st.sampled_from([np.float32, np.float64]))


@settings(max_examples=25, deadline=None)
@given(depthwise_cases())
def test_depthwise(case):
    shape, mult, kernel, stride, padding, dilation, bias, dtype = case
    groups = shape[1]
    rng = np.random.default_rng(sum(shape) + mult)
    x = rng.standard_normal(shape)
    w = rng.standard_normal((groups * mult, 1) + kernel)
    if bias:
        check(lambda t, u, v: F.conv2d(t, u, v, stride, padding, dilation, groups), x, w,
              rng.standard_normal(groups * mult), dtype=dtype)
    else:
        check(lambda t, u: F.conv2d(t, u, None, stride, padding, dilation, groups), x, w, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels, size, stride", [(32, 40, 1), (24, 33, 2), (64, 7, 1), (16, 20, 3)])
def test_depthwise_big_enough_to_split(channels, size, stride, dtype):
    """MobileNet-sized planes: the planes run in two halves at once (each with its own row of zeros)."""
    rng = np.random.default_rng(channels)
    x = rng.standard_normal((2, channels, size, size))
    w = rng.standard_normal((channels, 1, 3, 3))
    b = rng.standard_normal(channels)
    check(lambda t, u, v: F.conv2d(t, u, v, stride, 1, 1, channels), x, w, b, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_single_channel_image(dtype):
    """groups == 1 with one input channel: the direct kernel too (each output channel one plane)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 1, 28, 28))
    w = rng.standard_normal((8, 1, 5, 5))
    check(lambda t, u, v: F.conv2d(t, u, v, 1, 2), x, w, rng.standard_normal(8), dtype=dtype)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 3), st.integers(2, 40), st.integers(1, 70), st.integers(1, 12), st.integers(1, 2),
       st.booleans(), st.sampled_from([np.float32, np.float64]))
def test_pointwise_reads_the_input_as_columns(n, cin, cout, size, groups, bias, dtype):
    """1x1, stride 1, no padding: the GEMM reads the image as its (C, H*W) columns."""
    cin, cout = cin * groups, cout * groups
    rng = np.random.default_rng(cin + cout)
    x = rng.standard_normal((n, cin, size, size + 1))
    w = rng.standard_normal((cout, cin // groups, 1, 1))
    if bias:
        check(lambda t, u, v: F.conv2d(t, u, v, 1, 0, 1, groups), x, w, rng.standard_normal(cout), dtype=dtype)
    else:
        check(lambda t, u: F.conv2d(t, u, None, 1, 0, 1, groups), x, w, dtype=dtype)


@pytest.mark.parametrize("stride, padding, dilation", [(2, 0, 1), (1, 1, 1), (1, 0, 2), (3, 1, 1)])
@pytest.mark.parametrize("shape, out", [((2, 6, 9, 8), 10), ((2, 16, 46, 45), 24), ((1, 8, 40, 40), 70)])
def test_other_1x1_convolutions_pack_their_columns(stride, padding, dilation, shape, out):
    """1x1 convolutions that are not pointwise (strided, padded): their columns are packed from the
    image (not copied by im2col first) where the rows do not outnumber them, else im2col'd; eager too."""
    rng = np.random.default_rng(stride + padding + out)
    x = rng.standard_normal(shape)
    w = rng.standard_normal((out, shape[1], 1, 1))
    check(lambda t, u: F.conv2d(t, u, None, stride, padding, dilation), x, w)
    got = F.conv2d(ts.from_numpy(x.astype(np.float32)), ts.from_numpy(w.astype(np.float32)), None, stride, padding,
                   dilation).numpy()
    expected = F.conv2d(ts.from_numpy(x), ts.from_numpy(w), None, stride, padding, dilation).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@st.composite
def batched_cases(draw):
    """One-group convolutions of several small images (their columns share one GEMM): images of up to
    22x22 outputs, 2..9 of them, so that the last GEMM of a batch can hold fewer images."""
    kernel = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.integers(0, k // 2 + 1)) for k in kernel)
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    size = tuple(draw(st.integers(max(1, d * (k - 1) + 1 - 2 * p), 22)) for k, p, d in zip(kernel, padding, dilation))
    shape = (draw(st.integers(2, 9)), draw(st.integers(1, 12))) + size
    out = draw(st.sampled_from([1, 2, 5, 17, 31, 32, 40, 70]))
    return shape, out, kernel, stride, padding, dilation, draw(st.booleans()), \
        draw(st.sampled_from([np.float32, np.float64]))


@settings(max_examples=25, deadline=None)
@given(batched_cases())
def test_small_images_share_one_gemm(case):
    shape, out, kernel, stride, padding, dilation, bias, dtype = case
    rng = np.random.default_rng(sum(shape) + out)
    x, w = rng.standard_normal(shape), rng.standard_normal((out, shape[1]) + kernel)
    if bias:
        check(lambda t, u, v: F.conv2d(t, u, v, stride, padding, dilation), x, w, rng.standard_normal(out), dtype=dtype)
    else:
        check(lambda t, u: F.conv2d(t, u, None, stride, padding, dilation), x, w, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, c, out, size, kernel, stride", [
    (8, 64, 48, 7, 3, 1),    # ResNet's last layers' size: all 8 images in one GEMM
    (5, 16, 24, 14, 3, 1),   # 196 columns an image: 5 images in one GEMM (BATCH_COLUMNS 1024)
    (7, 8, 40, 16, 1, 1),    # 1x1 stride 1: packed from the images too (256 columns: 4 + 3 a GEMM)
    (3, 8, 33, 12, 1, 2),
])
def test_batched_layers(n, c, out, size, kernel, stride, dtype):
    rng = np.random.default_rng(n + c + out)
    x, w = rng.standard_normal((n, c, size, size)), rng.standard_normal((out, c, kernel, kernel))
    check(lambda t, u, v: F.conv2d(t, u, v, stride, kernel // 2), x, w, rng.standard_normal(out), dtype=dtype)


@pytest.mark.parametrize("out", [1, 3, 20, 31, 32, 64, 65])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("packed_here", [True, False])
def test_one_big_image_few_and_many_channels(out, bias, packed_here, monkeypatch, tmp_path):
    """One image of 40x40 outputs: on hosts with the packed GEMM every channel count takes it (its
    columns packed from the image); elsewhere (`packed_here` False, code compiled afresh) 3..small_m
    output channels take the register-blocked GEMM (its column halves on two threads), others BLAS."""
    if not packed_here:
        from tscript_runtime.native import entry
        from tscript_runtime.native.library import conv
        monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path))
        monkeypatch.setattr(entry, "packed_gemm_here", lambda: False)
        monkeypatch.setattr(conv, "implicit_columns", lambda dtype: False)  # (im2col columns, then the product)
    rng = np.random.default_rng(out)
    x, w = rng.standard_normal((1, 12, 40, 40)), rng.standard_normal((out, 12, 3, 3))
    if bias:
        check(lambda t, u, v: F.conv2d(t, u, v, 1, 1), x, w, rng.standard_normal(out))
    else:
        check(lambda t, u: F.conv2d(t, u, None, 1, 1), x, w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, c, out, size, stride, padding", [
    (3, 100, 64, 1, 1, 0),   # DCGAN's first generator layer: a latent vector to 4x4 planes
    (2, 64, 32, 4, 2, 1),    # its middle layers: the columns' product splits over two threads
    (2, 32, 3, 16, 2, 1),    # its last: few output channels, many pixels
])
def test_generator_layers(n, c, out, size, stride, padding, dtype):
    """conv_transpose2d at DCGAN's sizes (native/conv_transpose.py: the first writes its output by one
    product, the others add up columns of all images' pixels; test_conv_transpose_entry.py has more)."""
    rng = np.random.default_rng(c + out)
    x, w = rng.standard_normal((n, c, size, size)), rng.standard_normal((c, out, 4, 4))
    check(lambda t, u, v: F.conv_transpose2d(t, u, v, stride, padding), x, w, rng.standard_normal(out), dtype=dtype)
