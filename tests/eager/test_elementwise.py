"""Elementwise ops: values against numpy formulas and PyTorch, broadcasting, in-place forms, errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tscript as ts
from tests.conftest import assert_close

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
POS = (np.abs(X) + 0.1).astype(np.float32)

UNARY_EXPECTED = {
    "exp": (X, np.exp), "log": (POS, np.log), "log1p": (POS, np.log1p), "expm1": (X, np.expm1),
    "sqrt": (POS, np.sqrt), "rsqrt": (POS, lambda v: 1 / np.sqrt(v)), "sin": (X, np.sin), "cos": (X, np.cos),
    "tanh": (X, np.tanh), "sigmoid": (X, lambda v: 1 / (1 + np.exp(-v))), "reciprocal": (POS, lambda v: 1 / v),
    "neg": (X, np.negative), "abs": (X, np.abs), "sign": (X, np.sign), "relu": (X, lambda v: np.maximum(v, 0)),
    "floor": (X * 3, np.floor), "ceil": (X * 3, np.ceil), "round": (X * 3, np.round), "trunc": (X * 3, np.trunc),
    "erf": (X, np.vectorize(math.erf)),
}


@pytest.mark.parametrize("name", sorted(UNARY_EXPECTED))
def test_unary_values(name):
    data, ref = UNARY_EXPECTED[name]
    x = ts.tensor(data)
    assert_close(getattr(ts, name)(x), ref(data).astype(np.float32))
    assert_close(getattr(x, name)(), ref(data).astype(np.float32))


@pytest.mark.parametrize("name", sorted(UNARY_EXPECTED))
def test_unary_matches_torch(name, oracle):
    data, _ = UNARY_EXPECTED[name]
    for arr in (data, data.astype(np.float64)):
        assert_close(getattr(ts, name)(ts.tensor(arr)), getattr(oracle, name)(oracle.tensor(arr)))


@pytest.mark.parametrize("name", ["exp", "sqrt", "sigmoid", "tanh", "erf"])
def test_float_ops_send_ints_to_default_float(name):
    out = getattr(ts, name)(ts.tensor([0, 1, 2]))
    assert out.dtype == ts.float32
    ref = UNARY_EXPECTED[name][1](np.array([0.0, 1.0, 2.0]))
    assert_close(out, ref.astype(np.float32))


def test_integer_unary_ops_keep_dtype():
    x = ts.tensor([-3, 0, 5])
    assert ts.abs(x).tolist() == [3, 0, 5] and ts.abs(x).dtype == ts.int64
    assert ts.neg(x).tolist() == [3, 0, -5]
    assert ts.relu(x).tolist() == [0, 0, 5]
    assert ts.floor(x).tolist() == [-3, 0, 5]
    assert ts.sign(x).tolist() == [-1, 0, 1]


def test_erf_float32_accuracy_over_range():
    xs = np.linspace(-6, 6, 20001).astype(np.float32)
    ref = np.vectorize(math.erf)(xs.astype(np.float64))
    got = ts.erf(ts.tensor(xs)).numpy().astype(np.float64)
    assert np.max(np.abs(got - ref)) < 3e-7


BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "maximum": np.maximum, "minimum": np.minimum, "pow": np.power, "remainder": np.remainder,
    "floor_divide": np.floor_divide,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasting_values(name):
    a = RNG.uniform(0.5, 2, (2, 1, 4)).astype(np.float32)
    b = RNG.uniform(0.5, 2, (3, 1)).astype(np.float32)
    assert_close(getattr(ts, name)(ts.tensor(a), ts.tensor(b)), BINARY[name](a, b), rtol=2e-6)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("da, db", [("float32", "float64"), ("int64", "float32"), ("int32", "int64"),
                                    ("int64", "int64")])
def test_binary_matches_torch_across_dtypes(name, da, db, oracle):
    a = RNG.integers(1, 5, (2, 3)).astype(da)
    b = RNG.integers(1, 4, (3,)).astype(db)
    ours = getattr(ts, name)(ts.tensor(a), ts.tensor(b))
    theirs = getattr(oracle, name)(oracle.tensor(a), oracle.tensor(b))
    assert_close(ours, theirs)


@pytest.mark.parametrize("scalar", [2, 2.5, -3])
def test_operators_with_python_scalars(scalar):
    x = ts.tensor([1.0, 2.0, 4.0])
    v = x.numpy()
    assert_close(x + scalar, (v + scalar).astype(np.float32))
    assert_close(scalar - x, (scalar - v).astype(np.float32))
    assert_close(scalar / x, (scalar / v).astype(np.float32))
    assert_close(x ** 2, v ** 2)
    assert_close(2 ** x, (2 ** v).astype(np.float32))
    assert_close(x // 3, np.floor_divide(v, 3))
    assert_close(-x % 3, np.remainder(-v, 3))


def test_division_rounding_modes_match_python_semantics():
    a, b = ts.tensor([7, -7, 7, -7]), ts.tensor([2, 2, -2, -2])
    assert ts.div(a, b, rounding_mode="trunc").tolist() == [3, -3, -3, 3]
    assert ts.div(a, b, rounding_mode="floor").tolist() == [3, -4, -4, 3]
    assert (a // b).tolist() == [3, -4, -4, 3]
    assert (a % b).tolist() == [1, 1, -1, -1]
    f = ts.div(ts.tensor([7.5, -7.5]), 2, rounding_mode="trunc")
    assert f.tolist() == [3.0, -3.0] and f.dtype == ts.float32
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ts.tensor([1]) // 0
    with pytest.raises(RuntimeError, match="rounding_mode"):
        ts.div(a, b, rounding_mode="round")
    assert ts.div(ts.tensor([1.0]), 0).tolist() == [math.inf]


def test_add_sub_alpha():
    a, b = ts.tensor([1.0, 2.0]), ts.tensor([10.0, 20.0])
    assert ts.add(a, b, alpha=2).tolist() == [21.0, 42.0]
    assert ts.sub(a, b, alpha=0.5).tolist() == [-4.0, -8.0]
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        ts.add(ts.tensor([1]), ts.tensor([2]), alpha=0.5)


def test_comparisons_and_logic_return_bool():
    a, b = ts.tensor([1, 2, 3]), ts.tensor([3.0, 2.0, 1.0])
    assert (a < b).tolist() == [True, False, False]
    assert (a == b).dtype == ts.bool
    assert (a >= 2).tolist() == [False, True, True]
    m = a > 1
    assert (m & (b > 1)).tolist() == [False, True, False]
    assert (m | (b > 2)).tolist() == [True, True, True]
    assert (~m).tolist() == [True, False, False]
    assert (m ^ m).tolist() == [False, False, False]
    assert ts.logical_not(a).tolist() == [False, False, False]
    with pytest.raises(RuntimeError, match="bitwise"):
        b & b


def test_where_clamp_lerp():
    c = ts.tensor([True, False, True])
    assert ts.where(c, ts.tensor([1, 2, 3]), 0.5).tolist() == [1.0, 0.5, 3.0]
    x = ts.tensor([-2.0, 0.5, 3.0])
    assert ts.clamp(x, min=-1, max=1).tolist() == [-1.0, 0.5, 1.0]
    assert x.clamp(max=0).tolist() == [-2.0, 0.0, 0.0]
    assert ts.clamp(x, ts.tensor([0.0, 1.0, 2.0])).tolist() == [0.0, 1.0, 3.0]
    assert math.isnan(ts.clamp(ts.tensor([float("nan")]), 0, 1).item())
    assert_close(ts.lerp(ts.tensor([0.0, 10.0]), ts.tensor([10.0, 20.0]), 0.25), np.array([2.5, 12.5], np.float32))
    assert_close(ts.lerp(ts.zeros(2), ts.ones(2), ts.tensor([0.0, 0.9])), np.array([0.0, 0.9], np.float32))
    with pytest.raises(RuntimeError, match="condition to be a boolean"):
        ts.where(ts.ones(2), ts.ones(2), ts.zeros(2))
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        ts.clamp(x)


def test_inplace_ops_write_and_bump_version():
    x = ts.tensor([1.0, 2.0, 3.0])
    v0 = x._version
    y = x.add_(1)
    assert y is x and x.tolist() == [2.0, 3.0, 4.0] and x._version == v0 + 1
    x.mul_(2).sub_(1)
    assert x.tolist() == [3.0, 5.0, 7.0] and x._version == v0 + 3
    x += ts.ones(3)
    x /= 2
    assert x.tolist() == [2.0, 3.0, 4.0]
    x.clamp_(max=3).neg_()
    assert x.tolist() == [-2.0, -3.0, -3.0]
    x.zero_()
    assert x.tolist() == [0.0, 0.0, 0.0]
    x.fill_(7)
    assert x.tolist() == [7.0, 7.0, 7.0]


def test_inplace_errors_like_pytorch():
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ts.tensor([1, 2]).add_(1.5)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        ts.ones(3).add_(ts.ones(2, 3))


def test_bool_arithmetic_errors():
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors"):
        ts.tensor([True]) - ts.tensor([False])
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        -ts.tensor([True])
    with pytest.raises(RuntimeError, match="negative integer powers"):
        ts.tensor([2]) ** -1


def test_broadcast_error_message():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(4\) "
                                           r"at non-singleton dimension 1"):
        ts.ones(2, 3) + ts.ones(4)


def test_wrong_argument_types():
    with pytest.raises(TypeError, match=r"add\(\): argument 'other' \(position 2\) must be Tensor or number, not str"):
        ts.add(ts.ones(2), "x")
    with pytest.raises(TypeError, match="unexpected keyword argument 'beta'"):
        ts.add(ts.ones(2), 1, beta=2)
    with pytest.raises(TypeError, match="missing required argument 'other'"):
        ts.mul(ts.ones(2))


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)


@settings(max_examples=80, deadline=None)
@given(data=st.data(), shape=shapes)
def test_broadcasting_property(data, shape):
    """Any pair of numpy-broadcastable shapes gives numpy's result shape and values."""
    other = data.draw(hnp.broadcastable_shapes(shape, min_dims=0, max_dims=3, max_side=3))
    a = data.draw(hnp.arrays(np.float32, shape, elements=st.floats(-10, 10, width=32)))
    b = data.draw(hnp.arrays(np.float32, other, elements=st.floats(-10, 10, width=32)))
    out = ts.tensor(a) * ts.tensor(b) + ts.tensor(b)
    assert tuple(out.shape) == np.broadcast_shapes(shape, other)
    assert_close(out, a * b + b)
