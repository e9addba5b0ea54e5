"""Normalization: batch_norm (training and eval, running statistics with momentum and the
cumulative average), layer_norm, group_norm and rms_norm, functional and modules, against PyTorch
(outputs, gradients of input and parameters, running stats after several steps) and numpy, plus
reprs, state_dict names, double backward and error cases."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
import tscript.nn.functional as F
from tests.conftest import assert_close
from tscript import nn
from tscript.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def _x(*shape, scale=1.0, shift=0.0):
    return (RNG.standard_normal(shape) * scale + shift).astype(np.float32)


def _copy_state(module, torch_module):
    module.load_state_dict({k: ts.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()})


def _perturb(module, torch_module, oracle):
    """Give the affine parameters non-trivial values, identical in both modules."""
    with oracle.no_grad():
        for p in torch_module.parameters():
            p.copy_(oracle.tensor(RNG.standard_normal(tuple(p.shape)).astype(np.float32)))
    _copy_state(module, torch_module)


def _step(module, torch_module, x, oracle):
    """One forward/backward in both; compares outputs and input gradients, returns nothing."""
    a, b = ts.tensor(x, requires_grad=True), oracle.tensor(x, requires_grad=True)
    out_a, out_b = module(a), torch_module(b)
    assert_close(out_a, out_b, rtol=1e-4, atol=1e-5)
    weights = np.linspace(-1, 1, out_b.numel()).reshape(tuple(out_b.shape)).astype(np.float32)
    (out_a * ts.tensor(weights)).sum().backward()
    (out_b * oracle.tensor(weights)).sum().backward()
    assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)


def _compare_state(module, torch_module):
    for (name, p), (tname, tp) in zip(module.named_parameters(), torch_module.named_parameters()):
        assert name == tname
        assert_close(p.grad, tp.grad, rtol=1e-4, atol=1e-5)
    for (name, b), (tname, tb) in zip(module.named_buffers(), torch_module.named_buffers()):
        assert name == tname
        assert_close(b, tb, rtol=1e-5, atol=1e-6)


# -- batch norm -------------------------------------------------------------------------------------

@pytest.mark.parametrize("cls, shape", [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)),
                                        ("BatchNorm2d", (4, 3, 5, 2)), ("BatchNorm3d", (2, 3, 2, 3, 2))])
@pytest.mark.parametrize("momentum", [0.1, None, 0.5])
def test_batchnorm_training_steps_and_eval_match_pytorch(oracle, cls, shape, momentum):
    module, torch_module = getattr(nn, cls)(3, momentum=momentum), getattr(oracle.nn, cls)(3, momentum=momentum)
    _perturb(module, torch_module, oracle)
    for step in range(3):
        module.zero_grad()
        torch_module.zero_grad()
        _step(module, torch_module, _x(*shape, scale=1 + step, shift=step), oracle)
        _compare_state(module, torch_module)
    assert module.num_batches_tracked.item() == 3 and module.num_batches_tracked.dtype == ts.int64
    module.eval()
    torch_module.eval()
    _step(module, torch_module, _x(*shape), oracle)
    _compare_state(module, torch_module)


@pytest.mark.parametrize("kwargs", [dict(affine=False), dict(track_running_stats=False), dict(bias=False),
                                    dict(affine=False, track_running_stats=False), dict(eps=1e-2)])
def test_batchnorm_options_match_pytorch(oracle, kwargs):
    module, torch_module = nn.BatchNorm2d(3, **kwargs), oracle.nn.BatchNorm2d(3, **kwargs)
    assert [n for n, _ in module.named_parameters()] == [n for n, _ in torch_module.named_parameters()]
    assert list(module.state_dict()) == list(torch_module.state_dict())
    _perturb(module, torch_module, oracle)
    x = _x(2, 3, 4, 4, shift=1.0)
    _step(module, torch_module, x, oracle)
    _compare_state(module, torch_module)
    module.eval()
    torch_module.eval()
    _step(module, torch_module, x, oracle)  # without running stats, eval also uses the batch's


def test_functional_batch_norm_matches_pytorch(oracle):
    x = _x(5, 4, 3)
    w, b = _x(4), _x(4)
    rm, rv = np.zeros(4, np.float32), np.ones(4, np.float32)
    ts_rm, ts_rv, t_rm, t_rv = ts.tensor(rm), ts.tensor(rv), oracle.tensor(rm), oracle.tensor(rv)
    args = [ts.tensor(x, requires_grad=True), ts.tensor(w, requires_grad=True), ts.tensor(b, requires_grad=True)]
    targs = [oracle.tensor(v, requires_grad=True) for v in (x, w, b)]
    out = F.batch_norm(args[0], ts_rm, ts_rv, args[1], args[2], training=True, momentum=0.3, eps=1e-3)
    tout = oracle.nn.functional.batch_norm(targs[0], t_rm, t_rv, targs[1], targs[2], training=True, momentum=0.3,
                                           eps=1e-3)
    assert_close(out, tout, rtol=1e-4, atol=1e-5)
    (out ** 3).sum().backward()
    (tout ** 3).sum().backward()
    for a, t in zip(args, targs):
        assert_close(a.grad, t.grad, rtol=1e-4, atol=1e-4)
    assert_close(ts_rm, t_rm)
    assert_close(ts_rv, t_rv)
    eval_out = F.batch_norm(ts.tensor(x), ts_rm, ts_rv, ts.tensor(w), ts.tensor(b))
    t_eval = oracle.nn.functional.batch_norm(oracle.tensor(x), t_rm, t_rv, oracle.tensor(w), oracle.tensor(b))
    assert_close(eval_out, t_eval, rtol=1e-4, atol=1e-5)


def test_batch_norm_by_hand():
    x = np.array([[1.0, 10.0], [3.0, 20.0], [5.0, 60.0]])
    rm, rv = ts.zeros(2, dtype=ts.float64), ts.ones(2, dtype=ts.float64)
    out = F.batch_norm(ts.tensor(x), rm, rv, training=True, momentum=0.25, eps=0.0)
    mean, var = x.mean(0), x.var(0)
    np.testing.assert_allclose(out.numpy(), (x - mean) / np.sqrt(var), rtol=1e-12)
    np.testing.assert_allclose(rm.numpy(), 0.25 * mean, rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.75 + 0.25 * x.var(0, ddof=1), rtol=1e-12)
    evaluated = F.batch_norm(ts.tensor(x), rm, rv, ts.tensor([2.0, 1.0]), ts.tensor([0.5, 0.0]), eps=0.0)
    np.testing.assert_allclose(evaluated.numpy(), (x - rm.numpy()) / np.sqrt(rv.numpy()) * [2, 1] + [0.5, 0],
                               rtol=1e-12)


def test_batchnorm_momentum_none_is_a_cumulative_average():
    m = nn.BatchNorm1d(1, momentum=None, affine=False)
    batches = [np.array([[1.0], [3.0]]), np.array([[5.0], [9.0]]), np.array([[0.0], [0.0]])]
    for b in batches:
        m(ts.tensor(b, dtype=ts.float32))
    assert m.running_mean.item() == pytest.approx(np.mean([b.mean() for b in batches]))
    assert m.running_var.item() == pytest.approx(np.mean([b.var(ddof=1) for b in batches]))


def test_batchnorm_eval_uses_running_stats_and_does_not_update_them():
    m = nn.BatchNorm1d(2)
    m.running_mean.copy_(ts.tensor([1.0, -1.0]))
    m.running_var.copy_(ts.tensor([4.0, 0.25]))
    m.eval()
    out = m(ts.tensor([[3.0, -1.5], [1.0, 0.0]]))
    np.testing.assert_allclose(out.detach().numpy(), [[1.0, -1.0], [0.0, 2.0]], rtol=1e-4)
    assert m.running_mean.tolist() == [1.0, -1.0] and m.num_batches_tracked.item() == 0


def test_batchnorm_layout_initialisation_and_repr():
    m = nn.BatchNorm2d(3)
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert m.weight.tolist() == [1.0] * 3 and m.bias.tolist() == [0.0] * 3 and m.running_var.tolist() == [1.0] * 3
    assert repr(m) == "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert repr(nn.BatchNorm1d(4, affine=False, momentum=None)) == \
        "BatchNorm1d(4, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=True)"
    n = nn.BatchNorm1d(2, track_running_stats=False)
    assert n.running_mean is None and list(n.state_dict()) == ["weight", "bias"]
    m.running_mean.fill_(3.0)
    m.num_batches_tracked.fill_(7)
    m.reset_running_stats()
    assert m.running_mean.tolist() == [0.0] * 3 and m.num_batches_tracked.item() == 0


def test_batchnorm_double_backward():
    x = ts.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    w = ts.tensor(RNG.standard_normal(3), requires_grad=True)
    fn = lambda x, w: F.batch_norm(x, None, None, w, None, training=True)  # noqa: E731
    assert gradcheck(fn, (x, w))
    assert gradgradcheck(fn, (x, w))


# -- layer, group and RMS norm -------------------------------------------------------------------------

@pytest.mark.parametrize("shape, normalized", [((4, 5), 5), ((2, 3, 4), (3, 4)), ((3, 6), [6])])
@pytest.mark.parametrize("kwargs", [{}, dict(elementwise_affine=False), dict(bias=False), dict(eps=1e-2)])
def test_layernorm_matches_pytorch(oracle, shape, normalized, kwargs):
    module, torch_module = nn.LayerNorm(normalized, **kwargs), oracle.nn.LayerNorm(normalized, **kwargs)
    assert list(module.state_dict()) == list(torch_module.state_dict())
    _perturb(module, torch_module, oracle)
    _step(module, torch_module, _x(*shape, scale=3, shift=2), oracle)
    _compare_state(module, torch_module)


def test_layer_norm_by_hand():
    x = np.array([[1.0, 2.0, 3.0, 6.0], [0.0, 0.0, 4.0, 4.0]])
    out = F.layer_norm(ts.tensor(x), (4,), ts.tensor([1.0, 2.0, 1.0, 1.0]), ts.tensor([0.0, 0.0, 0.0, 1.0]), eps=0.0)
    expected = (x - x.mean(1, keepdims=True)) / x.std(1, keepdims=True) * [1, 2, 1, 1] + [0, 0, 0, 1]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), k=st.integers(1, 4), seed=st.integers(0, 99))
def test_layer_norm_property_matches_numpy(shape, k, seed):
    k = min(k, len(shape))
    x = np.random.default_rng(seed).standard_normal(shape) * 3 + 1
    axes = tuple(range(len(shape) - k, len(shape)))
    out = F.layer_norm(ts.tensor(x), shape[len(shape) - k:])
    expected = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 3), groups=st.integers(1, 3), per_group=st.integers(1, 3),
       spatial=st.lists(st.integers(1, 3), max_size=2), seed=st.integers(0, 99))
def test_group_norm_property_matches_numpy(n, groups, per_group, spatial, seed):
    shape = (n, groups * per_group, *spatial)
    x = np.random.default_rng(seed).standard_normal(shape)
    g = x.reshape(n, groups, -1)
    expected = ((g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + 1e-5)).reshape(shape)
    np.testing.assert_allclose(F.group_norm(ts.tensor(x), groups).numpy(), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("groups, shape", [(2, (3, 4, 5)), (1, (2, 6)), (3, (2, 6, 2, 2)), (6, (2, 6, 3))])
@pytest.mark.parametrize("affine", [True, False])
def test_groupnorm_matches_pytorch(oracle, groups, shape, affine):
    module = nn.GroupNorm(groups, shape[1], affine=affine)
    torch_module = oracle.nn.GroupNorm(groups, shape[1], affine=affine)
    _perturb(module, torch_module, oracle)
    _step(module, torch_module, _x(*shape, scale=2, shift=-1), oracle)
    _compare_state(module, torch_module)


def test_group_norm_by_hand():
    x = np.arange(16, dtype=np.float64).reshape(2, 4, 2) ** 1.5
    out = F.group_norm(ts.tensor(x), 2, eps=1e-5)
    g = x.reshape(2, 2, 4)
    expected = ((g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + 1e-5)).reshape(x.shape)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("kwargs", [{}, dict(eps=1e-3), dict(elementwise_affine=False)])
def test_rmsnorm_matches_pytorch(oracle, kwargs):
    module, torch_module = nn.RMSNorm((3, 4), **kwargs), oracle.nn.RMSNorm((3, 4), **kwargs)
    _perturb(module, torch_module, oracle)
    _step(module, torch_module, _x(2, 3, 4, scale=2), oracle)
    _compare_state(module, torch_module)


@pytest.mark.parametrize("fn", [lambda x, w, b: F.layer_norm(x, (4,), w, b),
                                lambda x, w, b: F.group_norm(x.reshape(3, 4, 1), 2, w, b),
                                lambda x, w, b: F.rms_norm(x, (4,), w)])
def test_norm_double_backward(fn):
    x = ts.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    w, b = ts.tensor(RNG.standard_normal(4), requires_grad=True), ts.tensor(RNG.standard_normal(4), requires_grad=True)
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_norm_module_reprs_and_layout():
    assert repr(nn.LayerNorm(4)) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)"
    assert repr(nn.LayerNorm([2, 3], elementwise_affine=False)) == \
        "LayerNorm((2, 3), eps=1e-05, elementwise_affine=False, bias=False)"
    assert repr(nn.GroupNorm(2, 4)) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    assert repr(nn.GroupNorm(2, 4, bias=False)) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=False)"
    assert repr(nn.RMSNorm(3)) == "RMSNorm((3,), eps=None, elementwise_affine=True)"
    ln = nn.LayerNorm((2, 3), bias=False)
    assert ln.weight.shape == (2, 3) and ln.bias is None and list(ln.state_dict()) == ["weight"]
    assert ln.weight.tolist() == [[1.0] * 3] * 2
    gn = nn.GroupNorm(3, 6, affine=False)
    assert gn.weight is None and list(gn.parameters()) == []


# -- errors ----------------------------------------------------------------------------------------------

def test_batchnorm_errors():
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size "
                                         r"tscript.Size\(\[1, 3\]\)"):
        nn.BatchNorm1d(3)(ts.ones(1, 3))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        F.batch_norm(ts.ones(1, 3, 1), None, None, training=True)
    nn.BatchNorm1d(3).eval()(ts.ones(1, 3))  # a batch of one is fine in eval mode
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(ts.ones(2, 3, 4, 4))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(ts.ones(2, 3, 4))
    with pytest.raises(RuntimeError, match="running_mean should contain 4 elements not 3"):
        nn.BatchNorm1d(3)(ts.ones(2, 4))
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 4"):
        F.batch_norm(ts.ones(2, 3), None, None, ts.ones(4), training=True)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(ts.ones(2, 3), None, None)
    with pytest.raises(NotImplementedError, match="\"batch_norm\" not implemented for 'Long'"):
        F.batch_norm(ts.ones(2, 3, dtype=ts.int64), None, None, training=True)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.batch_norm(ts.ones(3), None, None, training=True)


def test_layer_group_norm_errors():
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], but "
                                           r"got input of size\[2, 3\]"):
        F.layer_norm(ts.ones(2, 3), (4,))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[2, 3, 4\]"):
        nn.LayerNorm((2, 3, 4))(ts.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as normalized_shape, but got weight "
                                           r"of shape \[4\] and normalized_shape = \[3\]"):
        F.layer_norm(ts.ones(2, 3), (3,), ts.ones(4))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.layer_norm(ts.ones(2, 3, dtype=ts.int64), (3,))
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be divisible by num_groups, but "
                                           r"got input of shape \[2, 6, 4\] and num_groups=4"):
        F.group_norm(ts.ones(2, 6, 4), 4)
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups \(4\)"):
        nn.GroupNorm(4, 6)
    with pytest.raises(RuntimeError, match=r"Expected weight to be a vector of size equal to the number of channels "
                                           r"in input, but got weight of shape \[6\] and input of shape \[2, 4, 3\]"):
        nn.GroupNorm(2, 6)(ts.ones(2, 4, 3))
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions for input tensor but received 1"):
        F.group_norm(ts.ones(6), 2)
