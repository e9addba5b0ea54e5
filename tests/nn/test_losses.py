"""Losses, functional and modules: values and gradients against PyTorch for every reduction and
option (class weights, ignore_index, label smoothing, probability targets, pos_weight, beta/delta),
hand-computed values, the saturated-probability gradients of BCELoss, and PyTorch's warnings and
errors."""
import math
import warnings

import numpy as np
import pytest

import tscript as ts
import tscript.nn.functional as F
from tests.conftest import assert_close
from tscript import nn
from tscript._dispatch import dispatch
from tscript.autograd import gradcheck, gradgradcheck
from tscript_runtime.ops import OPS, TensorMeta

RNG = np.random.default_rng(0)
REDUCTIONS = ["mean", "sum", "none"]


def _f32(*shape, low=None, high=None):
    if low is not None:
        return RNG.uniform(low, high, shape).astype(np.float32)
    return RNG.standard_normal(shape).astype(np.float32)


def _run(oracle, ts_fn, torch_fn, inputs, grads=(0,), extra=None, rtol=1e-5, atol=1e-6):
    """Call both losses on the same arrays (floats at positions `grads` require grad) and compare
    the loss and those inputs' gradients."""
    extra = extra or {}
    ts_args = [ts.tensor(a, requires_grad=i in grads) for i, a in enumerate(inputs)]
    t_args = [oracle.tensor(a, requires_grad=i in grads) for i, a in enumerate(inputs)]
    ts_kw = {k: ts.tensor(v) if isinstance(v, np.ndarray) else v for k, v in extra.items()}
    t_kw = {k: oracle.tensor(v) if isinstance(v, np.ndarray) else v for k, v in extra.items()}
    out, t_out = ts_fn(*ts_args, **ts_kw), torch_fn(*t_args, **t_kw)
    assert_close(out, t_out, rtol=rtol, atol=atol)
    weights = np.linspace(0.5, 1.5, max(t_out.numel(), 1)).reshape(tuple(t_out.shape)).astype(np.float32)
    (out * ts.tensor(weights)).sum().backward()
    (t_out * oracle.tensor(weights)).sum().backward()
    for i in grads:
        assert_close(ts_args[i].grad, t_args[i].grad, rtol=rtol, atol=atol)


# -- regression ----------------------------------------------------------------------------------------

REGRESSION = {"mse_loss": {}, "l1_loss": {}, "smooth_l1_loss": {}, "smooth_l1_loss-beta": {"beta": 0.3},
              "smooth_l1_loss-beta0": {"beta": 0.0}, "huber_loss": {}, "huber_loss-delta": {"delta": 0.4}}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", sorted(REGRESSION))
def test_regression_losses_match_pytorch(oracle, case, reduction):
    name = case.split("-")[0]
    x, y = _f32(4, 5), _f32(4, 5)
    y[0, :3] = x[0, :3]          # zero differences: the |d| kink
    y[1, 0] = x[1, 0] - 0.3      # exactly at beta
    _run(oracle, getattr(F, name), getattr(oracle.nn.functional, name), [x, y], grads=(0, 1),
         extra=dict(REGRESSION[case], reduction=reduction))


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_elementwise_weights_match_pytorch(oracle, name, reduction):
    x, y, w = _f32(3, 4), _f32(3, 4), _f32(3, 4, low=0.1, high=2.0)
    _run(oracle, getattr(F, name), getattr(oracle.nn.functional, name), [x, y], grads=(0, 1),
         extra=dict(weight=w, reduction=reduction))


def test_regression_losses_by_hand():
    x, y = ts.tensor([1.0, 2.0, 5.0]), ts.tensor([1.5, 0.0, 5.0])
    assert F.mse_loss(x, y).item() == pytest.approx((0.25 + 4) / 3)
    assert F.l1_loss(x, y, reduction="sum").item() == pytest.approx(2.5)
    assert F.smooth_l1_loss(x, y, reduction="none").tolist() == pytest.approx([0.125, 1.5, 0.0])
    assert F.smooth_l1_loss(x, y, beta=4.0, reduction="none").tolist() == pytest.approx([0.25 / 8, 0.5, 0.0])
    assert F.huber_loss(x, y, delta=0.5, reduction="none").tolist() == pytest.approx([0.125, 0.875, 0.0])
    assert F.mse_loss(x, y, weight=ts.tensor([2.0, 1.0, 1.0])).item() == pytest.approx((0.5 + 4) / 4)


