"""numpy and friends: arrays as operator operands on either side, `tensor(t)` copying with PyTorch's
warning, arrays keeping their dtype, and DLPack both ways sharing memory (proved by writing through
one side and reading the other)."""
import operator
import warnings

import numpy as np
import pytest

import tscript as ts

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
          operator.pow, operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("array_first", [False, True], ids=["tensor_op_array", "array_op_tensor"])
def test_every_operator_takes_an_array_on_either_side_and_gives_a_tensor(op, array_first):
    t = ts.tensor([1.5, 2.0, 3.0, -4.0])
    a = np.array([0.5, 2.0, 4.0, 3.0], dtype=np.float32)
    got = op(a, t) if array_first else op(t, a)
    want = op(a, t.numpy()) if array_first else op(t.numpy(), a)
    assert isinstance(got, ts.Tensor)
    assert got.numpy().dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor], ids=lambda f: f.__name__)
def test_bitwise_operators_take_bool_arrays_on_either_side(op):
    t, a = ts.tensor([True, True, False, False]), np.array([True, False, True, False])
    for got in (op(t, a), op(a, t)):
        assert isinstance(got, ts.Tensor) and got.tolist() == op(t.numpy(), a).tolist()


def test_matmul_takes_an_array_on_either_side():
    m, a = ts.ones(2, 3), np.arange(6, dtype=np.float32).reshape(3, 2)
    assert isinstance(m @ a, ts.Tensor) and (m @ a).tolist() == (m.numpy() @ a).tolist()
    assert isinstance(a @ m, ts.Tensor) and (a @ m).tolist() == (a @ m.numpy()).tolist()


def test_the_array_takes_part_in_promotion_as_a_tensor():
    t = ts.ones(3)
    assert (t + np.ones(3)).dtype == ts.float64            # a float64 array is a float64 tensor
    assert (t + np.ones(3, dtype=np.int64)).dtype == ts.float32   # int does not promote a float tensor
    assert (ts.ones(3, dtype=ts.int32) + np.ones(3, dtype=np.int64)).dtype == ts.int64
    assert (t + np.array(2.0)).dtype == ts.float32         # a 0-d float64 array: a 0-d tensor, same category


def test_gradients_flow_through_an_operator_with_an_array():
    x = ts.ones(3, requires_grad=True)
    (np.array([1.0, 2.0, 3.0], dtype=np.float32) * x).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0]


def test_in_place_operators_take_arrays():
    t = ts.zeros(3)
    t += np.arange(3, dtype=np.float32)
    t *= np.full(3, 2.0, dtype=np.float32)
    assert t.tolist() == [0.0, 2.0, 4.0] and t._version == 2


def test_numpy_scalars_are_scalars():
    t = ts.ones(3)
    for s in (np.float64(2), np.int64(2), np.float32(2)):
        assert isinstance(t * s, ts.Tensor) and (t * s).dtype == ts.float32 and (s * t).tolist() == [2.0] * 3


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's __array_wrap__ under numpy 2
def test_array_operands_match_torch_where_torch_computes_them(oracle):
    """PyTorch 2.13 runs `tensor op array` in numpy and wraps the result; for float arrays that is what
    tscript computes as a tensor op (for int arrays numpy's promotion differs: tscript keeps PyTorch's)."""
    t, a = ts.tensor([1.0, -2.0, 3.0]), np.array([2.0, 4.0, 0.5])
    pt = oracle.tensor([1.0, -2.0, 3.0])
    for op in (operator.add, operator.mul, operator.sub, operator.truediv, operator.eq):
        ours, theirs = op(t, a), op(pt, a)
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
        np.testing.assert_allclose(ours.numpy(), theirs.numpy())
    np.testing.assert_allclose((a / t).numpy(), (a / pt).numpy())


def test_tensor_of_a_tensor_copies_with_pytorchs_warning():
    src = ts.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"recommended to use sourceTensor.detach\(\).clone\(\)"):
        copy = ts.tensor(src)
    copy[0] = 5.0
    assert src.tolist() == [1.0, 2.0] and not copy.requires_grad and copy.is_leaf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ts.as_tensor(src)  # no copy, no warning
        ts.tensor(np.ones(2))


