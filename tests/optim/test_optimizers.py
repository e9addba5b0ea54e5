"""tscript.optim: SGD, Adam, AdamW and RMSprop against hand-computed values, a float64 numpy
transcription of PyTorch's documented update rules, and PyTorch itself step by step; parameter
groups, zero_grad, closures, state_dict round trips and argument errors."""
import io
import math
import re

import numpy as np
import pytest

import tscript as ts
from tests.conftest import assert_close
from tscript import optim

GRADS = [np.array([1.0, 2.0]), np.array([1.0, 0.0]), np.array([0.0, 1.0])]


def param(values=(1.0, -2.0)):
    return ts.nn.Parameter(ts.tensor(list(values)))


def run(opt_cls, grads, p0=(1.0, -2.0), **options):
    """Apply `grads` one per step to a fresh parameter; returns the parameter and the optimizer."""
    p = param(p0)
    opt = opt_cls([p], **options)
    for g in grads:
        p.grad = ts.tensor(np.asarray(g, dtype=np.float32))
        opt.step()
    return p, opt


# -- float64 transcriptions of the algorithms in PyTorch's documentation ------------------------------

def ref_sgd(p, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    buf = None
    for g in grads:
        g = -g if maximize else g
        g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def ref_adam(p, grads, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False,
             decoupled=False):
    (b1, b2), m, v, v_max = betas, 0 * p, 0 * p, 0 * p
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        v_max = np.maximum(v_max, v)
        v_hat = (v_max if amsgrad else v) / (1 - b2 ** t)
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v_hat) + eps)
    return p


def ref_rmsprop(p, grads, lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                maximize=False):
    v, g_avg, buf = 0 * p, 0 * p, 0 * p
    for g in grads:
        g = -g if maximize else g
        g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        g_avg = alpha * g_avg + (1 - alpha) * g
        avg = np.sqrt(v - g_avg ** 2 if centered else v) + eps
        if momentum:
            buf = momentum * buf + g / avg
            p = p - lr * buf
        else:
            p = p - lr * g / avg
    return p


REFERENCE_CASES = [
    (optim.SGD, ref_sgd, dict(lr=0.1)),
    (optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.9, dampening=0.5, weight_decay=0.1)),
    (optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    (optim.Adam, ref_adam, dict(lr=0.1)),
    (optim.Adam, ref_adam, dict(lr=0.1, betas=(0.5, 0.9), weight_decay=0.1, maximize=True)),
    (optim.Adam, ref_adam, dict(lr=0.1, betas=(0.5, 0.6), amsgrad=True)),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01)),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01, alpha=0.9, weight_decay=0.1, momentum=0.5, centered=True)),
]


@pytest.mark.parametrize("opt_cls,ref,options", REFERENCE_CASES,
                         ids=[f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(REFERENCE_CASES)])
def test_three_steps_match_the_documented_algorithm(opt_cls, ref, options):
    grads = [np.array([1.0, 2.0]), np.array([-0.5, 0.25]), np.array([0.1, -3.0])]
    p, _ = run(opt_cls, grads, **options)
    assert_close(p.detach(), ref(np.array([1.0, -2.0]), grads, **options).astype(np.float32), rtol=1e-5)


def test_adamw_matches_the_documented_algorithm():
    grads = [np.array([1.0, 2.0]), np.array([-0.5, 0.25]), np.array([0.1, -3.0])]
    p, _ = run(optim.AdamW, grads, lr=0.1, weight_decay=0.5, amsgrad=True)
    expected = ref_adam(np.array([1.0, -2.0]), grads, lr=0.1, weight_decay=0.5, amsgrad=True, decoupled=True)
    assert_close(p.detach(), expected.astype(np.float32))


# -- literal values -----------------------------------------------------------------------------------

def test_sgd_momentum_by_hand():
    # buf: [1, 2] -> [1.9, 1.8] -> [1.71, 2.62]; p -= 0.1 * buf each step
    p, opt = run(optim.SGD, GRADS, lr=0.1, momentum=0.9)
    assert_close(p.detach(), np.array([0.539, -2.642], np.float32))
    assert_close(opt.state[p]["momentum_buffer"], np.array([1.71, 2.62], np.float32))


