"""Recurrent time loops in the whole-graph entry (native/recurrent.py) against the reference kernels of
`_lstm_sequence`, `_gru_sequence` and `_rnn_sequence`: hidden sizes below, at and above the block of 16
units (a last partial block, steps split over two threads or not), batches of 1 to 33, both directions,
with and without bias, float32 and float64; and nn.LSTM / GRU / RNN models (layers, bidirectional,
batch-first, given initial states) compiled to one native call, also in the standalone runtime."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
import tscript_runtime
from tscript import nn
from tscript._dispatch import dispatch
from tscript_runtime.ops import OPS

from tests.conftest import assert_close

GATES = {"lstm": 4, "gru": 3, "rnn": 1}


def entry_ran(cm) -> bool:
    return cm.executable.entry is not None and any(p is not None for p in cm.executable.entry._plans.values())


class Sequence(nn.Module):
    """One time-loop op on (gates, h0[, c0]), its weights as parameters (so the loop reads fixed arrays)."""

    def __init__(self, cell, hidden, bias, reverse, relu, dtype):
        super().__init__()
        width = GATES[cell] * hidden
        rng = np.random.default_rng(hidden)
        self.cell, self.reverse, self.relu = cell, reverse, relu
        self.w = nn.Parameter(ts.from_numpy((rng.standard_normal((width, hidden)) * 0.3).astype(dtype)))
        self.b = nn.Parameter(ts.from_numpy(rng.standard_normal(width).astype(dtype))) if bias else None

    def forward(self, gates, h0, c0):
        if self.cell == "lstm":
            return dispatch(OPS["aten::_lstm_sequence"], (gates, h0, c0, self.w, self.b, self.reverse))
        if self.cell == "gru":
            return dispatch(OPS["aten::_gru_sequence"], (gates, h0, self.w, self.b, self.reverse)) * 1
        return dispatch(OPS["aten::_rnn_sequence"], (gates, h0, self.w, self.b, self.relu, self.reverse)) * 1


@settings(max_examples=25, deadline=None)
@given(cell=st.sampled_from(["lstm", "gru", "rnn"]), steps=st.integers(1, 6), batch=st.sampled_from([1, 2, 3, 20, 33]),
       hidden=st.sampled_from([1, 5, 16, 31, 32, 40, 64]), bias=st.booleans(), reverse=st.booleans(),
       relu=st.booleans(), dtype=st.sampled_from([np.float32, np.float64]))
def test_time_loop_matches_the_reference(cell, steps, batch, hidden, bias, reverse, relu, dtype):
    rng = np.random.default_rng(steps * 100 + batch)
    model = Sequence(cell, hidden, bias, reverse, relu, dtype)
    args = tuple(ts.from_numpy(rng.standard_normal(s).astype(dtype))
                 for s in ((steps, batch, GATES[cell] * hidden), (batch, hidden), (batch, hidden)))
    cm = ts.jit.compile(model, args)
    got = cm(*args)
    assert entry_ran(cm), cm.graph
    with ts.no_grad():
        want = model(*args)
    # float32: the loop and the reference sum each step's products in other orders, and a ReLU RNN's
    # values grow over the steps (one element of 1152 differed by 4.4e-5 relative after 6 steps)
    rtol = 1e-4 if dtype == np.float32 else 1e-5
    for g, w in zip(got, want) if cell == "lstm" else [(got, want)]:
        assert_close(g, w, rtol=rtol, atol=1e-5)


def assert_same(got, want):
    """Equal nested tuples of tensors."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    else:
        assert_close(got, want, rtol=1e-4, atol=1e-5)


class LanguageModel(nn.Module):
    def __init__(self, kind, **options):
        super().__init__()
        self.embed = nn.Embedding(50, 24)
        self.rnn = getattr(nn, kind)(24, 40, **options)
        width = 40 * (2 if options.get("bidirectional") else 1)
        self.head = nn.Linear(width, 50)

    def forward(self, tokens, state=None):
        out, state = self.rnn(self.embed(tokens), state)
        return self.head(out).log_softmax(-1), state


