"""Creating tensors: from data, factories, random generators, and the Tensor's Python protocol."""
import numpy as np
import pytest

import tscript as ts
from tests.conftest import assert_close


def test_tensor_infers_dtype_like_pytorch():
    assert ts.tensor([1, 2]).dtype == ts.int64
    assert ts.tensor([1, 2.5]).dtype == ts.float32
    assert ts.tensor([True, False]).dtype == ts.bool
    assert ts.tensor(3).dtype == ts.int64 and ts.tensor(3).shape == ()
    assert ts.tensor(np.array([1.0])).dtype == ts.float64      # numpy arrays keep their dtype
    assert ts.tensor(np.array([1], np.int16)).dtype == ts.int16     # int16, uint8, float16 ... too
    assert ts.tensor([[1, 2], [3, 4]], dtype=ts.float64).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert ts.tensor([]).shape == (0,) and ts.tensor([]).dtype == ts.float32


def test_tensor_copies_but_as_tensor_and_from_numpy_share():
    a = np.ones(3, np.float32)
    t, s = ts.tensor(a), ts.as_tensor(a)
    a[0] = 7
    assert t.tolist() == [1, 1, 1] and s.tolist() == [7, 1, 1]
    x = ts.ones(2)
    assert ts.as_tensor(x) is x
    assert ts.as_tensor(x, dtype=ts.float64).dtype == ts.float64


@pytest.mark.parametrize("data, exc, msg", [
    ([[1, 2], [3]], ValueError, r"expected sequence of length 2 at dim 1 \(got 1\)"),
    ([1, "a"], TypeError, "str"),
    (["x"], TypeError, "str"),
])
def test_tensor_bad_data(data, exc, msg):
    with pytest.raises(exc, match=msg):
        ts.tensor(data)


def test_unknown_dtype_string():
    with pytest.raises(TypeError, match="unknown dtype 'float33'"):
        ts.zeros(2, dtype="float33")


def test_factories():
    assert ts.zeros(2, 3).tolist() == [[0, 0, 0], [0, 0, 0]]
    assert ts.zeros((2, 3)).shape == (2, 3)
    assert ts.ones([2], dtype=ts.int32).dtype == ts.int32
    assert ts.full((2,), 7).dtype == ts.int64 and ts.full((2,), 7.0).dtype == ts.float32
    assert ts.full((2, 1), True).dtype == ts.bool
    assert ts.empty(0, 4).shape == (0, 4)
    x = ts.ones(2, 3, dtype=ts.float64)
    assert ts.zeros_like(x).dtype == ts.float64 and ts.ones_like(x, dtype=ts.int32).dtype == ts.int32
    assert ts.full_like(x, 3).tolist() == [[3, 3, 3], [3, 3, 3]]
    assert x.new_zeros(4).dtype == ts.float64 and x.new_ones((1, 2)).shape == (1, 2)
    assert ts.empty_like(x).shape == (2, 3)


def test_arange_linspace_eye():
    assert ts.arange(5).tolist() == [0, 1, 2, 3, 4] and ts.arange(5).dtype == ts.int64
    assert ts.arange(1, 4, 0.5).dtype == ts.float32
    assert_close(ts.arange(1, 2.5, 0.5), np.array([1, 1.5, 2], np.float32))
    assert ts.arange(5, 0, -2).tolist() == [5, 3, 1]
    assert ts.arange(0, 1, 0.1).shape == (10,)
    assert_close(ts.linspace(0, 1, 5), np.linspace(0, 1, 5).astype(np.float32))
    assert ts.eye(3).tolist() == np.eye(3).tolist()
    assert ts.eye(2, 3, dtype=ts.int64).tolist() == [[1, 0, 0], [0, 1, 0]]
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ts.arange(0, 3, 0)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        ts.arange(0, 3, -1)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        ts.zeros(-1, 2)