def test_tensor_of_a_tensor_warns_like_torch(oracle):
    with pytest.warns(UserWarning) as ours:
        ts.tensor(ts.ones(2))
    with pytest.warns(UserWarning) as theirs:
        oracle.tensor(oracle.ones(2))
    assert str(ours[0].message).split(", rather than")[0] == str(theirs[0].message).split(", rather than")[0]


@pytest.mark.parametrize("np_dtype, dtype", [(np.float32, ts.float32), (np.float64, ts.float64),
                                             (np.int32, ts.int32), (np.int64, ts.int64), (np.bool_, ts.bool)])
def test_arrays_keep_their_dtype(np_dtype, dtype):
    a = np.arange(4).astype(np_dtype)
    for make in (ts.tensor, ts.as_tensor, ts.from_numpy):
        assert make(a).dtype == dtype
    shared = ts.as_tensor(a)
    shared[1] = 0
    assert a[1] == 0 and ts.from_numpy(a).numpy() is a


# -- DLPack ---------------------------------------------------------------------------------------------------

def test_numpy_from_dlpack_shares_the_tensors_memory():
    t = ts.arange(6.0).view(2, 3)
    a = np.from_dlpack(t)
    a[0, 1] = 42.0
    assert t[0, 1].item() == 42.0
    t[1, 2] = -1.0
    assert a[1, 2] == -1.0
    assert t.__dlpack_device__() == (1, 0)


def test_views_export_with_their_strides():
    t = ts.arange(12.0).view(3, 4)
    a = np.from_dlpack(t.t())
    assert a.shape == (4, 3) and a.strides == (4, 16)
    a[3, 0] = 100.0
    assert t[0, 3].item() == 100.0


def test_from_dlpack_shares_the_arrays_memory():
    a = np.arange(4, dtype=np.int32)
    t = ts.from_dlpack(a)
    assert t.dtype == ts.int32
    t[0] = 11
    assert a[0] == 11
    a[3] = -3
    assert t[3].item() == -3


def test_capsules_round_trip_through_utils_dlpack_and_are_consumed_once():
    t = ts.tensor([1.0, 2.0, 3.0])
    capsule = ts.utils.dlpack.to_dlpack(t)
    u = ts.utils.dlpack.from_dlpack(capsule)
    u[2] = 9.0  # an unversioned capsule's memory is writable, as for PyTorch
    assert t.tolist() == [1.0, 2.0, 9.0]
    with pytest.raises(RuntimeError, match="consumed only once"):
        ts.from_dlpack(capsule)


def test_bool_tensors_export():
    a = np.from_dlpack(ts.tensor([True, False]))
    assert a.dtype == np.bool_ and a.tolist() == [True, False]


def test_dlpack_errors():
    with pytest.raises(BufferError, match="require gradient"):
        np.from_dlpack(ts.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        ts.from_dlpack([1.0, 2.0])
    with pytest.raises(TypeError, match="not supported"):
        ts.from_dlpack(np.zeros(2, dtype=np.uint16))
    with pytest.raises(TypeError, match="expected a Tensor"):
        ts.utils.dlpack.to_dlpack(np.ones(2))


def test_dlpack_shares_memory_with_torch_both_ways(oracle):
    t = ts.arange(6.0).view(2, 3)
    pt = oracle.from_dlpack(t)
    pt[0, 0] = 7.0
    assert t[0, 0].item() == 7.0
    back = ts.from_dlpack(pt)
    back[1, 1] = 9.0
    assert pt[1, 1].item() == 9.0
    legacy = ts.from_dlpack(oracle.utils.dlpack.to_dlpack(pt))
    legacy[0, 2] = 5.0
    assert pt[0, 2].item() == 5.0 and t[0, 2].item() == 5.0
    theirs = oracle.utils.dlpack.from_dlpack(ts.utils.dlpack.to_dlpack(t))
    theirs[1, 2] = 3.0
    assert t[1, 2].item() == 3.0