@pytest.mark.parametrize("kind, options", [
    ("LSTM", dict(num_layers=2)), ("LSTM", dict(batch_first=True, bidirectional=True)),
    ("GRU", dict(num_layers=2, batch_first=True)), ("GRU", dict(bidirectional=True)),
    ("RNN", dict(nonlinearity="relu", num_layers=2)), ("RNN", dict(bias=False))])
def test_recurrent_language_models_run_as_one_native_call(kind, options, tmp_path):
    ts.manual_seed(0)
    model = LanguageModel(kind, **options).eval()
    tokens = ts.randint(0, 50, (7, 3))
    cm = ts.jit.compile(model, (tokens,), dynamic={0: [0]})
    got = cm(tokens)
    assert entry_ran(cm), cm.explain()
    with ts.no_grad():
        want = model(tokens)
    assert_same(got, want)
    other = ts.randint(0, 50, (11, 3))  # another sequence length: the loop is not unrolled
    with ts.no_grad():
        assert_same(cm(other), model(other))
    ts.jit.save(cm, tmp_path / "lm.tsm")
    loaded = tscript_runtime.load(tmp_path / "lm.tsm")
    assert loaded.executables["forward"].entry is not None
    out = loaded.run(tokens.numpy())
    np.testing.assert_array_equal(out[0], got[0].numpy())


def test_given_initial_states_lower_too():
    ts.manual_seed(1)
    model = LanguageModel("LSTM", num_layers=2).eval()
    tokens = ts.randint(0, 50, (5, 2))
    h = ts.randn(2, 2, 40), ts.randn(2, 2, 40)

    class WithState(nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = model

        def forward(self, tokens, h0, c0):
            return self.lm(tokens, (h0, c0))
    wrapped = WithState().eval()
    cm = ts.jit.compile(wrapped, (tokens, *h))
    got = cm(tokens, *h)
    assert entry_ran(cm), cm.explain()
    with ts.no_grad():
        assert_same(got, wrapped(tokens, *h))


def backward_entry_ran(cm) -> bool:
    entry = cm.backward_executable.entry
    return entry is not None and any(p is not None for p in entry._plans.values())


@pytest.mark.parametrize("kind, options", [
    ("LSTM", dict(num_layers=2)), ("LSTM", dict(bidirectional=True, bias=False)),
    ("GRU", dict(num_layers=2)), ("GRU", dict(bidirectional=True)),
    ("RNN", dict(nonlinearity="relu")), ("RNN", dict(num_layers=2, bidirectional=True))])
def test_training_steps_run_backward_through_time_natively(kind, options):
    """compile(..., backward=True): forward and backward each one native call; parameter gradients and
    the loss curve of a few SGD steps equal eager autograd's."""
    import copy
    ts.manual_seed(2)
    model = LanguageModel(kind, **options)
    reference = copy.deepcopy(model)
    tokens, targets = ts.randint(0, 50, (6, 3)), ts.randint(0, 50, (6, 3))
    cm = ts.jit.compile(model, (tokens,), backward=True)
    optimizers = [ts.optim.SGD(m.parameters(), lr=0.5) for m in (model, reference)]
    for step in range(3):
        losses = []
        for run, optimizer in zip((cm, reference), optimizers):
            loss = ts.nn.functional.nll_loss(run(tokens)[0].reshape(-1, 50), targets.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            losses.append(float(loss))
            if step == 0 and run is reference:
                for (name, p), q in zip(model.named_parameters(), reference.parameters()):
                    assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5), name
            optimizer.step()
        assert abs(losses[0] - losses[1]) <= 1e-5 * abs(losses[1]), (step, losses)
    assert entry_ran(cm) and backward_entry_ran(cm)
