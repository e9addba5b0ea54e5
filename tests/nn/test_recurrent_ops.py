"""The time-loop ops behind nn.LSTM / GRU / RNN (`aten::_lstm_sequence`, `_gru_sequence`, `_rnn_sequence`):
outputs against a step-by-step numpy reference, gradients (every input, both LSTM outputs) against
finite differences, both directions, and clear errors for inconsistent shapes and dtypes."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
from tscript._dispatch import dispatch
from tscript.autograd.gradcheck import gradcheck
from tscript_runtime.ops import OPS

GATES = {"lstm": 4, "gru": 3, "rnn": 1}


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def reference(kind, gates, h, c, w, b, reverse, relu=False):
    """Every step's h (and the last c) written out gate by gate."""
    steps = range(len(gates) - 1, -1, -1) if reverse else range(len(gates))
    hs = np.zeros(gates.shape[:2] + (w.shape[1],))
    for t in steps:
        gh = h @ w.T + (0 if b is None else b)
        if kind == "lstm":
            i, f, g, o = np.split(gates[t] + gh, 4, -1)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = sigmoid(o) * np.tanh(c)
        elif kind == "gru":
            (xr, xz, xn), (hr, hz, hn) = np.split(gates[t], 3, -1), np.split(gh, 3, -1)
            r, z = sigmoid(xr + hr), sigmoid(xz + hz)
            n = np.tanh(xn + r * hn)
            h = (1 - z) * n + z * h
        else:
            h = np.maximum(gates[t] + gh, 0) if relu else np.tanh(gates[t] + gh)
        hs[t] = h
    return hs, c


def arguments(kind, steps, batch, hidden, bias, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    width = GATES[kind] * hidden
    arrays = {"gates": rng.standard_normal((steps, batch, width)), "h0": rng.standard_normal((batch, hidden)),
              "c0": rng.standard_normal((batch, hidden)) if kind == "lstm" else None,
              "w": rng.standard_normal((width, hidden)) * 0.5, "b": rng.standard_normal(width) if bias else None}
    return {k: None if v is None else v.astype(dtype) for k, v in arrays.items()}


def run(kind, a, reverse, relu=False, grad=False):
    t = {k: None if v is None else ts.tensor(v, requires_grad=grad) for k, v in a.items()}
    if kind == "lstm":
        args = (t["gates"], t["h0"], t["c0"], t["w"], t["b"], reverse)
    elif kind == "gru":
        args = (t["gates"], t["h0"], t["w"], t["b"], reverse)
    else:
        args = (t["gates"], t["h0"], t["w"], t["b"], relu, reverse)
    return dispatch(OPS[f"aten::_{kind}_sequence"], args), t


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(["lstm", "gru", "rnn"]), steps=st.integers(1, 5), batch=st.integers(1, 3),
       hidden=st.integers(1, 4), bias=st.booleans(), reverse=st.booleans(), relu=st.booleans())
