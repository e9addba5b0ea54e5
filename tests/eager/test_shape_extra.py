"""Shape functions of issue 18: meshgrid, repeat_interleave, tile, roll, unflatten, diff, tensor_split,
diag, cartesian_prod, pad_sequence, searchsorted, bucketize. By hand, then against PyTorch when it is
installed (values, dtypes, errors), gradients by gradcheck and against PyTorch."""
import warnings

import numpy as np
import pytest

import tscript as ts
from tests.conftest import assert_close
from tscript.autograd import gradcheck, gradgradcheck
from tscript.nn.utils.rnn import pad_sequence

A = np.arange(6).reshape(2, 3)
F = np.random.default_rng(7).standard_normal((2, 3, 4)).astype(np.float32)


def _tensors(lib, *arrays):
    return [lib.tensor(a) for a in arrays]


# -- meshgrid ---------------------------------------------------------------------------------------

def test_meshgrid_by_hand():
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        x, y = ts.meshgrid(ts.tensor([1, 2]), ts.tensor([3, 4, 5]))
    assert x.tolist() == [[1, 1, 1], [2, 2, 2]] and y.tolist() == [[3, 4, 5], [3, 4, 5]]
    x, y = ts.meshgrid([ts.tensor([1, 2]), ts.tensor([3, 4, 5])], indexing="xy")
    assert x.tolist() == [[1, 2], [1, 2], [1, 2]] and y.tolist() == [[3, 3], [4, 4], [5, 5]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (only,) = ts.meshgrid(ts.tensor(7), indexing="ij")
    assert only.tolist() == [7]


def test_meshgrid_errors():
    with pytest.raises(RuntimeError, match="same dtype"):
        ts.meshgrid(ts.arange(2), ts.ones(3), indexing="ij")
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor"):
        ts.meshgrid(ts.ones(2, 2), indexing="ij")
    with pytest.raises(RuntimeError, match="non-empty TensorList"):
        ts.meshgrid(indexing="ij")
    with pytest.raises(RuntimeError, match='indexing must be one of "xy" or "ij", but received: foo'):
        ts.meshgrid(ts.arange(2), indexing="foo")


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("sizes", [(2,), (2, 3), (3, 1, 4), (2, 0)])
def test_meshgrid_matches_torch(indexing, sizes, oracle):
    arrays = [np.arange(n, dtype=np.float32) * (k + 1) for k, n in enumerate(sizes)]
    got = ts.meshgrid(*_tensors(ts, *arrays), indexing=indexing)
    expected = oracle.meshgrid(*_tensors(oracle, *arrays), indexing=indexing)
    for g, e in zip(got, expected):
        assert_close(g, e)


def test_meshgrid_gradient_and_views(oracle):
    a, b = ts.tensor([1.0, 2.0], requires_grad=True), ts.tensor([3.0, 4.0, 5.0], requires_grad=True)
    x, y = ts.meshgrid(a, b, indexing="xy")
    (x * y).sum().backward()
    oa, ob = oracle.tensor([1.0, 2.0], requires_grad=True), oracle.tensor([3.0, 4.0, 5.0], requires_grad=True)
    ox, oy = oracle.meshgrid(oa, ob, indexing="xy")
    (ox * oy).sum().backward()
    assert_close(a.grad, oa.grad)
    assert_close(b.grad, ob.grad)
    assert x._base is not None  # expanded views, as PyTorch's


# -- repeat_interleave ---------------------------------------------------------------------------------

def test_repeat_interleave_by_hand():
    x = ts.tensor(A)
    assert x.repeat_interleave(2).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert x.repeat_interleave(2, dim=1).tolist() == [[0, 0, 1, 1, 2, 2], [3, 3, 4, 4, 5, 5]]
    assert x.repeat_interleave(ts.tensor([1, 2]), dim=0).tolist() == [[0, 1, 2], [3, 4, 5], [3, 4, 5]]
    assert ts.repeat_interleave(ts.tensor([1, 2, 3])).tolist() == [0, 1, 1, 2, 2, 2]
    assert x.repeat_interleave(ts.tensor([2]), dim=1).shape == (2, 6)
    assert ts.tensor(5).repeat_interleave(3).tolist() == [5, 5, 5]
    assert ts.repeat_interleave(x, repeats=2, dim=0, output_size=4).shape == (4, 3)
    assert ts.repeat_interleave(ts.tensor([1, 2], dtype=ts.int32)).dtype == ts.int32


@pytest.mark.parametrize("call, error, match", [
    (lambda x: x.repeat_interleave(-1), RuntimeError, "Repeats must be non-negative"),
    (lambda x: x.repeat_interleave(ts.tensor([1, -2]), dim=0), RuntimeError, "repeats can not be negative"),
    (lambda x: x.repeat_interleave(ts.tensor([1.0, 2.0]), dim=0), NotImplementedError, "repeat_interleave_cpu"),
    (lambda x: x.repeat_interleave(ts.tensor([1, 2, 3])), RuntimeError, "repeats.size\\(0\\) = 3 and input.size\\(0\\) = 6"),
    (lambda x: x.repeat_interleave(ts.tensor([[1, 2]]), dim=0), RuntimeError, "0-dim or 1-dim"),
    (lambda x: x.repeat_interleave(ts.tensor([1, 2]), dim=0, output_size=4), RuntimeError, "allocated size"),
    (lambda x: x.repeat_interleave(2, dim=0, output_size=5), RuntimeError, "Invalid output_size, expected 4 but got 5"),
    (lambda x: x.repeat_interleave(2, dim=5), IndexError, "Dimension out of range"),
    (lambda x: ts.repeat_interleave(ts.tensor([[1, 2]])), RuntimeError, "only accept 1D vector"),
])
def test_repeat_interleave_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(ts.tensor(A))


@pytest.mark.parametrize("repeats, dim", [(3, None), (2, 0), (1, -1), (0, 1), ("tensor", 1), ("tensor", 2), ("one", 0)])
def test_repeat_interleave_matches_torch(repeats, dim, oracle):
    def call(lib):
        r = repeats
        if r == "tensor":
            r = lib.tensor([1, 0, 2, 3][:F.shape[dim]])
        elif r == "one":
            r = lib.tensor(2)
        x = lib.tensor(F, requires_grad=True)
        out = x.repeat_interleave(r, dim=dim)
        (out * lib.arange(out.numel(), dtype=lib.float32).reshape(out.shape)).sum().backward()
        return out, x.grad
    for g, e in zip(call(ts), call(oracle)):
        assert_close(g, e)


def test_repeat_interleave_gradcheck():
    x = ts.tensor(F.astype(np.float64), requires_grad=True)
    assert gradcheck(lambda t: t.repeat_interleave(ts.tensor([2, 0, 1]), dim=1), (x,))
    assert gradgradcheck(lambda t: t.repeat_interleave(2, dim=2), (x,))


# -- tile, roll, unflatten, diff ---------------------------------------------------------------------------

def test_tile_roll_by_hand():
    x = ts.tensor(A)
    assert x.tile(2).tolist() == [[0, 1, 2, 0, 1, 2], [3, 4, 5, 3, 4, 5]]
    assert ts.tile(x, (2, 1, 1)).shape == (2, 2, 3) and x.tile(2, 2).shape == (4, 6) and x.tile(()).shape == (2, 3)
    assert ts.roll(x, 1).tolist() == [[5, 0, 1], [2, 3, 4]]
    assert x.roll(1, 1).tolist() == [[2, 0, 1], [5, 3, 4]]
    assert ts.roll(x, (1, -1), (0, 1)).tolist() == [[4, 5, 3], [1, 2, 0]]
    assert ts.roll(x, shifts=(1,), dims=None).tolist() == [[5, 0, 1], [2, 3, 4]]
    assert ts.roll(ts.tensor(3), 1).tolist() == 3 and ts.roll(ts.ones(0), 1).shape == (0,)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, dims:1"):
        ts.roll(x, (1, 2), 0)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, dims:0"):
        ts.roll(x, (1, 1))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ts.roll(x, 1, 2)
    with pytest.raises(RuntimeError, match="negative dimension"):
        x.tile(-1)


@pytest.mark.parametrize("shifts, dims", [(1, None), (-7, None), (2, 0), ((1, -3), (1, 2)), ((5,), (-1,)), (0, 1)])
def test_roll_matches_torch(shifts, dims, oracle):
    outs = []
    for lib in (ts, oracle):
        x = lib.tensor(F, requires_grad=True)
        out = lib.roll(x, shifts, dims) if dims is not None else lib.roll(x, shifts)
        (out * lib.arange(out.numel(), dtype=lib.float32).reshape(out.shape)).sum().backward()
        outs.append((out, x.grad))
    for g, e in zip(*outs):
        assert_close(g, e)
    assert gradgradcheck(lambda t: ts.roll(t, shifts, dims), (ts.tensor(F.astype(np.float64), requires_grad=True),))


@pytest.mark.parametrize("dims", [(2,), (1, 2), (2, 1, 1), (3, 1, 1, 2), ()])
def test_tile_matches_torch(dims, oracle):
    assert_close(ts.tile(ts.tensor(F), dims), oracle.tile(oracle.tensor(F), dims))
    x = ts.tensor(F.astype(np.float64), requires_grad=True)
    assert gradcheck(lambda t: t.tile(dims), (x,))


def test_unflatten_and_diff(oracle):
    x = ts.tensor(F)
    assert x.unflatten(2, (2, 2)).shape == (2, 3, 2, 2) and ts.unflatten(x, -1, (-1, 1)).shape == (2, 3, 4, 1)
    with pytest.raises(RuntimeError, match="don't multiply up"):
        x.unflatten(1, (2, 2))
    assert ts.tensor([1, 4, 9, 16]).diff().tolist() == [3, 5, 7]
    assert ts.tensor([1, 4, 9, 16]).diff(n=2).tolist() == [2, 2]
    assert ts.tensor([True, False, False]).diff().tolist() == [True, False]
    for kwargs in ({}, {"n": 2, "dim": 1}, {"dim": 0}, {"prepend": F[:, :, :1], "append": F[:, :, :2]}):
        kw = {k: ts.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        okw = {k: oracle.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        assert_close(ts.diff(x, **kw), oracle.diff(oracle.tensor(F), **okw))
    assert gradcheck(lambda t: t.diff(n=2), (ts.tensor(F.astype(np.float64), requires_grad=True),))


# -- tensor_split, diag, cartesian_prod ----------------------------------------------------------------------

@pytest.mark.parametrize("arg", [3, 1, 5, 8, [1, 5], [2, 2, 9], [-2], "tensor"])
@pytest.mark.parametrize("dim", [0, -1])
def test_tensor_split_matches_torch(arg, dim, oracle):
    x = np.arange(7 * 2).reshape(7, 2).T.copy() if dim == -1 else np.arange(7 * 2).reshape(7, 2)
    got = ts.tensor_split(ts.tensor(x), ts.tensor(3) if arg == "tensor" else arg, dim)
    expected = oracle.tensor_split(oracle.tensor(x), oracle.tensor(3) if arg == "tensor" else arg, dim)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert_close(g, e)


def test_tensor_split_errors():
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0, got 0"):
        ts.tensor_split(ts.arange(7), 0)
    with pytest.raises(RuntimeError, match="at least a 1-dimensional tensor"):
        ts.tensor_split(ts.tensor(1), 2)


@pytest.mark.parametrize("shape", [(3,), (1,), (2, 3), (3, 2), (4, 4)])
@pytest.mark.parametrize("offset", [0, 1, -1, 2, -3])
def test_diag_matches_torch(shape, offset, oracle):
    arr = np.arange(1, np.prod(shape) + 1).reshape(shape).astype(np.float32)
    assert_close(ts.diag(ts.tensor(arr), offset), oracle.diag(oracle.tensor(arr), offset))
    x = ts.tensor(arr.astype(np.float64), requires_grad=True)
    assert gradcheck(lambda t: ts.diag(t, offset), (x,))


def test_diag_error_and_cartesian_prod(oracle):
    with pytest.raises(RuntimeError, match="Supports 1D or 2D tensors. Got 3D"):
        ts.diag(ts.ones(2, 2, 2))
    a, b, c = np.array([1, 2]), np.array([3, 4, 5]), np.array([6])
    assert_close(ts.cartesian_prod(*_tensors(ts, a, b, c)), oracle.cartesian_prod(*_tensors(oracle, a, b, c)))
    assert_close(ts.cartesian_prod(ts.tensor(a)), oracle.cartesian_prod(oracle.tensor(a)))


# -- pad_sequence ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch(batch_first, padding_side, oracle):
    from torch.nn.utils.rnn import pad_sequence as torch_pad
    arrays = [F[0, :2], F[1], F[0, :1]]
    got = pad_sequence(_tensors(ts, *arrays), batch_first=batch_first, padding_value=-1.5, padding_side=padding_side)
    assert_close(got, torch_pad(_tensors(oracle, *arrays), batch_first, -1.5, padding_side))


def test_pad_sequence_by_hand_and_gradient():
    a, b = ts.tensor([1.0, 2.0], requires_grad=True), ts.tensor([3.0], requires_grad=True)
    out = ts.nn.utils.rnn.pad_sequence([a, b])
    assert out.tolist() == [[1.0, 3.0], [2.0, 0.0]]
    (out * ts.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert a.grad.tolist() == [1.0, 3.0] and b.grad.tolist() == [2.0]
    with pytest.raises(RuntimeError, match="empty list"):
        pad_sequence([])


# -- searchsorted, bucketize ------------------------------------------------------------------------------

def test_searchsorted_bucketize_by_hand():
    bounds = ts.tensor([1, 3, 5, 7])
    assert ts.bucketize(ts.tensor([1, 5, 9]), bounds).tolist() == [0, 2, 4]
    assert ts.bucketize(ts.tensor([1, 5, 9]), bounds, right=True).tolist() == [1, 3, 4]
    assert ts.searchsorted(ts.tensor([[1, 3, 5], [2, 4, 6]]), ts.tensor([[3], [3]])).tolist() == [[1], [1]]
    assert ts.searchsorted(ts.tensor([1, 3, 5]), ts.tensor([3, 6]), side="right").tolist() == [2, 3]
    assert ts.searchsorted(bounds, 4).tolist() == 2
    assert ts.bucketize(ts.tensor([2]), bounds, out_int32=True).dtype == ts.int32
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        ts.searchsorted(bounds, ts.tensor([1]), right=True, side="left")
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        ts.bucketize(ts.tensor([1]), ts.ones(2, 2))


@pytest.mark.parametrize("kwargs", [{}, {"right": True}, {"side": "right"}, {"out_int32": True}])
def test_searchsorted_matches_torch(kwargs, oracle):
    seq = np.sort(F.reshape(6, 4), axis=1)
    values = F.reshape(6, 4)[::-1].copy()
    assert_close(ts.searchsorted(ts.tensor(seq), ts.tensor(values), **kwargs),
                 oracle.searchsorted(oracle.tensor(seq), oracle.tensor(values), **kwargs))
    assert_close(ts.searchsorted(ts.tensor(seq[0]), ts.tensor(values), **kwargs),
                 oracle.searchsorted(oracle.tensor(seq[0]), oracle.tensor(values), **kwargs))
    sorter = np.argsort(F.reshape(6, 4), axis=1)
    assert_close(ts.searchsorted(ts.tensor(F.reshape(6, 4)), ts.tensor(values), sorter=ts.tensor(sorter), **kwargs),
                 oracle.searchsorted(oracle.tensor(F.reshape(6, 4)), oracle.tensor(values), sorter=oracle.tensor(sorter),
                                     **kwargs))
    if "side" not in kwargs:
        assert_close(ts.bucketize(ts.tensor(values), ts.tensor(seq[0]), **kwargs),
                     oracle.bucketize(oracle.tensor(values), oracle.tensor(seq[0]), **kwargs))