def test_sgd_without_momentum_keeps_no_state():
    p, opt = run(optim.SGD, GRADS, lr=0.5)
    assert_close(p.detach(), np.array([0.0, -3.5], np.float32))
    assert len(opt.state) == 0


def test_adam_steps_lr_per_step_under_a_constant_gradient():
    # with bias correction m_hat = g and v_hat = g^2 exactly, so each step moves lr * sign(g)
    p, opt = run(optim.Adam, [np.array([3.0, -0.5])] * 3, lr=0.1)
    assert_close(p.detach(), np.array([0.7, -1.7], np.float32))
    assert opt.state[p]["step"].item() == 3.0 and opt.state[p]["step"].dtype == ts.float32
    assert set(opt.state[p]) == {"step", "exp_avg", "exp_avg_sq"}


def test_adamw_decays_weights_before_the_adam_step():
    # p <- 0.95 p - 0.1 sign(g):  [1, -2] -> [0.85, -1.8] -> [0.7075, -1.61] -> [0.572125, -1.4295]
    p, _ = run(optim.AdamW, [np.array([1.0, -1.0])] * 3, lr=0.1, weight_decay=0.5)
    assert_close(p.detach(), np.array([0.572125, -1.4295], np.float32))


def test_adam_amsgrad_keeps_the_running_max_of_the_second_moment():
    _, opt = run(optim.Adam, [np.array([2.0]), np.array([0.0])], p0=(0.0,), lr=0.1, betas=(0.9, 0.5),
                 amsgrad=True)
    state = opt.state[opt.param_groups[0]["params"][0]]
    assert_close(state["exp_avg_sq"], np.array([1.0], np.float32))      # 0.5 * (0.5 * 4)
    assert_close(state["max_exp_avg_sq"], np.array([2.0], np.float32))  # the first step's value


def test_rmsprop_first_step_is_lr_over_sqrt_one_minus_alpha():
    p, _ = run(optim.RMSprop, [np.array([4.0, -0.25])], lr=0.01, alpha=0.99)
    assert_close(p.detach(), np.array([0.9, -1.9], np.float32))


# -- the optimizer API --------------------------------------------------------------------------------

def test_parameters_keep_their_identity_and_version_moves():
    p = param()
    before = p._version
    opt = optim.SGD([p], lr=0.1)
    p.grad = ts.ones(2)
    opt.step()
    assert opt.param_groups[0]["params"][0] is p and p._version > before
    assert p.requires_grad and p.grad_fn is None


def test_step_skips_parameters_without_grad():
    a, b = param(), param()
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = ts.ones(2)
    opt.step()
    assert_close(b.detach(), np.array([1.0, -2.0], np.float32))
    assert b not in opt.state and a in opt.state


def test_per_group_options_override_defaults():
    a, b = param(), param()
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0, "momentum": 0.5}], lr=0.1)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["momentum"] == 0
    assert opt.param_groups[1]["lr"] == 1.0 and opt.param_groups[1]["nesterov"] is False
    for _ in range(2):
        a.grad, b.grad = ts.ones(2), ts.ones(2)
        opt.step()
    assert_close(a.detach(), np.array([0.8, -2.2], np.float32))
    assert_close(b.detach(), np.array([-1.5, -4.5], np.float32))  # steps of 1 and 1.5


def test_add_param_group():
    a, b = param(), param()
    opt = optim.Adam([a], lr=0.1)
    opt.add_param_group({"params": b, "betas": (0.5, 0.5)})
    assert len(opt.param_groups[1]["params"]) == 1 and opt.param_groups[1]["params"][0] is b
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[1]["betas"] == (0.5, 0.5)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})


