"""Embedding (padding_idx, max_norm, scale_grad_by_freq, from_pretrained) against PyTorch and by
hand, and dropout (scaling, statistics, gradients, in-place, channel-wise forms, modes) with the
global RNG, plus reprs and error cases."""
import numpy as np
import pytest

import tscript as ts
import tscript.nn.functional as F
from tests.conftest import assert_close
from tscript import nn

RNG = np.random.default_rng(0)
W = RNG.standard_normal((6, 3)).astype(np.float32)
IDX = np.array([[0, 2, 2, 5], [1, 0, 2, 4]])


def _grads(oracle, ts_kwargs, idx=IDX, weight=W):
    """F.embedding in both libraries: outputs and weight gradients (of a non-uniform loss)."""
    a, b = ts.tensor(weight, requires_grad=True), oracle.tensor(weight, requires_grad=True)
    out_a = F.embedding(ts.tensor(idx), a, **ts_kwargs)
    out_b = oracle.nn.functional.embedding(oracle.tensor(idx), b, **ts_kwargs)
    assert_close(out_a, out_b)
    scale = np.arange(out_b.numel(), dtype=np.float32).reshape(tuple(out_b.shape)) / 10
    (out_a * ts.tensor(scale)).sum().backward()
    (out_b * oracle.tensor(scale)).sum().backward()
    assert_close(a.grad, b.grad)
    return a, b


@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 2}, {"padding_idx": -1}, {"scale_grad_by_freq": True},
                                    {"padding_idx": 0, "scale_grad_by_freq": True}])
def test_embedding_matches_pytorch(oracle, kwargs):
    _grads(oracle, kwargs)


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalises_looked_up_rows_like_pytorch(oracle, norm_type):
    weight = W * 3
    a, b = _grads(oracle, {"max_norm": 1.5, "norm_type": norm_type}, weight=weight)
    assert_close(a, b.detach())
    untouched = 3  # not looked up: left alone
    np.testing.assert_array_equal(a.detach().numpy()[untouched], weight[untouched])


def test_embedding_by_hand():
    w = ts.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    out = F.embedding(ts.tensor([[2, 0], [2, 2]], dtype=ts.int32), w, padding_idx=0)
    assert out.tolist() == [[[5.0, 6.0], [1.0, 2.0]], [[5.0, 6.0], [5.0, 6.0]]]
    out.sum().backward()
    assert w.grad.tolist() == [[0.0, 0.0], [0.0, 0.0], [3.0, 3.0]]  # no gradient into the padding row


def test_embedding_module_layout_init_and_state_dict_from_pytorch(oracle):
    ts.manual_seed(0)
    m = nn.Embedding(1000, 8, padding_idx=3)
    assert list(m.state_dict()) == ["weight"] and m.weight.shape == (1000, 8)
    w = m.weight.detach().numpy()
    assert (w[3] == 0).all() and abs(w.mean()) < 0.05 and abs(w.std() - 1) < 0.05  # N(0, 1)
    tm = oracle.nn.Embedding(10, 4, padding_idx=-2)
    small = nn.Embedding(10, 4, padding_idx=-2)
    assert small.padding_idx == 8 and tm.padding_idx == 8
    small.load_state_dict({k: ts.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    idx = np.array([1, 8, 9, 8])
    assert_close(small(ts.tensor(idx)), tm(oracle.tensor(idx)))


def test_embedding_reprs():
    assert repr(nn.Embedding(10, 3)) == "Embedding(10, 3)"
    assert repr(nn.Embedding(10, 3, padding_idx=-1, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True,
                             sparse=True)) == \
        "Embedding(10, 3, padding_idx=9, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, sparse=True)"


def test_from_pretrained_freezes_and_shares_values():
    weights = ts.tensor([[1.0, 2.0], [3.0, 4.0]])
    frozen = nn.Embedding.from_pretrained(weights)
    assert not frozen.weight.requires_grad and frozen(ts.tensor([1])).tolist() == [[3.0, 4.0]]
    assert frozen.num_embeddings == 2 and frozen.embedding_dim == 2
    trainable = nn.Embedding.from_pretrained(weights, freeze=False, padding_idx=0)
    assert trainable.weight.requires_grad and trainable.padding_idx == 0
    assert trainable.weight.tolist() == [[1.0, 2.0], [3.0, 4.0]]  # the padding row keeps its values
    trainable(ts.tensor([0, 1])).sum().backward()
    assert trainable.weight.grad.tolist() == [[0.0, 0.0], [1.0, 1.0]]


def test_embedding_errors():
    w = ts.ones(3, 2)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int; but got tscript.FloatTensor instead"):
        F.embedding(ts.tensor([0.5]), w)
    with pytest.raises(IndexError, match="out of"):
        F.embedding(ts.tensor([5]), w)
    with pytest.raises(IndexError, match="out of"):
        F.embedding(ts.tensor([-1]), w)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=-4)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(ts.tensor([1]), w, padding_idx=5)
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(ts.tensor([1]), ts.ones(3))
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(ts.ones(3))
    with pytest.raises(AssertionError, match="Shape of weight does not match num_embeddings and embedding_dim"):
        nn.Embedding(3, 2, _weight=ts.ones(2, 2))


# -- dropout -----------------------------------------------------------------------------------------

def test_dropout_statistics_scaling_and_gradient():
    ts.manual_seed(1)
    x = ts.ones(200, 500, requires_grad=True)
    out = F.dropout(x, p=0.3)
    values = out.detach().numpy()
    kept = values != 0
    assert abs(1 - kept.mean() - 0.3) < 0.01
    np.testing.assert_allclose(values[kept], 1 / 0.7, rtol=1e-6)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), values)  # d(out)/dx = mask / (1 - p)


