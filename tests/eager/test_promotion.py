"""PyTorch type promotion: hand-written cases, and a property test against PyTorch when installed."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts

DTYPES = [ts.bool, ts.int32, ts.int64, ts.float32, ts.float64]


def make(dtype, dims):
    shape = (2,) * dims
    return ts.ones(shape, dtype=dtype)


@pytest.mark.parametrize("a, b, expected", [
    (ts.int64, ts.float32, ts.float32),
    (ts.int32, ts.int64, ts.int64),
    (ts.bool, ts.int32, ts.int32),
    (ts.float32, ts.float64, ts.float64),
    (ts.bool, ts.bool, ts.bool),
])
def test_tensor_tensor_promotion(a, b, expected):
    assert (make(a, 1) + make(b, 1)).dtype == expected
    assert (make(b, 1) * make(a, 1)).dtype == expected


@pytest.mark.parametrize("dtype, scalar, expected", [
    (ts.int32, 2, ts.int32),          # Python ints do not widen an int tensor
    (ts.int32, 2.5, ts.float32),      # a float scalar lifts ints to the default float dtype
    (ts.bool, 1, ts.int64),
    (ts.bool, 1.5, ts.float32),
    (ts.float32, 2.5, ts.float32),    # Python floats do not widen float32 to float64
    (ts.float64, 2, ts.float64),
    (ts.int64, True, ts.int64),
])
def test_scalar_promotion(dtype, scalar, expected):
    assert (make(dtype, 1) + scalar).dtype == expected
    assert (scalar * make(dtype, 1)).dtype == expected


def test_zero_dim_tensors_promote_only_across_categories():
    assert (make(ts.float32, 1) + make(ts.float64, 0)).dtype == ts.float32
    assert (make(ts.int32, 1) + make(ts.int64, 0)).dtype == ts.int32
    assert (make(ts.int32, 1) + make(ts.float64, 0)).dtype == ts.float64
    assert (make(ts.float32, 0) + make(ts.float64, 0)).dtype == ts.float64


def test_int_true_division_is_float_and_values_are_computed_in_result_dtype():
    x = ts.tensor([1, 2, 3]) / 2
    assert x.dtype == ts.float32
    np.testing.assert_array_equal(x.numpy(), np.array([0.5, 1.0, 1.5], np.float32))
    # 2**24 + 1 is not representable in float32: PyTorch compares in float32, so these are equal
    assert bool(ts.tensor([2 ** 24 + 1]) == ts.tensor([2.0 ** 24]))


def test_default_dtype_changes_float_creation_and_promotion():
    ts.set_default_dtype(ts.float64)
    try:
        assert ts.tensor([1.5]).dtype == ts.float64
        assert (ts.tensor([1]) + 0.5).dtype == ts.float64
        assert ts.get_default_dtype() == ts.float64
    finally:
        ts.set_default_dtype(ts.float32)
    assert ts.tensor([1.5]).dtype == ts.float32
    with pytest.raises(TypeError, match="floating"):
        ts.set_default_dtype(ts.int64)


@settings(max_examples=150, deadline=None)
@given(a=st.sampled_from(DTYPES), b=st.sampled_from(DTYPES), da=st.integers(0, 2), db=st.integers(0, 2),
       scalar=st.sampled_from([None, 3, 2.5, True]))
def test_promotion_matches_torch(a, b, da, db, scalar):
    torch = pytest.importorskip("torch")
    x, y = make(a, da), make(b, db)
    tx, ty = (torch.from_numpy(v.numpy().copy()) for v in (x, y))
    assert str((x * y).dtype).split(".")[-1] == str((tx * ty).dtype).split(".")[-1]
    if scalar is not None:
        assert str((x * scalar).dtype).split(".")[-1] == str((tx * scalar).dtype).split(".")[-1]
