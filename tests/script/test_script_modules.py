"""Scripted modules and functions as objects: calls kept in `.graph` and inlined in
`.inlined_graph`, `@export` entry points (saved, run by the runtime), `@ignore` (left to Python),
`@unused` (raises), train/eval, gradients, the module API, signatures."""
import os

import numpy as np
import pytest

import tscript as ts
import tscript_runtime
from tscript.ir import parse_ir
from tscript.ir.verify import verify
from tests.conftest import assert_close
from tests.script import module_programs as P
from tests.script.programs import T


def _kinds(graph) -> list:
    return [n.kind for n in graph.all_nodes()]


def test_calls_between_functions_are_kept_then_inlined():
    scripted = ts.jit.script(P.uses_helpers)
    calls = [n for n in scripted.graph.nodes if n.kind == "prim::CallFunction"]
    assert [c.attrs["name"] for c in calls] == ["tests.script.module_programs.double", "add_one",
                                                "tests.script.module_programs.double"]
    assert calls[1].callee is P.add_one.graph  # the scripted function's own graph
    assert calls[0].callee is calls[2].callee  # one graph per function and argument types
    assert "prim::CallFunction" not in _kinds(scripted.inlined_graph)
    x = T(3)
    assert_close(scripted(x), P.uses_helpers(x))


def test_submodule_calls_are_call_methods():
    scripted = ts.jit.script(P.Small())
    calls = [n for n in scripted.graph.nodes if n.kind == "prim::CallMethod"]
    assert [c.attrs["name"] for c in calls] == ["forward", "forward"]
    assert [c.inputs[0].node.attrs["name"] for c in calls] == ["fc1", "fc2"]
    assert _kinds(calls[0].callee) == ["prim::GetAttr", "prim::GetAttr", "prim::CallFunction"]  # F.linear
    assert "prim::CallMethod" not in _kinds(scripted.inlined_graph)
    assert scripted.fc1.graph is calls[0].callee  # submodules are scripted modules with their graph
    x = T(2, 3)
    assert_close(scripted.fc1(x), scripted._module.fc1(x))


def test_printed_graph_parses_back():
    for graph in (ts.jit.script(P.Small()).graph, ts.jit.script(P.uses_helpers).inlined_graph):
        verify(graph)
        assert str(parse_ir(str(graph))) == str(graph)


def test_code_reads_like_python():
    code = ts.jit.script(P.Small()).code
    assert code.startswith("def forward(self")
    assert "torch.linear" in code and "torch.tanh" in code


def test_exported_methods_are_entry_points(tmp_path):
    model = P.Encoder()
    scripted = ts.jit.script(model)
    x = T(2, 4)
    assert_close(scripted.encode(x), model.encode(x))
    assert_close(scripted(x), model(x))
    assert "aten::linear" in _kinds(scripted.encode.inlined_graph)
    assert set(scripted.exported_methods) == {"encode", "decode"}
    path = os.path.join(tmp_path, "encoder.tsm")
    ts.jit.save(scripted, path)
    loaded = tscript_runtime.load(path)
    assert set(loaded.entry_points) == {"forward", "encode", "decode"}
    h = loaded.run_method("encode", x.numpy())
    np.testing.assert_allclose(h, model.encode(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loaded.run_method("decode", h), model.decode(ts.tensor(h)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loaded.run(x.numpy()), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_ignored_method_runs_in_python_and_cannot_be_saved(tmp_path):
    scripted = ts.jit.script(P.WithIgnored())
    assert "prim::PythonOp" in _kinds(scripted.inlined_graph)
    P.CALLS.clear()
    x = T(2, 3)
    assert_close(scripted(x), scripted._module(x))
    with ts.no_grad():
        scripted(x)
    assert P.CALLS == ["logged (2, 3)"] * 3
    with pytest.raises(ValueError, match=r"calls the Python function .*WithIgnored.log .*@tscript.jit.ignore"):
        ts.jit.save(scripted, os.path.join(tmp_path, "m.tsm"))


def test_unused_method_is_not_compiled_and_raises_when_called():
    model = P.WithUnused(use_debug=False)
    scripted = ts.jit.script(model)
    x = T(2, 3)
    assert_close(scripted(x), model(x))
    with pytest.raises(RuntimeError, match="WithUnused.debug was marked @tscript.jit.unused"):
        scripted(x, True)


def test_train_and_eval_recompile():
    ts.manual_seed(0)
    model = P.DropoutNet()
    scripted = ts.jit.script(model.eval())
    x = T(4, 8)
    assert "aten::rand" not in _kinds(scripted.inlined_graph)
    assert_close(scripted(x), model(x))
    scripted.train()
    assert "aten::rand" in _kinds(scripted.inlined_graph)
    ts.manual_seed(1)
    got = scripted(x)
    ts.manual_seed(1)
    assert_close(got, model(x))


def test_batch_norm_training_updates_running_stats_like_eager():
    ts.manual_seed(0)
    eager, scripted_model = P.Norm(), P.Norm()
    scripted = ts.jit.script(scripted_model)
    for seed in range(3):
        x = T(5, 3, seed=seed)
        assert_close(scripted(x), eager(x))
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert_close(getattr(scripted_model.bn, name), getattr(eager.bn, name))
    eager.eval(), scripted.eval()
    x = T(2, 3, seed=9)
    assert_close(scripted(x), eager(x))


def test_gradients_flow_through_a_scripted_module():
    ts.manual_seed(0)
    eager = P.Small()
    ts.manual_seed(0)
    scripted_model = P.Small()
    scripted = ts.jit.script(scripted_model)
    x = T(4, 3)
    eager(x, 0.5).sum().backward()
    scripted(x, scale=0.5).sum().backward()
    for (name, p), q in zip(eager.named_parameters(), scripted.parameters()):
        assert_close(q.grad, p.grad)


def test_module_api_is_kept():
    model = P.Small()
    scripted = ts.jit.script(model)
    assert list(scripted.state_dict()) == list(model.state_dict())
    assert [p is q for p, q in zip(scripted.parameters(), model.parameters())] == [True] * 4
    assert scripted.original_name == "Small"
    assert [name for name, _ in scripted.named_children()] == ["fc1", "fc2"]


def test_function_signature_defaults_keywords_and_checks():
    fn = ts.jit.script(P.double)
    with pytest.raises(TypeError, match="expected a value of type 'Tensor' for argument 'x' but instead found type "
                                        "'int'"):
        fn(3)
    with pytest.raises(TypeError, match="double()"):
        fn(T(2), T(2))
    small = ts.jit.script(P.Small())
    assert [v.name for v in small.graph.inputs] == ["self", "x", "scale"]
    x = T(2, 3)
    assert_close(small(x, scale=2.0), small._module(x, 2.0))
    assert_close(small(x), small._module(x))


def test_script_as_decorator_and_idempotence():
    assert isinstance(P.add_one, ts.jit.ScriptFunction)
    assert ts.jit.script(P.add_one) is P.add_one
    scripted = ts.jit.script(P.Small())
    assert ts.jit.script(scripted) is scripted
    with pytest.raises(TypeError, match="expects a function or an nn.Module"):
        ts.jit.script(3)