def test_every_step_matches_the_cell_equations(kind, steps, batch, hidden, bias, reverse, relu):
    a = arguments(kind, steps, batch, hidden, bias)
    out, _ = run(kind, a, reverse, relu)
    hs, c = reference(kind, a["gates"], a["h0"], a["c0"], a["w"], a["b"], reverse, relu)
    if kind == "lstm":
        np.testing.assert_allclose(out[0].numpy(), hs, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(out[1].numpy(), c, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(out.numpy(), hs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_gradients_of_every_input_match_finite_differences(kind, reverse, bias):
    a = arguments(kind, 4, 2, 3, bias)
    names = [k for k, v in a.items() if v is not None]
    weights = {k: np.random.default_rng(1).standard_normal(s) for k, s in (("hs", (4, 2, 3)), ("c", (2, 3)))}

    def f(*tensors):
        values = dict(zip(names, tensors))
        if kind == "lstm":
            hs, c = dispatch(OPS["aten::_lstm_sequence"], (values["gates"], values["h0"], values["c0"], values["w"],
                                                           values.get("b"), reverse))
            return (hs * ts.tensor(weights["hs"])).sum() + (c * ts.tensor(weights["c"])).sum()
        args = (values["gates"], values["h0"], values["w"], values.get("b"))
        args += (reverse,) if kind == "gru" else (False, reverse)
        return (dispatch(OPS[f"aten::_{kind}_sequence"], args) * ts.tensor(weights["hs"])).sum()
    assert gradcheck(f, tuple(ts.tensor(a[k], requires_grad=True) for k in names))


def test_relu_rnn_gradient_matches_finite_differences():
    a = arguments("rnn", 3, 2, 3, True, seed=3)
    names = ["gates", "h0", "w", "b"]

    def f(*tensors):
        return dispatch(OPS["aten::_rnn_sequence"], (*tensors, True, False)).pow(2).sum()
    assert gradcheck(f, tuple(ts.tensor(a[k], requires_grad=True) for k in names))


def test_float32_keeps_its_dtype():
    a = arguments("lstm", 3, 2, 4, True, dtype=np.float32)
    (hs, c), _ = run("lstm", a, False)
    assert hs.dtype == ts.float32 and c.dtype == ts.float32 and tuple(hs.shape) == (3, 2, 4)


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(w=a["w"][:-1]), "weight_hh must have shape"),
    (lambda a: a.update(h0=a["h0"][:1]), "h0 must have shape"),
    (lambda a: a.update(c0=a["c0"][:, :2]), "c0 must have shape"),
    (lambda a: a.update(b=a["b"][:3]), "bias_hh must have shape"),
    (lambda a: a.update(gates=a["gates"][0]), "gates must be 3-D"),
    (lambda a: a.update(h0=a["h0"].astype(np.float32)), "h0 has dtype float32"),
])
def test_inconsistent_arguments_are_named(change, message):
    a = arguments("lstm", 3, 2, 4, True)
    change(a)
    with pytest.raises(RuntimeError, match=message):
        run("lstm", a, False)


def test_lstm_final_cell_state_gradient_flows_through_the_module():
    """nn.LSTM's c_n is the op's second output: a loss on it alone reaches the weights and the input."""
    ts.manual_seed(0)
    lstm = ts.nn.LSTM(3, 4, num_layers=2)
    x = ts.randn(5, 2, 3, requires_grad=True)
    _, (h, c) = lstm(x)
    c.sum().backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0
    assert all(float(p.grad.abs().sum()) > 0 for n, p in lstm.named_parameters() if "l0" in n)


def test_double_backward_through_a_recurrent_layer_is_a_clear_error():
    lstm = ts.nn.LSTM(3, 4)
    x = ts.randn(5, 2, 3, requires_grad=True)
    out, _ = lstm(x)
    (g,) = ts.autograd.grad(out.sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="double backward .* recurrent layer"):
        g.sum().backward()


def test_the_time_loop_products_run_on_the_kernel_library(monkeypatch):
    """Each step's product goes through the accelerated matmul (the kernel library's GEMM on AVX-512
    hosts): numpy's OpenBLAS took up to 8 ms per 20x256x1024 product on two busy cores, and tracing an
    LSTM language model ran 70 of them. The result is the numpy reference's."""
    from tscript_runtime.ops import accelerated
    rng = np.random.default_rng(3)
    steps, batch, hidden = 5, 20, 64
    gates = rng.standard_normal((steps, batch, 4 * hidden), dtype=np.float32)
    h0, c0 = (rng.standard_normal((batch, hidden), dtype=np.float32) for _ in range(2))
    w = rng.standard_normal((4 * hidden, hidden), dtype=np.float32) * 0.1
    b = rng.standard_normal(4 * hidden, dtype=np.float32)
    seen = []
    monkeypatch.setitem(accelerated.KERNELS, "matmul", lambda a, m: seen.append((a.shape, m.shape)) or a @ m)
    hs, c = OPS["aten::_lstm_sequence"].kernel(gates, h0, c0, w, b, False)
    assert seen == [((batch, hidden), (hidden, 4 * hidden))] * steps
    want_hs, want_c = reference("lstm", gates.astype(np.float64), h0, c0, w, b, False)
    np.testing.assert_allclose(hs, want_hs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c, want_c, rtol=1e-4, atol=1e-5)