def test_dropout_is_reproducible_with_manual_seed():
    ts.manual_seed(42)
    a = F.dropout(ts.ones(50))
    ts.manual_seed(42)
    b = F.dropout(ts.ones(50))
    c = F.dropout(ts.ones(50))
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()


def test_dropout_identity_cases():
    x = ts.tensor([1.0, 2.0, 3.0])
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.dropout(x, 1.0).tolist() == [0.0, 0.0, 0.0]
    assert F.dropout(ts.ones(0, 3), 0.5).shape == (0, 3)


def test_dropout_inplace_writes_into_input():
    ts.manual_seed(3)
    base = ts.ones(100, requires_grad=True)
    y = base * 2
    out = F.dropout(y, 0.5, inplace=True)
    assert out is y and set(np.unique(y.detach().numpy())) <= {0.0, 4.0}
    out.sum().backward()
    np.testing.assert_array_equal(base.grad.numpy(), y.detach().numpy())


def test_dropout_module_follows_training_mode_and_repr():
    m = nn.Dropout(0.4)
    assert repr(m) == "Dropout(p=0.4, inplace=False)"
    assert repr(nn.Dropout2d(0.2, True)) == "Dropout2d(p=0.2, inplace=True)"
    x = ts.ones(1000)
    assert (m(x).numpy() == 0).any()
    m.eval()
    assert m(x) is x


def test_channel_dropout_zeroes_whole_channels():
    ts.manual_seed(0)
    out2 = F.dropout2d(ts.ones(8, 16, 3, 3), 0.5).numpy()
    per_channel = out2.reshape(8, 16, 9)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    assert 0 < (per_channel == 0).all(-1).mean() < 1
    out1 = F.dropout1d(ts.ones(6, 5), 0.5).numpy()  # unbatched (C, L)
    assert ((out1 == 0).all(-1) | (out1 == 2).all(-1)).all()
    out3 = nn.Dropout3d(0.5)(ts.ones(2, 4, 2, 2, 2)).numpy().reshape(2, 4, 8)
    assert ((out3 == 0).all(-1) | (out3 == 2).all(-1)).all()
    assert nn.Dropout1d().eval()(ts.ones(2, 3)).tolist() == [[1.0] * 3] * 2


def test_dropout_errors_and_warnings():
    for p in (1.5, -0.1):
        with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, but got {p}"):
            F.dropout(ts.ones(2), p)
        with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, but got {p}"):
            nn.Dropout(p)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(ts.ones(1, 2, 3, 4))
    with pytest.warns(UserWarning, match="dropout2d: Received a 2-D input to dropout2d, which is deprecated"):
        F.dropout2d(ts.ones(2, 3))
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input to dropout2d"):
        F.dropout2d(ts.ones(2, 3, 4))
    with pytest.warns(UserWarning, match="dropout3d: Received a 3-D input to dropout3d"):
        F.dropout3d(ts.ones(2, 3, 4))