def test_random_is_reproducible_and_well_distributed():
    ts.manual_seed(0)
    a = ts.rand(1000)
    ts.manual_seed(0)
    assert ts.rand(1000).tolist() == a.tolist()
    assert 0 <= a.numpy().min() and a.numpy().max() < 1 and abs(a.numpy().mean() - 0.5) < 0.05
    n = ts.randn(20000)
    assert n.dtype == ts.float32 and abs(n.numpy().mean()) < 0.05 and abs(n.numpy().std() - 1) < 0.05
    r = ts.randint(3, 7, (1000,))
    assert r.dtype == ts.int64 and set(r.tolist()) == {3, 4, 5, 6}
    assert ts.randint(5, (3, 2)).shape == (3, 2)
    assert sorted(ts.randperm(10).tolist()) == list(range(10))
    g = ts.Generator().manual_seed(42)
    g2 = ts.Generator().manual_seed(42)
    assert ts.randn(5, generator=g).tolist() == ts.randn(5, generator=g2).tolist()
    assert ts.rand_like(ts.ones(2, dtype=ts.float64)).dtype == ts.float64
    with pytest.raises(RuntimeError, match="floating point dtype"):
        ts.rand(2, dtype=ts.int64)
    with pytest.raises(RuntimeError, match="from=5 >= to=5"):
        ts.randint(5, 5, (2,))


def test_inplace_random_fills():
    ts.manual_seed(1)
    x = ts.empty(10000).uniform_(-2, 2)
    assert -2 <= x.numpy().min() and x.numpy().max() <= 2
    y = ts.empty(10000).normal_(3, 0.5)
    assert abs(y.numpy().mean() - 3) < 0.05 and abs(y.numpy().std() - 0.5) < 0.05


def test_python_protocol():
    t = ts.tensor([[1.5, 2.0], [3.0, 4.0]])
    assert t.shape == ts.Size([2, 2]) and repr(t.shape) == "tscript.Size([2, 2])"
    assert t.size() == (2, 2) and t.size(-1) == 2 and t.dim() == 2 and t.ndim == 2 and t.numel() == 4
    assert len(t) == 2 and [r.tolist() for r in t] == [[1.5, 2.0], [3.0, 4.0]]
    assert ts.tensor(2.5).item() == 2.5 and float(ts.tensor([2.5])) == 2.5 and int(ts.tensor(3)) == 3
    assert bool(ts.tensor([True])) and not bool(ts.tensor(0))
    assert [10, 20, 30][ts.tensor(1)] == 20
    assert t.device == ts.device("cpu") and str(t.device) == "cpu"
    assert t.is_floating_point() and not ts.tensor([1]).is_floating_point()
    assert t.stride() == (2, 1) and t.t().stride() == (1, 2) and t.is_contiguous() and not t.t().is_contiguous()
    assert np.asarray(t).shape == (2, 2)
    with pytest.raises(RuntimeError, match="a Tensor with 4 elements cannot be converted to Scalar"):
        t.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(t)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ts.tensor(1.0))
    with pytest.raises(RuntimeError, match="CPU only"):
        ts.zeros(1, device="cuda:0")  # naming the device is fine (as in PyTorch), using it raises


def test_repr_like_pytorch():
    assert repr(ts.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(ts.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(ts.tensor([0.5, 1.25])) == "tensor([0.5000, 1.2500])"
    assert repr(ts.tensor([1, 2], dtype=ts.int32)) == "tensor([1, 2], dtype=tscript.int32)"
    assert repr(ts.tensor([1.0], dtype=ts.float64)) == "tensor([1.], dtype=tscript.float64)"
    assert repr(ts.tensor([True, False])) == "tensor([ True, False])"
    assert repr(ts.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(ts.ones(1, requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(ts.float32) == "tscript.float32"


def test_requires_grad_flag_rules():
    assert ts.ones(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ts.ones(2, dtype=ts.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        ts.ones(2, requires_grad=True).numpy()
