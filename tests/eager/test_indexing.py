"""Indexing and index assignment (`t[i]`, `t[i] = v`) and the indexing ops: values against NumPy and
PyTorch, aliasing and version counters, and every error with PyTorch's type and wording."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tscript as ts
from tests.conftest import assert_close, to_numpy

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def x():
    return ts.tensor(X)


# -- basic indexing: views -------------------------------------------------------------------------------

BASIC = [
    (0,), (-1,), (slice(None), 1), (Ellipsis, 2), (0, Ellipsis, None), (None, 1, None),
    (slice(1, None), slice(None, 2)),
    (slice(None), slice(None, None, 2), slice(1, 4, 2)), (slice(-100, 100),), (slice(5, None),), (Ellipsis,), (),
    (1, 2, 3), (Ellipsis, None), (slice(None), None, -1),
]


@pytest.mark.parametrize("index", BASIC)
def test_basic_indexing_matches_numpy_and_is_a_view(index):
    t = x()
    v = t[index]
    assert_close(v, X[index])
    assert v is not t
    assert v._base is t and v._vc is t._vc
    assert np.shares_memory(v.numpy(), t.numpy()) or v.numel() == 0


def test_writing_into_a_slice_changes_the_base_and_bumps_the_shared_version():
    t = ts.zeros(3, 4)
    row, col = t[1], t[:, 2:]
    row.fill_(1)
    col.add_(10)
    assert t.tolist() == [[0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 10, 10]]
    assert t._version == row._version == col._version == 2


def test_zero_dim_integer_tensor_and_numpy_int_index_like_ints():
    t = x()
    for i in (ts.tensor(1), np.int64(1), np.array(1), ts.tensor(1, dtype=ts.int32)):
        v = t[i]
        assert_close(v, X[1])
        assert np.shares_memory(v.numpy(), t.numpy())


def test_tensor_indices_inside_slices():
    assert_close(x()[ts.tensor(1):ts.tensor(3):ts.tensor(1), ::np.int64(2)], X[1:3, ::2])


# -- advanced indexing ---------------------------------------------------------------------------------

ADVANCED = [
    ([0, 1],), (slice(None), [2, 0, 2]), ([[0], [1]], [0, 2]), ([1, 0], slice(None), [0, 3]),
    (slice(None), [0, 2], [1, 3]), (Ellipsis, [1, 2]), ([1], None, [2]), (X[..., 0] > 5,), (slice(None), X[0] > 5),
    (X > 10,), ([], ), (np.array([1, 0]),), (np.array([True, False]), slice(1, 3), [0, 0, 3]),
]


@pytest.mark.parametrize("index", ADVANCED)
def test_advanced_indexing_matches_numpy_and_copies(index):
    t = x()
    v = t[index]
    assert_close(v, X[index])
    assert not np.shares_memory(v.numpy(), t.numpy())
    assert v._base is None


def test_index_tensors_of_int32_int64_and_bool():
    t = x()
    assert_close(t[ts.tensor([1, 0], dtype=ts.int32)], X[[1, 0]])
    assert_close(t[ts.tensor([1])], X[[1]])                           # one element: keeps its dim
    assert_close(t[:, ts.tensor([True, False, True])], X[:, [0, 2]])
    assert_close(t[t > 20], X[X > 20])


def test_ints_are_selects_not_advanced_indices_as_in_pytorch():
    # NumPy moves the broadcast dims in front here, giving (2, 3); PyTorch selects first: (3, 2).
    assert x()[0, :, [1, 2]].shape == (3, 2)
    assert_close(x()[0, :, [1, 2]], X[0][:, [1, 2]])


def test_python_bools_add_a_dim_that_is_kept_or_emptied():
    assert x()[True].shape == (1, 2, 3, 4)
    assert x()[False].shape == (0, 2, 3, 4)
    assert_close(x()[True, [0, 1]], X[None][0][[0, 1]])
    assert ts.tensor(5.0)[ts.tensor(True)].tolist() == [5.0]


def test_a_list_holding_slices_or_sequences_is_read_as_a_tuple_with_a_warning():
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        v = x()[[0, slice(None)]]
    assert_close(v, X[0, :])
    with pytest.warns(UserWarning):
        assert_close(x()[[[0, 1], [1, 2]]], X[[0, 1], [1, 2]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_close(x()[[1, 0, 1]], X[[1, 0, 1]])               # a plain list of ints is one index
        assert_close(x()[np.array([[0, 1], [1, 1]])], X[np.array([[0, 1], [1, 1]])])


def test_zero_dim_tensor_indexing():
    s = ts.tensor(7.0)
    assert s[...].tolist() == 7.0 and s[()].tolist() == 7.0
    assert s[None].shape == (1,)
    assert np.shares_memory(s[...].numpy(), s.numpy())


# -- random index combinations -------------------------------------------------------------------------

@st.composite
def index_cases(draw, ints_with_advanced=True):
    """A shape and a tuple index of ints, slices, None, at most one `...`, int lists and bool masks
    whose picked shapes broadcast. Without `ints_with_advanced` the index means the same in NumPy."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    n = len(shape)
    front = draw(st.integers(0, n))
    back = draw(st.integers(front, n)) if draw(st.booleans()) else None
    if back == front and not ints_with_advanced:
        back = None  # NumPy also splits advanced indices at a `...` covering no dims; PyTorch does not
    length = draw(st.integers(1, 3))
    items = _dim_items(draw, shape, range(front), length)
    if back is not None:
        items += [Ellipsis] + _dim_items(draw, shape, range(back, n), length)
    if not ints_with_advanced and any(isinstance(i, (list, np.ndarray)) for i in items):
        items = [slice(i, None) if isinstance(i, int) else i for i in items]  # NumPy's rule differs
    return shape, tuple(items)