def test_target_of_another_size_warns_and_broadcasts():
    x, y = ts.ones(3, 1), ts.zeros(3)
    for fn in (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss):
        with pytest.warns(UserWarning, match=r"Using a target size \(tscript.Size\(\[3\]\)\) that is different to the "
                                             r"input size \(tscript.Size\(\[3, 1\]\)\)"):
            assert fn(x, y, reduction="none").shape == (3, 3)
    with pytest.raises(RuntimeError, match="The size of tensor a \\(3\\) must match the size of tensor b \\(4\\)"):
        with pytest.warns(UserWarning):
            F.mse_loss(ts.ones(3), ts.ones(4))


def test_regression_dtypes_follow_promotion():
    assert F.mse_loss(ts.ones(3), ts.ones(3, dtype=ts.int64)).dtype == ts.float32
    assert F.l1_loss(ts.ones(3), ts.ones(3, dtype=ts.float64)).dtype == ts.float64


# -- classification ---------------------------------------------------------------------------------

def _logits_and_targets(shape, classes, ignore_index=-100):
    x = _f32(*shape)
    t = RNG.integers(0, classes, (shape[0],) + tuple(shape[2:]))
    t.reshape(-1)[1] = ignore_index
    return x, t


CE_OPTIONS = [{}, {"label_smoothing": 0.2}, {"weight": np.array([0.5, 2.0, 1.0, 3.0], np.float32)},
              {"weight": np.array([0.5, 2.0, 1.0, 3.0], np.float32), "label_smoothing": 0.1},
              {"ignore_index": 2}, {"ignore_index": 2, "label_smoothing": 0.3}]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", range(len(CE_OPTIONS)))
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 5), (2, 4, 3, 2)])
def test_cross_entropy_with_class_indices_matches_pytorch(oracle, shape, options, reduction):
    kw = dict(CE_OPTIONS[options], reduction=reduction)
    x, t = _logits_and_targets(shape, 4, kw.get("ignore_index", -100))
    _run(oracle, F.cross_entropy, oracle.nn.functional.cross_entropy, [x, t], extra=kw, rtol=1e-5, atol=1e-6)
    _run(oracle, F.nll_loss, oracle.nn.functional.nll_loss, [x, t],
         extra={k: v for k, v in kw.items() if k != "label_smoothing"})


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", [{}, {"label_smoothing": 0.25},
                                     {"weight": np.array([0.5, 2.0, 1.0], np.float32)}])
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4), (3,)])
def test_cross_entropy_with_probabilities_matches_pytorch(oracle, shape, options, reduction):
    x = _f32(*shape)
    p = RNG.uniform(0, 1, shape).astype(np.float32)
    p /= p.sum(axis=0 if len(shape) == 1 else 1, keepdims=True)
    _run(oracle, F.cross_entropy, oracle.nn.functional.cross_entropy, [x, p], grads=(0, 1),
         extra=dict(options, reduction=reduction))


def test_unbatched_class_index_inputs_match_pytorch(oracle):
    x = _f32(4)
    for reduction in REDUCTIONS:
        for fn in ("cross_entropy", "nll_loss"):
            _run(oracle, getattr(F, fn), getattr(oracle.nn.functional, fn), [x, np.array(2)],
                 extra=dict(reduction=reduction))
        _run(oracle, F.cross_entropy, oracle.nn.functional.cross_entropy, [x, np.array(2)],
             extra=dict(reduction=reduction, label_smoothing=0.1))
        # a (1,) target is taken as a scalar (PyTorch's backward, and its label smoothing, fail there)
        out = F.cross_entropy(ts.tensor(x), ts.tensor([2]), reduction=reduction)
        assert_close(out, oracle.nn.functional.cross_entropy(oracle.tensor(x), oracle.tensor([2]), reduction=reduction))