def test_zero_grad():
    p = param()
    opt = optim.SGD([p], lr=0.1)
    p.grad = ts.ones(2)
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad and p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_step_with_closure_reevaluates_under_grad_and_returns_the_loss():
    p = param()
    opt = optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with ts.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 5.0
    assert_close(p.detach(), np.array([0.5, -1.0], np.float32))  # p - 0.25 * 2p


def test_training_a_model_uses_autograd_gradients():
    ts.manual_seed(0)
    model = ts.nn.Linear(3, 1)
    x, y = ts.randn(16, 3), ts.randn(16, 1)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_repr_lists_each_group_sorted():
    opt = optim.SGD([param()], lr=0.1)
    text = repr(opt)
    assert text.startswith("SGD (\nParameter Group 0\n    dampening: 0\n") and text.endswith(")")
    assert "    lr: 0.1\n" in text and "params" not in text


# -- state_dict -----------------------------------------------------------------------------------------

def two_param_model():
    ts.manual_seed(1)
    return ts.nn.Sequential(ts.nn.Linear(3, 4), ts.nn.Linear(4, 1))


def train_steps(model, opt, n, seed):
    gen = ts.Generator().manual_seed(seed)
    for _ in range(n):
        x = ts.randn(8, 3, generator=gen)
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        opt.step()


def test_state_dict_format():
    a, b = param(), param()
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad = b.grad = ts.ones(2)
    opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert sorted(sd["state"]) == [0, 1] and set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["param_groups"][0]["betas"] == (0.9, 0.999)
    before = sd["state"][0]["exp_avg"].clone()
    opt.step()  # the state dict is a snapshot
    assert_close(sd["state"][0]["exp_avg"], before)


@pytest.mark.parametrize("opt_cls,options", [
    (optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True)),
    (optim.Adam, dict(lr=0.01, amsgrad=True)),
    (optim.AdamW, dict(lr=0.01)),
    (optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True)),
])
def test_state_dict_round_trip_continues_identically(opt_cls, options):
    model = two_param_model()
    opt = opt_cls(model.parameters(), **options)
    train_steps(model, opt, 3, seed=5)
    buf = io.BytesIO()
    ts.save({"model": model.state_dict(), "optim": opt.state_dict()}, buf)
    buf.seek(0)
    saved = ts.load(buf)

    clone = two_param_model()
    clone.load_state_dict(saved["model"])
    clone_opt = opt_cls(clone.parameters(), lr=123.0)   # options come from the state dict
    clone_opt.load_state_dict(saved["optim"])
    assert clone_opt.param_groups[0]["lr"] == options["lr"]

    train_steps(model, opt, 3, seed=9)
    train_steps(clone, clone_opt, 3, seed=9)
    for (name, p), q in zip(model.named_parameters(), clone.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)


def test_load_state_dict_casts_state_to_the_parameter_dtype_and_copies_it():
    p = param()
    opt = optim.Adam([p], lr=0.1)
    p.grad = ts.ones(2)
    opt.step()
    sd = opt.state_dict()
    q = ts.nn.Parameter(ts.zeros(2, dtype=ts.float64))
    other = optim.Adam([q])
    other.load_state_dict(sd)
    assert other.state[q]["exp_avg"].dtype == ts.float64 and other.state[q]["step"].dtype == ts.float32
    other.state[q]["step"].add_(1)
    assert sd["state"][0]["step"].item() == 1.0