def _dim_items(draw, shape, dims, length):
    items = []
    for d in dims:
        if draw(st.integers(0, 4)) == 0:
            items.append(None)
        size = shape[d]
        kind = draw(st.sampled_from(["int", "slice", "list", "mask"]))
        if kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            items.append(slice(draw(st.none() | st.integers(-5, 5)), draw(st.none() | st.integers(-5, 5)),
                               draw(st.none() | st.integers(1, 3))))
        elif kind == "list" or size < length:
            items.append(draw(st.lists(st.integers(-size, size - 1), min_size=length, max_size=length)))
        else:
            picked = draw(st.sets(st.integers(0, size - 1), min_size=length, max_size=length))
            items.append(np.isin(np.arange(size), list(picked)))
    return items


@settings(max_examples=150, deadline=None)
@given(index_cases(ints_with_advanced=False), st.booleans())
def test_random_indices_match_numpy(case, as_tensors):
    shape, index = case
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    ours = tuple(ts.tensor(i) if as_tensors and isinstance(i, (list, np.ndarray)) else i for i in index)
    assert_close(ts.tensor(data)[ours], data[index])


@settings(max_examples=100, deadline=None)
@given(index_cases(ints_with_advanced=False), st.booleans())
def test_random_index_assignment_matches_numpy(case, scalar):
    shape, index = case
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    picked = data[index].shape
    value = -1.5 if scalar else -np.arange(int(np.prod(picked[-1:])), dtype=np.float32).reshape(picked[-1:])
    expected = data.copy()
    expected[index] = value
    t = ts.tensor(data)
    t[index] = value if scalar else ts.tensor(value)
    assert_close(t, expected)
    assert t._version == 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=index_cases(ints_with_advanced=True))
def test_random_indices_match_pytorch(oracle, case):
    shape, index = case
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    theirs = tuple(oracle.tensor(i) if isinstance(i, (list, np.ndarray)) else i for i in index)
    assert_close(ts.tensor(data)[index], oracle.tensor(data)[theirs])


# -- assignment --------------------------------------------------------------------------------------------

def test_assignment_of_scalars_casts_to_the_tensor_dtype():
    t = ts.arange(6).view(2, 3)
    t[0] = 1.7
    t[1, 1:] = True
    assert t.tolist() == [[1, 1, 1], [3, 1, 1]] and t.dtype == ts.int64
    b = ts.zeros(3, dtype=ts.bool)
    b[0], b[1] = -1, 0.5
    assert b.tolist() == [True, True, False]