def test_cross_entropy_by_hand():
    logits = np.array([[2.0, 0.0, -1.0], [0.5, 0.5, 0.5]])
    target = ts.tensor([0, 2])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    loss = F.cross_entropy(ts.tensor(logits), target)
    assert loss.item() == pytest.approx(-(logp[0, 0] + logp[1, 2]) / 2, rel=1e-12)
    weighted = F.cross_entropy(ts.tensor(logits), target, weight=ts.tensor([3.0, 1.0, 1.0], dtype=ts.float64))
    assert weighted.item() == pytest.approx(-(3 * logp[0, 0] + logp[1, 2]) / 4, rel=1e-12)
    smoothed = F.cross_entropy(ts.tensor(logits), target, label_smoothing=0.3, reduction="none")
    expected = [-(0.7 * logp[i, c] + 0.1 * logp[i].sum()) for i, c in enumerate([0, 2])]
    np.testing.assert_allclose(smoothed.numpy(), expected, rtol=1e-12)
    ignored = F.cross_entropy(ts.tensor(logits), ts.tensor([0, -100]))
    assert ignored.item() == pytest.approx(-logp[0, 0], rel=1e-12)
    assert math.isnan(F.nll_loss(ts.tensor(logp), ts.tensor([-100, -100])).item())


def test_cross_entropy_gradient_is_softmax_minus_one_hot():
    x = ts.tensor([[1.0, 2.0, 3.0]], dtype=ts.float64, requires_grad=True)
    F.cross_entropy(x, ts.tensor([1]), reduction="sum").backward()
    p = np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum()
    np.testing.assert_allclose(x.grad.numpy(), [p - [0, 1, 0]], rtol=1e-12)


def test_classification_double_backward():
    x = ts.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    t = ts.tensor([0, 3, 1])
    fn = lambda x: F.cross_entropy(x, t, label_smoothing=0.1)  # noqa: E731
    assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


# -- binary classification -----------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_matches_pytorch(oracle, reduction, weighted):
    p, y = _f32(4, 3, low=0.02, high=0.98), _f32(4, 3, low=0.0, high=1.0)
    y[0] = [0.0, 1.0, 1.0]
    extra = dict(reduction=reduction, weight=_f32(3, low=0.5, high=2.0) if weighted else None)
    _run(oracle, F.binary_cross_entropy, oracle.nn.functional.binary_cross_entropy, [p, y], grads=(0, 1),
         extra=extra)


def test_binary_cross_entropy_saturated_probabilities_match_pytorch(oracle):
    p = np.array([0.0, 1.0, 1.0, 0.0, 1e-13, 1 - 1e-7, 0.5], np.float32)
    y = np.array([1.0, 0.0, 1.0, 0.0, 0.5, 0.0, 0.5], np.float32)
    _run(oracle, F.binary_cross_entropy, oracle.nn.functional.binary_cross_entropy, [p, y],
         extra=dict(reduction="none"))
    loss = F.binary_cross_entropy(ts.tensor(p), ts.tensor(y), reduction="none")
    assert loss[:4].tolist() == [100.0, 100.0, 0.0, 0.0]  # logs clamped at -100


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weights", ["none", "weight", "pos_weight", "both"])
def test_binary_cross_entropy_with_logits_matches_pytorch(oracle, reduction, weights):
    x = _f32(5, 3) * 4
    x[0] = [0.0, 60.0, -60.0]  # logits at the kink of |x| and far beyond exp's range
    y = _f32(5, 3, low=0.0, high=1.0)
    extra = {"reduction": reduction}
    if weights in ("weight", "both"):
        extra["weight"] = _f32(5, 1, low=0.5, high=2.0)
    if weights in ("pos_weight", "both"):
        extra["pos_weight"] = _f32(3, low=0.5, high=3.0)
    _run(oracle, F.binary_cross_entropy_with_logits, oracle.nn.functional.binary_cross_entropy_with_logits,
         [x, y], grads=(0, 1), extra=extra)


