"""`cat` / `concat` / `concatenate` and `stack`: values against NumPy and PyTorch, PyTorch's dtype
promotion and legacy empty-tensor rule, and every error with PyTorch's type and wording."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
from tests.conftest import assert_close

A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.arange(4, dtype=np.int64).reshape(2, 2)


def test_cat_and_its_aliases():
    a, b = ts.tensor(A), ts.tensor(B)
    expected = np.concatenate([A, B.astype(np.float32)], axis=1)
    assert_close(ts.cat([a, b], 1), expected)
    assert_close(ts.cat((a, b), dim=-1), expected)
    assert_close(ts.concat([a, b], dim=1), expected)
    assert_close(ts.concatenate([a, b], axis=1), expected)
    assert_close(ts.cat([a, a]), np.concatenate([A, A]))


def test_cat_returns_a_new_tensor_even_for_one_input():
    a = ts.tensor(A)
    out = ts.cat([a])
    assert out._base is None and not np.shares_memory(out.numpy(), a.numpy())


@pytest.mark.parametrize("dtypes, expected", [
    ((ts.int64, ts.bool), ts.int64), ((ts.int32, ts.int64), ts.int64), ((ts.float32, ts.float64), ts.float64),
    ((ts.int64, ts.float32), ts.float32), ((ts.bool, ts.bool), ts.bool), ((ts.int32, ts.bool, ts.float64), ts.float64),
])
def test_cat_and_stack_promote_dtypes(dtypes, expected):
    parts = [ts.ones(2, dtype=d) for d in dtypes]
    assert ts.cat(parts).dtype == expected
    assert ts.stack(parts).dtype == expected


def test_cat_skips_one_dim_empty_tensors_but_promotes_with_them():
    a = ts.tensor(A)
    out = ts.cat([a, ts.zeros(0, dtype=ts.float64)], 1)
    assert_close(out, A.astype(np.float64))
    assert_close(ts.cat([ts.zeros(0, dtype=ts.int64), a], 0), A)
    assert ts.cat([ts.zeros(0), ts.zeros(0)], 1).shape == (0,)
    assert ts.cat([a, ts.zeros(0, 3)]).shape == (2, 3)


def test_stack_inserts_a_new_dim():
    a = ts.tensor(A)
    for dim in range(-3, 3):
        assert_close(ts.stack([a, a + 1], dim), np.stack([A, A + 1], dim))
    assert ts.stack([ts.tensor(1.0), ts.tensor(2)]).tolist() == [1.0, 2.0]
    assert ts.stack([ts.zeros(0), ts.zeros(0)]).shape == (2, 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=4), st.integers(1, 3), st.data())
def test_cat_and_stack_match_numpy(shape, count, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(len(shape))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=count, max_size=count))
    parts = []
    for size in sizes:
        part_shape = list(shape)
        part_shape[dim] = size
        parts.append(rng.standard_normal(part_shape).astype(np.float32))
    assert_close(ts.cat([ts.tensor(p) for p in parts], dim), np.concatenate(parts, dim))
    same = [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]
    assert_close(ts.stack([ts.tensor(p) for p in same], dim), np.stack(same, dim))


def test_cat_and_stack_match_pytorch(oracle):
    parts = [A, B.astype(np.int32)[:, :1], np.ones((2, 1), np.float64)]
    assert_close(ts.cat([ts.tensor(p) for p in parts], 1), oracle.cat([oracle.tensor(p) for p in parts], 1))
    pairs = [np.array([1, 2], np.int64), np.array([True, False])]
    assert_close(ts.stack([ts.tensor(p) for p in pairs], 1), oracle.stack([oracle.tensor(p) for p in pairs], 1))
    empties = [A, np.zeros(0, np.float64)]
    assert_close(ts.cat([ts.tensor(p) for p in empties]), oracle.cat([oracle.tensor(p) for p in empties]))


@pytest.mark.parametrize("call, error, fragment", [
    (lambda: ts.cat([]), ValueError, "expected a non-empty list of Tensors"),
    (lambda: ts.cat([ts.tensor(1.0), ts.tensor(2.0)]), RuntimeError,
     "zero-dimensional tensor (at position 0) cannot be concatenated"),
    (lambda: ts.cat([ts.ones(2, 3), ts.ones(2, 2)]), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 2 for tensor number 1 in "
     "the list."),
    (lambda: ts.cat([ts.ones(2, 3), ts.ones(3)]), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 1"),
    (lambda: ts.cat([ts.ones(2, 3)], 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: ts.cat(ts.ones(2)), TypeError, "argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    (lambda: ts.cat([ts.ones(2), 1]), TypeError, "must be tuple of Tensors"),
    (lambda: ts.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda: ts.stack([ts.ones(2, 3), ts.ones(2, 3), ts.ones(3, 2)]), RuntimeError,
     "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] at entry 2"),
    (lambda: ts.stack([ts.ones(2, 3)], 3), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    (lambda: ts.stack([ts.ones(2, 3)], -4), IndexError, "but got -4"),
])
def test_errors(call, error, fragment):
    with pytest.raises(error) as info:
        call()
    assert fragment in str(info.value)