def test_basic_assignment_casts_tensors_and_broadcasts_after_dropping_leading_ones():
    t = ts.zeros(3, 4, dtype=ts.int64)
    t[0] = ts.tensor([1.5, 2.5, 3.5, 4.5])
    t[1:] = ts.tensor([[[7, 8, 9, 10]]])
    assert t.tolist() == [[1, 2, 3, 4], [7, 8, 9, 10], [7, 8, 9, 10]]
    t[..., 0] = ts.tensor(5)
    assert t[:, 0].tolist() == [5, 5, 5]


def test_advanced_assignment_writes_through_basic_views():
    t = ts.zeros(2, 3, 4)
    view = t[1]
    t[1, :, [0, 3]] = ts.tensor([[1.0, 2.0]])
    t[0][t[0] == 0] = 9.0
    expected = np.zeros((2, 3, 4), np.float32)
    expected[1, :, [0, 3]] = [[1], [2]]
    expected[0] = 9
    assert_close(t, expected)
    assert view._version == t._version == 2


def test_assignment_with_masks_bools_and_duplicates():
    t = ts.arange(6.0)
    t[t > 3] = ts.tensor([-4.0, -5.0])
    t[False] = 100.0
    assert t.tolist() == [0, 1, 2, 3, -4, -5]
    t[True] = 1.0
    assert t.tolist() == [1.0] * 6
    u = ts.zeros(3)
    u[ts.tensor([0, 0])] = ts.tensor([1.0, 2.0])   # the last write wins, as on PyTorch's CPU
    assert u.tolist() == [2.0, 0.0, 0.0]


@pytest.mark.parametrize("index, value", [
    ((0,), 3.0), ((slice(None), 1), np.float64(2)), ((1,), np.int32(-3)), ((Ellipsis, [0, 2]), [[1.0], [2.0]]),
    (([1, 1], [0, 2]), 4.0),
    ((slice(1, None), None), [[[5.0, 6.0, 7.0]]]), ((True,), 8.0),
])
def test_assignment_matches_pytorch(oracle, index, value):
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    theirs = oracle.tensor(data)
    ours = ts.tensor(data)
    theirs[index] = oracle.tensor(value) if isinstance(value, list) else value
    ours[index] = ts.tensor(value) if isinstance(value, list) else value
    assert_close(ours, theirs)
    assert ours._version == theirs._version


def test_assigning_a_shifted_clone_of_the_same_tensor():
    t = ts.arange(5.0)
    t[1:] = t[:-1].clone()
    assert t.tolist() == [0, 0, 1, 2, 3]


# -- errors --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("index, error, fragment", [
    ((5,), IndexError, "index 5 is out of bounds for dimension 0 with size 2"),
    ((slice(None), -4), IndexError, "index -4 is out of bounds for dimension 1 with size 3"),
    ((None, 0, 7), IndexError, "index 7 is out of bounds for dimension 1 with size 3"),
    (([2],), IndexError, "index 2 is out of bounds for dimension 0 with size 2"),
    ((slice(None), ts.tensor([3])), IndexError, "index 3 is out of bounds for dimension 1 with size 3"),
    ((1.5,), IndexError, "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables"),
    (("a",), IndexError, "valid indices (got str)"),
    ((np.bool_(True),), IndexError, "(got numpy.bool)"),
    ((ts.tensor([1.0]),), IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    ((0, 0, 0, 0), IndexError, "too many indices for tensor of dimension 3"),
    ((ts.tensor([True, False, True]),), IndexError,
     "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3, 4] at index 0"),
    ((0, ts.ones(3, 3, dtype=ts.bool)), IndexError,
     "The shape of the mask [3, 3] at index 1 does not match the shape of the indexed tensor [3, 4] at index 1"),
    (([0, 1], slice(None), [0, 1, 2]), IndexError,
     "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"),
    ((slice(None, None, -1),), ValueError, "step must be greater than zero"),
    ((slice(None, None, 0),), ValueError, "slice step cannot be zero"),
    ((slice(1.5, None),), TypeError, "slice indices must be integers or None"),
])
def test_indexing_errors(index, error, fragment):
    with pytest.raises(error) as info:
        x()[index]
    assert fragment in str(info.value)