def test_bce_with_logits_equals_bce_of_sigmoid_and_is_stable():
    x = ts.tensor([-3.0, 0.0, 2.0], dtype=ts.float64)
    y = ts.tensor([0.0, 1.0, 0.3], dtype=ts.float64)
    assert F.binary_cross_entropy_with_logits(x, y).item() == \
        pytest.approx(F.binary_cross_entropy(x.sigmoid(), y).item(), rel=1e-12)
    far = ts.tensor([1000.0, -1000.0], requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(far, ts.tensor([0.0, 1.0]), reduction="none")
    assert loss.tolist() == [1000.0, 1000.0]
    loss.sum().backward()
    assert far.grad.tolist() == [1.0, -1.0]
    x0 = ts.tensor([0.0], requires_grad=True)
    F.binary_cross_entropy_with_logits(x0, ts.tensor([1.0])).backward()
    assert x0.grad.tolist() == [-0.5]


def test_bce_double_backward():
    p = ts.tensor(RNG.uniform(0.1, 0.9, (2, 3)), requires_grad=True)
    y = ts.tensor(RNG.uniform(0.1, 0.9, (2, 3)), requires_grad=True)
    assert gradgradcheck(lambda p, y: F.binary_cross_entropy(p, y), (p, y))
    assert gradgradcheck(lambda p, y: F.binary_cross_entropy_with_logits(p, y, pos_weight=ts.tensor([1.0, 2, 3],
                                                                                                   dtype=ts.float64)),
                         (p, y))


# -- KL divergence -----------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["sum", "none", "batchmean", "mean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_pytorch(oracle, reduction, log_target):
    x = np.log(_f32(4, 3, low=0.05, high=1.0))
    t = _f32(4, 3, low=0.0, high=1.0)
    if log_target:
        t = np.log(t + 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _run(oracle, F.kl_div, oracle.nn.functional.kl_div, [x, t], grads=(0, 1),
             extra=dict(reduction=reduction, log_target=log_target))


def test_kl_div_zero_target_contributes_nothing():
    x = ts.tensor([[-1.0, -2.0]], requires_grad=True)
    t = ts.tensor([[0.0, 0.5]], requires_grad=True)
    loss = F.kl_div(x, t, reduction="sum")
    assert loss.item() == pytest.approx(0.5 * (math.log(0.5) + 2.0))
    loss.backward()
    assert x.grad.tolist() == [[0.0, -0.5]]
    assert t.grad.tolist()[0][1] == pytest.approx(math.log(0.5) + 1 + 2.0)
    assert np.isfinite(t.grad.numpy()).all()  # (PyTorch's xlogy gives nan at a zero target)


def test_kl_div_mean_reduction_warns():
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss by both the batch size"):
        F.kl_div(ts.zeros(2, 2), ts.ones(2, 2))


# -- reductions, legacy arguments and modules ----------------------------------------------------------

def test_legacy_size_average_and_reduce_arguments():
    x, y = ts.tensor([1.0, 3.0]), ts.tensor([0.0, 0.0])
    cases = [(dict(size_average=False), "sum", 10.0), (dict(reduce=False), "none", [1.0, 9.0]),
             (dict(size_average=True, reduce=True), "mean", 5.0)]
    for kwargs, name, value in cases:
        with pytest.warns(UserWarning, match=f"please use reduction='{name}' instead"):
            out = F.mse_loss(x, y, **kwargs)
        assert out.tolist() == value
        with pytest.warns(UserWarning, match=f"please use reduction='{name}' instead"):
            assert nn.MSELoss(**kwargs).reduction == name


def test_loss_modules_hold_options_and_buffers():
    w = ts.tensor([1.0, 2.0, 3.0])
    ce = nn.CrossEntropyLoss(weight=w, ignore_index=1, label_smoothing=0.1, reduction="sum")
    assert list(ce.state_dict()) == ["weight"] and ce.ignore_index == 1 and ce.label_smoothing == 0.1
    assert repr(ce) == "CrossEntropyLoss()" and repr(nn.MSELoss()) == "MSELoss()"
    assert repr(nn.SmoothL1Loss(beta=0.5)) == "SmoothL1Loss()" and nn.HuberLoss(delta=2.0).delta == 2.0
    assert list(nn.BCEWithLogitsLoss(pos_weight=w).state_dict()) == ["pos_weight"]
    assert list(nn.NLLLoss().state_dict()) == []
    x, t = ts.tensor(RNG.standard_normal((4, 3)), dtype=ts.float32), ts.tensor([0, 1, 2, 1])
    assert_close(ce(x, t), F.cross_entropy(x, t, w, ignore_index=1, label_smoothing=0.1, reduction="sum"))


MODULE_CASES = [
    ("MSELoss", {"reduction": "sum"}, "reg"), ("L1Loss", {}, "reg"), ("SmoothL1Loss", {"beta": 0.5}, "reg"),
    ("HuberLoss", {"delta": 0.5, "reduction": "none"}, "reg"), ("CrossEntropyLoss", {"label_smoothing": 0.1}, "cls"),
    ("CrossEntropyLoss", {"weight": np.array([1.0, 2.0, 0.5], np.float32), "ignore_index": 0}, "cls"),
    ("NLLLoss", {"weight": np.array([1.0, 2.0, 0.5], np.float32)}, "cls"), ("BCELoss", {}, "prob"),
    ("BCEWithLogitsLoss", {"pos_weight": np.array([1.0, 2.0, 0.5], np.float32)}, "reg01"),
    ("KLDivLoss", {"reduction": "batchmean", "log_target": True}, "reg")]


@pytest.mark.parametrize("name, kwargs, kind", MODULE_CASES, ids=[c[0] for c in MODULE_CASES])
def test_loss_modules_match_pytorch(oracle, name, kwargs, kind):
    x = _f32(4, 3, low=0.05, high=0.95) if kind == "prob" else _f32(4, 3)
    y = {"reg": _f32(4, 3), "cls": np.array([0, 2, 1, 2]), "prob": _f32(4, 3, low=0, high=1),
         "reg01": _f32(4, 3, low=0, high=1)}[kind]
    module = getattr(nn, name)(**{k: ts.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()})
    torch_module = getattr(oracle.nn, name)(**{k: oracle.tensor(v) if isinstance(v, np.ndarray) else v
                                               for k, v in kwargs.items()})
    _run(oracle, module, torch_module, [x, y])


# -- errors ----------------------------------------------------------------------------------------------

def test_reduction_errors():
    x = ts.ones(3)
    for fn in (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss, F.binary_cross_entropy_with_logits, F.kl_div):
        with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
            fn(x, x, reduction="foo")
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        nn.CrossEntropyLoss(reduction="foo")(ts.ones(2, 3), ts.tensor([0, 1]))
    with pytest.raises(ValueError, match="Invalid reduction mode: foo. Expected one of 'none', 'mean', 'sum'."):
        F.mse_loss(x, x, weight=x, reduction="foo")
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        F.l1_loss(x, x, weight=ts.ones(2))


def test_regression_argument_errors():
    x = ts.ones(3)
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta."):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta."):
        F.huber_loss(x, x, delta=0.0)
    with pytest.raises(NotImplementedError, match="\"mse_loss\" not implemented for 'Long'"):
        F.mse_loss(ts.ones(3, dtype=ts.int64), ts.ones(3, dtype=ts.int64))
    with pytest.raises(RuntimeError, match="kl_div: Integral inputs not supported."):
        F.kl_div(ts.ones(3, dtype=ts.int64), x, reduction="sum")


def test_class_index_errors():
    x, t = ts.ones(4, 3), ts.tensor([0, 1, 2, 1])
    cases = [
        (lambda: F.cross_entropy(x, ts.tensor([0, 1, 2])), ValueError,
         r"Expected input batch_size \(4\) to match target batch_size \(3\)."),
        (lambda: F.nll_loss(x, ts.tensor([0.0, 1, 2, 1])), RuntimeError,
         "expected target dtype to be Long or Byte, but got Float"),
        (lambda: F.cross_entropy(x, t.to(ts.int32)), RuntimeError,
         "expected target dtype to be Long or Byte, but got Int"),
        (lambda: F.cross_entropy(x, ts.tensor([0, 1, 2, 3])), IndexError, "Target 3 is out of bounds."),
        (lambda: F.nll_loss(x, ts.tensor([0, 1, 2, -1])), IndexError, "Target -1 is out of bounds."),
        (lambda: F.cross_entropy(x, t, weight=ts.ones(2)), RuntimeError,
         r"weight tensor should be defined either for all 3 classes or no classes but got weight tensor of "
         r"shape: \[2\]"),
        (lambda: F.nll_loss(x, t, weight=ts.ones(3, dtype=ts.float64)), RuntimeError,
         "expected scalar type Float but found Double"),
        (lambda: F.cross_entropy(x, t, label_smoothing=1.5), RuntimeError,
         "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
        (lambda: F.cross_entropy(ts.ones(2, 3, 4), ts.zeros(2, 5, dtype=ts.int64)), RuntimeError,
         r"Expected target size \[2, 4\], got \[2, 5\]"),
        (lambda: F.nll_loss(ts.ones(2, 3, 4), ts.zeros(2, dtype=ts.int64)), RuntimeError,
         r"Expected target size \[2, 4\], got \[2\]"),
        (lambda: F.nll_loss(ts.tensor(1.0), ts.tensor(0)), ValueError, r"Expected 1 or more dimensions \(got 0\)"),
        (lambda: F.nll_loss(x, ts.zeros(4, 1, dtype=ts.int64)), RuntimeError,
         "0D or 1D target tensor expected, multi-target not supported"),
        (lambda: F.cross_entropy(ts.ones(3), ts.tensor([1, 2])), ValueError,
         "For 1D input, 1D target must have size 1, but got target size: 2"),
        (lambda: F.cross_entropy(x, ts.ones(4, 3, dtype=ts.int64)), RuntimeError,
         "Expected floating point type for target with class probabilities, got Long"),
        (lambda: F.cross_entropy(x, ts.ones(4, 3), ignore_index=1), RuntimeError,
         "ignore_index is not supported for floating point target"),
        (lambda: F.cross_entropy(ts.ones(2, 3, dtype=ts.int64), ts.tensor([0, 1])), RuntimeError,
         "not implemented for 'Long'"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()


def test_binary_errors():
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(ts.tensor([1.5]), ts.tensor([1.0]))
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(ts.tensor([0.5]), ts.tensor([1.5]))
    with pytest.raises(ValueError, match=r"Using a target size \(tscript.Size\(\[3\]\)\) that is different to the "
                                         r"input size \(tscript.Size\(\[3, 1\]\)\) is deprecated"):
        F.binary_cross_entropy(ts.full((3, 1), 0.5), ts.ones(3))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        F.binary_cross_entropy(ts.tensor([0.5]), ts.tensor([1.0], dtype=ts.float64))
    with pytest.raises(ValueError, match=r"Target size \(tscript.Size\(\[3\]\)\) must be the same as input size "
                                         r"\(tscript.Size\(\[3, 1\]\)\)"):
        F.binary_cross_entropy_with_logits(ts.ones(3, 1), ts.ones(3))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        F.binary_cross_entropy_with_logits(ts.ones(3), ts.ones(3, dtype=ts.int64))
    with pytest.raises(RuntimeError, match="must match the size of tensor"):
        F.binary_cross_entropy_with_logits(ts.ones(3), ts.ones(3), pos_weight=ts.ones(2))


def test_binary_cross_entropy_op_rules():
    op = OPS["aten::binary_cross_entropy"]
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    assert op.meta(TensorMeta((2, 3), f32), TensorMeta((2, 3), f32), TensorMeta((3,), f32), 0).shape == (2, 3)
    assert op.meta(TensorMeta(("n", 3), f64), TensorMeta(("n", 3), f64), None, 1).shape == ()
    with pytest.raises(RuntimeError, match=r"target size \[3\] must be the same as input size \[2, 3\]"):
        op.shape(TensorMeta((2, 3), f32), TensorMeta((3,), f32), None, 1)
    with pytest.raises(RuntimeError, match=r"weight of shape \[2\] does not broadcast to the input shape \[2, 3\]"):
        op.shape(TensorMeta((2, 3), f32), TensorMeta((2, 3), f32), TensorMeta((2,), f32), 1)
    with pytest.raises(RuntimeError, match="reduction must be 0 \\(none\\), 1 \\(mean\\) or 2 \\(sum\\), got 3"):
        op.shape(TensorMeta((2,), f32), TensorMeta((2,), f32), None, 3)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        op.dtype(TensorMeta((2,), np.dtype(np.int64)), TensorMeta((2,), np.dtype(np.int64)), None, 1)
    with pytest.raises(RuntimeError, match="Found dtype Float but expected Double"):
        dispatch(op, (ts.tensor([0.5], dtype=ts.float64), ts.tensor([0.5]), None, 1))
