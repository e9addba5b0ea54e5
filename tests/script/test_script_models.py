"""The issue's models: an MLP, a CNN, an LSTM written with an explicit time loop and a
beam-search-style decoder with a `while` loop, scripted, compiled, saved and run by the standalone
runtime, all matching eager. And the point of scripting: data-dependent control flow that tracing
freezes (wrongly) and scripting keeps."""
import os
import warnings

import pytest

import tscript as ts
import tscript_runtime
from tests.script.helpers import as_numpy, assert_runtime_same, assert_same, clone
from tests.script.programs import BeamDecoder, CNN, LSTMCellLoop, MLP, T, if_on_tensor, loop_until

MODELS = [
    ("mlp", MLP, (T(5, 8),)),
    ("cnn", lambda: CNN().eval(), (T(2, 1, 8, 8),)),
    ("lstm", LSTMCellLoop, (T(6, 2, 3), None)),
    ("beam_search", BeamDecoder, (ts.tensor([1, 2, 3]), 2, 8)),
]


@pytest.mark.parametrize("name, factory, args", MODELS, ids=[m[0] for m in MODELS])
def test_script_save_and_run_in_runtime(name, factory, args, tmp_path):
    ts.manual_seed(0)
    model = factory()
    scripted = ts.jit.script(model)
    with ts.no_grad():
        expected = model(*clone(args))
        assert_same(scripted(*clone(args)), expected)
    path = os.path.join(tmp_path, f"{name}.tsm")
    ts.jit.save(scripted, path)
    loaded = tscript_runtime.load(path)
    assert_runtime_same(loaded.run(*as_numpy(args)), expected)


@pytest.mark.parametrize("name, factory, args", MODELS, ids=[m[0] for m in MODELS])
def test_compile_save_and_run_in_runtime(name, factory, args, tmp_path):
    ts.manual_seed(0)
    model = factory()
    compiled = ts.jit.compile(ts.jit.script(model), args)
    with ts.no_grad():
        expected = model(*clone(args))
        assert_same(compiled(*clone(args)), expected)
    path = os.path.join(tmp_path, f"{name}.tsm")
    ts.jit.save(compiled, path)
    assert_runtime_same(tscript_runtime.load(path).run(*as_numpy(args)), expected)


def test_lstm_graph_keeps_the_time_loop():
    graph = ts.jit.script(LSTMCellLoop()).graph
    loops = [n for n in graph.all_nodes() if n.kind == "prim::Loop"]
    assert len(loops) == 1
    body = loops[0].blocks[0]
    assert [str(p.type) for p in body.params] == ["int", "Tensor", "Tensor"]  # step, h, c carried
    # a longer sequence than any example: the loop runs as often as the input asks
    ts.manual_seed(0)
    model = LSTMCellLoop()
    ts.manual_seed(0)
    scripted = ts.jit.script(LSTMCellLoop())
    seq = T(11, 2, 3)
    assert_same(scripted(seq), model(seq))


def test_beam_search_while_loop_stops_early():
    ts.manual_seed(0)
    model = BeamDecoder()
    ts.manual_seed(0)
    scripted = ts.jit.script(BeamDecoder())
    assert any(n.kind == "prim::Loop" for n in scripted.graph.all_nodes())
    for max_len in (0, 1, 5, 20):
        start = ts.tensor([1, 0, 4])
        assert_same(scripted(start, 2, max_len), model(start, 2, max_len))


@pytest.mark.parametrize("fn, example, other", [
    (loop_until, ts.ones(3), ts.ones(3) * 7),        # a loop that runs until a tensor condition holds
    (if_on_tensor, ts.ones(3), -ts.ones(3)),        # an if on a tensor value
])
def test_data_dependent_control_flow_tracing_wrong_scripting_right(fn, example, other):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ts.jit.trace(fn, (example,), check_trace=False)
    scripted = ts.jit.script(fn)
    expected = fn(other)
    assert not bool((traced(other) == expected).all())  # the trace froze the path of `example`
    assert_same(scripted(other), expected)
    assert_same(scripted(example), fn(example))


@pytest.mark.parametrize("name, factory, args", MODELS, ids=[m[0] for m in MODELS])
def test_passes_keep_scripted_models_correct(name, factory, args):
    ts.manual_seed(0)
    model = factory().eval()
    scripted = ts.jit.script(model)
    with ts.no_grad():
        expected = model(*clone(args))
        for level in (0, 1, 2):
            assert_same(ts.jit.optimize(scripted, level)(*clone(args)), expected)
        assert_same(ts.jit.freeze(scripted)(*clone(args)), expected)
