"""sort, argsort, topk and unique: hand-computed values, numpy properties, the PyTorch oracle (values,
dtypes, named-tuple fields), the rules on metas, and every error case."""
import math
import types

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript
from tests.conftest import assert_close
from tscript_runtime import dtypes as dt
from tscript_runtime.ops import OPS, TensorMeta

nan = math.nan


def T(data, dtype=None):
    return tscript.tensor(data, dtype=dtype)


def assert_same(ours, theirs):
    """Equal results: tensors by value and dtype, tuples element-wise, named tuples by type name
    and fields."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        if hasattr(theirs, "n_fields"):           # torch.return_types.<name>
            assert type(ours).__name__ == type(theirs).__name__
            assert_same(ours.values, theirs.values)
            assert_same(ours.indices, theirs.indices)
        for a, b in zip(ours, theirs):
            assert_same(a, b)
    else:
        assert isinstance(ours, tscript.Tensor)
        assert_close(ours, theirs)


# -- hand-computed values -----------------------------------------------------------------------

def test_sort_is_stable_and_puts_nan_last():
    x = T([3.0, nan, 1.0, 3.0, nan, 2.0])
    r = x.sort()
    assert type(r).__name__ == "sort" and r._fields == ("values", "indices")
    assert_close(r.values, np.float32([1, 2, 3, 3, nan, nan]))
    assert_close(r.indices, np.int64([2, 5, 0, 3, 1, 4]))
    values, indices = tscript.sort(x, descending=True)
    assert_close(values, np.float32([nan, nan, 3, 3, 2, 1]))
    assert_close(indices, np.int64([1, 4, 0, 3, 5, 2]))     # ties keep their order descending too
    assert_close(x.argsort(descending=True, stable=True), np.int64([1, 4, 0, 3, 5, 2]))


def test_sort_along_dims_and_dtypes():
    x = T([[2, 1, 2], [0, 5, 0]])
    values, indices = x.sort(0, True)
    assert_close(values, np.int64([[2, 5, 2], [0, 1, 0]]))
    assert_close(indices, np.int64([[0, 1, 0], [1, 0, 1]]))
    assert_close(x.sort(stable=True).indices, np.int64([[1, 0, 2], [0, 2, 1]]))
    assert_close(T([True, False, True]).sort(descending=True).indices, np.int64([0, 2, 1]))
    r = T(3.0).sort()
    assert_close(r.values, np.float32(3))
    assert_close(r.indices, np.int64(0))
    assert tscript.zeros(0).sort().indices.dtype == tscript.int64
    assert_close(tscript.argsort(x, dim=0), np.int64([[1, 0, 1], [0, 1, 0]]))


def test_topk():
    x = T([[5.0, 1.0, 4.0, 2.0], [0.0, 7.0, 3.0, 9.0]])
    r = x.topk(2)
    assert type(r).__name__ == "topk"
    assert_close(r.values, np.float32([[5, 4], [9, 7]]))
    assert_close(r.indices, np.int64([[0, 2], [3, 1]]))
    values, indices = tscript.topk(x, 1, dim=0, largest=False)
    assert_close(values, np.float32([[0, 1, 3, 2]]))
    assert_close(indices, np.int64([[1, 0, 1, 0]]))
    assert_close(x.topk(3, sorted=False).values, np.float32([[5, 4, 2], [9, 7, 3]]))
    assert_close(T([1.0, nan, 3.0]).topk(1).values, np.float32([nan]))      # NaN is the largest
    assert x.topk(0).values.shape == (2, 0)
    assert_close(T(3.0).topk(1).indices, np.int64(0))


def test_unique():
    u = T([3, 1, 2, 3, 1, 5])
    assert_close(tscript.unique(u), np.int64([1, 2, 3, 5]))
    out, inverse = u.unique(return_inverse=True)
    assert_close(out, np.int64([1, 2, 3, 5]))
    assert_close(inverse, np.int64([2, 0, 1, 2, 0, 3]))
    out, counts = tscript.unique(u, return_counts=True)
    assert_close(counts, np.int64([2, 1, 2, 1]))
    assert len(u.unique(True, True, True)) == 3
    out, inverse = tscript.unique(T([[2, 1], [1, 2]]), return_inverse=True)
    assert_close(inverse, np.int64([[1, 0], [0, 1]]))                         # the input's shape
    assert_close(T([nan, 1.0, nan]).unique(), np.float32([1, nan, nan]))      # NaNs are all distinct
    rows, inverse, counts = T([[2, 1], [1, 2], [2, 1]]).unique(dim=0, return_inverse=True, return_counts=True)
    assert_close(rows, np.int64([[1, 2], [2, 1]]))
    assert_close(inverse, np.int64([1, 0, 1]))
    assert_close(counts, np.int64([1, 2]))
    assert_close(T(4).unique(return_inverse=True)[1], np.int64(0))
    assert tscript.zeros(0, 2).unique(dim=0).shape == (0, 2)


# -- properties against numpy -------------------------------------------------------------------

@st.composite
def arrays(draw):
    """Small int64 arrays (many ties) of 1-3 dims, and one of their dims."""
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    x = np.random.default_rng(seed).integers(0, 4, shape)
    return x, draw(st.integers(-len(shape), len(shape) - 1))


@settings(max_examples=60, deadline=None)
@given(arrays(), st.booleans())
def test_sort_property(case, descending):
    x, dim = case
    order = np.argsort(-x if descending else x, axis=dim, kind="stable")
    values, indices = tscript.from_numpy(x).sort(dim, descending)
    assert_close(indices, order)
    assert_close(values, np.take_along_axis(x, order, dim))


@settings(max_examples=60, deadline=None)
@given(arrays())
def test_unique_property(case):
    x, _ = case
    expected = np.unique(x, return_inverse=True, return_counts=True)
    out, inverse, counts = tscript.from_numpy(x).unique(return_inverse=True, return_counts=True)
    assert_close(out, expected[0])
    assert_close(inverse, expected[1].reshape(x.shape))
    assert_close(counts, expected[2])
    assert_close(out[inverse], x)


# -- the PyTorch oracle -------------------------------------------------------------------------

DATA = {
    "float": np.random.default_rng(0).permutation(60).reshape(3, 4, 5).astype(np.float32) / 7,
    "ties": np.random.default_rng(1).integers(0, 3, (4, 6)).astype(np.float32),
    "int": np.random.default_rng(2).integers(-4, 4, (5, 3)),
    "bool": np.random.default_rng(3).random((3, 4)) > 0.5,
    "nan": np.float32([[3, nan, 1, 3, nan, 2], [nan, 0, 0, nan, -1, 5]]),
    "scalar": np.float32(1.5),
    "empty": np.zeros((0, 3), np.float32),
}

ORACLE = {
    "float": [
        lambda m, x: x.sort(), lambda m, x: m.sort(x, 1), lambda m, x: x.sort(0, descending=True),
        lambda m, x: x.argsort(), lambda m, x: m.argsort(x, 1, True),
        lambda m, x: x.topk(3), lambda m, x: m.topk(x, 2, dim=0, largest=False), lambda m, x: x.topk(4, 1),
        lambda m, x: x.topk(5, -1, False, True),
        lambda m, x: m.unique(x), lambda m, x: x.unique(return_inverse=True, return_counts=True),
    ],
    # stable sorts are deterministic under ties (plain sorts and topk may order ties either way)
    "ties": [
        lambda m, x: x.sort(stable=True), lambda m, x: m.sort(x, dim=0, descending=True, stable=True),
        lambda m, x: x.argsort(stable=True, dim=0), lambda m, x: x.unique(return_counts=True),
        lambda m, x: x.unique(return_inverse=True), lambda m, x: m.unique(x, dim=0, return_inverse=True),
        lambda m, x: m.unique(x, return_counts=True, dim=1), lambda m, x: x.topk(1).values,
    ],
    "int": [
        lambda m, x: x.sort(dim=0, stable=True), lambda m, x: x.sort(descending=True, stable=True),
        lambda m, x: m.unique(x, sorted=True, return_inverse=True),
        lambda m, x: x.unique(dim=1, return_inverse=True, return_counts=True),
    ],
    "bool": [
        lambda m, x: x.sort(stable=True), lambda m, x: x.sort(dim=0, descending=True, stable=True),
        lambda m, x: x.unique(return_counts=True), lambda m, x: x.argsort(stable=True),
    ],
    "nan": [
        lambda m, x: x.sort(stable=True), lambda m, x: x.sort(descending=True, stable=True),
        lambda m, x: x.topk(2, largest=False).values, lambda m, x: x.topk(1).values, lambda m, x: x.unique(),
    ],
    "scalar": [
        lambda m, x: x.sort(), lambda m, x: x.sort(0, True), lambda m, x: x.argsort(-1), lambda m, x: x.topk(1),
        lambda m, x: x.topk(0, -1), lambda m, x: x.unique(return_inverse=True, return_counts=True),
    ],
    "empty": [
        lambda m, x: x.sort(0), lambda m, x: x.argsort(1), lambda m, x: x.topk(0, 0), lambda m, x: x.topk(2, 1),
        lambda m, x: x.unique(return_inverse=True, return_counts=True),
        lambda m, x: m.unique(x, dim=0, return_inverse=True, return_counts=True),
    ],
}
ORACLE_CASES = [(kind, i) for kind, fns in ORACLE.items() for i in range(len(fns))]


@pytest.mark.parametrize("kind,i", ORACLE_CASES, ids=[f"{k}-{i}" for k, i in ORACLE_CASES])
def test_matches_pytorch(oracle, kind, i):
    fn, x = ORACLE[kind][i], DATA[kind]
    expected = fn(oracle, oracle.from_numpy(np.array(x)))
    assert_same(fn(tscript, tscript.from_numpy(np.array(x))), expected)


# -- rules on metas agree with the kernels ------------------------------------------------------

META_CASES = [
    ("aten::sort", (np.ones((2, 3), np.float32), 0, True, False)),
    ("aten::argsort", (np.ones((2, 3), np.int32), -1, False, True)),
    ("aten::topk", (np.ones((2, 5), np.float64), 3, 1, True, True)),
    ("aten::topk", (np.ones((), np.float32), 1, 0, False, True)),
]


@pytest.mark.parametrize("name,args", META_CASES, ids=[c[0] for c in META_CASES])
def test_rules_agree_with_kernels(name, args):
    op = OPS[name]
    out = op.kernel(*args)
    meta = op.meta(*(TensorMeta(a.shape, a.dtype) if isinstance(a, np.ndarray) else a for a in args))
    outs, metas = (out, meta) if isinstance(out, tuple) else ((out,), (meta,))
    assert all(type(o) is np.ndarray for o in outs)
    assert [(m.shape, m.dtype) for m in metas] == [(o.shape, o.dtype) for o in outs]


def test_unique_size_is_symbolic():
    values, inverse, counts = OPS["aten::unique"].meta(TensorMeta(("b", 3), dt.float32), True, True, False, None)
    assert values.shape == ("num_unique",) and inverse.shape == ("b", 3) and counts.dtype == dt.int64
    rows, inverse, _ = OPS["aten::unique"].meta(TensorMeta((4, 3), dt.int64), True, False, False, -1)
    assert rows.shape == (4, "num_unique") and inverse.shape == (3,)
    values, indices = OPS["aten::topk"].meta(TensorMeta(("b", 8), dt.float32), 3, -1, True, True)
    assert values.shape == ("b", 3) and indices.dtype == dt.int64


# -- errors -------------------------------------------------------------------------------------

X = T([3.0, 1.0, 2.0])
M = T([[1, 2], [3, 4]])

ERRORS = [
    (lambda: X.sort(1), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (lambda: M.sort(-3), IndexError, "but got -3"),
    (lambda: tscript.sort(X, 0, False, 1, 2), TypeError, "sort() takes at most 3 positional arguments"),
    (lambda: X.argsort(2), IndexError, "Dimension out of range"),
    (lambda: X.topk(4), RuntimeError, "selected index k out of range"),
    (lambda: X.topk(-1), RuntimeError, "selected index k out of range"),
    (lambda: M.topk(3, dim=0), RuntimeError, "selected index k out of range"),
    (lambda: T(1.0).topk(2), RuntimeError, "selected index k out of range"),
    (lambda: X.topk(1, dim=1), IndexError, "Dimension out of range"),
    (lambda: T([True, False]).topk(1), RuntimeError, "topk does not support bool dtypes on CPU"),
    (lambda: X.topk(1.5), TypeError, "topk(): argument 'k'"),
    (lambda: tscript.unique(M, dim=2), IndexError, "Dimension out of range"),
    (lambda: T(3).unique(dim=0), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda: tscript.zeros(0, 2).unique(dim=1), RuntimeError,
     "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied"),
]


@pytest.mark.parametrize("call,error,fragment", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors(call, error, fragment):
    with pytest.raises(error) as info:
        call()
    assert fragment in str(info.value)


@pytest.mark.parametrize("call,error,fragment", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors_match_pytorch(oracle, call, error, fragment):
    """The same calls through PyTorch raise the same builtin exception class."""
    env = dict(call.__globals__, tscript=oracle, T=lambda d, dtype=None: oracle.tensor(d, dtype=dtype),
               X=oracle.tensor([3.0, 1.0, 2.0]), M=oracle.tensor([[1, 2], [3, 4]]))
    with pytest.raises(error):
        types.FunctionType(call.__code__, env)()