def test_indexing_a_zero_dim_tensor_with_an_int():
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        ts.tensor(1.0)[0]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        ts.tensor(1.0)[:]


@pytest.mark.parametrize("index, value, error, fragment", [
    ((0,), [1, 2], TypeError, "can't assign a list to a tscript.FloatTensor"),
    ((0,), np.ones(4), TypeError, "can't assign a numpy.ndarray"),
    ((0,), np.float32(1), TypeError, "can't assign a numpy.float32"),
    ((0,), ts.ones(2), RuntimeError, "The expanded size of the tensor (4) must match the existing size (2)"),
    ((0,), ts.ones(2, 3, 4), RuntimeError, "the number of sizes provided (2) must be greater or equal"),
    (([0, 1],), ts.ones(2), RuntimeError,
     "shape mismatch: value tensor of shape [2] cannot be broadcast to indexing result of shape [2, 3, 4]"),
    (([0],), ts.ones(4, dtype=ts.float64), RuntimeError,
     "Index put requires the source and destination dtypes match, got Float for the destination and Double"),
    ((9,), 1.0, IndexError, "index 9 is out of bounds for dimension 0 with size 2"),
    (([9],), 1.0, IndexError, "index 9 is out of bounds for dimension 0 with size 2"),
])
def test_assignment_errors(index, value, error, fragment):
    t = x()
    with pytest.raises(error) as info:
        t[index] = value
    assert fragment in str(info.value)
    assert_close(t, X)


def test_assigning_a_number_that_does_not_fit_raises():
    with pytest.raises(RuntimeError, match="out of bounds for int32"):
        ts.zeros(2, dtype=ts.int32)[0] = 2 ** 40


# -- index / index_put ----------------------------------------------------------------------------------------

def test_index_op_takes_one_entry_per_dimension():
    t = x()
    assert_close(ts.index(t, [None, ts.tensor([2, 0])]), X[:, [2, 0]])
    mask = np.array([[True, False, True], [False, False, True]])
    assert_close(ts.index(t, [ts.tensor(mask)]), X[mask])
    all_none = ts.index(t, [None])
    assert_close(all_none, X)
    assert not np.shares_memory(all_none.numpy(), t.numpy())
    with pytest.raises(IndexError, match="at least one index must be provided"):
        ts.index(t, [])
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 3 \(got 4\)"):
        ts.index(t, [None] * 4)


def test_index_put_functional_and_in_place_with_accumulate():
    t = ts.zeros(5)
    out = t.index_put((ts.tensor([0, 0, 3]),), ts.tensor([1.0, 2.0, 3.0]), accumulate=True)
    assert out.tolist() == [3, 0, 0, 3, 0] and t.tolist() == [0] * 5
    r = t.index_put_([ts.tensor([4, 4])], ts.tensor(2.0), accumulate=True)
    assert r is t and t.tolist() == [0, 0, 0, 0, 4] and t._version == 1
    m = ts.zeros(2, 3).index_put([ts.tensor([[True, False, True], [False, True, False]])], ts.tensor(1.0))
    assert m.tolist() == [[1, 0, 1], [0, 1, 0]]
    b = ts.zeros(3, dtype=ts.bool).index_put([ts.tensor([0, 0, 2])], ts.tensor([True, False, False]), True)
    assert b.tolist() == [True, False, False]


def test_index_put_matches_pytorch(oracle):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = ([0, 2, 0], [1, 1, 1])
    vals = np.array([1.0, 2.0, 3.0], np.float32)
    for accumulate in (False, True):
        ours = ts.tensor(data).index_put(tuple(ts.tensor(i) for i in idx), ts.tensor(vals), accumulate)
        theirs = oracle.tensor(data).index_put(tuple(oracle.tensor(i) for i in idx), oracle.tensor(vals), accumulate)
        assert_close(ours, theirs)


