"""Activation functions and modules: values and gradients against PyTorch (including the kinks,
where the gradient must equal PyTorch's choice, and large inputs, where no branch may overflow),
numpy references, in-place forms, reprs, double backward and error cases."""
import math

import numpy as np
import pytest

import tscript as ts
import tscript.nn.functional as F
from tests.conftest import assert_close
from tscript import nn
from tscript.autograd import gradcheck, gradgradcheck

# Random values plus the points where activations change formula, and values that overflow exp.
SPECIAL = np.array([0.0, -1.0, 1.0, 6.0, -3.0, 3.0, 20.0, -20.0, 30.0, -30.0, 100.0, -100.0, 0.5, -0.5])
X = np.concatenate([np.random.default_rng(0).standard_normal(26) * 3, SPECIAL]).reshape(5, 8)

# name -> (tscript call, torch call); kwargs must mean the same in both
CASES = {
    "relu": (F.relu, "relu", {}),
    "relu6": (F.relu6, "relu6", {}),
    "leaky_relu": (F.leaky_relu, "leaky_relu", {}),
    "leaky_relu_0.2": (F.leaky_relu, "leaky_relu", {"negative_slope": 0.2}),
    "hardtanh": (F.hardtanh, "hardtanh", {}),
    "hardtanh_-2_3": (F.hardtanh, "hardtanh", {"min_val": -2.0, "max_val": 3.0}),
    "elu": (F.elu, "elu", {}),
    "elu_0.5": (F.elu, "elu", {"alpha": 0.5}),
    "selu": (F.selu, "selu", {}),
    "celu": (F.celu, "celu", {"alpha": 2.0}),
    "gelu": (F.gelu, "gelu", {}),
    "gelu_tanh": (F.gelu, "gelu", {"approximate": "tanh"}),
    "silu": (F.silu, "silu", {}),
    "mish": (F.mish, "mish", {}),
    "softplus": (F.softplus, "softplus", {}),
    "softplus_beta": (F.softplus, "softplus", {"beta": 2.0, "threshold": 5.0}),
    "sigmoid": (F.sigmoid, "sigmoid", {}),
    "tanh": (F.tanh, "tanh", {}),
    "logsigmoid": (F.logsigmoid, "logsigmoid", {}),
    "hardsigmoid": (F.hardsigmoid, "hardsigmoid", {}),
    "hardswish": (F.hardswish, "hardswish", {}),
    "softsign": (F.softsign, "softsign", {}),
    "tanhshrink": (F.tanhshrink, "tanhshrink", {}),
    "threshold": (F.threshold, "threshold", {"threshold": 0.5, "value": -2.0}),
    "glu": (F.glu, "glu", {"dim": 1}),
    "softmax": (F.softmax, "softmax", {"dim": 1}),
    "log_softmax": (F.log_softmax, "log_softmax", {"dim": 0}),
    "softmin": (F.softmin, "softmin", {"dim": -1}),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_gradient_match_pytorch(oracle, name, dtype):
    fn, torch_name, kwargs = CASES[name]
    x = X.astype(dtype)
    a = ts.tensor(x, requires_grad=True)
    b = oracle.tensor(x, requires_grad=True)
    out_a = fn(a, **kwargs)
    out_b = getattr(oracle.nn.functional, torch_name)(b, **kwargs)
    assert_close(out_a, out_b)
    weights = np.linspace(-1, 2, out_b.numel()).reshape(tuple(out_b.shape)).astype(dtype)
    (out_a * ts.tensor(weights)).sum().backward()
    (out_b * oracle.tensor(weights)).sum().backward()
    assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-6)
    assert np.isfinite(a.grad.numpy()).all()


@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "silu", "mish", "softplus", "elu", "selu", "celu",
                                  "logsigmoid", "softsign", "tanhshrink", "log_softmax", "glu"])
def test_double_backward(name):
    fn, _, kwargs = CASES[name]
    x = ts.tensor(np.random.default_rng(1).standard_normal((3, 4)) + 0.1, dtype=ts.float64, requires_grad=True)
    assert gradcheck(lambda t: fn(t, **kwargs), (x,))
    assert gradgradcheck(lambda t: fn(t, **kwargs), (x,))


