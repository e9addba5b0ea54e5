"""Convolutions in the whole-graph entry against the reference kernels, through one native call: one input
channel per group (depthwise with channel multipliers 1..3, a single-channel image's convolution) on the
kernel library's direct kernel, split over two threads or not; 1x1 stride-1 unpadded convolutions that
read their input as the GEMM's columns (no im2col); random shapes, strides, paddings, dilations, batch
sizes, with and without a bias, float32 and float64."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

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
    """MobileNet-sized planes: the planes run in two halves at once (each with its own padded plane)."""
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


@pytest.mark.parametrize("stride, padding, dilation", [(2, 0, 1), (1, 1, 1), (1, 0, 2)])
def test_other_1x1_convolutions_still_use_columns(stride, padding, dilation):
    rng = np.random.default_rng(stride + padding)
    x = rng.standard_normal((2, 6, 9, 8))
    w = rng.standard_normal((10, 6, 1, 1))
    check(lambda t, u: F.conv2d(t, u, None, stride, padding, dilation), x, w)
