"""What makes a warm load (every object in the cache) cheap changes none of its checks: a saved graph's
native code is keyed by the bytes of its member as read (the same key as its compile's when tscript wrote
the file), so any change to the graph is a new key; kernels with the same code are checked against the
templates once, yet a kernel differing in anything the key holds is checked on its own; and the
executor's program, built only when a call needs it, leaves nothing unchecked at load."""
import copy
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tscript as ts
import tscript_runtime as rt
from tscript import nn
from tscript.ir.graph_json import graph_to_json
from tscript_runtime import ModelError
from tscript_runtime.graph_json import document_text
from tscript_runtime.model import read_saved_model
from tscript_runtime.native import emit
from tscript_runtime.native_plan import NativePlan
from tscript_runtime.typed_graph import typed_graph

from tests.runtime.test_corrupt_files import contents, rewrite


class Net(nn.Module):
    """Two tanh layers: two pointwise kernels of one code (the same shapes and ops up to names)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.fc3(ts.tanh(self.fc2(ts.tanh(self.fc1(x)) * 2.0)) * 2.0)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A training step saved with forward and backward plans, and an input."""
    ts.manual_seed(0)
    p = tmp_path_factory.mktemp("warm") / "step.tsm"
    ts.jit.save(ts.jit.compile(Net(), ts.randn(4, 8), backward=True), p)
    return p, np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path / "cache"))
    emitted = []
    emit_module = emit.emit_module
    monkeypatch.setattr(emit, "emit_module", lambda plan, *timed: (emitted.append(plan), emit_module(plan, *timed))[1])
    return emitted


def copied(saved, tmp_path):
    p = tmp_path / "step.tsm"
    p.write_bytes(saved[0].read_bytes())
    return p


def test_a_saved_graph_is_keyed_by_its_bytes_as_its_compile_keys_its_document(saved):
    model = read_saved_model(str(saved[0]))
    assert set(model.entry_points) == {"forward", "backward"}
    for entry in model.entry_points.values():
        assert entry.graph_text == document_text(entry.graph).encode()  # what tscript.jit.save writes
        plan = NativePlan.from_json(entry.plan, typed_graph(entry.graph), entry.graph)
        assert emit._key(entry.graph, plan, entry.graph_text) == emit._key(entry.graph, plan)


def test_a_warm_load_emits_nothing_and_runs_forward_and_backward(saved, tmp_path, cache):
    path, x = saved
    first = rt.load(path)
    assert len(cache) == 2 and all(e.mode == "native" for e in first.executables.values())
    again = rt.load(path)
    assert len(cache) == 2
    out, grads = again.run_with_grad(x, grad_outputs=np.ones((4, 3), np.float32))
    expected, expected_grads = first.run_with_grad(x, grad_outputs=np.ones((4, 3), np.float32))
    np.testing.assert_array_equal(out, expected)
    assert grads.keys() == expected_grads.keys()
    for name, g in grads.items():
        np.testing.assert_array_equal(g, expected_grads[name])


def _scale(graph: dict, value: float) -> None:
    """The first `* 2.0` of the forward graph multiplies by `value` instead."""
    subgraphs = [n["attrs"]["subgraph"]["graph"] for n in graph["nodes"] if n["kind"] == "tscript::FusionGroup"]
    constant = next(n for s in subgraphs for n in s["nodes"] if n["kind"] == "prim::Constant"
                    and n["attrs"]["value"] == 2.0)
    constant["attrs"]["value"] = value


def test_a_changed_graph_is_a_new_key_and_runs_as_changed(saved, tmp_path, cache):
    path = copied(saved, tmp_path)
    x = saved[1]
    rt.load(path)
    _, members = contents(path)
    graph = json.loads(members["forward.graph.json"])
    _scale(graph, 3.0)
    rewrite(path, members={"forward.graph.json": document_text(graph).encode()})
    model = rt.load(path)
    assert len(cache) == 3  # the forward again, the backward from the cache
    w = model.params

    def linear(i, h):
        return h @ w[f"fc{i}.weight"].T + w[f"fc{i}.bias"]
    expected = linear(3, np.tanh(linear(2, np.tanh(linear(1, x)) * 3.0)) * 2.0)
    np.testing.assert_allclose(model.run(x), expected, rtol=1e-5, atol=1e-5)


def test_the_same_graph_written_otherwise_is_another_key_and_runs_the_same(saved, tmp_path, cache):
    path = copied(saved, tmp_path)
    x = saved[1]
    expected = rt.load(path).run(x)
    _, members = contents(path)
    graph = json.loads(members["forward.graph.json"])
    rewrite(path, members={"forward.graph.json": json.dumps(graph, indent=1).encode()})
    model = rt.load(path)
    assert len(cache) == 3
    np.testing.assert_array_equal(model.run(x), expected)


def test_changed_weights_reuse_the_code_and_are_used(saved, tmp_path, cache):
    path = copied(saved, tmp_path)
    x = saved[1]
    rt.load(path)
    manifest, members = contents(path)
    member = manifest["params"]["fc3.bias"]["member"]
    before = rt.load(path).run(x)
    buf = io.BytesIO()
    np.save(buf, np.load(io.BytesIO(members[member])) + 1.0)
    rewrite(path, members={member: buf.getvalue()})
    model = rt.load(path)
    assert len(cache) == 2
    np.testing.assert_allclose(model.run(x), before + 1.0, rtol=1e-5, atol=1e-5)