# -- references without PyTorch ----------------------------------------------------------------------

def _np(x):
    return np.asarray(x, dtype=np.float64)


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


NUMPY = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "leaky_relu": lambda x: np.where(x > 0, x, 0.01 * x),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "gelu": lambda x: x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "softplus": lambda x: np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20)))),
    "logsigmoid": lambda x: -np.logaddexp(0, -x),
    "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "softmax": lambda x: _np_softmax(x, 1),
}


@pytest.mark.parametrize("name", sorted(NUMPY))
def test_values_match_numpy(name):
    fn, _, kwargs = CASES[name]
    out = fn(ts.tensor(X), **kwargs)
    np.testing.assert_allclose(out.numpy(), NUMPY[name](_np(X)), rtol=1e-12, atol=1e-12)
    assert out.dtype == ts.float64


def test_gradients_at_the_kinks_follow_pytorch_by_hand():
    x = ts.tensor([0.0, -1.0, 1.0, 6.0, -3.0, 3.0], requires_grad=True)
    cases = [(F.relu, [0, 0, 1, 1, 0, 1]), (F.relu6, [0, 0, 1, 0, 0, 1]),
             (lambda t: F.leaky_relu(t, 0.1), [0.1, 0.1, 1, 1, 0.1, 1]),
             (F.hardtanh, [1, 0, 0, 0, 0, 0]), (F.elu, [1, math.exp(-1), 1, 1, math.exp(-3), 1]),
             (F.hardswish, [0.5, 1 / 6, 5 / 6, 1, 0, 1]), (F.hardsigmoid, [1 / 6, 1 / 6, 1 / 6, 0, 0, 0])]
    for fn, expected in cases:
        x.grad = None
        fn(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6, atol=1e-7)


def test_logsigmoid_gradient_is_one_half_at_zero_and_finite_far_out():
    x = ts.tensor([0.0, -200.0, 200.0], requires_grad=True)
    out = F.logsigmoid(x)
    out.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), [-math.log(2), -200, 0], rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 1, 0], atol=1e-7)


def test_integer_inputs_of_piecewise_linear_activations_keep_their_dtype():
    x = ts.tensor([-3, 0, 2, 9])
    assert F.relu(x).tolist() == [0, 0, 2, 9] and F.relu(x).dtype == ts.int64
    assert F.relu6(x).tolist() == [0, 0, 2, 6] and F.relu6(x).dtype == ts.int64
    assert F.hardtanh(x).tolist() == [-1, 0, 1, 1]
    assert F.threshold(x, 1, 7).tolist() == [7, 7, 2, 9]


# -- in-place forms ------------------------------------------------------------------------------------

INPLACE = [(lambda t: F.relu(t, inplace=True), F.relu), (F.relu_, F.relu),
           (lambda t: F.leaky_relu(t, 0.2, True), lambda t: F.leaky_relu(t, 0.2)), (F.leaky_relu_, F.leaky_relu),
           (lambda t: F.elu(t, inplace=True), F.elu), (F.elu_, F.elu), (F.hardtanh_, F.hardtanh),
           (lambda t: F.relu6(t, True), F.relu6), (lambda t: F.silu(t, True), F.silu),
           (lambda t: F.mish(t, True), F.mish), (lambda t: F.hardswish(t, True), F.hardswish),
           (lambda t: F.selu(t, True), F.selu), (lambda t: F.threshold(t, 0.1, 2.0, True),
                                                  lambda t: F.threshold(t, 0.1, 2.0))]


@pytest.mark.parametrize("inplace, out_of_place", INPLACE)
def test_inplace_writes_into_the_input_and_differentiates_like_out_of_place(inplace, out_of_place):
    base = ts.tensor(X[:2], requires_grad=True)
    y = base * 1.0
    out = inplace(y)
    assert out is y and y._version > 0
    (out * out).sum().backward()
    ref_base = ts.tensor(X[:2], requires_grad=True)
    expected = out_of_place(ref_base * 1.0)
    (expected * expected).sum().backward()
    assert_close(out, expected)
    assert_close(base.grad, ref_base.grad)


