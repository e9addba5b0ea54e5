"""Eager matmul / bmm / mm / linear and erf on the kernel library (native/eager_math.py): results match
numpy's float64 products for every operand layout the library reads in place (rows or columns
contiguous: transposes, head splits, slices) or copies (any other strides), broadcast batch dims, and
the sizes on either side of the small-product cut-over; erf matches the float64 reference."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tscript as ts
from tscript_runtime.native import eager_math
from tscript_runtime.ops import accelerated

pytestmark = pytest.mark.skipif(eager_math.functions() is None or "tscript_sgemm_f32" not in eager_math.functions().fn,
                                reason="the packed GEMM is built only on AVX-512 hosts")


def _layout(rng, shape, how):
    """A float32 array of `shape` laid out as `how`: contiguous, transposed (last two dims swapped in
    memory), sliced (every other row and column of a bigger one), or scrambled (no unit stride)."""
    if how == "contiguous":
        return rng.standard_normal(shape).astype(np.float32)
    if how == "transposed":
        return np.swapaxes(rng.standard_normal(shape[:-2] + shape[-2:][::-1]).astype(np.float32), -1, -2)
    if how == "sliced":
        big = rng.standard_normal(shape[:-2] + (shape[-2] + 3, shape[-1] + 5)).astype(np.float32)
        return big[..., 2:shape[-2] + 2, 1:shape[-1] + 1]
    big = rng.standard_normal(shape[:-2] + (2 * shape[-2], 3 * shape[-1])).astype(np.float32)
    return big[..., ::2, ::3]


def _reference(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def _check(got, a, b):
    want = _reference(a, b)
    assert got.shape == want.shape and got.dtype == np.float32
    scale = math.sqrt(a.shape[-1]) * max(np.abs(a).max(initial=0), 1) * max(np.abs(b).max(initial=0), 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)


LAYOUTS = ["contiguous", "transposed", "sliced", "scrambled"]


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 70), n=st.integers(1, 90), k=st.integers(1, 80), batch=st.sampled_from([(), (3,), (2, 3)]),
       la=st.sampled_from(LAYOUTS), lb=st.sampled_from(LAYOUTS), seed=st.integers(0, 2**31))
def test_matmul_any_layout(m, n, k, batch, la, lb, seed):
    rng = np.random.default_rng(seed)
    a, b = _layout(rng, batch + (m, k), la), _layout(rng, batch + (k, n), lb)
    got = eager_math.matmul(a, b)
    if m * n * k < eager_math.MIN_WORK:
        assert got is None
    else:
        _check(got, a, b)
    _check(ts.matmul(ts.from_numpy(a), ts.from_numpy(b)).numpy(), a, b)


@pytest.mark.parametrize("a_shape,b_shape", [((8, 4, 128, 64), (8, 4, 64, 128)), ((4, 1, 40, 64), (1, 3, 64, 50)),
                                             ((2, 50, 256), (256, 300)), ((300, 256), (256, 300)), ((7, 1, 256), (256, 200))])
def test_big_products(a_shape, b_shape):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(a_shape).astype(np.float32), rng.standard_normal(b_shape).astype(np.float32)
    _check(eager_math.matmul(a, b), a, b)
    _check(eager_math.matmul(a, np.swapaxes(np.ascontiguousarray(np.swapaxes(b, -1, -2)), -1, -2)), a, b)


def test_attention_shapes_through_the_ops():
    """q @ k^T and att @ v of head-split views, bmm, mm and linear on 3-d input, against numpy."""
    rng = np.random.default_rng(1)
    x = ts.from_numpy(rng.standard_normal((2, 96, 3 * 64)).astype(np.float32))
    q, k, v = x.split(64, dim=2)
    q, k, v = (t.view(2, 96, 2, 32).transpose(1, 2) for t in (q, k, v))
    att = q @ k.transpose(-2, -1)
    _check(att.numpy(), q.numpy(), np.swapaxes(k.numpy(), -1, -2))
    y = att.softmax(-1) @ v
    _check(y.numpy(), att.softmax(-1).numpy(), v.numpy())
    w = ts.from_numpy(rng.standard_normal((80, 192)).astype(np.float32))
    bias = ts.from_numpy(rng.standard_normal(80).astype(np.float32))
    got = ts.nn.functional.linear(x, w, bias).numpy()
    np.testing.assert_allclose(got, _reference(x.numpy(), w.numpy().T) + bias.numpy(), rtol=1e-5, atol=1e-4)
    _check(ts.bmm(att.reshape(4, 96, 96), v.reshape(4, 96, 32)).numpy(), att.reshape(4, 96, 96).numpy(), v.reshape(4, 96, 32).numpy())
    _check(ts.mm(x[0], w.t()).numpy(), x[0].numpy(), w.numpy().T)


def test_switched_off_gives_numpy():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((64, 64)).astype(np.float32), rng.standard_normal((64, 64)).astype(np.float32)
    previous = accelerated.set_enabled(False)
    try:
        np.testing.assert_array_equal(ts.matmul(ts.from_numpy(a), ts.from_numpy(b)).numpy(), a @ b)
    finally:
        accelerated.set_enabled(previous)


def test_other_dtypes_and_vectors_stay_on_numpy():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 64))
    assert eager_math.matmul(a, a) is None  # float64
    assert eager_math.matmul(a.astype(np.float32), a[0].astype(np.float32)) is None  # a vector
    assert eager_math.matmul(np.ones((64, 0, 64), np.float32), np.ones((64, 64), np.float32)) is None
    got = eager_math.matmul(np.ones((0, 64, 64), np.float32), np.ones((64, 64), np.float32))
    assert got is None or got.shape == (0, 64, 64)


def test_erf():
    x = np.concatenate([np.linspace(-6, 6, 5000), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 0.4999, 0.5]]).astype(np.float32)
    got = eager_math.erf(x)
    want = np.array([math.erf(float(v)) if not np.isnan(v) else np.nan for v in x])
    np.testing.assert_allclose(got, want, rtol=3e-7, atol=3e-7)
    np.testing.assert_allclose(ts.erf(ts.from_numpy(x)).numpy(), want, rtol=3e-7, atol=3e-7)
    finite = x[np.isfinite(x)]
    gelu = [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in finite.astype(np.float64)]
    np.testing.assert_allclose(ts.nn.functional.gelu(ts.from_numpy(finite)).numpy(), gelu, rtol=1e-6, atol=1e-6)
    assert eager_math.erf(x[:10]) is None and eager_math.erf(x.astype(np.float64)) is None
