"""Scripting code as public models write it (issue 19): the models of real_code_programs.py script
unchanged and match eager in training and evaluation mode; and scripted models work wherever
traced ones do: freeze folds their BatchNorms, save/load keeps scalar arguments and defaults,
compile keeps their control flow, the standalone runtime runs them. Errors in the new constructs
name the file, line and column."""
import os

import numpy as np
import pytest

import tscript as ts
import tscript_runtime
from tscript import nn
from tscript.jit import CompileError
from tests.script import real_code_programs as P
from tests.script.helpers import as_numpy, assert_runtime_same, assert_same, clone
from tests.script.programs import T


def tokens(*shape, high: int = 40, seed: int = 0):
    return ts.tensor(np.random.RandomState(seed).randint(0, high, size=shape).astype(np.int64))


def series(*shape):
    return ts.tensor(np.random.RandomState(0).randn(*shape))


def _word_model(kind: str):
    model = P.WordModel(kind)
    return model, (tokens(4, 3, high=20), model.start(3))


MODELS = [
    ("gpt", lambda: (P.TinyGPT(P.TinyConfig()), (tokens(2, 5),))),
    ("gpt_with_targets", lambda: (P.TinyGPT(P.TinyConfig()), (tokens(2, 5), tokens(2, 5, seed=1)))),
    ("lambda_over_submodules", lambda: (P.LambdaBlock(), (T(2, 3, 8),))),
    ("word_model_lstm", lambda: _word_model("LSTM")),
    ("word_model_gru", lambda: _word_model("GRU")),
    ("forecaster", lambda: (P.Forecaster().double(), (series(3, 5), 2))),
    ("upsampler", lambda: (P.Upsampler(), (T(2, 4, 3, 3),))),
    ("backbone_residual", lambda: (P.Backbone(), (T(2, 3, 8, 8),))),
    ("backbone_plain", lambda: (P.Backbone(P.Plain), (T(2, 3, 8, 8),))),
    ("super_and_property", lambda: (P.DoubleScaled(), (T(2, 3),))),
    ("closure_names", lambda: (P.make_closure_model(ts), (T(2, 4),))),
]

FUNCTIONS = [
    ("named_tuple_fields", P.use_split, (T(5),)),
    ("named_tuple_result", P.split_at, (T(5), 0.1)),
    ("optional_or", P.optional_or, (T(2, 3),)),
    ("optional_or_given", P.optional_or, (T(2, 3), 0.0, (3, 2))),
    ("optional_list_or", P.tuple_or_list, (T(3),)),
    ("optional_list_or_given", P.tuple_or_list, (T(3), [1, 2])),
    ("tensor_facts", P.tensor_facts, (T(2, 3),)),
    ("spread_tuple", P.spread, (T(2, 4),)),
]


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("name, make", MODELS, ids=[m[0] for m in MODELS])
def test_model_scripts_like_eager(name, make, training):
    ts.manual_seed(0)
    model, args = make()
    model.train(training)
    scripted = ts.jit.script(model)
    ts.manual_seed(1)
    expected = model(*clone(args))
    ts.manual_seed(1)
    assert_same(scripted(*clone(args)), expected)


@pytest.mark.parametrize("name, fn, args", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_function_scripts_like_eager(name, fn, args):
    assert_same(ts.jit.script(fn)(*clone(args)), fn(*clone(args)))


def test_named_tuple_result_is_the_class():
    got = ts.jit.script(P.split_at)(T(5), 0.1)
    assert type(got) is P.Split and got.low.shape == (5,)


def test_is_scripting_folds_to_true():
    scripted = ts.jit.script(P.scripting_flag)
    assert P.scripting_flag(T(2, 3)) == 0 and scripted(T(2, 3)) == 2
    assert not any(n.kind == "prim::If" for n in scripted.graph.all_nodes())


def test_device_and_config_are_constants_of_the_graph():
    graph = ts.jit.script(P.TinyGPT(P.TinyConfig()).eval()).inlined_graph
    kinds = [n.kind for n in graph.all_nodes()]
    assert "aten::arange" in kinds
    assert not any(n.kind == "prim::GetAttr" and n.attrs["name"] == "config" for n in graph.all_nodes())


def test_unannotated_argument_compiles_for_the_types_it_is_called_with():
    ts.manual_seed(0)
    model, (words, state) = _word_model("LSTM")
    scripted = ts.jit.script(model.eval())  # `state` is a tuple: forward compiles when first called
    assert_same(scripted(words, state), model(words, state))
    graph = scripted.graph
    assert str(graph.inputs[2].type) == "Tuple[Tensor, Tensor]"
    gru, (words, state) = _word_model("GRU")
    scripted = ts.jit.script(gru)
    assert str(scripted.graph.inputs[2].type) == "Tensor"


def test_variable_defined_in_a_loop_is_read_after_it():
    scripted = ts.jit.script(P.loop_defined)
    assert_same(scripted(T(2), 3), P.loop_defined(T(2), 3))
    with pytest.raises(RuntimeError, match="UnboundLocalError: local variable 'last'"):
        scripted(T(2), 0)


def test_freeze_folds_scripted_batchnorm():
    class ConvBN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)
            self.fc, self.bn1 = nn.Linear(4, 2), nn.BatchNorm1d(2)

        def forward(self, x):
            y = self.bn(self.conv(x)).relu().mean([2, 3])
            return self.bn1(self.fc(y))

    ts.manual_seed(0)
    model = ConvBN()
    model(T(4, 3, 6, 6))  # statistics that are not the initial ones
    model.eval()
    frozen = ts.jit.freeze(ts.jit.script(model))
    kinds = [n.kind for n in frozen.graph.all_nodes()]
    assert "aten::batch_norm" not in kinds and "aten::conv2d" in kinds and "aten::linear" in kinds
    with ts.no_grad():
        assert_same(frozen(T(2, 3, 6, 6)), model(T(2, 3, 6, 6)))


