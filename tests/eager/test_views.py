"""Views share memory and the version counter with their base, as in PyTorch; shapes as PyTorch's."""
import numpy as np
import pytest

import tscript as ts
from tests.conftest import assert_close


def base():
    return ts.arange(24, dtype=ts.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("make_view", [
    lambda t: t.view(6, 4), lambda t: t.view(-1), lambda t: t.transpose(0, 2), lambda t: t.permute(2, 0, 1),
    lambda t: t[0], lambda t: t.select(1, 2), lambda t: t.narrow(2, 1, 2), lambda t: t.unsqueeze(0),
    lambda t: t.flatten(), lambda t: t.reshape(4, 6), lambda t: t.unbind(1)[1], lambda t: t.split(2, dim=2)[1],
    lambda t: t.chunk(3, dim=1)[2], lambda t: t.detach(), lambda t: t.expand(2, 2, 3, 4)[1],
    lambda t: t.view(2, 3, 4, 1).squeeze(-1), lambda t: t.contiguous(), lambda t: t.T,
])
def test_views_share_memory_and_version(make_view):
    t = base()
    v = make_view(t)
    assert np.shares_memory(v.numpy(), t.numpy())
    before = t._version
    if not v.numpy().flags.writeable:  # expand gives a read-only view, as broadcast_to does
        return
    v.add_(1000)
    assert t._version == v._version == before + 1
    assert t.numpy().max() >= 1000


def test_writing_through_a_transposed_view_changes_the_base():
    t = ts.zeros(2, 3)
    t.t()[2].fill_(5)
    assert t.tolist() == [[0, 0, 5], [0, 0, 5]]


def test_view_requires_compatible_strides_but_reshape_copies():
    t = ts.arange(6).view(2, 3).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.view(6)
    r = t.reshape(6)
    assert r.tolist() == [0, 3, 1, 4, 2, 5]
    assert not np.shares_memory(r.numpy(), t.numpy())


def test_shapes_of_movement_ops():
    t = base()
    assert t.view(4, -1).shape == (4, 6)
    assert t.permute(2, 0, 1).shape == (4, 2, 3)
    assert t.transpose(-1, 0).shape == (4, 3, 2)
    assert t.unsqueeze(-1).shape == (2, 3, 4, 1)
    assert t.unsqueeze(0).squeeze().shape == (2, 3, 4)
    assert ts.zeros(1, 3, 1).squeeze((0, 2)).shape == (3,)
    assert ts.zeros(1, 3, 1).squeeze(1).shape == (1, 3, 1)   # non-size-1 dims stay
    assert t.flatten(1).shape == (2, 12)
    assert t.flatten(0, 1).shape == (6, 4)
    assert ts.tensor(5.0).flatten().shape == (1,)
    assert t.expand(5, 2, 3, 4).shape == (5, 2, 3, 4)
    assert ts.zeros(3, 1).expand(-1, 4).shape == (3, 4)
    assert ts.zeros(3, 1).expand_as(ts.zeros(2, 3, 5)).shape == (2, 3, 5)
    assert [p.shape for p in t.split([1, 3], dim=2)] == [(2, 3, 1), (2, 3, 3)]
    assert [p.shape[0] for p in ts.arange(10).chunk(4)] == [3, 3, 3, 1]
    assert [p.shape[0] for p in ts.arange(5).split(2)] == [2, 2, 1]
    assert len(t.unbind(2)) == 4 and t.unbind(2)[0].shape == (2, 3)
    assert ts.t(ts.zeros(3)).shape == (3,)
    assert ts.zeros(2, 3).T.shape == (3, 2)


def test_movement_values_match_numpy():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = ts.tensor(a)
    assert_close(t.permute(1, 2, 0), a.transpose(1, 2, 0))
    assert_close(t.narrow(1, 1, 2), a[:, 1:3])
    assert_close(t.select(2, -1), a[:, :, -1])
    assert_close(t.flip(0, 2), a[::-1, :, ::-1])
    assert_close(t.repeat(2, 1, 1, 2), np.tile(a, (2, 1, 1, 2)))
    assert_close(ts.tril(t), np.tril(a))
    assert_close(t.triu(1), np.triu(a, 1))
    assert_close(t.slice(2, 1, None, 2), a[:, :, 1::2])


def test_flip_and_repeat_copy():
    t = ts.arange(4)
    f = t.flip(0)
    assert f.tolist() == [3, 2, 1, 0]
    assert not np.shares_memory(f.numpy(), t.numpy())
    assert not np.shares_memory(t.repeat(2).numpy(), t.numpy())


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: ts.ones(6).view(7), RuntimeError, r"shape '\[7\]' is invalid for input of size 6"),
    (lambda: ts.ones(6).view(-1, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda: ts.ones(2, 3).permute(0), RuntimeError, "number of dimensions in the tensor input does not match"),
    (lambda: ts.ones(2, 3).permute(0, 0), RuntimeError, "duplicate dims"),
    (lambda: ts.ones(2, 3).transpose(0, 2), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda: ts.ones(2, 3).unsqueeze(3), IndexError, "Dimension out of range"),
    (lambda: ts.ones(2, 3).expand(4, 3, 2), RuntimeError, r"expanded size of the tensor \(3\) must match the existing size \(2\) at non-singleton dimension 1"),
    (lambda: ts.ones(2, 3, 4).t(), RuntimeError, "t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D"),
    (lambda: ts.ones(4).narrow(0, 2, 3), RuntimeError, r"start \(2\) \+ length \(3\) exceeds dimension size \(4\)"),
    (lambda: ts.ones(3, 4).select(0, 5), IndexError, r"index 5 out of range for tensor of size \[3, 4\] at dimension 0"),
    (lambda: ts.ones(3).split([1, 1]), RuntimeError, "split_sizes to sum exactly to 3"),
    (lambda: ts.ones(3).chunk(0), RuntimeError, "chunks` to be greater than 0"),
    (lambda: ts.ones(2, 2).repeat(2), RuntimeError, "repeat dims can not be smaller"),
    (lambda: ts.ones(3).tril(), RuntimeError, "at least 2 dimensions"),
    (lambda: ts.ones(2, 3).flatten(1, 0), RuntimeError, "start_dim cannot come after end_dim"),
])
def test_movement_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_numpy_and_from_numpy_share_memory():
    a = np.zeros(3, np.float32)
    t = ts.from_numpy(a)
    t.add_(1)
    assert a.tolist() == [1, 1, 1]
    a[0] = 5
    assert t.tolist() == [5, 1, 1]
    assert t.numpy() is a
    with pytest.raises(TypeError, match="numpy.uint16"):
        ts.from_numpy(np.zeros(2, np.uint16))


def test_to_returns_self_when_nothing_changes():
    t = ts.ones(2)
    assert t.to(ts.float32) is t
    assert t.to("cpu") is t
    assert t.contiguous() is t
    d = t.to(ts.float64)
    assert d.dtype == ts.float64 and not np.shares_memory(d.numpy(), t.numpy())
    assert t.double().dtype == ts.float64 and t.long().dtype == ts.int64 and t.int().dtype == ts.int32
    assert t.bool().dtype == ts.bool
    assert t.type_as(ts.tensor([1])).dtype == ts.int64
    with pytest.raises(RuntimeError, match="CPU only"):
        t.to("cuda")


def test_contiguous_keeps_zero_dim_tensors_zero_dim():
    """numpy's ascontiguousarray would make them 1-D (found by the pass property test)."""
    x = ts.tensor(2.5)
    assert x.contiguous().shape == () and x.contiguous().item() == 2.5
    assert ts.ones(3, 4).t().contiguous().is_contiguous()