def test_inplace_matches_pytorch_gradient(oracle):
    a = ts.tensor(X, requires_grad=True)
    b = oracle.tensor(X, requires_grad=True)
    ts_out = F.leaky_relu(a * 2, 0.2, inplace=True)
    torch_out = oracle.nn.functional.leaky_relu(b * 2, 0.2, inplace=True)
    (ts_out * ts_out).sum().backward()
    (torch_out * torch_out).sum().backward()
    assert_close(a.grad, b.grad)


def test_inplace_on_a_leaf_that_requires_grad_raises():
    x = ts.tensor([1.0, -1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.relu(x, inplace=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.leaky_relu(x, inplace=True)


def test_inplace_without_grad_returns_the_same_tensor():
    x = ts.tensor([1.0, -2.0])
    assert F.elu(x, inplace=True) is x
    np.testing.assert_allclose(x.numpy(), [1.0, math.expm1(-2.0)], rtol=1e-6)


# -- softmax family ----------------------------------------------------------------------------------

@pytest.mark.parametrize("ndim, dim", [(0, 0), (1, 0), (2, 1), (3, 0), (4, 1)])
def test_softmax_implicit_dim_follows_pytorch_legacy_rule_with_a_warning(ndim, dim):
    x = ts.tensor(np.arange(2 ** ndim, dtype=np.float32).reshape((2,) * ndim) / 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        out = F.softmax(x)
    assert_close(out, x.softmax(dim))
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        F.log_softmax(x)


def test_softmax_dtype_argument_computes_in_that_dtype(oracle):
    x = X.astype(np.float32)
    out = F.log_softmax(ts.tensor(x), dim=1, dtype=ts.float64)
    assert out.dtype == ts.float64
    assert_close(out, oracle.nn.functional.log_softmax(oracle.tensor(x), dim=1, dtype=oracle.float64))


# -- modules -----------------------------------------------------------------------------------------

REPRS = [
    (nn.ReLU(), "ReLU()"), (nn.ReLU(True), "ReLU(inplace=True)"), (nn.ReLU6(inplace=True), "ReLU6(inplace=True)"),
    (nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)"),
    (nn.LeakyReLU(0.2, True), "LeakyReLU(negative_slope=0.2, inplace=True)"),
    (nn.GELU(), "GELU(approximate='none')"), (nn.GELU("tanh"), "GELU(approximate='tanh')"),
    (nn.SiLU(), "SiLU()"), (nn.SiLU(True), "SiLU(inplace=True)"), (nn.Sigmoid(), "Sigmoid()"), (nn.Tanh(), "Tanh()"),
    (nn.Softmax(), "Softmax(dim=None)"), (nn.Softmax(1), "Softmax(dim=1)"), (nn.LogSoftmax(-1), "LogSoftmax(dim=-1)"),
    (nn.Softmin(1), "Softmin(dim=1)"), (nn.ELU(), "ELU(alpha=1.0)"),
    (nn.ELU(0.5, True), "ELU(alpha=0.5, inplace=True)"),
    (nn.CELU(), "CELU(alpha=1.0)"), (nn.SELU(), "SELU()"), (nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"),
    (nn.Softplus(2, 10), "Softplus(beta=2, threshold=10)"), (nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"),
    (nn.Hardtanh(-2, 2, True), "Hardtanh(min_val=-2, max_val=2, inplace=True)"), (nn.Mish(), "Mish()"),
    (nn.PReLU(), "PReLU(num_parameters=1)"), (nn.PReLU(3, 0.1), "PReLU(num_parameters=3)"),
    (nn.Threshold(0.1, 20), "Threshold(threshold=0.1, value=20)"), (nn.GLU(), "GLU(dim=-1)"),
    (nn.Hardswish(), "Hardswish()"), (nn.Hardsigmoid(True), "Hardsigmoid()"), (nn.LogSigmoid(), "LogSigmoid()"),
    (nn.Softsign(), "Softsign()"), (nn.Tanhshrink(), "Tanhshrink()"),
]


@pytest.mark.parametrize("module, text", REPRS, ids=[t for _, t in REPRS])
def test_module_repr_matches_pytorch_text(module, text):
    assert repr(module) == text


MODULES = [(nn.ReLU(), F.relu), (nn.LeakyReLU(0.3), lambda t: F.leaky_relu(t, 0.3)),
           (nn.GELU("tanh"), lambda t: F.gelu(t, approximate="tanh")), (nn.SiLU(), F.silu), (nn.Sigmoid(), F.sigmoid),
           (nn.Tanh(), F.tanh), (nn.Softmax(dim=0), lambda t: F.softmax(t, 0)),
           (nn.LogSoftmax(dim=1), lambda t: F.log_softmax(t, 1)), (nn.ReLU6(), F.relu6),
           (nn.ELU(0.7), lambda t: F.elu(t, 0.7)), (nn.Softplus(3, 4), lambda t: F.softplus(t, 3, 4)),
           (nn.Hardtanh(-0.5, 0.5), lambda t: F.hardtanh(t, -0.5, 0.5)), (nn.Mish(), F.mish),
           (nn.GLU(0), lambda t: F.glu(t, 0)), (nn.Threshold(0.2, -1.0), lambda t: F.threshold(t, 0.2, -1.0))]


@pytest.mark.parametrize("module, fn", MODULES, ids=[repr(m) for m, _ in MODULES])
def test_module_forward_is_its_function(module, fn):
    x = ts.tensor(X[:4], dtype=ts.float32)
    assert_close(module(x), fn(x))


def test_prelu_parameter_initialisation_and_gradients_match_pytorch(oracle):
    m = nn.PReLU(5, init=0.3)
    assert [n for n, _ in m.named_parameters()] == ["weight"] and m.weight.tolist() == pytest.approx([0.3] * 5)
    tm = oracle.nn.PReLU(5)
    m.load_state_dict({k: ts.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = X.astype(np.float32).T[:4].reshape(1, 5, 4) * np.array([1, -1, 1, -1]).astype(np.float32)
    a, b = ts.tensor(x, requires_grad=True), oracle.tensor(x, requires_grad=True)
    out_a, out_b = m(a), tm(b)
    assert_close(out_a, out_b)
    (out_a ** 2).sum().backward()
    (out_b ** 2).sum().backward()
    assert_close(a.grad, b.grad)
    assert_close(m.weight.grad, tm.weight.grad, rtol=1e-4, atol=1e-5)


def test_softmax_module_with_no_dim_warns():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        nn.Softmax()(ts.ones(2, 3))


@pytest.mark.parametrize("fn", [F.softplus, F.elu, F.selu, F.celu, F.mish, F.logsigmoid, F.silu, F.gelu])
def test_extreme_inputs_give_finite_values_and_gradients(fn):
    x = ts.tensor([-1e4, 1e4, 0.0], requires_grad=True)
    out = fn(x)
    out.sum().backward()
    assert np.isfinite(out.detach().numpy()).all() and np.isfinite(x.grad.numpy()).all()


# -- errors --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn, kernel", [(F.gelu, "gelu"), (F.silu, "silu"), (F.leaky_relu, "leaky_relu"),
                                        (F.elu, "elu"), (F.softplus, "softplus"), (F.mish, "mish"),
                                        (F.logsigmoid, "log_sigmoid"), (F.hardswish, "hardswish")])
def test_float_only_activations_reject_integer_tensors(fn, kernel):
    with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for 'Long'"):
        fn(ts.tensor([1, 2]))


def test_argument_errors():
    x = ts.ones(2, 3)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh."):
        F.gelu(x, approximate="foo")
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh."):
        nn.GELU("erf")(x)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(x, 1.0, -1.0)
    with pytest.raises(ValueError, match="max_val \\(1.0\\) must be greater than min_val \\(2.0\\)"):
        nn.Hardtanh(2.0, 1.0)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 3"):
        F.glu(x)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        F.prelu(ts.ones(2, 3), ts.ones(2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.softmax(x, dim=2)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.softmax(ts.tensor([[1, 2]]), dim=1)
