"""The time loop over two threads (native/recurrent.py `_time_loop`: each step's two halves of the units
claimed by whichever thread comes first) and the weights it packs per call: results equal the reference
for uneven cuts, with one thread or two, and a language model's compiled and loaded forms see weights
changed between calls (in place, through a NumPy view, reassigned) as eager does, linear layers' biases
(the packed GEMM's epilogue) among them."""
import numpy as np
import pytest

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
    """One float32 time-loop op on (gates, h0[, c0]) with W_hh and b_hh as parameters."""

    def __init__(self, cell, hidden, reverse):
        super().__init__()
        rng = np.random.default_rng(hidden)
        self.cell, self.reverse = cell, reverse
        width = GATES[cell] * hidden
        self.w = nn.Parameter(ts.from_numpy((rng.standard_normal((width, hidden)) * 0.2).astype(np.float32)))
        self.b = nn.Parameter(ts.from_numpy(rng.standard_normal(width).astype(np.float32)))

    def forward(self, gates, h0, c0):
        if self.cell == "lstm":
            return dispatch(OPS["aten::_lstm_sequence"], (gates, h0, c0, self.w, self.b, self.reverse))[0] * 1
        if self.cell == "gru":
            return dispatch(OPS["aten::_gru_sequence"], (gates, h0, self.w, self.b, self.reverse)) * 1
        return dispatch(OPS["aten::_rnn_sequence"], (gates, h0, self.w, self.b, False, self.reverse)) * 1


@pytest.fixture(params=[2, 1], ids=["two threads", "one thread"])
def threads(request):
    """Native code on two threads, or on one (every launch then runs both copies of the loop here,
    one after the other)."""
    before = tscript_runtime.get_num_threads()
    tscript_runtime.set_num_threads(request.param)
    yield request.param
    tscript_runtime.set_num_threads(before)


@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn"])
@pytest.mark.parametrize("hidden, reverse", [(64, False), (96, True), (200, False)])
def test_split_time_loop_matches_the_reference(threads, cell, hidden, reverse):
    """Halves of 32 + 32, 32 + 64 and 96 + 104 units (the last panel partial), 40 rows (four blocks of ten)."""
    rng = np.random.default_rng(hidden)
    model = Sequence(cell, hidden, reverse)
    steps, batch = 7, 40
    args = tuple(ts.from_numpy(rng.standard_normal(s).astype(np.float32))
                 for s in ((steps, batch, GATES[cell] * hidden), (batch, hidden), (batch, hidden)))
    cm = ts.jit.compile(model, args)
    for _ in range(3):  # the same on every call (the claims and counters start afresh)
        got = cm(*args)
        with ts.no_grad():
            assert_close(got, model(*args), rtol=1e-4, atol=1e-5)
    assert entry_ran(cm), cm.explain()


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 64)
        self.rnn = nn.LSTM(64, 64, num_layers=2)
        self.head = nn.Linear(64, 100)

    def forward(self, tokens):
        return self.head(self.rnn(self.embed(tokens))[0]).log_softmax(-1)


def _changes(model):
    """Weight changes a user makes between calls, each a (name, function of the model)."""
    def in_place(m):
        with ts.no_grad():
            m.rnn.weight_hh_l0.mul_(-1.5)
            m.head.bias.add_(0.25)

    def through_numpy(m):
        m.rnn.weight_hh_l1.detach().numpy()[:64] *= 2.0  # no version counter sees this write

    def reassigned(m):
        m.rnn.weight_hh_l0 = nn.Parameter(ts.randn(256, 64) * 0.2)
        m.head.weight = nn.Parameter(ts.randn(100, 64) * 0.2)
    return [in_place, through_numpy, reassigned]


def test_compiled_model_sees_weights_changed_between_calls():
    ts.manual_seed(3)
    model = LanguageModel().eval()
    tokens = ts.randint(0, 100, (9, 20))
    cm = ts.jit.compile(model, (tokens,))
    before = cm(tokens)
    for change in _changes(model):
        change(model)
        got = cm(tokens)
        with ts.no_grad():
            assert_close(got, model(tokens), rtol=1e-4, atol=1e-5), change.__name__
        assert not np.allclose(got.numpy(), before.numpy()), change.__name__
        before = got
    assert entry_ran(cm), cm.explain()


def test_loaded_model_sees_params_written_in_place(tmp_path):
    ts.manual_seed(4)
    model = LanguageModel().eval()
    tokens = ts.randint(0, 100, (9, 20))
    ts.jit.save(ts.jit.compile(model, (tokens,)), tmp_path / "lm.tsm")
    loaded = tscript_runtime.load(tmp_path / "lm.tsm")
    assert loaded.executables["forward"].entry is not None
    loaded.run(tokens.numpy())
    for name, scale in (("rnn.weight_hh_l0", -1.5), ("rnn.weight_hh_l1", 0.5), ("head.bias", 3.0)):
        loaded.params[name] *= scale
        with ts.no_grad():
            model.get_parameter(name).mul_(scale)
            want = model(tokens)
        assert_close(ts.from_numpy(loaded.run(tokens.numpy())), want, rtol=1e-4, atol=1e-5), name
