"""Pooling: F.max_pool1d/2d (with indices), F.avg_pool1d/2d, F.adaptive_avg_pool1d/2d and their
modules. Checked by hand, against numpy reshape reductions, and against PyTorch with identical
inputs (values, indices, dtypes and gradients)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
import tscript.nn.functional as F
from tests.conftest import assert_close
from tests.seeded import Seeded, f32
from tscript import nn

_DATA = Seeded(1)
randn, _fresh_rng = _DATA.randn, _DATA.fixture()


# -- by hand ----------------------------------------------------------------------------------------

def test_max_pool2d_by_hand():
    x = ts.arange(16.0).reshape(1, 1, 4, 4)
    assert_close(F.max_pool2d(x, 2), f32([[[[5, 7], [13, 15]]]]))
    values, indices = F.max_pool2d(x, 2, return_indices=True)
    assert indices.dtype == ts.int64 and indices.tolist() == [[[[5, 7], [13, 15]]]]
    assert_close(F.max_pool2d(x, 3, stride=1, padding=1)[0, 0, 0], f32([5, 6, 7, 7]))
    assert F.max_pool2d(x, 3, stride=2).shape == (1, 1, 1, 1)
    assert F.max_pool2d(x, 3, stride=2, ceil_mode=True).shape == (1, 1, 2, 2)
    assert_close(F.max_pool2d(x, 2, dilation=2), f32([[[[10]]]]))
    assert_close(F.max_pool2d(x[0], 2), f32([[[5, 7], [13, 15]]]))  # unbatched


def test_max_pool_gradient_goes_to_the_first_maximum():
    x = ts.ones(1, 1, 2, 4, requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    assert x.grad.tolist() == [[[[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]]]
    y = ts.tensor([[[1.0, 3.0, 2.0, 3.0]]], requires_grad=True)
    F.max_pool1d(y, 3, stride=1).sum().backward()  # both windows pick index 1 of the tie 3, 3
    assert y.grad.tolist() == [[[0.0, 2.0, 0.0, 0.0]]]


def test_avg_pool2d_by_hand():
    x = ts.arange(16.0).reshape(1, 1, 4, 4)
    assert_close(F.avg_pool2d(x, 2), f32([[[[2.5, 4.5], [10.5, 12.5]]]]))
    corner_sum = 0 + 1 + 4 + 5
    assert_close(F.avg_pool2d(x, 3, 1, 1)[0, 0, 0, 0], f32(corner_sum / 9))
    assert_close(F.avg_pool2d(x, 3, 1, 1, count_include_pad=False)[0, 0, 0, 0], f32(corner_sum / 4))
    assert_close(F.avg_pool2d(x, 2, divisor_override=3), f32([[[[10 / 3, 6], [14, 50 / 3]]]]))
    ceil = F.avg_pool2d(x, 3, 2, ceil_mode=True)  # the last window is cut by the input's edge
    assert_close(ceil[0, 0], f32([[5, 6.5], [11, 12.5]]))
    ints = F.avg_pool2d(ts.tensor([[[[-8, -7], [-4, -2]]]]), 2)
    assert ints.dtype == ts.int64 and ints.tolist() == [[[[-5]]]]  # -21 / 4 truncates toward zero


def test_adaptive_avg_pool2d_by_hand():
    x = ts.arange(20.0).reshape(1, 1, 4, 5)
    assert_close(F.adaptive_avg_pool2d(x, 1), f32([[[[9.5]]]]))
    # windows over 5 columns for 2 outputs: [0, 3) and [2, 5)
    assert_close(F.adaptive_avg_pool2d(x, (1, 2)), f32([[[[8.5, 10.5]]]]))
    assert F.adaptive_avg_pool2d(x, (None, 3)).shape == (1, 1, 4, 3)
    assert_close(F.adaptive_avg_pool2d(x, (4, 5)), x.numpy())
    assert_close(F.adaptive_avg_pool1d(ts.tensor([[1.0, 2.0, 4.0, 7.0, 11.0]]), 2), f32([[7 / 3, 22 / 3]]))


def test_one_dimensional_pools_by_hand():
    x = ts.tensor([[[1.0, 5.0, 2.0, 4.0, 3.0]]])
    assert_close(F.max_pool1d(x, 2), f32([[[5.0, 4.0]]]))
    assert_close(F.max_pool1d(x, 2, ceil_mode=True), f32([[[5.0, 4.0, 3.0]]]))
    values, indices = F.max_pool1d(x, 3, 1, return_indices=True)
    assert_close(values, f32([[[5.0, 5.0, 4.0]]])) and indices.tolist() == [[[1, 1, 3]]]
    assert_close(F.avg_pool1d(x, 2), f32([[[3.0, 3.0]]]))
    assert_close(F.avg_pool1d(x[0], 3, 2, 1, count_include_pad=False), f32([[3.0, 11 / 3, 3.5]]))


# -- properties against numpy ------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(1, 2), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 4), st.integers(1, 4))
def test_non_overlapping_pools_are_block_reductions(n, c, kh, kw, bh, bw):
    x = randn(n, c, kh * bh, kw * bw)
    blocks = x.reshape(n, c, bh, kh, bw, kw)
    assert_close(F.max_pool2d(ts.tensor(x), (kh, kw)), blocks.max(axis=(3, 5)))
    assert_close(F.avg_pool2d(ts.tensor(x), (kh, kw)), blocks.mean(axis=(3, 5)), rtol=1e-5, atol=1e-6)
    assert_close(F.adaptive_avg_pool2d(ts.tensor(x), (bh, bw)), blocks.mean(axis=(3, 5)), rtol=1e-5, atol=1e-6)
    _, indices = F.max_pool2d(ts.tensor(x), (kh, kw), return_indices=True)
    flat = x.reshape(n, c, -1)
    assert_close(np.take_along_axis(flat, indices.numpy().reshape(n, c, -1), 2).reshape(indices.shape),
                 blocks.max(axis=(3, 5)))


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 7), st.integers(1, 3), st.integers(1, 3), st.integers(0, 1), st.booleans(), st.booleans())
def test_avg_pool2d_backward_is_the_adjoint(size, k, s, p, ceil_mode, count_include_pad):
    """<avg_pool2d(x), g> == <x, grad of avg_pool2d at g>: the backward op is the exact transpose."""
    if p > k // 2 or size + 2 * p < k:
        return
    x = ts.tensor(randn(2, 3, size, size + 1, dtype=np.float64), requires_grad=True)
    y = F.avg_pool2d(x, k, s, p, ceil_mode, count_include_pad)
    g = randn(*y.shape, dtype=np.float64)
    (gx,) = ts.autograd.grad(y, x, ts.tensor(g))
    assert np.isclose((y.detach().numpy() * g).sum(), (x.detach().numpy() * gx.numpy()).sum(), rtol=1e-10)


# -- against PyTorch ---------------------------------------------------------------------------------

def _pair(array):
    import torch
    return ts.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


def _compare(ours, theirs, xs, xt, rtol=1e-5, atol=1e-6):
    """Outputs (and, for float results, the input gradients of sum(y * w)) agree."""
    assert_close(ours, theirs, rtol=rtol, atol=atol)
    weights = np.linspace(-1, 1, ours.numel(), dtype=np.float32).reshape(tuple(ours.shape))
    (ours * ts.tensor(weights)).sum().backward()
    (theirs * theirs.new_tensor(weights)).sum().backward()
    assert_close(xs.grad, xt.grad, rtol=rtol, atol=atol)


# (kernel, stride, padding, dilation, ceil_mode): every option value, in varied company
MAX_GRID = [(2, None, 0, 1, False), (2, 1, 1, 1, False), (3, 2, 1, 1, True), (3, None, 0, 2, False),
            (3, (2, 1), 1, 2, True), ((3, 2), 1, 0, 1, True), ((3, 2), (2, 1), 1, 2, False), (2, 2, 1, 2, True),
            (3, 1, 0, 1, True), ((3, 2), 2, 1, 1, False)]


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", MAX_GRID)
def test_max_pool2d_matches_torch(oracle, kernel, stride, padding, dilation, ceil_mode):
    x = randn(2, 3, 7, 8)
    xs, xt = _pair(x)
    v, i = F.max_pool2d(xs, kernel, stride, padding, dilation, ceil_mode, return_indices=True)
    v_ref, i_ref = oracle.nn.functional.max_pool2d(xt, kernel, stride, padding, dilation, ceil_mode,
                                                   return_indices=True)
    assert_close(i, i_ref)
    _compare(v, v_ref, xs, xt)
    assert_close(F.max_pool2d(ts.tensor(x[0]), kernel, stride, padding, dilation, ceil_mode),
                 oracle.nn.functional.max_pool2d(oracle.tensor(x[0]), kernel, stride, padding, dilation, ceil_mode))


# (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
AVG_GRID = [(2, None, 0, False, True, None), (3, 2, 1, True, True, None), (3, 2, 1, True, False, None),
            (3, 1, 1, False, False, None), ((3, 2), (2, 1), 1, True, True, 5), ((3, 2), None, 0, True, False, None),
            (2, 1, 1, False, True, 5), (3, 2, 0, True, False, 5), (2, (2, 1), 1, True, False, None),
            (3, None, 1, False, True, None), (2, 2, 1, True, False, -3)]


@pytest.mark.parametrize("kernel,stride,padding,ceil_mode,count_include_pad,divisor_override", AVG_GRID)
def test_avg_pool2d_matches_torch(oracle, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    args = (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    xs, xt = _pair(randn(2, 3, 7, 8))
    _compare(F.avg_pool2d(xs, *args), oracle.nn.functional.avg_pool2d(xt, *args), xs, xt)
    ints = np.arange(2 * 7 * 8).reshape(2, 7, 8) % 11 - 5
    assert_close(F.avg_pool2d(ts.tensor(ints), *args), oracle.nn.functional.avg_pool2d(oracle.tensor(ints), *args))


@pytest.mark.parametrize("output_size", [1, 2, 3, 5, (4, 7), (7, 3), (2, None), (None, 9), 9, (0, 2)])
def test_adaptive_avg_pool2d_matches_torch(oracle, output_size):
    xs, xt = _pair(randn(2, 3, 7, 8))
    ours, theirs = F.adaptive_avg_pool2d(xs, output_size), oracle.nn.functional.adaptive_avg_pool2d(xt, output_size)
    if ours.numel() == 0:  # PyTorch refuses this backward; ours is simply zero
        assert_close(ours, theirs)
        ours.sum().backward()
        assert not xs.grad.numpy().any()
    else:
        _compare(ours, theirs, xs, xt)
    x = randn(3, 7, 8, dtype=np.float64)
    assert_close(F.adaptive_avg_pool2d(ts.tensor(x), output_size),
                 oracle.nn.functional.adaptive_avg_pool2d(oracle.tensor(x), output_size), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", [(2, None, 0, False), (3, 2, 1, True), (3, 1, 1, False),
                                                             (4, 3, 2, True)])
def test_one_dimensional_pools_match_torch(oracle, kernel, stride, padding, ceil_mode):
    torch_f = oracle.nn.functional
    for shape in ((2, 3, 11), (3, 11)):
        x = randn(*shape)
        xs, xt = _pair(x)
        v, i = F.max_pool1d(xs, kernel, stride, padding, 1, ceil_mode, return_indices=True)
        v_ref, i_ref = torch_f.max_pool1d(xt, kernel, stride, padding, 1, ceil_mode, return_indices=True)
        assert_close(i, i_ref)
        _compare(v, v_ref, xs, xt)
        xs, xt = _pair(x)
        _compare(F.avg_pool1d(xs, kernel, stride, padding, ceil_mode, False),
                 torch_f.avg_pool1d(xt, kernel, stride, padding, ceil_mode, False), xs, xt)
        xs, xt = _pair(x)
        _compare(F.adaptive_avg_pool1d(xs, kernel), torch_f.adaptive_avg_pool1d(xt, kernel), xs, xt)


def test_special_values_match_torch(oracle):
    """NaN wins (its index is the last NaN's, as in PyTorch); a window of -inf points at its first
    position inside the input; integer inputs keep their dtype."""
    x = f32([[[[1, np.nan, 2], [np.nan, 0, 5], [1, 1, 1]]]])
    for ours, theirs in zip(F.max_pool2d(ts.tensor(x), 2, 1, return_indices=True),
                            oracle.nn.functional.max_pool2d(oracle.tensor(x), 2, 1, return_indices=True)):
        assert_close(ours, theirs)
    inf = np.full((1, 1, 3, 3), -np.inf, np.float32)
    assert_close(F.max_pool2d(ts.tensor(inf), 2, 1, 1, return_indices=True)[1],
                 oracle.nn.functional.max_pool2d(oracle.tensor(inf), 2, 1, 1, return_indices=True)[1])
    ints = np.arange(-20, 16, dtype=np.int32).reshape(1, 1, 6, 6)
    for ours, theirs in zip(F.max_pool2d(ts.tensor(ints), 3, 2, 1, return_indices=True),
                            oracle.nn.functional.max_pool2d(oracle.tensor(ints), 3, 2, 1, return_indices=True)):
        assert_close(ours, theirs)


def test_second_derivatives_match_torch(oracle):
    x = randn(2, 3, 6, 7, dtype=np.float64)
    results = []
    for lib, fn in ((ts, F), (oracle, oracle.nn.functional)):
        xs = lib.tensor(x, requires_grad=True)
        y = fn.avg_pool2d(xs.tanh(), 3, 2, 1) + fn.max_pool2d(xs * xs, 2, 2, ceil_mode=True) \
            + fn.adaptive_avg_pool2d(xs.sin(), (3, 4))
        gx, = lib.autograd.grad((y * y).sum(), xs, create_graph=True)
        (gx * gx).sum().backward()
        results.append((gx, xs.grad))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs, rtol=1e-10, atol=1e-10)


# -- modules ---------------------------------------------------------------------------------------

MODULE_CASES = [
    ("MaxPool2d", (3,), {}), ("MaxPool2d", (3, 2, 1, 2, False, True), {}), ("MaxPool2d", ((3, 2), (2, 1)), {}),
    ("AvgPool2d", (3,), {}), ("AvgPool2d", (3, 2, 1, True, False, 4), {}), ("AdaptiveAvgPool2d", (3,), {}),
    ("AdaptiveAvgPool2d", ((3, None),), {}), ("MaxPool1d", (3,), dict(stride=2, padding=1)), ("AvgPool1d", (3,), {}),
    ("AdaptiveAvgPool1d", (4,), {}),
]


@pytest.mark.parametrize("name,args,kwargs", MODULE_CASES)
def test_modules_match_torch(oracle, name, args, kwargs):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(oracle.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.parameters()) == []
    x = randn(2, 3, 9, 10) if name.endswith("2d") else randn(2, 3, 11)
    xs, xt = _pair(x)
    _compare(ours(xs), theirs(xt), xs, xt)


def test_module_reprs():
    assert repr(nn.MaxPool2d(3)) == "MaxPool2d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.MaxPool2d((3, 2), (2, 1), ceil_mode=True)) == \
        "MaxPool2d(kernel_size=(3, 2), stride=(2, 1), padding=0, dilation=1, ceil_mode=True)"
    assert repr(nn.AvgPool2d(3, 2, 1)) == "AvgPool2d(kernel_size=3, stride=2, padding=1)"
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert repr(nn.AdaptiveAvgPool2d((3, None))) == "AdaptiveAvgPool2d(output_size=(3, None))"
    assert repr(nn.MaxPool1d(2)) == "MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"


def test_max_pool_module_returns_indices():
    values, indices = nn.MaxPool2d(2, return_indices=True)(ts.arange(16.0).reshape(1, 1, 4, 4))
    assert indices.tolist() == [[[[5, 7], [13, 15]]]]


# -- errors ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call,fragment", [
    (lambda: F.max_pool2d(ts.randn(1, 4, 8, 8), 3, padding=2),
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"),
    (lambda: F.max_pool2d(ts.randn(1, 4, 8, 8), 3, dilation=2, padding=2),
     "pad should be smaller than or equal to half of kernel size"),
    (lambda: F.max_pool2d(ts.randn(1, 4, 2, 2), 3),
     r"Given input size: \(4x2x2\). Calculated output size: \(4x0x0\). Output size is too small"),
    (lambda: F.max_pool2d(ts.randn(4, 8), 3), "Expected 3D or 4D"),
    (lambda: F.max_pool2d(ts.randn(2, 0, 8, 8), 2), r"but got:\[2, 0, 8, 8\]"),
    (lambda: F.max_pool2d(ts.randn(1, 4, 8, 8), 3, stride=0), "stride should not be zero"),
    (lambda: F.max_pool2d(ts.randn(1, 4, 8, 8), 0, stride=1), "kernel size should be greater than zero"),
    (lambda: F.max_pool2d(ts.randn(1, 4, 8, 8), 2, dilation=0), "dilation should be greater than zero"),
    (lambda: F.max_pool2d(ts.randn(1, 4, 8, 8), (2, 3, 4)),
     "max_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
    (lambda: F.max_pool2d(ts.randn(1, 4, 8, 8), 2, (1, 2, 3)),
     "stride must either be omitted, a single int, or a tuple of two ints"),
    (lambda: F.max_pool2d(ts.ones(1, 4, 8, 8, dtype=ts.bool), 2), "not implemented for 'Bool'"),
    (lambda: F.avg_pool2d(ts.randn(1, 4, 8, 8), 2, 2, -1), "pad must be non-negative, but got pad: -1"),
    (lambda: F.avg_pool2d(ts.randn(1, 4, 8, 8), 2, divisor_override=0), "divisor must be not zero"),
    (lambda: F.avg_pool2d(ts.randn(1, 4, 8, 8), 2, 2, (1, 2, 3)),
     "avg_pool2d: padding must either be a single int, or a tuple of two ints"),
    (lambda: F.adaptive_avg_pool2d(ts.randn(4, 8), 3), r"adaptive_avg_pool2d\(\): Expected 3D or 4D tensor"),
    (lambda: F.adaptive_avg_pool2d(ts.randn(1, 4, 0, 8), 3), "with dimension 2 being empty"),
    (lambda: F.adaptive_avg_pool2d(ts.randn(1, 4, 8, 8), -1), "elements of output_size must be greater than or equal"),
    (lambda: F.adaptive_avg_pool2d(ts.arange(64).reshape(1, 8, 8), 2), "not implemented for 'Long'"),
    (lambda: F.max_pool1d(ts.randn(8), 2), r"max_pool1d: Expected 2D or 3D \(batch mode\) tensor"),
    (lambda: F.avg_pool1d(ts.randn(1, 4, 8, 3), 2), "Expected 2 to 3 dimensions, but got 4-dimensional tensor"),
    (lambda: F.max_pool1d(ts.randn(1, 4, 8), (2, 2)), "kernel_size must be an int or a tuple of one int"),
])
def test_errors(call, fragment):
    with pytest.raises(RuntimeError, match=fragment):
        call()


def test_adaptive_output_size_errors():
    with pytest.raises(ValueError, match="Input dimension should be at least 3"):
        F.adaptive_avg_pool2d(ts.randn(8, 8), (None, 2))
    with pytest.raises(RuntimeError, match="output_size must be 2"):
        F.adaptive_avg_pool2d(ts.randn(1, 1, 8, 8), (1, 2, 3))
