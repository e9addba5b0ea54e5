"""Math functions of issue 18: the float classifiers, nan_to_num, log2/tan/asin/acos/atan, copysign,
fmod, isclose/allclose/equal/_assert, square, addcmul/addcdiv, trace, scalar_tensor, the constants,
clamp_min/max, aliases, dist, index_add, trapezoid, cdist, normal. Values by hand (or numpy), then
against PyTorch when it is installed; gradients by gradcheck and against PyTorch."""
import math
import warnings

import numpy as np
import pytest

import tscript as ts
from tests.conftest import assert_close, to_numpy
from tscript.autograd import gradcheck, gradgradcheck

SPECIAL = np.array([0.5, np.nan, np.inf, -np.inf, -2.0, 0.0, -0.0, 3e38], np.float32)
RNG = np.random.default_rng(18)
X = RNG.standard_normal((3, 4)).astype(np.float32)
UNIT = (np.tanh(X) * 0.9).astype(np.float32)   # inside (-1, 1) for asin/acos
DTYPES = ["float32", "float64", "int64", "int32", "bool"]


def _data(dtype: str) -> np.ndarray:
    if dtype == "bool":
        return X > 0
    if dtype.startswith("int"):
        return (X * 3).astype(dtype)
    return SPECIAL.astype(dtype)


def _lib_tensor(lib, arr):
    return lib.tensor(arr)


# -- classifiers and nan_to_num ----------------------------------------------------------------------

CLASSIFIERS = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "isposinf": np.isposinf,
               "isneginf": np.isneginf}


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_classifiers_by_hand(name, dtype):
    arr = _data(dtype)
    out = getattr(ts, name)(ts.tensor(arr))
    assert out.dtype == ts.bool
    expected = CLASSIFIERS[name](arr) if arr.dtype.kind == "f" else np.full(arr.shape, name == "isfinite")
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(getattr(ts.tensor(arr), name)().numpy(), expected)


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_classifiers_match_torch(name, dtype, oracle):
    arr = _data(dtype)
    assert_close(getattr(ts, name)(ts.tensor(arr)), getattr(oracle, name)(oracle.tensor(arr)))


def test_nan_to_num_by_hand():
    out = ts.nan_to_num(ts.tensor([1.0, math.nan, math.inf, -math.inf]))
    f32 = np.finfo(np.float32)
    np.testing.assert_array_equal(out.numpy(), np.array([1.0, 0.0, f32.max, f32.min], np.float32))
    out = ts.tensor([math.nan, math.inf, -math.inf], dtype=ts.float64).nan_to_num(nan=1.5, posinf=2.0, neginf=-3.0)
    np.testing.assert_array_equal(out.numpy(), [1.5, 2.0, -3.0])
    ints = ts.tensor([1, 2])
    assert ints.nan_to_num(nan=0.5).tolist() == [1, 2]
    x = ts.tensor([math.nan, 2.0])
    assert x.nan_to_num_(nan=7.0) is x and x.tolist() == [7.0, 2.0] and x._version == 1


@pytest.mark.parametrize("kwargs", [{}, {"nan": 1.5}, {"nan": 0.0, "posinf": 1e3, "neginf": -1e3}, {"posinf": 1e300}])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_nan_to_num_matches_torch(kwargs, dtype, oracle):
    arr = _data(dtype)
    assert_close(ts.nan_to_num(ts.tensor(arr), **kwargs), oracle.nan_to_num(oracle.tensor(arr), **kwargs))


def test_nan_to_num_gradient_is_zero_where_replaced():
    x = ts.tensor([1.0, math.nan, math.inf, -2.0], requires_grad=True)
    ts.nan_to_num(x).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 1.0]


# -- unary functions -----------------------------------------------------------------------------------

UNARY = {"log2": (np.abs(X) + 0.1, np.log2), "tan": (UNIT, np.tan), "asin": (UNIT, np.arcsin),
         "acos": (UNIT, np.arccos), "atan": (X, np.arctan)}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_by_hand(name):
    data, ref = UNARY[name]
    assert_close(getattr(ts, name)(ts.tensor(data)), ref(data).astype(np.float32))
    x = ts.tensor(data.copy())
    assert getattr(x, name + "_")() is x
    assert_close(x, ref(data).astype(np.float32))
    assert getattr(ts, name)(ts.tensor([1, 0])).dtype == ts.float32  # integers give the default float