def test_index_put_errors():
    t = ts.zeros(3, 4)
    with pytest.raises(RuntimeError, match="got Float for the destination and Long for the source"):
        t.index_put([ts.tensor([0])], ts.tensor(1))
    with pytest.raises(RuntimeError, match=r"value tensor of shape \[3\] cannot be broadcast to indexing result "
                                           r"of shape \[1, 4\]"):
        t.index_put([ts.tensor([0])], ts.ones(3))
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 3"):
        t.index_put_([ts.tensor([4])], ts.tensor(1.0), accumulate=True)
    assert t._version == 0


# -- gather / scatter ---------------------------------------------------------------------------------------

def test_gather_allows_a_smaller_index_and_matches_pytorch(oracle):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    for dim, idx in [(1, [[0, 1], [2, 3]]), (0, [[0], [2]]), (0, [[2, 1, 0, 0]] * 5), (-1, [[3], [0], [1]])]:
        ours = ts.tensor(data).gather(dim, ts.tensor(idx))
        assert_close(ours, oracle.tensor(data).gather(dim, oracle.tensor(idx)))
    assert ts.gather(ts.tensor(3.0), 0, ts.tensor([0, 0])).tolist() == [3.0, 3.0]
    assert ts.tensor([3.0, 4.0]).gather(0, ts.tensor(1, dtype=ts.int32)).tolist() == 4.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_gather_matches_take_along_axis(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    src = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    idx = np.array(data.draw(st.lists(st.integers(0, shape[dim] - 1), min_size=int(np.prod(shape)),
                                      max_size=int(np.prod(shape))))).reshape(shape)
    assert_close(ts.tensor(src).gather(dim, ts.tensor(idx)), np.take_along_axis(src, idx, dim))


def test_scatter_with_src_value_and_reduce_matches_pytorch(oracle):
    idx = [[0, 1], [2, 3], [0, 0]]
    src = np.arange(1, 7, dtype=np.float32).reshape(3, 2)
    cases = [dict(src=src), dict(value=7.0), dict(src=src, reduce="add"), dict(src=src, reduce="multiply"),
             dict(value=3.0, reduce="add")]
    for kwargs in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # both deprecate reduce= with a tensor src
            ours = ts.full((3, 4), 2.0).scatter(1, ts.tensor(idx), **{k: ts.tensor(v) if k == "src" else v
                                                                      for k, v in kwargs.items()})
            theirs = oracle.full((3, 4), 2.0).scatter(1, oracle.tensor(idx), **{
                k: oracle.tensor(v) if k == "src" else v for k, v in kwargs.items()})
        assert_close(ours, theirs)
    assert ts.zeros(3, dtype=ts.int64).scatter(0, ts.tensor([1]), 7.5).tolist() == [0, 7, 0]


def test_scatter_in_place_and_scatter_add():
    t = ts.zeros(2, 3)
    r = t.scatter_(0, ts.tensor([[1, 0, 1]]), ts.tensor([[1.0, 2.0, 3.0]]))
    assert r is t and t.tolist() == [[0, 2, 0], [1, 0, 3]] and t._version == 1
    t.scatter_(1, ts.tensor([[0], [0]]), 5.0, reduce="add")
    assert t.tolist() == [[5, 2, 0], [6, 0, 3]]
    with pytest.warns(UserWarning, match="reduce argument of scatter with Tensor src is deprecated"):
        t.scatter_(1, ts.tensor([[2], [2]]), ts.full((2, 1), 3.0), reduce="multiply")
    assert t.tolist() == [[5, 2, 0], [6, 0, 9]]
    s = ts.scatter_add(ts.zeros(4), 0, ts.tensor([0, 0, 3]), ts.tensor([1.0, 2.0, 3.0]))
    assert s.tolist() == [3, 0, 0, 3]
    u = ts.zeros(4)
    u.scatter_add_(0, ts.tensor([1, 1]), ts.ones(2))
    assert u.tolist() == [0, 2, 0, 0] and u._version == 1
    assert ts.scatter(ts.zeros(3), 0, ts.tensor([2]), ts.tensor([4.0])).tolist() == [0, 0, 4]


@pytest.mark.parametrize("call, error, fragment", [
    (lambda t: t.gather(1, ts.tensor([[5]])), RuntimeError, "index 5 is out of bounds for dimension 1 with size 4"),
    (lambda t: t.gather(1, ts.tensor([[-1]])), RuntimeError, "index -1 is out of bounds for dimension 1 with size 4"),
    (lambda t: t.gather(0, ts.tensor([0])), RuntimeError, "Index tensor must have the same number of dimensions"),
    (lambda t: t.gather(0, ts.tensor([[0, 1, 2, 3, 0]])), RuntimeError,
     "Size does not match at dimension 1 expected index [1, 5] to be no larger than self [3, 4] apart from "
     "dimension 0"),
    (lambda t: t.gather(0, ts.tensor([[0.0]])), RuntimeError, "Expected dtype int32/int64 for index"),
    (lambda t: t.gather(2, ts.tensor([[0]])), IndexError, "Dimension out of range"),
    (lambda t: t.scatter(1, ts.tensor([[4]]), ts.tensor([[1.0]])), RuntimeError,
     "index 4 is out of bounds for dimension 1 with size 4"),
    (lambda t: t.scatter(1, ts.tensor([[0]]), ts.tensor([[1]])), RuntimeError,
     "Expected self.dtype to be equal to src.dtype"),
    (lambda t: t.scatter(1, ts.tensor([0]), 1.0), RuntimeError,
     "Index tensor must have the same number of dimensions as self tensor"),
    (lambda t: t.scatter(1, ts.tensor([[0]]), ts.tensor(1.0)), RuntimeError,
     "Index tensor must have the same number of dimensions as src tensor"),
    (lambda t: t.scatter(1, ts.tensor([[0, 1, 2]]), ts.tensor([[1.0, 2.0]])), RuntimeError,
     "Expected index [1, 3] to be no larger than self [3, 4] apart from dimension 1 and to be no larger size "
     "than src [1, 2]"),
    (lambda t: t.scatter(0, ts.tensor([[0, 1, 2, 3, 0]]), 1.0), RuntimeError,
     "Expected index [1, 5] to be no larger than self [3, 4] apart from dimension 0"),
    (lambda t: t.scatter(1, ts.tensor([[0]]), 1.0, reduce="mean"), RuntimeError,
     "reduce argument must be either add or multiply"),
    (lambda t: t.scatter(1, ts.tensor([[0]])), TypeError, "exactly one of 'src'"),
    (lambda t: t.scatter_add(1, ts.tensor([[0.0]]), ts.tensor([[1.0]])), RuntimeError,
     "Expected dtype int32/int64 for index"),
    (lambda t: t.scatter_add_(1, ts.tensor([[9]]), ts.tensor([[1.0]])), RuntimeError,
     "index 9 is out of bounds for dimension 1 with size 4"),
])
def test_gather_scatter_errors(call, error, fragment):
    t = ts.zeros(3, 4)
    with pytest.raises(error) as info:
        call(t)
    assert fragment in str(info.value)
    assert t.tolist() == [[0.0] * 4] * 3


# -- index_select / masked_fill / nonzero / where ------------------------------------------------------------

def test_index_select_matches_numpy_take():
    t = x()
    assert_close(t.index_select(2, ts.tensor([3, 0, 3])), np.take(X, [3, 0, 3], axis=2))
    assert_close(ts.index_select(t, -3, ts.tensor([1], dtype=ts.int32)), X[[1]])
    assert t.index_select(1, ts.tensor(2)).shape == (2, 1, 4)
    assert t.index_select(0, ts.tensor([], dtype=ts.int64)).shape == (0, 3, 4)
    assert ts.tensor(5).index_select(0, ts.tensor([0])).tolist() == 5


@pytest.mark.parametrize("call, error, fragment", [
    (lambda t: t.index_select(0, ts.tensor([[1]])), IndexError, "Index is supposed to be a vector"),
    (lambda t: t.index_select(0, ts.tensor([1.0])), RuntimeError, "Expected dtype int32 or int64 for index"),
    (lambda t: t.index_select(0, ts.tensor([2])), IndexError, "index out of range in self"),
    (lambda t: t.index_select(0, ts.tensor([-1])), IndexError, "index out of range in self"),
    (lambda t: t.index_select(3, ts.tensor([0])), IndexError, "Dimension out of range"),
    (lambda t: ts.tensor(1.0).index_select(0, ts.tensor([0, 0])), RuntimeError,
     "Index to scalar can have only 1 value, got 2 value(s)"),
])
def test_index_select_errors(call, error, fragment):
    with pytest.raises(error) as info:
        call(x())
    assert fragment in str(info.value)


def test_masked_fill_values_broadcasting_and_dtypes(oracle):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    for mask, value in [(data > 5, -1), (np.array([True, False, True, False]), 2.5), (data > 2, np.array(7.0))]:
        wrap = isinstance(value, np.ndarray)
        ours = ts.tensor(data).masked_fill(ts.tensor(mask), ts.tensor(value) if wrap else value)
        theirs = oracle.tensor(data).masked_fill(oracle.tensor(mask), oracle.tensor(value) if wrap else value)
        assert_close(ours, theirs)
    grown = ts.zeros(4).masked_fill(ts.ones(3, 4, dtype=ts.bool), -1)
    assert grown.shape == (3, 4)
    assert ts.arange(4).masked_fill(ts.tensor([True, False, True, False]), 2.7).tolist() == [2, 1, 2, 3]
    assert ts.zeros(2, dtype=ts.bool).masked_fill(ts.tensor([True, False]), 2).tolist() == [True, False]


def test_masked_fill_in_place_writes_through_views():
    t = ts.zeros(2, 3)
    row = t[1]
    r = row.masked_fill_(ts.tensor([True, False, True]), 4.0)
    assert r is row and t.tolist() == [[0, 0, 0], [4, 0, 4]] and t._version == 1


@pytest.mark.parametrize("call, fragment", [
    (lambda: ts.zeros(3).masked_fill(ts.zeros(3), 1.0), "only supports boolean masks, but got mask with dtype float"),
    (lambda: ts.zeros(3).masked_fill(ts.zeros(3, dtype=ts.int64), 1.0), "mask with dtype long int"),
    (lambda: ts.zeros(3).masked_fill(ts.ones(3, dtype=ts.bool), ts.ones(1)),
     "only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)."),
    (lambda: ts.zeros(4).masked_fill(ts.ones(3, dtype=ts.bool), 1.0),
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"),
    (lambda: ts.zeros(4).masked_fill_(ts.ones(3, 4, dtype=ts.bool), 1.0),
     "output with shape [4] doesn't match the broadcast shape [3, 4]"),
    (lambda: ts.zeros(2, dtype=ts.int32).masked_fill(ts.ones(2, dtype=ts.bool), 2 ** 40), "out of bounds for int32"),
])
def test_masked_fill_errors(call, fragment):
    with pytest.raises(RuntimeError) as info:
        call()
    assert fragment in str(info.value)


def test_nonzero_and_one_argument_where(oracle):
    data = np.array([[0, 1.5, 0], [2, 0, -1]], np.float32)
    assert_close(ts.tensor(data).nonzero(), np.argwhere(data))
    ours = ts.nonzero(ts.tensor(data), as_tuple=True)
    assert isinstance(ours, tuple) and len(ours) == 2
    for o, e in zip(ours, np.nonzero(data)):
        assert_close(o, e.astype(np.int64))
    for o, e in zip(ts.where(ts.tensor(data) > 0), oracle.where(oracle.tensor(data) > 0)):
        assert_close(o, e)
    for value in (3, 0):
        assert_close(ts.tensor(value).nonzero(), oracle.tensor(value).nonzero())
        (ours,), (theirs,) = ts.tensor(value).nonzero(as_tuple=True), oracle.tensor(value).nonzero(as_tuple=True)
        assert_close(ours, theirs)
    assert ts.zeros(0, 3).nonzero().shape == (0, 2)
    assert_close(ts.where(ts.tensor([True, False]), 1.0, ts.tensor([5.0, 6.0])), np.array([1.0, 6.0], np.float32))


def test_results_are_numpy_arrays_of_tscript_dtypes():
    out = ts.tensor([[1, 0], [0, 1]], dtype=ts.int32).nonzero()
    assert out.dtype == ts.int64 and to_numpy(out).dtype == np.int64
