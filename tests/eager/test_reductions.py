"""Reductions, cumsum and softmax: hand-computed values, numpy properties, the PyTorch oracle (values,
dtypes and named-tuple fields), the shape/dtype rules on metas, and every error case."""
import math
import types

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript
from tests.conftest import assert_close
from tscript_runtime import dtypes as dt
from tscript_runtime.ops import OPS, TensorMeta

inf, nan = math.inf, math.nan


def T(data, dtype=None):
    return tscript.tensor(data, dtype=dtype)


def assert_same(ours, theirs, rtol=1e-5, atol=1e-6):
    """Equal results: tensors by value and dtype, tuples element-wise, named tuples by type name
    and by their `values`/`indices` fields."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        if hasattr(theirs, "n_fields"):           # torch.return_types.<name>
            assert type(ours).__name__ == type(theirs).__name__
            assert_same(ours.values, theirs.values, rtol, atol)
            assert_same(ours.indices, theirs.indices, rtol, atol)
        for a, b in zip(ours, theirs):
            assert_same(a, b, rtol, atol)
    else:
        assert isinstance(ours, tscript.Tensor)
        assert_close(ours, theirs, rtol=rtol, atol=atol)


# -- hand-computed values -----------------------------------------------------------------------

X = [[1.0, -2.0, 3.0], [4.0, 0.0, -6.0]]


def test_sum_values_and_dtypes():
    x = T(X)
    assert_close(x.sum(), np.float32(0.0))
    assert_close(tscript.sum(x, 0), np.float32([5, -2, -3]))
    assert_close(x.sum(dim=1, keepdim=True), np.float32([[2], [-2]]))
    assert_close(x.sum((0, 1)), np.float32(0))
    assert_close(x.sum([]), np.float32(0))                  # an empty dim list reduces everything
    assert_close(x.sum(None, True), np.float32([[0]]))
    assert_close(T([1, 2, 3], tscript.int32).sum(), np.int64(6))
    assert_close(T([True, True, False]).sum(), np.int64(2))
    assert_close(T([1, 2]).sum(dtype=tscript.float64), np.float64(3))
    assert_close(T([1.7, -1.7]).sum(dtype=tscript.int32), np.int32(0))   # cast first, then sum
    assert_close(tscript.zeros(0, 3).sum(0), np.zeros(3, np.float32))
    assert_close(T(5.0).sum(0), np.float32(5))


def test_mean_var_std_prod_values():
    x = T(X)
    assert_close(x.mean(), np.float32(0))
    assert_close(x.mean(1), np.float32([2 / 3, -2 / 3]))
    assert_close(T([1, 2], tscript.int64).mean(dtype=tscript.float64), np.float64(1.5))
    assert_close(tscript.zeros(0).mean(), np.float32(nan))
    assert_close(T([1.0, 2.0, 3.0, 4.0]).var(), np.float32(5 / 3))
    assert_close(T([1.0, 2.0, 3.0, 4.0]).var(unbiased=False), np.float32(1.25))
    assert_close(T([1.0, 2.0, 3.0, 4.0]).var(False), np.float32(1.25))
    assert_close(T([1.0, 2.0, 3.0, 4.0]).var(0, correction=2), np.float32(2.5))
    assert_close(T([1.0, 2.0, 3.0]).var(0, correction=5), np.float32(inf))
    assert_close(T([1.0]).var(), np.float32(nan))
    assert_close(T([[1.0, 3.0], [2.0, 6.0]]).std(1, True, True), np.float32([[math.sqrt(2)], [math.sqrt(8)]]))
    assert_close(tscript.std(T([1.0, 3.0]), correction=0), np.float32(1))
    assert_close(T([1e4 + 1, 1e4 + 2, 1e4 + 3]).var(), np.float32(1))   # two-pass: no cancellation
    assert_close(x.prod(1), np.float32([-6, -0.0]))
    assert_close(T([[1, 2], [3, 4]], tscript.int32).prod(), np.int64(24))
    assert_close(T([True, False]).prod(), np.int64(0))
    assert_close(x.prod(0, True, dtype=tscript.float64), np.float64([[4, -0.0, -18]]))


def test_max_min_overloads():
    x = T([[1.0, 5.0, 5.0], [7.0, 2.0, 7.0]])
    assert_close(x.max(), np.float32(7))
    assert_close(tscript.min(x), np.float32(1))
    r = x.max(1)
    assert type(r).__name__ == "max" and r._fields == ("values", "indices")
    assert_close(r.values, np.float32([5, 7]))
    assert_close(r.indices, np.int64([1, 0]))                # ties: the first occurrence
    values, indices = tscript.min(x, dim=0, keepdim=True)
    assert_close(values, np.float32([[1, 2, 5]]))
    assert_close(indices, np.int64([[0, 1, 0]]))
    assert_close(x.max(T([6.0, 0.0, 6.0])), np.float32([[6, 5, 6], [7, 2, 7]]))   # elementwise
    assert_close(tscript.min(x, other=T(3)), np.float32([[1, 3, 3], [3, 2, 3]]))
    assert_close(T([True, False]).max(), np.bool_(True))
    r = T(4.0).max(0)
    assert_close(r.values, np.float32(4))
    assert_close(r.indices, np.int64(0))
    r = tscript.zeros(0, 3).max(1)
    assert r.values.shape == (0,) and r.indices.dtype == tscript.int64


def test_nan_propagates_through_extrema():
    x = T([1.0, nan, 3.0, nan])
    assert math.isnan(x.max().item()) and math.isnan(x.min().item())
    assert x.max(0).indices.item() == 1 and x.min(0).indices.item() == 1
    assert x.argmax().item() == 1 and x.argmin().item() == 1
    assert math.isnan(x.amax().item()) and math.isnan(x.amin(0).item())


def test_arg_and_a_extrema():
    x = T([[3, 9, 9], [8, 1, 8]])
    assert_close(x.argmax(), np.int64(1))
    assert_close(x.argmax(keepdim=True), np.int64([[1]]))
    assert_close(x.argmin(1), np.int64([0, 1]))
    assert_close(tscript.argmax(x, dim=0, keepdim=True), np.int64([[1, 0, 0]]))
    assert_close(T(5).argmax(0), np.int64(0))
    assert_close(x.amax((0, 1)), np.int64(9))
    assert_close(x.amax(), np.int64(9))
    assert_close(x.amin(-1, keepdim=True), np.int64([[3], [1]]))
    assert_close(tscript.zeros(0, 3).amax(1), np.zeros(0, np.float32))


def test_logsumexp_is_stable():
    assert_close(tscript.logsumexp(T([1000.0, 1000.0]), 0), np.float32(1000 + math.log(2)))
    assert_close(tscript.logsumexp(T([-1000.0, -1000.0]), 0), np.float32(-1000 + math.log(2)))
    assert_close(tscript.logsumexp(T([-inf, -inf]), 0), np.float32(-inf))
    assert_close(tscript.logsumexp(T([inf, 1.0]), 0), np.float32(inf))
    assert_close(tscript.logsumexp(T([nan, 1.0]), 0), np.float32(nan))
    assert_close(tscript.logsumexp(tscript.zeros(0, 2), 0), np.float32([-inf, -inf]))
    assert_close(T([[0, 1], [2, 3]]).logsumexp(1, keepdim=True),
                 np.log(np.exp(np.float32([[0, 1], [2, 3]])).sum(1, keepdims=True)))


def test_norms():
    x = T([[3.0, -4.0], [0.0, 12.0]])
    assert_close(x.norm(), np.float32(13))
    assert_close(tscript.norm(x, "fro", dim=(0, 1)), np.float32(13))
    assert_close(x.norm(2, dim=1), np.float32([5, 12]))
    assert_close(x.norm(1, 1, True), np.float32([[7], [12]]))
    assert_close(x.norm(inf), np.float32(12))
    assert_close(x.norm(-inf, dim=1), np.float32([3, 0]))
    assert_close(x.norm(0, dim=0), np.float32([1, 2]))
    assert_close(x.norm(3, dim=0), np.float32([3, (64 + 1728) ** (1 / 3)]))
    assert_close(x.norm(-1, dim=1), np.float32([1 / (1 / 3 + 1 / 4), 0]))
    assert_close(x.norm(None), np.float32(13))
    assert_close(x.norm(dtype=tscript.float64), np.float64(13))
    assert_close(tscript.zeros(0).norm(), np.float32(0))


def test_all_any_count_nonzero():
    x = T([[1.0, 0.0, 2.0], [3.0, 4.0, 5.0]])
    assert_close(x.all(), np.bool_(False))
    assert_close(x.all(1), np.bool_([False, True]))
    assert_close(tscript.any(x == 0, (0, 1), keepdim=True), np.bool_([[True]]))
    assert_close(x.all(()), np.bool_([[True, False, True], [True, True, True]]))   # () reduces nothing
    assert_close(T([1, 2], tscript.int32).all(), np.bool_(True))
    assert_close(tscript.zeros(0).all(), np.bool_(True))
    assert_close(tscript.zeros(0).any(), np.bool_(False))
    assert_close(x.count_nonzero(), np.int64(5))
    assert_close(tscript.count_nonzero(x, dim=0), np.int64([2, 1, 2]))
    assert_close(x.count_nonzero((0, 1)), np.int64(5))


def test_cumsum():
    x = T([[1, 2, 3], [4, 5, 6]], tscript.int32)
    assert_close(x.cumsum(1), np.int64([[1, 3, 6], [4, 9, 15]]))
    assert_close(tscript.cumsum(x, dim=0, dtype=tscript.float32), np.float32([[1, 2, 3], [5, 7, 9]]))
    assert_close(T([True, True]).cumsum(0), np.int64([1, 2]))
    assert_close(T(3).cumsum(0), np.int64(3))
    y = x.clone()
    assert y.cumsum_(1) is y and y._version == 1
    assert_close(y, np.int32([[1, 3, 6], [4, 9, 15]]))


def test_softmax_and_log_softmax():
    x = T([[1.0, 2.0, 3.0], [1000.0, 1000.0, -inf]])
    e = np.exp([1.0, 2.0, 3.0])
    expected = np.float32([e / e.sum(), [0.5, 0.5, 0.0]])
    assert_close(x.softmax(1), expected)
    with np.errstate(divide="ignore"):
        assert_close(tscript.log_softmax(x, dim=-1), np.log(expected))
    assert_close(x.softmax(0, dtype=tscript.float64).sum(0), np.float64([1, 1, 1]))
    assert_close(T([[1, 2]]).softmax(1, dtype=tscript.float32), np.float32([[0.26894143, 0.7310586]]))
    assert_close(T([-inf, -inf]).softmax(0), np.float32([nan, nan]))
    assert_close(T(2.0).softmax(0), np.float32(1))
    assert_close(T(2.0).log_softmax(-1), np.float32(0))
    assert tscript.zeros(0, 3).softmax(0).shape == (0, 3)


# -- properties against numpy -------------------------------------------------------------------

@st.composite
def reductions(draw):
    """(float32 data, dims or None, keepdim) with 0-4 dims of sizes 1-4."""
    shape = tuple(draw(st.lists(st.integers(1, 4), max_size=4)))
    n = max(len(shape), 1)
    dims = draw(st.none() | st.lists(st.integers(-n, n - 1), min_size=1, max_size=n,
                                     unique_by=lambda d: d % n))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return x, dims, draw(st.booleans())


def _axis(x, dims):
    return None if dims is None or x.ndim == 0 else tuple(d % x.ndim for d in dims)


@settings(max_examples=60, deadline=None)
@given(reductions(), st.sampled_from(["sum", "mean", "amax"]))
def test_reduction_properties(case, name):
    x, dims, keepdim = case
    expected = getattr(np, name)(x, axis=_axis(x, dims), keepdims=keepdim)
    ours = getattr(tscript.from_numpy(x), name)(dims, keepdim=keepdim)
    assert_close(ours, np.asarray(expected, np.float32), rtol=1e-4, atol=1e-5)


@settings(max_examples=60, deadline=None)
@given(reductions(), st.sampled_from([0, 1]))
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_var_property(case, correction):
    x, dims, keepdim = case
    expected = np.var(x.astype(np.float64), axis=_axis(x, dims), ddof=correction, keepdims=keepdim)
    ours = tscript.from_numpy(x).var(dims, correction=correction, keepdim=keepdim)
    assert_close(ours, np.asarray(expected, np.float32), rtol=1e-4, atol=1e-5)


# -- the PyTorch oracle -------------------------------------------------------------------------

def _data(kind):
    rng = np.random.default_rng(0)
    return {
        "float": rng.integers(-3, 4, (3, 4, 5)).astype(np.float32) + np.float32(0.5) * (rng.random((3, 4, 5)) > 0.7),
        "double": rng.standard_normal((4, 5)),
        "int": rng.integers(-5, 6, (3, 4)),
        "int32": rng.integers(-5, 6, (3, 4)).astype(np.int32),
        "bool": rng.random((3, 4)) > 0.5,
        "nan": np.float32([[1, nan, 3, 3], [nan, -1, -2, 0], [2, 2, 2, 2]]),
        "scalar": np.float32(-2.5),
        "empty": np.zeros((0, 3), np.float32),
    }[kind]


ORACLE = {
    "float": [
        lambda m, x: x.sum(), lambda m, x: m.sum(x, 1), lambda m, x: x.sum((0, -1), keepdim=True),
        lambda m, x: x.sum(dim=[2, 0]), lambda m, x: x.sum(1, dtype=m.float64),
        lambda m, x: x.sum(dtype=m.int32),
        lambda m, x: x.mean(), lambda m, x: m.mean(x, (0, 2)), lambda m, x: x.mean(-1, True),
        lambda m, x: x.mean(dtype=m.float64),
        lambda m, x: x.var(), lambda m, x: x.var(1), lambda m, x: x.var(1, False),
        lambda m, x: m.var(x, (0, 2), True, True), lambda m, x: x.var(dim=2, correction=3, keepdim=True),
        lambda m, x: x.var(False), lambda m, x: x.var(unbiased=False), lambda m, x: x.var(correction=0.5),
        lambda m, x: x.std(), lambda m, x: m.std(x, 0), lambda m, x: x.std(dim=(1,), unbiased=False),
        lambda m, x: x.prod(), lambda m, x: x.prod(1), lambda m, x: m.prod(x, -1, True),
        lambda m, x: x.prod(0, dtype=m.float64),
        lambda m, x: x.max(), lambda m, x: x.min(), lambda m, x: x.max(1), lambda m, x: m.min(x, 2),
        lambda m, x: m.max(x, dim=-1, keepdim=True), lambda m, x: x.min(0, True),
        lambda m, x: x.max(x * 0), lambda m, x: m.min(x, other=m.ones(5)),
        lambda m, x: x.argmax(), lambda m, x: x.argmin(), lambda m, x: x.argmax(1),
        lambda m, x: m.argmin(x, dim=2, keepdim=True), lambda m, x: x.argmax(keepdim=True),
        lambda m, x: x.amax(), lambda m, x: x.amax((0, 2)), lambda m, x: m.amin(x, -1, keepdim=True),
        lambda m, x: m.logsumexp(x, 1), lambda m, x: x.logsumexp((0, 2), keepdim=True),
        lambda m, x: x.norm(), lambda m, x: m.norm(x, "fro", dim=(0, 1)), lambda m, x: x.norm(1, dim=1),
        lambda m, x: x.norm(inf, 2, True), lambda m, x: x.norm(-inf), lambda m, x: x.norm(0, dim=(0, 2)),
        lambda m, x: x.norm(3.5, dim=-1), lambda m, x: x.norm(-1.5), lambda m, x: m.norm(x, p=2, dtype=m.float64),
        lambda m, x: x.norm(dim=1, keepdim=True),
        lambda m, x: x.all(), lambda m, x: x.all(1), lambda m, x: m.any(x, (0, 1), keepdim=True),
        lambda m, x: (x > 0).any(2), lambda m, x: x.count_nonzero(), lambda m, x: m.count_nonzero(x, 1),
        lambda m, x: x.count_nonzero((0, 2)),
        lambda m, x: x.cumsum(1), lambda m, x: m.cumsum(x, -1, dtype=m.float64),
        lambda m, x: x.softmax(-1), lambda m, x: m.softmax(x, 0), lambda m, x: x.log_softmax(1),
        lambda m, x: m.log_softmax(x, 2, dtype=m.float64),
    ],
    "double": [
        lambda m, x: x.sum(0), lambda m, x: x.var(1), lambda m, x: x.norm(), lambda m, x: x.softmax(1),
        lambda m, x: x.softmax(1, dtype=m.float32), lambda m, x: m.logsumexp(x, 0), lambda m, x: x.cumsum(0),
    ],
    "int": [
        lambda m, x: x.sum(), lambda m, x: x.sum(1), lambda m, x: x.prod(0), lambda m, x: x.max(),
        lambda m, x: x.max(1), lambda m, x: x.min(0, keepdim=True), lambda m, x: x.argmax(),
        lambda m, x: x.argmin(1), lambda m, x: x.amax(0), lambda m, x: x.cumsum(0),
        lambda m, x: x.count_nonzero(0), lambda m, x: x.all(1), lambda m, x: x.any(),
        lambda m, x: x.mean(dtype=m.float32), lambda m, x: m.logsumexp(x, 1),
        lambda m, x: x.softmax(1, dtype=m.float64), lambda m, x: x.sum(0, dtype=m.int32),
    ],
    "int32": [
        lambda m, x: x.sum(), lambda m, x: x.prod(1), lambda m, x: x.cumsum(1), lambda m, x: x.max(0),
        lambda m, x: x.amin(1), lambda m, x: m.logsumexp(x, 0),
    ],
    "bool": [
        lambda m, x: x.sum(), lambda m, x: x.sum(0), lambda m, x: x.prod(1), lambda m, x: x.max(),
        lambda m, x: x.max(1), lambda m, x: x.min(0), lambda m, x: x.amax(1), lambda m, x: x.all(0),
        lambda m, x: x.any(1), lambda m, x: x.count_nonzero(), lambda m, x: x.cumsum(1),
        lambda m, x: m.logsumexp(x, 1),
    ],
    "nan": [
        lambda m, x: x.max(), lambda m, x: x.min(), lambda m, x: x.max(1), lambda m, x: x.min(0),
        lambda m, x: x.argmax(1), lambda m, x: x.argmin(0), lambda m, x: x.amax(1), lambda m, x: x.amin(),
        lambda m, x: x.sum(1), lambda m, x: x.mean(0), lambda m, x: x.var(1), lambda m, x: m.logsumexp(x, 1),
        lambda m, x: x.softmax(1), lambda m, x: x.norm(dim=1), lambda m, x: x.cumsum(1),
        lambda m, x: x.count_nonzero(1),
    ],
    "scalar": [
        lambda m, x: x.sum(), lambda m, x: x.sum(0, keepdim=True), lambda m, x: x.mean(-1), lambda m, x: x.prod(0),
        lambda m, x: x.max(), lambda m, x: x.max(0), lambda m, x: x.min(-1, True), lambda m, x: x.argmax(0),
        lambda m, x: x.argmin(keepdim=True), lambda m, x: x.amax(0), lambda m, x: m.logsumexp(x, 0),
        lambda m, x: x.norm(), lambda m, x: x.norm(1, 0), lambda m, x: x.all(0), lambda m, x: x.count_nonzero(0),
        lambda m, x: x.cumsum(0), lambda m, x: x.softmax(0), lambda m, x: x.log_softmax(-1),
        lambda m, x: x.var(0, False),
    ],
    "empty": [
        lambda m, x: x.sum(), lambda m, x: x.sum(0), lambda m, x: x.prod(1), lambda m, x: x.prod(),
        lambda m, x: x.mean(1), lambda m, x: x.max(1), lambda m, x: x.amin(1), lambda m, x: x.argmax(1),
        lambda m, x: m.logsumexp(x, 0), lambda m, x: x.norm(), lambda m, x: x.norm(inf, 1), lambda m, x: x.all(),
        lambda m, x: x.any(0), lambda m, x: x.count_nonzero(0), lambda m, x: x.cumsum(0), lambda m, x: x.softmax(0),
        lambda m, x: x.log_softmax(1),
    ],
}
ORACLE_CASES = [(kind, i) for kind, fns in ORACLE.items() for i in range(len(fns))]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("kind,i", ORACLE_CASES, ids=[f"{k}-{i}" for k, i in ORACLE_CASES])
def test_matches_pytorch(oracle, kind, i):
    fn, x = ORACLE[kind][i], _data(kind)
    expected = fn(oracle, oracle.from_numpy(np.array(x)))
    assert_same(fn(tscript, tscript.from_numpy(np.array(x))), expected, rtol=1e-4, atol=1e-5)


# -- rules on metas agree with the kernels ------------------------------------------------------

META_CASES = [
    ("aten::sum", (np.ones((2, 3, 4), np.int32), (0, 2), True, None)),
    ("aten::mean", (np.ones((2, 3), np.float64), None, False, None)),
    ("aten::prod", (np.ones((2, 3), np.bool_), 1, False, tscript.float32)),
    ("aten::var", (np.ones((2, 3), np.float32), [1], 0, True)),
    ("aten::std", (np.ones((2, 3), np.float32), None, None, False)),
    ("aten::max", (np.ones((2, 3), np.int64),)),
    ("aten::min.dim", (np.ones((2, 3), np.float32), -1, True)),
    ("aten::argmax", (np.ones((2, 3), np.float32), None, True)),
    ("aten::amin", (np.ones((2, 3, 4), np.float32), (0, -1), False)),
    ("aten::logsumexp", (np.ones((2, 3), np.int64), [0], False)),
    ("aten::norm", (np.ones((2, 3), np.float32), 1, (1,), True, tscript.float64)),
    ("aten::all", (np.ones((2, 3), np.float32), 0, False)),
    ("aten::count_nonzero", (np.ones((2, 3), np.float32), (0, 1))),
    ("aten::cumsum", (np.ones((2, 3), np.bool_), 1, None)),
    ("aten::softmax", (np.ones((2, 3), np.int32), 0, tscript.float64)),
    ("aten::log_softmax", (np.ones((2, 3), np.float64), 1, None)),
    *((name, (np.array(2.0, np.float32),) + rest) for name, rest in [
        ("aten::sum", ()), ("aten::mean", ()), ("aten::var", ()), ("aten::std", ()), ("aten::prod", (0,)),
        ("aten::max", ()), ("aten::max.dim", (0,)), ("aten::argmin", (-1,)), ("aten::amax", (0,)),
        ("aten::logsumexp", ([0],)), ("aten::norm", ()), ("aten::any", ()), ("aten::count_nonzero", ()),
        ("aten::cumsum", (0,)), ("aten::softmax", (0,)), ("aten::log_softmax", (-1,))]),
]


@pytest.mark.parametrize("name,args", META_CASES, ids=[f"{c[0]}-{c[1][0].ndim}d" for c in META_CASES])
def test_rules_agree_with_kernels(name, args):
    """Kernels return ndarrays (never numpy scalars, also for zero-dim inputs) of the shapes and
    dtypes the rules predict."""
    op = OPS[name]
    args = tuple(args) + op.defaults[len(args):]
    out = op.kernel(*args)
    meta = op.meta(*(TensorMeta(a.shape, a.dtype) if isinstance(a, np.ndarray) else a for a in args))
    outs, metas = (out, meta) if isinstance(out, tuple) else ((out,), (meta,))
    assert all(type(o) is np.ndarray for o in outs)
    assert [(m.shape, m.dtype) for m in metas] == [(o.shape, o.dtype) for o in outs]


def test_rules_accept_symbolic_shapes():
    x = TensorMeta(("batch", 3, 4), dt.float32)
    assert OPS["aten::sum"].meta(x, (1,), True, None).shape == ("batch", 1, 4)
    values, indices = OPS["aten::max.dim"].meta(x, 0, False)
    assert values.shape == (3, 4) and indices.dtype == dt.int64
    assert OPS["aten::amax"].meta(x, None, False).shape == ()
    assert OPS["aten::softmax"].meta(x, -1, None).shape == ("batch", 3, 4)
    with pytest.raises(RuntimeError, match="mean"):
        OPS["aten::mean"].meta(TensorMeta(("batch",), dt.int64), None, False, None)


# -- errors -------------------------------------------------------------------------------------

F = T(X)
I = T([[1, 2], [3, 4]])
E = tscript.zeros(0, 3)

ERRORS = [
    (lambda: F.sum(2), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: F.sum((0, 3)), IndexError, "but got 3"),
    (lambda: T(1.0).sum(5), IndexError, "expected to be in range of [-1, 0], but got 5"),
    (lambda: F.sum((0, 0)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda: F.sum((1, -1)), RuntimeError, "dim 1 appears multiple times"),
    (lambda: F.sum(1.5), TypeError, "sum(): argument 'dim'"),
    (lambda: F.mean(5), IndexError, "Dimension out of range"),
    (lambda: I.mean(), RuntimeError, "mean(): could not infer output dtype. Input dtype must be either a "
                                     "floating point or complex dtype. Got: Long"),
    (lambda: T([True]).mean(), RuntimeError, "Got: Bool"),
    (lambda: F.mean(dtype=tscript.int32), RuntimeError, "Optional dtype must be either a floating point"),
    (lambda: I.var(), RuntimeError, "std and var only support floating point and complex dtypes"),
    (lambda: T([True]).std(), RuntimeError, "std and var only support floating point"),
    (lambda: F.var(1, unbiased=True, correction=1), TypeError, "var() received an invalid combination"),
    (lambda: F.std(True, 1), TypeError, "std() received an invalid combination"),
    (lambda: F.var(0, 1), TypeError, "var() received an invalid combination"),
    (lambda: F.var(0, dim=1), TypeError, "multiple values for argument 'dim'"),
    (lambda: F.var(2), IndexError, "Dimension out of range"),
    (lambda: F.prod((0, 1)), TypeError, "prod(): argument 'dim'"),
    (lambda: F.prod(-3), IndexError, "but got -3"),
    (lambda: E.max(), RuntimeError, "max(): Expected reduction dim to be specified for input.numel() == 0. "
                                    "Specify the reduction dim with the 'dim' argument."),
    (lambda: E.min(), RuntimeError, "min(): Expected reduction dim to be specified"),
    (lambda: E.max(0), IndexError, "max(): Expected reduction dim 0 to have non-zero size."),
    (lambda: E.min(-2), IndexError, "min(): Expected reduction dim 0 to have non-zero size."),
    (lambda: F.max(2), IndexError, "Dimension out of range"),
    (lambda: F.max((0, 1)), TypeError, "max() received an invalid combination of arguments - got ("),
    (lambda: F.max(1.0), TypeError, "max() received an invalid combination"),
    (lambda: F.max(None), TypeError, "max() received an invalid combination"),
    (lambda: tscript.max(F, T([1.0, 2.0]), 1), TypeError, "max() received an invalid combination"),
    (lambda: F.min(T([1.0, 2.0])), RuntimeError, "The size of tensor a (3) must match the size of tensor b (2)"),
    (lambda: E.argmax(), IndexError, "argmax(): Expected reduction dim to be specified for input.numel() == 0."),
    (lambda: E.argmin(0), IndexError, "argmin(): Expected reduction dim 0 to have non-zero size."),
    (lambda: T([True]).argmax(), RuntimeError, "argmax(): does not support bool input"),
    (lambda: F.argmax((0, 1)), TypeError, "argmax(): argument 'dim'"),
    (lambda: F.argmin(-3), IndexError, "Dimension out of range"),
    (lambda: E.amax(), RuntimeError, "amax(): Expected reduction dim to be specified for input.numel() == 0."),
    (lambda: E.amin((1, 0)), IndexError, "amin(): Expected reduction dim 0 to have non-zero size."),
    (lambda: F.amax((1, 1)), RuntimeError, "dim 1 appears multiple times"),
    (lambda: tscript.logsumexp(F, 2), IndexError, "Dimension out of range"),
    (lambda: I.norm(), RuntimeError, "linalg.vector_norm: Expected a floating point or complex tensor as input. "
                                     "Got Long"),
    (lambda: F.norm(dtype=tscript.int64), RuntimeError, "dtype should be floating point or complex, but got Long"),
    (lambda: F.norm("abc"), RuntimeError, "Order abc not supported"),
    (lambda: tscript.zeros(1, 1, 1).norm("fro", dim=(0, 1, 2)), RuntimeError, "dim must be a 2-tuple"),
    (lambda: E.norm(inf), RuntimeError, "cannot compute the inf norm on an empty tensor"),
    (lambda: E.norm(-inf, dim=0), RuntimeError, "cannot compute the -inf norm on the dimension 0"),
    (lambda: F.norm(dim=3), IndexError, "Dimension out of range"),
    (lambda: F.all(2), IndexError, "Dimension out of range"),
    (lambda: F.any((0, 0)), RuntimeError, "dim 0 appears multiple times"),
    (lambda: F.count_nonzero((0, -2)), RuntimeError, "dim 0 appears multiple times"),
    (lambda: F.cumsum(2), IndexError, "Dimension out of range"),
    (lambda: T([True, False]).cumsum_(0), RuntimeError, "result type Long can't be cast to the desired output "
                                                        "type Bool"),
    (lambda: I.softmax(1), RuntimeError, "\"softmax\" not implemented for 'Long'"),
    (lambda: T([True]).log_softmax(0), RuntimeError, "\"log_softmax\" not implemented for 'Bool'"),
    (lambda: F.softmax(1, dtype=tscript.int64), RuntimeError, "not implemented for 'Long'"),
    (lambda: F.softmax(2), IndexError, "Dimension out of range"),
    (lambda: tscript.softmax(F), TypeError, "missing required argument 'dim'"),
]
# PyTorch words these differently (its argument parser) or supports them (the nuclear norm).
OWN_ERRORS = [
    (lambda: F.norm("nuc"), RuntimeError, "Order nuc not supported"),
    (lambda: tscript.logsumexp(F), TypeError, "missing required argument 'dim'"),
    (lambda: F.count_nonzero(keepdim=True), TypeError, "unexpected keyword argument 'keepdim'"),
    (lambda: F.cumsum(), TypeError, "missing required argument 'dim'"),
]


@pytest.mark.parametrize("call,error,fragment", ERRORS + OWN_ERRORS, ids=[e[2][:40] for e in ERRORS + OWN_ERRORS])
def test_errors(call, error, fragment):
    with pytest.raises(error) as info:
        call()
    assert fragment in str(info.value)


@pytest.mark.parametrize("call,error,fragment", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors_match_pytorch(oracle, call, error, fragment):
    """The same calls through PyTorch raise the same builtin exception class."""
    with pytest.raises(error):
        _in_torch(oracle, call)()


def _in_torch(torch, call):
    """`call` with tscript's globals (tscript, T, F, I, E) rebound to their PyTorch counterparts."""
    env = dict(call.__globals__, tscript=torch, T=lambda d, dtype=None: torch.tensor(d, dtype=dtype),
               F=torch.tensor(X), I=torch.tensor([[1, 2], [3, 4]]), E=torch.zeros(0, 3))
    return types.FunctionType(call.__code__, env)