def test_aliases_of_unary_functions():
    x = ts.tensor(UNIT)
    for alias, name in (("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("absolute", "abs"),
                        ("negative", "neg"), ("fix", "trunc")):
        assert_close(getattr(ts, alias)(x), getattr(ts, name)(x))
        assert_close(getattr(x, alias)(), getattr(x, name)())


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_unary_matches_torch(name, dtype, oracle):
    data = (UNARY[name][0] * (3 if dtype == "int64" else 1)).astype(dtype)
    assert_close(getattr(ts, name)(ts.tensor(data)), getattr(oracle, name)(oracle.tensor(data)))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients(name, oracle):
    data = UNARY[name][0].astype(np.float64)
    x = ts.tensor(data, requires_grad=True)
    assert gradcheck(getattr(ts, name), (x,)) and gradgradcheck(getattr(ts, name), (x,))
    getattr(ts, name)(x).sum().backward()
    t = oracle.tensor(data, requires_grad=True)
    getattr(oracle, name)(t).sum().backward()
    assert_close(x.grad, t.grad)


# -- copysign and fmod ----------------------------------------------------------------------------------

def test_copysign_and_fmod_by_hand():
    assert ts.copysign(ts.tensor([1, 2]), -1).tolist() == [-1.0, -2.0]
    assert ts.copysign(ts.tensor([1.0, -2.0]), ts.tensor([-0.0, 0.0])).tolist() == [-1.0, 2.0]
    assert ts.fmod(ts.tensor([-3, 3]), 2).tolist() == [-1, 1]
    assert ts.remainder(ts.tensor([-3, 3]), 2).tolist() == [1, 1]  # fmod keeps the dividend's sign
    assert_close(ts.fmod(ts.tensor([5.5, -5.5]), ts.tensor([2.0, 2.0])), np.array([1.5, -1.5], np.float32))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ts.fmod(ts.tensor([3]), 0)
    with pytest.raises(NotImplementedError, match="fmod_cpu"):
        ts.fmod(ts.tensor([True]), ts.tensor([True]))


@pytest.mark.parametrize("pair", [("float32", "float32"), ("int64", "float32"), ("int32", "int64"), ("float64", "int64")])
@pytest.mark.parametrize("name", ["copysign", "fmod"])
def test_copysign_fmod_match_torch(name, pair, oracle):
    a = (X * 5).astype(pair[0])
    b = np.array([[1.5, -2.0, 3.3, -3.1]]).astype(pair[1])  # nonzero as integers too
    for x, y in ((a, b), (a, 2), (a, -2.5)):
        tx, ox = ts.tensor(x), oracle.tensor(x)
        ty, oy = (ts.tensor(y), oracle.tensor(y)) if isinstance(y, np.ndarray) else (y, y)
        assert_close(getattr(ts, name)(tx, ty), getattr(oracle, name)(ox, oy))


def test_copysign_fmod_gradients(oracle):
    a, b = X.astype(np.float64) * 3, np.array([1.3, -0.7, 2.1, -1.9])
    for name in ("copysign", "fmod"):
        x, y = ts.tensor(a, requires_grad=True), ts.tensor(b, requires_grad=True)
        assert gradcheck(getattr(ts, name), (x, y))
        getattr(ts, name)(x, y).sum().backward()
        ox, oy = oracle.tensor(a, requires_grad=True), oracle.tensor(b, requires_grad=True)
        getattr(oracle, name)(ox, oy).sum().backward()
        assert_close(x.grad, ox.grad)
        assert_close(y.grad, oy.grad)


# -- comparisons ----------------------------------------------------------------------------------------

def test_isclose_allclose_equal_by_hand():
    a = ts.tensor([1.0, 2.0, math.nan, math.inf])
    b = ts.tensor([1.0 + 1e-9, 2.1, math.nan, math.inf])
    assert ts.isclose(a, b).tolist() == [True, False, False, True]
    assert ts.isclose(a, b, equal_nan=True).tolist() == [True, False, True, True]
    assert a.isclose(b, rtol=0.1).tolist() == [True, True, False, True]
    assert ts.allclose(ts.ones(2, 1), ts.ones(3)) is True  # broadcasts
    assert ts.allclose(a, a) is False and ts.allclose(a, a, equal_nan=True) is True
    assert ts.isclose(ts.tensor([1, 2]), ts.tensor([1, 3]), rtol=0.5).tolist() == [True, True]
    assert ts.equal(ts.ones(2), ts.ones(2)) is True and ts.ones(2).equal(ts.ones(2))
    assert ts.equal(ts.ones(2), ts.ones(1, 2)) is False
    assert ts.equal(ts.tensor([math.nan]), ts.tensor([math.nan])) is False
    assert ts.equal(ts.ones(2), ts.ones(2, dtype=ts.float64)) is True  # values compare after promotion


def test_comparison_errors():
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        ts.allclose(ts.ones(2), ts.ones(2, dtype=ts.float64))
    with pytest.raises(RuntimeError, match="must match the size"):
        ts.allclose(ts.ones(2), ts.ones(3))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        ts.isclose(ts.ones(2), ts.ones(2), rtol=-1)
    with pytest.raises(TypeError, match="must be Tensor"):
        ts.allclose(ts.ones(2), 1.0)


@pytest.mark.parametrize("kwargs", [{}, {"rtol": 0.1}, {"atol": 0.5}, {"rtol": 0, "atol": 0}, {"equal_nan": True}])
@pytest.mark.parametrize("dtype", DTYPES)
def test_isclose_matches_torch(kwargs, dtype, oracle):
    a = _data(dtype)
    b = a.copy() if dtype == "bool" else (a + np.asarray(0.3).astype(a.dtype)).astype(a.dtype)
    b[..., :1] = a[..., :1]
    for x, y in ((a, b), (a, a)):
        assert_close(ts.isclose(ts.tensor(x), ts.tensor(y), **kwargs), oracle.isclose(oracle.tensor(x), oracle.tensor(y), **kwargs))
        assert ts.allclose(ts.tensor(x), ts.tensor(y), **kwargs) == oracle.allclose(oracle.tensor(x), oracle.tensor(y), **kwargs)
        assert ts.equal(ts.tensor(x), ts.tensor(y)) == oracle.equal(oracle.tensor(x), oracle.tensor(y))


def test_assert():
    ts._assert(True, "never")
    ts._assert(ts.tensor(True), "never")
    with pytest.raises(AssertionError, match="the message"):
        ts._assert(ts.tensor(False), "the message")


# -- square, addcmul, addcdiv ------------------------------------------------------------------------

def test_square_by_hand():
    assert ts.square(ts.tensor([-3.0, 2.0])).tolist() == [9.0, 4.0]
    assert ts.square(ts.tensor([True])).dtype == ts.int64  # as pow(bool, 2)
    assert ts.tensor([2], dtype=ts.int32).square().dtype == ts.int32
    x = ts.tensor([3.0])
    assert x.square_() is x and x.tolist() == [9.0]
    x = ts.tensor([1.5, -2.0], requires_grad=True)
    ts.square(x).sum().backward()
    assert x.grad.tolist() == [3.0, -4.0]


def test_addcmul_addcdiv_by_hand():
    a, b, c = ts.tensor([1.0, 2.0]), ts.tensor([3.0, 4.0]), ts.tensor([2.0, 8.0])
    assert ts.addcmul(a, b, c, value=0.5).tolist() == [4.0, 18.0]
    assert ts.addcdiv(a, b, c, value=2).tolist() == [4.0, 3.0]
    assert a.addcmul(b, c).tolist() == [7.0, 34.0]
    assert ts.addcmul(ts.ones(2), ts.ones(3, 1), ts.ones(2)).shape == (3, 2)  # broadcasts
    x = ts.tensor([1.0, 2.0])
    assert x.addcdiv_(b, c) is x and x.tolist() == [2.5, 2.5] and x._version == 1
    x.addcmul_(b, c, value=-1)
    assert x.tolist() == [-3.5, -29.5]
    longs = ts.tensor([1, 1])
    assert ts.addcmul(longs, longs, longs, value=0.5).tolist() == [1, 1]  # value cast to the integer result
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        ts.addcdiv(longs, longs, longs)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ts.ones(2).addcmul_(ts.ones(3, 1), ts.ones(2))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        ts.ones(2, dtype=ts.int64).addcmul_(ts.ones(2), ts.ones(2))


@pytest.mark.parametrize("value", [1, 0.5, -2])
@pytest.mark.parametrize("dtypes", [("float32",) * 3, ("float64", "float32", "float32"), ("int64", "float32", "int64"),
                                    ("int64",) * 3])
@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_addc_match_torch(name, dtypes, value, oracle):
    if name == "addcdiv" and dtypes[1] == dtypes[2] == "int64":
        pytest.skip("integer addcdiv raises (checked above)")
    arrays = [(X[:1] * (k + 2)).astype(d) + 5 for k, d in enumerate(dtypes)]
    arrays[0] = arrays[0][0]  # (4,) against (1, 4): broadcasting
    got = getattr(ts, name)(*[ts.tensor(a) for a in arrays], value=value)
    assert_close(got, getattr(oracle, name)(*[oracle.tensor(a) for a in arrays], value=value))


def test_addc_gradients(oracle):
    arrays = [X.astype(np.float64), X.T[:1].astype(np.float64).reshape(1, 3)[:, :1] + 2,
              np.abs(X).astype(np.float64) + 0.5]
    for name in ("addcmul", "addcdiv"):
        ins = [ts.tensor(a, requires_grad=True) for a in arrays]
        fn = lambda a, b, c, name=name: getattr(ts, name)(a, b, c, value=0.7)  # noqa: E731
        assert gradcheck(fn, tuple(ins)) and gradgradcheck(fn, tuple(ins))
        fn(*ins).sum().backward()
        outs = [oracle.tensor(a, requires_grad=True) for a in arrays]
        getattr(oracle, name)(*outs, value=0.7).sum().backward()
        for i, o in zip(ins, outs):
            assert_close(i.grad, o.grad)


# -- trace, scalar_tensor, constants, clamp_min/max, where, dist, index_add ---------------------------

@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (1, 5), (0, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_trace(shape, dtype, oracle):
    arr = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    got = ts.trace(ts.tensor(arr))
    assert got.tolist() == np.trace(arr).item()
    assert_close(got, oracle.trace(oracle.tensor(arr)))
    assert_close(ts.tensor(arr).trace(), got)


def test_trace_errors_and_gradient():
    with pytest.raises(RuntimeError, match="expected a matrix, but got tensor with dim 1"):
        ts.trace(ts.ones(3))
    with pytest.raises(NotImplementedError, match="\"trace\" not implemented for 'Bool'"):
        ts.trace(ts.ones(2, 2, dtype=ts.bool))
    x = ts.tensor(X.astype(np.float64), requires_grad=True)
    ts.trace(x).backward()
    assert_close(x.grad, np.eye(3, 4))
    assert gradcheck(ts.trace, (x,))


def test_scalar_tensor_and_constants():
    t = ts.scalar_tensor(3)
    assert t.shape == () and t.dtype == ts.float32 and t.item() == 3.0
    assert ts.scalar_tensor(3, dtype=ts.int64).dtype == ts.int64
    assert ts.scalar_tensor(True).item() == 1.0
    assert ts.scalar_tensor(2.0, requires_grad=True).requires_grad
    assert (ts.pi, ts.e, ts.inf) == (math.pi, math.e, math.inf) and math.isnan(ts.nan)


def test_clamp_min_max_where_dist_index_add():
    x = ts.tensor([-2.0, 0.5, 3.0])
    assert ts.clamp_min(x, 0).tolist() == [0.0, 0.5, 3.0] and x.clamp_max(1).tolist() == [-2.0, 0.5, 1.0]
    assert x.clip(-1, 1).tolist() == [-1.0, 0.5, 1.0] and ts.clip(x, max=0).tolist() == [-2.0, 0.0, 0.0]
    y = x.clone()
    assert y.clamp_min_(0) is y and y.tolist() == [0.0, 0.5, 3.0]
    assert x.where(x > 0, ts.tensor(9.0)).tolist() == [9.0, 0.5, 3.0]
    assert ts.dist(ts.tensor([0.0, 0.0]), ts.tensor([3.0, 4.0])).item() == 5.0
    assert ts.tensor([1.0]).dist(ts.tensor([4.0]), 1).item() == 3.0
    base = ts.zeros(3, 2)
    out = ts.index_add(base, 0, ts.tensor([0, 2, 0]), ts.ones(3, 2), alpha=2)
    assert out.tolist() == [[4.0, 4.0], [0.0, 0.0], [2.0, 2.0]] and base.sum().item() == 0
    assert base.index_add_(1, ts.tensor([1]), ts.ones(3, 1)) is base and base[:, 1].tolist() == [1.0, 1.0, 1.0]


def test_aliases_of_binary_ops():
    a, b = ts.tensor([1.0, 4.0]), ts.tensor([2.0, 2.0])
    pairs = {"multiply": "mul", "subtract": "sub", "divide": "div", "true_divide": "div", "less": "lt",
             "less_equal": "le", "greater": "gt", "greater_equal": "ge", "not_equal": "ne"}
    for alias, name in pairs.items():
        assert_close(getattr(ts, alias)(a, b), getattr(ts, name)(a, b))
        assert_close(getattr(a, alias)(b), getattr(a, name)(b))
    assert_close(ts.subtract(a, b, alpha=2), a - 2 * b)
    assert_close(ts.divide(a, b, rounding_mode="floor"), ts.tensor([0.0, 2.0]))
    c = a.clone()
    assert c.multiply_(b) is c and c.tolist() == [2.0, 8.0]


def test_index_add_and_dist_match_torch(oracle):
    index = np.array([0, 2, 0, 1])
    src = X.T.copy()
    got = ts.zeros(3, 3).index_add(0, ts.tensor(index), ts.tensor(src), alpha=-1.5)
    assert_close(got, oracle.zeros(3, 3).index_add(0, oracle.tensor(index), oracle.tensor(src), alpha=-1.5))
    for p in (1, 2, 3.5, math.inf, 0):
        assert_close(ts.dist(ts.tensor(X), ts.tensor(X[:1])), oracle.dist(oracle.tensor(X), oracle.tensor(X[:1])))
        assert_close(ts.tensor(X).dist(ts.tensor(X.T[:4, :1].T), p), oracle.tensor(X).dist(oracle.tensor(X.T[:4, :1].T), p))


# -- trapezoid, cdist, normal ----------------------------------------------------------------------------

def test_trapezoid_by_hand():
    y = ts.tensor([1.0, 2.0, 3.0])
    assert ts.trapezoid(y).item() == 4.0 and ts.trapezoid(y, dx=2).item() == 8.0
    assert ts.trapezoid(y, ts.tensor([0.0, 1.0, 3.0])).item() == 6.5
    assert ts.trapezoid(ts.tensor([1, 2, 3])).item() == 4.0


@pytest.mark.parametrize("kwargs", [{}, {"dim": 0}, {"dx": 0.5, "dim": 1}])
def test_trapezoid_matches_torch(kwargs, oracle):
    assert_close(ts.trapezoid(ts.tensor(X), **kwargs), oracle.trapezoid(oracle.tensor(X), **kwargs))
    x = np.cumsum(np.abs(X[0])).astype(np.float32)
    assert_close(ts.trapezoid(ts.tensor(X), ts.tensor(x)), oracle.trapezoid(oracle.tensor(X), oracle.tensor(x)))


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, math.inf, 0.0])
def test_cdist_matches_torch(p, oracle):
    a, b = X, RNG.standard_normal((5, 4)).astype(np.float32)
    assert_close(ts.cdist(ts.tensor(a), ts.tensor(b), p=p), oracle.cdist(oracle.tensor(a), oracle.tensor(b), p=p),
                 rtol=1e-4, atol=1e-5)
    batched = np.stack([a, a * 2])
    assert ts.cdist(ts.tensor(batched), ts.tensor(b)).shape == (2, 3, 5)
    with pytest.raises(RuntimeError, match="same number of columns"):
        ts.cdist(ts.ones(2, 3), ts.ones(2, 4))


