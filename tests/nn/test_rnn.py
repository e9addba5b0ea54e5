"""Recurrent layers and cells: PyTorch's parameter names, init, reprs and errors; outputs and gradients
against numpy references and against PyTorch with identical weights (oracle)."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
from tests.conftest import assert_close

RNG = np.random.default_rng(0)
TOL = dict(rtol=1e-4, atol=1e-5)


def data(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def params(module) -> dict:
    """name -> ndarray of a tscript module's parameters."""
    return {k: v.detach().numpy() for k, v in module.named_parameters()}


# -- numpy reference of one layer, one direction ------------------------------------------------------

def np_step(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One step of PyTorch's cell equations, written out gate by gate."""
    gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    if mode == "RNN_TANH":
        return np.tanh(gi + gh), None
    if mode == "RNN_RELU":
        return np.maximum(gi + gh, 0), None
    if mode == "GRU":
        H = h.shape[-1]
        r = sigmoid(gi[:, :H] + gh[:, :H])
        z = sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
        n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
        return (1 - z) * n + z * h, None
    H = c.shape[-1]
    g = gi + gh
    i, f, gg, o = sigmoid(g[:, :H]), sigmoid(g[:, H:2 * H]), np.tanh(g[:, 2 * H:3 * H]), sigmoid(g[:, 3 * H:])
    c = f * c + i * gg
    return o * np.tanh(c), c


def np_layer(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    """A whole sequence x (T, B, I): (outputs (T, B, H), h_T, c_T)."""
    outs = []
    for x_t in x:
        h, c = np_step(mode, x_t, h, c, w_ih, w_hh, b_ih, b_hh)
        outs.append(h)
    return np.stack(outs), h, c


MODES = {"RNN_TANH": (ts.nn.RNN, {}), "RNN_RELU": (ts.nn.RNN, {"nonlinearity": "relu"}),
         "GRU": (ts.nn.GRU, {}), "LSTM": (ts.nn.LSTM, {})}


@pytest.mark.parametrize("mode", list(MODES))
def test_single_layer_matches_numpy_reference(mode):
    cls, kw = MODES[mode]
    m = cls(3, 4, **kw)
    x, h0, c0 = data(5, 2, 3), data(1, 2, 4), data(1, 2, 4)
    p = params(m)
    ref_out, ref_h, ref_c = np_layer(mode, x, h0[0], c0[0], p["weight_ih_l0"], p["weight_hh_l0"],
                                     p["bias_ih_l0"], p["bias_hh_l0"])
    hx = (ts.tensor(h0), ts.tensor(c0)) if mode == "LSTM" else ts.tensor(h0)
    out, state = m(ts.tensor(x), hx)
    assert_close(out, ref_out, **TOL)
    h_n = state[0] if mode == "LSTM" else state
    assert_close(h_n, ref_h[None], **TOL)
    if mode == "LSTM":
        assert_close(state[1], ref_c[None], **TOL)


def test_one_step_rnn_by_hand():
    """h1 = tanh(W_ih x + b_ih + W_hh h0 + b_hh) with small numbers worked out by hand."""
    m = ts.nn.RNN(2, 1)
    m.load_state_dict({"weight_ih_l0": ts.tensor([[0.5, -1.0]]), "weight_hh_l0": ts.tensor([[2.0]]),
                       "bias_ih_l0": ts.tensor([0.25]), "bias_hh_l0": ts.tensor([-0.5])})
    out, h = m(ts.tensor([[[1.0, 0.5]]]), ts.tensor([[[0.25]]]))
    expected = math.tanh(0.5 * 1.0 - 1.0 * 0.5 + 0.25 + 2.0 * 0.25 - 0.5)  # = tanh(0.25)
    assert out.shape == (1, 1, 1) and h.shape == (1, 1, 1)
    assert abs(out.item() - expected) < 1e-6 and abs(h.item() - expected) < 1e-6


def test_gru_gate_order_by_hand():
    """r, z, n gates in that order; with weights zero the step reduces to the biases."""
    m = ts.nn.GRU(1, 1, bias=True)
    zero = ts.zeros(3, 1)
    m.load_state_dict({"weight_ih_l0": zero, "weight_hh_l0": zero, "bias_ih_l0": ts.tensor([0.0, 1.0, 0.5]),
                       "bias_hh_l0": ts.tensor([2.0, 0.0, 0.25])})
    _, h = m(ts.zeros(1, 1, 1), ts.tensor([[[0.8]]]))
    r, z = sigmoid(2.0), sigmoid(1.0)
    n = math.tanh(0.5 + r * 0.25)
    assert abs(h.item() - ((1 - z) * n + z * 0.8)) < 1e-6


def test_lstm_gate_order_by_hand():
    """i, f, g, o gates in that order, set through the biases alone."""
    m = ts.nn.LSTM(1, 1)
    m.load_state_dict({"weight_ih_l0": ts.zeros(4, 1), "weight_hh_l0": ts.zeros(4, 1),
                       "bias_ih_l0": ts.tensor([1.0, -1.0, 0.5, 2.0]), "bias_hh_l0": ts.zeros(4)})
    _, (h, c) = m(ts.zeros(1, 1, 1), (ts.zeros(1, 1, 1), ts.tensor([[[3.0]]])))
    c_ref = sigmoid(-1.0) * 3.0 + sigmoid(1.0) * math.tanh(0.5)
    assert abs(c.item() - c_ref) < 1e-6
    assert abs(h.item() - sigmoid(2.0) * math.tanh(c_ref)) < 1e-6


@settings(max_examples=15, deadline=None)
@given(mode=st.sampled_from(list(MODES)), T=st.integers(1, 4), B=st.integers(1, 3), I=st.integers(1, 4),
       H=st.integers(1, 4), batch_first=st.booleans())
def test_random_sizes_match_numpy(mode, T, B, I, H, batch_first):
    cls, kw = MODES[mode]
    m = cls(I, H, batch_first=batch_first, **kw)
    x = data(T, B, I)
    p = params(m)
    ref, _, _ = np_layer(mode, x, np.zeros((B, H), np.float32), np.zeros((B, H), np.float32),
                         p["weight_ih_l0"], p["weight_hh_l0"], p["bias_ih_l0"], p["bias_hh_l0"])
    inp = ts.tensor(x.transpose(1, 0, 2).copy() if batch_first else x)
    out, _ = m(inp)
    assert_close(out, ref.transpose(1, 0, 2) if batch_first else ref, **TOL)


def test_bidirectional_reverse_direction_reads_backwards():
    """The reverse half of the output at step t summarises steps t..T-1: equal to running the reverse
    weights forward over the flipped sequence."""
    m = ts.nn.GRU(3, 2, bidirectional=True)
    x = data(4, 1, 3)
    out, h = m(ts.tensor(x))
    p = params(m)
    rev, h_rev, _ = np_layer("GRU", x[::-1], np.zeros((1, 2), np.float32), None, p["weight_ih_l0_reverse"],
                             p["weight_hh_l0_reverse"], p["bias_ih_l0_reverse"], p["bias_hh_l0_reverse"])
    assert out.shape == (4, 1, 4) and h.shape == (2, 1, 2)
    assert_close(out[:, :, 2:], rev[::-1].copy(), **TOL)
    assert_close(h[1], h_rev, **TOL)
    assert_close(h[0], out[-1, :, :2])


# -- structure: names, shapes, init, repr ------------------------------------------------------------

def test_parameter_names_and_shapes():
    m = ts.nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    expected = []
    for layer, in_size in ((0, 3), (1, 10)):
        for sfx in ("", "_reverse"):
            expected += [(f"weight_ih_l{layer}{sfx}", (20, in_size)), (f"weight_hh_l{layer}{sfx}", (20, 5)),
                         (f"bias_ih_l{layer}{sfx}", (20,)), (f"bias_hh_l{layer}{sfx}", (20,))]
    assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == expected
    assert [len(w) for w in m.all_weights] == [4] * 4
    gru = ts.nn.GRU(2, 3, bias=False)
    assert [(k, tuple(v.shape)) for k, v in gru.named_parameters()] == [("weight_ih_l0", (9, 2)),
                                                                          ("weight_hh_l0", (9, 3))]
    proj = ts.nn.LSTM(2, 4, proj_size=2)
    assert [(k, tuple(v.shape)) for k, v in proj.named_parameters()] == [
        ("weight_ih_l0", (16, 2)), ("weight_hh_l0", (16, 2)), ("bias_ih_l0", (16,)), ("bias_hh_l0", (16,)),
        ("weight_hr_l0", (2, 4))]
    cell = ts.nn.GRUCell(2, 3, bias=False)
    assert [k for k, _ in cell.named_parameters()] == ["weight_ih", "weight_hh"]
    assert cell.bias_ih is None and cell.bias_hh is None


@pytest.mark.parametrize("make", [lambda: ts.nn.RNN(3, 16, num_layers=2), lambda: ts.nn.LSTMCell(3, 16),
                                  lambda: ts.nn.GRU(3, 16, bidirectional=True)])
def test_init_is_uniform_in_one_over_sqrt_hidden(make):
    m = make()
    bound = 1 / math.sqrt(16)
    for name, p in m.named_parameters():
        v = p.detach().numpy()
        assert v.min() >= -bound and v.max() <= bound, name
        assert v.std() > bound / 4, name  # spread over the range, not constant


def test_reprs():
    assert repr(ts.nn.RNN(10, 20)) == "RNN(10, 20)"
    assert repr(ts.nn.RNN(10, 20, 2, nonlinearity="relu", dropout=0.5, bidirectional=True, batch_first=True,
                          bias=False)) == \
        "RNN(10, 20, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True)"
    assert repr(ts.nn.LSTM(3, 4, proj_size=2)) == "LSTM(3, 4, proj_size=2)"
    assert repr(ts.nn.GRU(3, 4)) == "GRU(3, 4)"
    assert repr(ts.nn.RNNCell(10, 20, bias=False, nonlinearity="relu")) == \
        "RNNCell(10, 20, bias=False, nonlinearity=relu)"
    assert repr(ts.nn.LSTMCell(3, 4)) == "LSTMCell(3, 4)"
    assert repr(ts.nn.GRUCell(3, 4)) == "GRUCell(3, 4)"


# -- behaviour ------------------------------------------------------------------------------------------

def test_unbatched_input_equals_batch_of_one():
    m = ts.nn.LSTM(3, 4, num_layers=2, batch_first=True)
    x, h0, c0 = data(5, 3), data(2, 4), data(2, 4)
    out, (h, c) = m(ts.tensor(x), (ts.tensor(h0), ts.tensor(c0)))
    out_b, (h_b, c_b) = m(ts.tensor(x[None]), (ts.tensor(h0[:, None]), ts.tensor(c0[:, None])))
    assert out.shape == (5, 4) and h.shape == (2, 4) and c.shape == (2, 4)
    assert_close(out, out_b[0])
    assert_close(h, h_b[:, 0])
    assert_close(c, c_b[:, 0])


def test_dropout_only_between_layers_and_only_in_training():
    m = ts.nn.GRU(3, 4, num_layers=2, dropout=1.0)
    x = ts.tensor(data(4, 2, 3))
    m.eval()
    out_eval, _ = m(x)
    m.train()
    out_train, h = m(x)
    # p=1 zeroes the first layer's output: the second layer sees only zeros
    reference = ts.nn.GRU(4, 4)
    reference.load_state_dict({k.replace("l1", "l0"): v for k, v in m.state_dict().items() if "l1" in k})
    expected, _ = reference(ts.zeros(4, 2, 4))
    assert_close(out_train, expected)
    assert not np.allclose(out_eval.detach().numpy(), out_train.detach().numpy())
    assert_close(h[0], m.eval()(x)[1][0])  # the first layer's final state is unaffected


def test_double_precision_model():
    m = ts.nn.LSTM(3, 4).double()
    out, (h, c) = m(ts.tensor(data(2, 1, 3, dtype=np.float64)))
    assert out.dtype == h.dtype == c.dtype == ts.float64


def test_gradients_reach_input_state_and_every_parameter():
    m = ts.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    x = ts.tensor(data(3, 2, 3), requires_grad=True)
    h0 = ts.tensor(data(4, 2, 4), requires_grad=True)
    c0 = ts.tensor(data(4, 2, 4), requires_grad=True)
    out, (h, c) = m(x, (h0, c0))
    (out.sum() + h.sum() + c.sum()).backward()
    for t in [x, h0, c0] + list(m.parameters()):
        assert t.grad is not None and t.grad.shape == t.shape
        assert np.abs(t.grad.numpy()).sum() > 0


def test_cells_match_numpy_and_unbatched():
    for cls, mode, kw in ((ts.nn.RNNCell, "RNN_TANH", {}), (ts.nn.RNNCell, "RNN_RELU", {"nonlinearity": "relu"}),
                          (ts.nn.GRUCell, "GRU", {}), (ts.nn.LSTMCell, "LSTM", {})):
        cell = cls(3, 4, **kw)
        p = params(cell)
        x, h, c = data(2, 3), data(2, 4), data(2, 4)
        ref_h, ref_c = np_step(mode, x, h, c, p["weight_ih"], p["weight_hh"], p["bias_ih"], p["bias_hh"])
        if mode == "LSTM":
            got_h, got_c = cell(ts.tensor(x), (ts.tensor(h), ts.tensor(c)))
            assert_close(got_c, ref_c, **TOL)
            one_h, one_c = cell(ts.tensor(x[0]), (ts.tensor(h[0]), ts.tensor(c[0])))
            assert one_h.shape == one_c.shape == (4,)
        else:
            got_h = cell(ts.tensor(x), ts.tensor(h))
            one_h = cell(ts.tensor(x[0]), ts.tensor(h[0]))
            assert one_h.shape == (4,)
        assert_close(got_h, ref_h, **TOL)
        assert_close(one_h, ref_h[0], **TOL)
        zero_h = cell(ts.tensor(x))
        ref0, _ = np_step(mode, x, np.zeros_like(h), np.zeros_like(c), p["weight_ih"], p["weight_hh"],
                          p["bias_ih"], p["bias_hh"])
        assert_close(zero_h[0] if mode == "LSTM" else zero_h, ref0, **TOL)


# -- errors -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make, exc, fragment", [
    (lambda: ts.nn.RNN(3, 4, nonlinearity="sigmoid"), ValueError, "Unknown nonlinearity 'sigmoid'"),
    (lambda: ts.nn.RNN(3, 4, 2, dropout=1.5), ValueError, "dropout should be a number in range [0, 1]"),
    (lambda: ts.nn.GRU(3, 4, 2, dropout=True), ValueError, "dropout should be a number"),
    (lambda: ts.nn.LSTM(3, 4, bias=1), TypeError, "bias should be of type bool, got: int"),
    (lambda: ts.nn.LSTM(3, 4, batch_first=None), TypeError, "batch_first should be of type bool"),
    (lambda: ts.nn.LSTM(3.0, 4), TypeError, "input_size should be of type int, got: float"),
    (lambda: ts.nn.GRU(0, 4), ValueError, "input_size must be greater than zero"),
    (lambda: ts.nn.GRU(3, 0), ValueError, "hidden_size must be greater than zero"),
    (lambda: ts.nn.GRU(3, 4, num_layers=0), ValueError, "num_layers must be greater than zero"),
    (lambda: ts.nn.LSTM(3, 4, proj_size=-1), ValueError, "proj_size should be a positive integer"),
    (lambda: ts.nn.LSTM(3, 4, proj_size=4), ValueError, "proj_size has to be smaller than hidden_size"),
])
def test_constructor_errors(make, exc, fragment):
    with pytest.raises(exc) as info:
        make()
    assert fragment in str(info.value)


