"""Window steps of the whole-graph entry against the reference kernels: average pooling (avg_pool2d with
every padding, ceil_mode, count_include_pad and divisor; adaptive_avg_pool2d with windows that do and do
not divide the input) and grouped / depthwise convolutions, on random shapes, in float32 and float64;
each case must really run through the entry (one native call)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
import tscript.nn.functional as F

from tests.conftest import assert_close


def entry_ran(cm) -> bool:
    return cm.executable.entry is not None and any(p is not None for p in cm.executable.entry._plans.values())


def check(fn, *args, dtype=np.float32):
    """`fn` compiled and run on `args` (numpy arrays) equals eager, through the whole-graph entry."""
    tensors = [ts.from_numpy(a.astype(dtype)) for a in args]
    cm = ts.jit.compile(fn, tuple(tensors))
    got = cm(*tensors)
    assert entry_ran(cm), cm.graph
    assert_close(got, fn(*tensors), rtol=1e-5, atol=1e-5)


@st.composite
def pools(draw):
    """(input shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor) of a valid avg_pool2d."""
    kernel = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    size = tuple(draw(st.integers(k, k + 9)) for k in kernel)
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + size
    return shape, kernel, stride, padding, draw(st.booleans()), draw(st.booleans()), \
        draw(st.sampled_from([None, None, 1, 5]))


@settings(max_examples=20, deadline=None)
@given(pools(), st.sampled_from([np.float32, np.float64]))
def test_avg_pool2d(case, dtype):
    shape, kernel, stride, padding, ceil_mode, include_pad, divisor = case
    x = np.random.default_rng(len(shape)).standard_normal(shape)
    check(lambda t: F.avg_pool2d(t, kernel, stride, padding, ceil_mode, include_pad, divisor) * 1, x, dtype=dtype)


@pytest.mark.parametrize("size, out", [((7, 7), (1, 1)), ((9, 10), (3, 5)), ((5, 7), (3, 4)), ((4, 4), (6, 2)),
                                       ((1, 3), (1, 3))])
def test_adaptive_avg_pool2d(size, out):
    x = np.random.default_rng(0).standard_normal((2, 3) + size)
    check(lambda t: F.adaptive_avg_pool2d(t, out) + 0, x)


@pytest.mark.parametrize("pool", ["max", "avg", "adaptive"])
@pytest.mark.parametrize("shape", [(3, 23, 40, 36), (1, 1, 300, 260), (8, 64, 28, 28)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_poolings_split_their_planes_over_both_threads(pool, shape, dtype, monkeypatch):
    """From POOL_SPLIT input values a pooling's planes go in two halves to both threads (an odd count,
    one plane: the second half gets the rest, or all); the result is eager's, ceil_mode and padding
    included, with and without the worker."""
    from tscript_runtime.native import entry
    from tscript_runtime.threads import set_num_threads
    assert shape[0] * shape[1] * shape[2] * shape[3] >= entry.POOL_SPLIT
    fn = {"max": lambda t: F.max_pool2d(t, 3, 2, 1, 1, True) * 1,
          "avg": lambda t: F.avg_pool2d(t, 3, 2, 1, True, False) * 1,
          "adaptive": lambda t: F.adaptive_avg_pool2d(t, (5, 3)) * 1}[pool]
    x = np.random.default_rng(sum(shape)).standard_normal(shape)
    check(fn, x, dtype=dtype)
    set_num_threads(1)
    try:
        check(fn, x, dtype=dtype)
    finally:
        set_num_threads(2)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.sampled_from([1, 3]), st.integers(0, 1),
       st.integers(1, 2), st.booleans(), st.sampled_from([np.float32, np.float64]))
def test_grouped_conv2d(groups, per_in, per_out, k, padding, stride, bias, dtype):
    rng = np.random.default_rng(groups * 7 + per_in)
    x = rng.standard_normal((2, groups * per_in, 6, 7))
    w = rng.standard_normal((groups * per_out, per_in, k, k))
    b = rng.standard_normal(groups * per_out)
    if bias:
        check(lambda t, u, v: F.conv2d(t, u, v, stride, padding, 1, groups), x, w, b, dtype=dtype)
    else:
        check(lambda t, u: F.conv2d(t, u, None, stride, padding, 1, groups), x, w, dtype=dtype)


def test_depthwise_separable_block_runs_as_one_native_call():
    """MobileNet's pattern: a depthwise 3x3 (groups = channels), ReLU6 in place, a pointwise 1x1, then
    global average pooling."""
    from tscript import nn
    ts.manual_seed(0)
    block = nn.Sequential(nn.Conv2d(8, 8, 3, 1, 1, groups=8, bias=False), nn.BatchNorm2d(8), nn.ReLU6(inplace=True),
                          nn.Conv2d(8, 16, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten()).eval()
    x = np.random.default_rng(1).standard_normal((3, 8, 12, 12))
    check(block, x)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cat(dim):
    """cat of results and of a graph input, along each dim, into one native call (SqueezeNet's fire)."""
    rng = np.random.default_rng(dim + 5)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    check(lambda x, y: ts.cat([x.relu(), y * 2, x], dim), a, b)


@pytest.mark.parametrize("batch, widths, dim", [(8, (64, 64), 1), (1, (16, 48, 3), 1), (3, (40, 1), -1), (1, (70,), 0)])
def test_cat_big_enough_to_split(batch, widths, dim):
    """cats of at least CAT_SPLIT bytes copy their (row, input) pieces on two threads: rows of
    unequal pieces, one row of several pieces, an odd count of pieces, a single piece."""
    from tscript_runtime.native.entry import CAT_SPLIT
    rng = np.random.default_rng(len(widths) + batch)
    shapes = [(batch, w, 32, 32) if dim == 1 else (batch, 4, 64, 8 * w) if dim == -1 else (w, 16, 64)
              for w in widths]
    parts = [rng.standard_normal(s) for s in shapes]
    assert sum(p.size for p in parts) * 4 >= CAT_SPLIT
    check(lambda *xs: ts.cat([x * 2 for x in xs], dim), *parts)


def test_cat_of_an_empty_part_and_float64():
    a, b = np.random.default_rng(0).standard_normal((3, 0)), np.random.default_rng(1).standard_normal((3, 5))
    check(lambda x, y: ts.cat([x + 1, y.exp()], 1), a, b, dtype=np.float64)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 2), st.integers(1, 3), st.integers(1, 3), st.sampled_from([(1, 1), (3, 3), (4, 4), (2, 3)]),
       st.integers(1, 2), st.integers(0, 1), st.integers(0, 1), st.integers(1, 2), st.booleans(),
       st.sampled_from([np.float32, np.float64]))
def test_conv_transpose2d(groups, per_in, per_out, kernel, stride, padding, out_pad, dilation, bias, dtype):
    """DCGAN's generator layers, and every stride, padding, output padding, dilation and group count."""
    out_pad = min(out_pad, max(stride, dilation) - 1)
    rng = np.random.default_rng(groups + 3 * stride + 7 * per_out)
    x = rng.standard_normal((2, groups * per_in, 3, 4))
    w = rng.standard_normal((groups * per_in, per_out) + kernel)
    b = rng.standard_normal(groups * per_out)
    args = (stride, padding, out_pad, groups, dilation)
    if bias:
        check(lambda t, u, v: F.conv_transpose2d(t, u, v, *args), x, w, b, dtype=dtype)
    else:
        check(lambda t, u: F.conv_transpose2d(t, u, None, *args), x, w, dtype=dtype)