def scale_and_shift(x: ts.Tensor, times: int, shift: float = 0.5, flip: bool = False) -> ts.Tensor:
    y = x * times + shift
    return -y if flip else y


class Repeat(nn.Module):
    def forward(self, x, times: int = 2):
        for _ in range(times):
            x = x + 1
        return x


def test_save_and_load_keep_scalar_arguments_and_defaults(tmp_path):
    path = os.path.join(tmp_path, "fn.tsm")
    ts.jit.save(ts.jit.script(scale_and_shift), path)
    loaded = ts.jit.load(path)
    x = T(3)
    assert_same(loaded(x, 3), scale_and_shift(x, 3))
    assert_same(loaded(x, 2, 1.5, True), scale_and_shift(x, 2, 1.5, True))
    assert_same(loaded(x, times=4, flip=True), scale_and_shift(x, 4, flip=True))
    with pytest.raises(TypeError, match="missing required argument 'times'"):
        loaded(x)
    assert_runtime_same(tscript_runtime.load(path).run(x.numpy(), 3, 0.5, False), scale_and_shift(x, 3))
    path = os.path.join(tmp_path, "module.tsm")
    ts.jit.save(ts.jit.script(Repeat()), path)
    module = ts.jit.load(path)
    assert_same(module(x), x + 2)
    assert_same(module(x, 5), x + 5)


class Gate(nn.Module):
    """Data-dependent control flow: a branch on a tensor's value and a loop of run-time length."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, steps: int):
        y = self.fc(x)
        if y.sum() > 0:
            y = y.relu()
        else:
            y = -y
        for _ in range(steps):
            y = y * 0.5 + x
        return y


def test_compile_of_a_scripted_model_keeps_its_control_flow(tmp_path):
    ts.manual_seed(0)
    model = Gate().eval()
    compiled = ts.jit.compile(ts.jit.script(model), (T(2, 4), 3))
    kinds = {n.kind for n in compiled.graph.all_nodes()}
    assert {"prim::If", "prim::Loop"} <= kinds
    with ts.no_grad():
        for x, steps in [(T(2, 4), 3), (-T(2, 4) * 10, 0), (T(2, 4, seed=3) * 10, 5)]:
            assert_same(compiled(x, steps), model(x, steps))
    path = os.path.join(tmp_path, "gate.tsm")
    ts.jit.save(compiled, path)
    with ts.no_grad():
        assert_runtime_same(tscript_runtime.load(path).run(T(2, 4).numpy(), 4), model(T(2, 4), 4))


def test_frozen_optimized_and_compiled_scripted_models_keep_defaults(tmp_path):
    ts.manual_seed(0)
    model = P.TinyGPT(P.TinyConfig()).eval()  # forward(self, idx, targets=None)
    scripted = ts.jit.script(model)
    idx = tokens(2, 5)
    with ts.no_grad():
        expected = model(idx)
        assert_same(ts.jit.freeze(scripted)(idx), expected)
        assert_same(ts.jit.optimize(scripted, 1)(idx=idx), expected)
        compiled = ts.jit.compile(scripted, (idx,))
        assert_same(compiled(idx), expected)
        path = os.path.join(tmp_path, "gpt.tsm")
        ts.jit.save(compiled, path)
        assert_same(ts.jit.load(path)(idx), expected)


def test_compile_types_a_forward_waiting_for_its_first_call():
    ts.manual_seed(0)
    model, (words, state) = _word_model("LSTM")
    model.eval()
    compiled = ts.jit.compile(ts.jit.script(model), (words, state))
    with ts.no_grad():
        assert_same(compiled(words, state), model(words, state))


def test_runtime_runs_a_scripted_gpt(tmp_path):
    ts.manual_seed(0)
    model = P.TinyGPT(P.TinyConfig()).eval()
    path = os.path.join(tmp_path, "gpt.tsm")
    ts.jit.save(ts.jit.script(model), path)
    idx = tokens(2, 5)
    with ts.no_grad():
        logits, loss = model(idx)
    assert loss is None
    got = tscript_runtime.load(path).run(as_numpy(idx), None)  # (the runtime takes every input)
    assert_runtime_same(got[0] if isinstance(got, tuple) else got, logits)


@pytest.mark.parametrize("fn, token, fragment", [
    (P.super_outside_a_module, "super()", "super() is only supported in the methods of modules"),
    (P.spread_a_list, "*sizes", "only tuples of known length can be spread into arguments"),
    (P.to_an_accelerator, "torch.zeros", "device 'cuda' is not available"),
])
def test_errors_name_file_line_and_column(fn, token, fragment):
    with pytest.raises(CompileError) as info:
        ts.jit.script(fn)
    e = info.value
    assert fragment in e.explanation
    assert os.path.basename(e.file) == "real_code_programs.py"
    with open(e.file) as f:
        line = f.read().splitlines()[e.line - 1]
    assert line[e.column - 1:].startswith(token), (line, e.column)
    assert str(e).splitlines()[-1].strip() == "^"