def test_dropout_with_one_layer_warns():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        ts.nn.LSTM(3, 4, dropout=0.5)


@pytest.mark.parametrize("call, exc, fragment", [
    (lambda: ts.nn.RNN(10, 20)(ts.randn(5, 3, 7)), RuntimeError,
     "input.size(-1) must be equal to input_size. Expected 10, got 7"),
    (lambda: ts.nn.RNN(10, 20)(ts.randn(5, 3, 2, 10)), ValueError,
     "RNN: Expected input to be 2D or 3D, got 4D tensor instead"),
    (lambda: ts.nn.GRU(10, 20)(ts.randn(10)), ValueError, "GRU: Expected input to be 2D or 3D, got 1D instead"),
    (lambda: ts.nn.LSTM(10, 20)(ts.randn(10)), ValueError, "LSTM: Expected input to be 2D or 3D, got 1D instead"),
    (lambda: ts.nn.RNN(10, 20, 2)(ts.randn(5, 3, 10), ts.randn(1, 3, 20)), RuntimeError,
     "Expected hidden size (2, 3, 20), got [1, 3, 20]"),
    (lambda: ts.nn.GRU(10, 20, bidirectional=True)(ts.randn(5, 3, 10), ts.randn(1, 3, 20)), RuntimeError,
     "Expected hidden size (2, 3, 20), got [1, 3, 20]"),
    (lambda: ts.nn.RNN(10, 20, batch_first=True)(ts.randn(3, 5, 10), ts.randn(1, 5, 20)), RuntimeError,
     "Expected hidden size (1, 3, 20), got [1, 5, 20]"),
    (lambda: ts.nn.GRU(10, 20)(ts.randn(5, 3, 10), ts.randn(3, 20)), RuntimeError,
     "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
    (lambda: ts.nn.RNN(10, 20)(ts.randn(5, 10), ts.randn(1, 1, 20)), RuntimeError,
     "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
    (lambda: ts.nn.LSTM(10, 20, 2)(ts.randn(5, 3, 10), (ts.randn(2, 3, 20), ts.randn(1, 3, 20))), RuntimeError,
     "Expected hidden[1] size (2, 3, 20), got [1, 3, 20]"),
    (lambda: ts.nn.LSTM(10, 20)(ts.randn(5, 3, 10), (ts.randn(1, 2, 20), ts.randn(1, 3, 20))), RuntimeError,
     "Expected hidden[0] size (1, 3, 20), got [1, 2, 20]"),
    (lambda: ts.nn.LSTM(10, 20)(ts.randn(5, 3, 10), (ts.randn(3, 20), ts.randn(1, 3, 20))), RuntimeError,
     "For batched 3-D input, hx and cx should also be 3-D but got (2-D, 3-D) tensors"),
    (lambda: ts.nn.LSTM(10, 20)(ts.randn(5, 10), (ts.randn(1, 20), ts.randn(1, 1, 20))), RuntimeError,
     "For unbatched 2-D input, hx and cx should also be 2-D but got (2-D, 3-D) tensors"),
    (lambda: ts.nn.LSTM(10, 20)(ts.randn(5, 3, 10), ts.randn(1, 3, 20)), TypeError,
     "hx must be a tuple (h_0, c_0)"),
    (lambda: ts.nn.RNN(10, 20)(ts.randn(5, 3, 10, dtype=ts.float64)), ValueError,
     "RNN input dtype (tscript.float64) does not match weight dtype (tscript.float32)"),
    (lambda: ts.nn.RNN(10, 20)(ts.randn(0, 3, 10)), RuntimeError, "Expected sequence length to be larger than 0"),
    (lambda: ts.nn.GRU(10, 20, batch_first=True)(ts.randn(3, 0, 10)), RuntimeError,
     "Expected sequence length to be larger than 0"),
    (lambda: ts.nn.RNNCell(10, 20)(ts.randn(3, 7)), RuntimeError, "input has inconsistent input_size: got 7 expected 10"),
    (lambda: ts.nn.RNNCell(10, 20)(ts.randn(3, 10), ts.randn(3, 5)), RuntimeError,
     "hidden0 has inconsistent hidden_size: got 5, expected 20"),
    (lambda: ts.nn.GRUCell(10, 20)(ts.randn(3, 10), ts.randn(4, 20)), RuntimeError,
     "Input batch size 3 doesn't match hidden0 batch size 4"),
    (lambda: ts.nn.LSTMCell(10, 20)(ts.randn(3, 10), (ts.randn(3, 20), ts.randn(3, 5))), RuntimeError,
     "hidden1 has inconsistent hidden_size: got 5, expected 20"),
    (lambda: ts.nn.GRUCell(10, 20)(ts.randn(2, 3, 10)), ValueError, "GRUCell: Expected input to be 1D or 2D, got 3D"),
    (lambda: ts.nn.RNNCell(10, 20)(ts.randn(3, 10), ts.randn(1, 3, 20)), ValueError,
     "RNNCell: Expected hidden to be 1D or 2D, got 3D instead"),
    (lambda: ts.nn.LSTMCell(10, 20)(ts.randn(3, 10), (ts.randn(3, 20), ts.randn(1, 3, 20))), ValueError,
     "LSTMCell: Expected hx[1] to be 1D or 2D, got 3D instead"),
    (lambda: ts.nn.LSTMCell(10, 20)(ts.randn(2, 3, 10)), ValueError, "LSTMCell: Expected input to be 1D or 2D"),
])
def test_forward_errors(call, exc, fragment):
    with pytest.raises(exc) as info:
        call()
    assert fragment in str(info.value)


def test_rnn_cell_with_unknown_nonlinearity_set_later():
    cell = ts.nn.RNNCell(2, 3)
    cell.nonlinearity = "gelu"
    with pytest.raises(RuntimeError, match="Unknown nonlinearity: gelu"):
        cell(ts.randn(1, 2))


# -- against PyTorch ----------------------------------------------------------------------------------

def copy_weights(torch_module, ours):
    """Load a PyTorch module's state_dict into ours (strict: names and shapes must agree)."""
    ours.load_state_dict({k: ts.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()})


@pytest.fixture(autouse=True)
def plain_pytorch_kernels():
    """PyTorch's oneDNN RNN kernels compile per shape (about a second each): use its plain ones."""
    try:
        import torch
    except ImportError:
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.backends.mkldnn.flags(enabled=False):
            yield


def run_both(torch, ours, theirs, inputs, state_is_pair):
    """Forward both modules on the same numpy inputs, backward a fixed weighting of every output;
    return (outputs, input grads, parameter grads) for each."""
    results = []
    for lib, module in ((ts, ours), (torch, theirs)):
        tensors = [lib.tensor(a, requires_grad=True) if a is not None else None for a in inputs]
        x, *state = tensors
        hx = None if state[0] is None else (tuple(state) if state_is_pair else state[0])
        out, hn = module(x, hx)
        outs = [out] + (list(hn) if state_is_pair else [hn])
        loss = sum((o * lib.tensor(np.cos(np.arange(o.numel())).reshape(tuple(o.shape)).astype(np.float32))).sum()
                   for o in outs)
        loss.backward()
        grads = [t.grad for t in tensors if t is not None]
        results.append((outs, grads, {k: p.grad for k, p in module.named_parameters()}))
    return results


CONFIGS = [dict(), dict(num_layers=2, bidirectional=True), dict(batch_first=True), dict(bias=False),
           dict(num_layers=3, batch_first=True, bidirectional=True)]


@pytest.mark.parametrize("name, kw", [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("GRU", {}),
                                      ("LSTM", {}), ("LSTM", {"proj_size": 2})])
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("with_state", [False, True])
def test_matches_pytorch(oracle, name, kw, config, with_state):
    torch = oracle
    theirs = getattr(torch.nn, name)(3, 4, **kw, **config)
    ours = getattr(ts.nn, name)(3, 4, **kw, **config)
    copy_weights(theirs, ours)
    D = 2 if config.get("bidirectional") else 1
    L = config.get("num_layers", 1)
    x = data(5, 2, 3) if not config.get("batch_first") else data(2, 5, 3)
    h_size = kw.get("proj_size") or 4
    pair = name == "LSTM"
    state = [data(L * D, 2, h_size)] + ([data(L * D, 2, 4)] if pair else []) if with_state else [None]
    (o_out, o_grads, o_pgrads), (t_out, t_grads, t_pgrads) = run_both(torch, ours, theirs, [x] + state, pair)
    for a, b in zip(o_out, t_out):
        assert_close(a, b, **TOL)
    for a, b in zip(o_grads, t_grads):
        assert_close(a, b, **TOL)
    assert o_pgrads.keys() == t_pgrads.keys()
    for k in o_pgrads:
        assert_close(o_pgrads[k], t_pgrads[k], **TOL)


@pytest.mark.parametrize("name", ["RNN", "GRU", "LSTM"])
def test_unbatched_matches_pytorch(oracle, name):
    torch = oracle
    theirs = getattr(torch.nn, name)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    ours = getattr(ts.nn, name)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    copy_weights(theirs, ours)
    x, h0, c0 = data(5, 3), data(4, 4), data(4, 4)
    hx_t = (torch.tensor(h0), torch.tensor(c0)) if name == "LSTM" else torch.tensor(h0)
    hx_o = (ts.tensor(h0), ts.tensor(c0)) if name == "LSTM" else ts.tensor(h0)
    t_out, t_h = theirs(torch.tensor(x), hx_t)
    o_out, o_h = ours(ts.tensor(x), hx_o)
    assert_close(o_out, t_out, **TOL)
    for a, b in zip(o_h if name == "LSTM" else [o_h], t_h if name == "LSTM" else [t_h]):
        assert_close(a, b, **TOL)


def test_train_mode_dropout_one_matches_pytorch(oracle):
    """dropout=1 is deterministic (everything between layers is zeroed), so train mode compares exactly."""
    torch = oracle
    theirs, ours = torch.nn.LSTM(3, 4, num_layers=3, dropout=1.0), ts.nn.LSTM(3, 4, num_layers=3, dropout=1.0)
    copy_weights(theirs, ours)
    x = data(4, 2, 3)
    t_out, (t_h, t_c) = theirs.train()(torch.tensor(x))
    o_out, (o_h, o_c) = ours.train()(ts.tensor(x))
    assert_close(o_out, t_out, **TOL)
    assert_close(o_h, t_h, **TOL)
    assert_close(o_c, t_c, **TOL)


@pytest.mark.parametrize("name, kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("GRUCell", {}),
                                      ("LSTMCell", {}), ("GRUCell", {"bias": False})])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_pytorch(oracle, name, kw, batched):
    torch = oracle
    theirs, ours = getattr(torch.nn, name)(3, 4, **kw), getattr(ts.nn, name)(3, 4, **kw)
    copy_weights(theirs, ours)
    shape = (2,) if batched else ()
    x, h, c = data(*shape, 3), data(*shape, 4), data(*shape, 4)
    results = []
    for lib, module in ((ts, ours), (torch, theirs)):
        xs, hs, cs = (lib.tensor(a, requires_grad=True) for a in (x, h, c))
        out = module(xs, (hs, cs)) if name == "LSTMCell" else module(xs, hs)
        outs = list(out) if name == "LSTMCell" else [out]
        sum((o * (i + 1.5)).sum() for i, o in enumerate(outs)).backward()
        grads = [xs.grad, hs.grad] + ([cs.grad] if name == "LSTMCell" else [])
        results.append((outs, grads, [p.grad for p in module.parameters()]))
    for ours_part, theirs_part in zip(*results):
        for a, b in zip(ours_part, theirs_part):
            assert_close(a, b, **TOL)


def test_state_dict_round_trip_to_pytorch(oracle):
    torch = oracle
    ours = ts.nn.GRU(3, 4, num_layers=2, bidirectional=True)
    theirs = torch.nn.GRU(3, 4, num_layers=2, bidirectional=True)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x = data(3, 2, 3)
    assert_close(ours(ts.tensor(x))[0], theirs(torch.tensor(x))[0], **TOL)