def test_a_missing_tensor_constant_is_refused_at_load_with_the_program_not_yet_built(tmp_path, cache):
    ts.manual_seed(0)
    scale = ts.randn(3)
    p = tmp_path / "scaled.tsm"
    ts.jit.save(ts.jit.compile(lambda x: x * scale + 1.0, ts.randn(2, 3)), p)
    model = rt.load(p)
    assert model.executables["forward"].entry is not None and model.executables["forward"]._program is None
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(model.executables["forward"].program.run([x])[0], model.run(x), rtol=1e-6)
    manifest, _ = contents(p)
    (name,) = manifest["entry_points"]["forward"]["constants"]

    def rename(m):
        constants = m["entry_points"]["forward"]["constants"]
        constants["other"] = constants.pop(name)
    rewrite(p, edit=rename)
    with pytest.raises(ModelError, match=f"graph refers to tensor constant '{name}', which is not stored"):
        rt.load(p)


# -- kernels of one code are checked once, and only those -------------------------------------------

@pytest.fixture(scope="module")
def compiled():
    ts.manual_seed(0)
    cm = ts.jit.compile(Net().eval(), ts.randn(4, 8))
    return graph_to_json(cm.graph), cm.plan


def _groups(graph: dict) -> list:
    return [n for n in graph["nodes"] if n["kind"] == "tscript::FusionGroup"]


def test_kernels_of_one_code_share_their_function_and_spec(compiled):
    graph, plan = compiled
    checked = NativePlan.from_json(plan, typed_graph(graph), graph)
    first, second = (checked.kernels[n["attrs"]["kernel"]] for n in _groups(graph)[:2])
    assert first.code == second.code and first.spec is second.spec
    assert emit.symbols(checked)[first.name] == emit.symbols(checked)[second.name]


@pytest.mark.parametrize("edit", [
    lambda sub: sub["nodes"][-1]["outputs"][0].update(type="Double(4, 8)"),   # a type
    lambda sub: next(n for n in sub["nodes"] if n["kind"] == "prim::Constant")["attrs"].update(value=3.0),
    lambda sub: sub["nodes"][-1].update(kind="aten::sub"),                     # an op
])
def test_a_kernel_differing_in_its_subgraph_has_its_own_code(compiled, edit):
    graph, plan = copy.deepcopy(compiled)
    edit(_groups(graph)[1]["attrs"]["subgraph"]["graph"])
    try:
        checked = NativePlan.from_json(plan, typed_graph(graph), graph)
    except ModelError:
        return  # refused: checked on its own
    first, second = (checked.kernels[n["attrs"]["kernel"]] for n in _groups(graph)[:2])
    assert first.code != second.code


def test_a_kernel_the_templates_refuse_is_refused_after_one_they_accept(compiled):
    """The second of two otherwise identical kernels computes in a dtype kernels do not take."""
    graph, plan = copy.deepcopy(compiled)
    sub = _groups(graph)[1]["attrs"]["subgraph"]["graph"]
    for v in [*sub["inputs"], *(o for n in sub["nodes"] for o in n["outputs"])]:
        v["type"] = v["type"].replace("Float(", "Half(")
    with pytest.raises(ModelError, match=f"native plan: kernel '{_groups(graph)[1]['attrs']['kernel']}'"):
        NativePlan.from_json(plan, typed_graph(graph), graph)


def test_the_arena_load_prepares_is_touched_meanwhile_and_a_first_run_waits_for_it(tmp_path, cache):
    ts.manual_seed(0)
    module = nn.Sequential(nn.Linear(64, 512), nn.Tanh(), nn.Linear(512, 8)).eval()
    p = tmp_path / "wide.tsm"
    ts.jit.save(ts.jit.compile(module, ts.randn(128, 64)), p)
    model = rt.load(p)
    local = model.executables["forward"].entry._local
    touching = local.touching
    assert touching is not None and local.arena.nbytes >= 128 * 512 * 4  # started by the load's prepare
    x = np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32)
    out = model.run(x)
    assert local.touching is None and not touching.is_alive()
    np.testing.assert_allclose(out, module(ts.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_a_warm_load_imports_no_ir_builder(saved, tmp_path):
    """A fresh process loading from a filled cache plans its calls without llvmlite's IR builders (their
    import was ~4 ms of a 50 ms load); the cold load that filled the cache built code with them."""
    script = ("import sys, tscript_runtime\n"
              "tscript_runtime.load(sys.argv[1]).run(__import__('numpy').ones((4, 8), 'float32'))\n"
              "print('llvmlite.ir' in sys.modules)")
    env = {**os.environ, "TSCRIPT_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", script, str(saved[0])], env=env, capture_output=True, text=True,
                           timeout=300) for _ in range(2)]
    assert [r.stdout.strip() for r in runs] == ["True", "False"], [r.stderr[-2000:] for r in runs]