def test_cdist_gradient():
    a = ts.tensor(X.astype(np.float64), requires_grad=True)
    b = ts.tensor(RNG.standard_normal((2, 4)), requires_grad=True)
    assert gradcheck(ts.cdist, (a, b))


def test_normal_forms():
    ts.manual_seed(0)
    assert ts.normal(0.0, 1.0, size=(2, 3)).shape == (2, 3)
    assert ts.normal(ts.zeros(4), 1.0).shape == (4,) and ts.normal(0.0, ts.ones(3)).shape == (3,)
    assert ts.normal(ts.zeros(2, 1), ts.ones(3)).shape == (2, 3)
    big = ts.normal(3.0, 2.0, size=(20000,))
    assert abs(big.mean().item() - 3.0) < 0.05 and abs(big.std().item() - 2.0) < 0.05
    g1, g2 = ts.Generator().manual_seed(5), ts.Generator().manual_seed(5)
    assert ts.equal(ts.normal(ts.zeros(5), 1.0, generator=g1), ts.normal(ts.zeros(5), 1.0, generator=g2))
    with pytest.raises(TypeError, match="give a size"):
        ts.normal(2.0, 3.0)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        ts.normal(ts.zeros(2), ts.tensor([1.0, -1.0]))


def test_no_warnings_from_math_functions():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ts.nan_to_num(ts.tensor(SPECIAL))
        ts.fmod(ts.tensor([1.0, math.inf]), ts.tensor([0.0, 2.0]))
        to_numpy(ts.isclose(ts.tensor(SPECIAL), ts.tensor(SPECIAL)))