def test_load_state_dict_errors():
    opt = optim.SGD([param(), param()], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict({"state": {}, "param_groups": [{"lr": 0.1, "params": [0]}]})


# -- argument errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("make,message", [
    (lambda p: optim.SGD(p, lr=-0.1), "Invalid learning rate: -0.1"),
    (lambda p: optim.SGD(p, lr=0.1, momentum=-1), "Invalid momentum value: -1"),
    (lambda p: optim.SGD(p, lr=0.1, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: optim.SGD(p, lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: optim.Adam(p, lr=-1e-3), "Invalid learning rate: -0.001"),
    (lambda p: optim.Adam(p, eps=-1.0), "Invalid epsilon value: -1.0"),
    (lambda p: optim.Adam(p, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: optim.Adam(p, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda p: optim.AdamW(p, weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
    (lambda p: optim.RMSprop(p, alpha=-0.5), "Invalid alpha value: -0.5"),
    (lambda p: optim.Adam(p, fused=True), "fused=True is not supported"),
    (lambda p: optim.SGD([], lr=0.1), "optimizer got an empty parameter list"),
])
def test_bad_hyper_parameters(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make([param()])


def test_bad_params():
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        optim.SGD(param(), lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        optim.SGD([1], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([param() * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {param()}}], lr=0.1)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        p = param()
        optim.SGD([p, p], lr=0.1)


def test_required_option_must_be_given_by_each_group():
    class Custom(optim.Optimizer):
        def __init__(self, params, lr=optim.optimizer.required):
            super().__init__(params, {"lr": lr})

    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        Custom([param()])
    assert Custom([{"params": [param()], "lr": 0.1}]).param_groups[0]["lr"] == 0.1


def test_a_custom_optimizer_can_override_step():
    class SignSGD(optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        @ts.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    p.add_(p.grad.sign(), alpha=-group["lr"])

    p = param()
    p.grad = ts.tensor([3.0, -0.5])
    SignSGD([p]).step()
    assert_close(p.detach(), np.array([0.9, -1.9], np.float32))


# -- PyTorch oracle ---------------------------------------------------------------------------------------

ORACLE_CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, eps=1e-3)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, momentum=0.5, centered=True, weight_decay=0.1)),
]


@pytest.mark.parametrize("name,options", ORACLE_CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(ORACLE_CASES)])
def test_ten_steps_match_pytorch(oracle, name, options):
    rng = np.random.default_rng(0)
    p0 = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (4,)]]
    t_params = [oracle.nn.Parameter(oracle.tensor(v)) for v in p0]
    s_params = [ts.nn.Parameter(ts.tensor(v)) for v in p0]
    t_opt = getattr(oracle.optim, name)(t_params, **options)
    s_opt = getattr(optim, name)(s_params, **options)
    for _ in range(10):
        for tp, sp in zip(t_params, s_params):
            g = rng.standard_normal(tp.shape).astype(np.float32)
            tp.grad, sp.grad = oracle.tensor(g), ts.tensor(g)
        t_opt.step()
        s_opt.step()
        for tp, sp in zip(t_params, s_params):
            assert_close(sp.detach(), tp.detach())
    t_sd, s_sd = t_opt.state_dict(), s_opt.state_dict()
    assert t_sd["param_groups"] == s_sd["param_groups"]
    for i, t_state in t_sd["state"].items():
        assert set(t_state) == set(s_sd["state"][i])
        for key, value in t_state.items():
            assert_close(s_sd["state"][i][key], value)
    assert repr(s_opt) == repr(t_opt)


def test_a_pytorch_optimizer_state_dict_loads_and_continues_identically(oracle):
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal((5,)).astype(np.float32)
    tp, sp = oracle.nn.Parameter(oracle.tensor(p0)), ts.nn.Parameter(ts.tensor(p0))
    t_opt = oracle.optim.Adam([tp], lr=0.05, amsgrad=True)
    grads = [rng.standard_normal(5).astype(np.float32) for _ in range(6)]
    for g in grads[:3]:
        tp.grad = oracle.tensor(g)
        t_opt.step()
    t_sd = t_opt.state_dict()
    converted = {"state": {k: {n: ts.tensor(v.numpy()) for n, v in s.items()} for k, s in t_sd["state"].items()},
                 "param_groups": t_sd["param_groups"]}
    with ts.no_grad():
        sp.copy_(ts.tensor(tp.detach().numpy()))
    s_opt = optim.Adam([sp])
    s_opt.load_state_dict(converted)
    for g in grads[3:]:
        tp.grad, sp.grad = oracle.tensor(g), ts.tensor(g)
        t_opt.step()
        s_opt.step()
    assert_close(sp.detach(), tp.detach())
    assert math.isclose(s_opt.param_groups[0]["lr"], 0.05)
