"""Compiled models saved with their native plan (`tscript.jit.save` of a CompiledModel) and run by
the standalone runtime, which emits the code itself: what the file holds, outputs equal to eager,
the object cache, the reference kernels as a fallback, several threads at once, the runtime alone in
a process without tscript, and what `tsrt` shows. Hostile files: test_hostile_files.py."""
import json
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import tscript as ts
import tscript_runtime as rt
from tscript import nn
from tscript.ir.passes.fuse import GROUP, ROW_GROUP
from tscript_runtime.cli import main as tsrt
from tscript_runtime.native import emit, target

from tests.conftest import assert_close


def mlp():
    """An MLP whose GELU + LayerNorm and softmax compile to row kernels."""
    ts.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 10), nn.Softmax(-1)).eval()


def elementwise(x, y):
    """Elementwise-heavy: one fusion group with broadcasting, a scalar-tensor mix and two outputs."""
    a = ts.tanh(x * y + 1.0) * ts.sigmoid(x) - ts.exp(-x * x)
    return a, (a > 0.1) & (y < 0.5)


def rows(seed: int, *shape) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def eager(fn, *arrays):
    out = fn(*map(ts.tensor, arrays))
    return tuple(o.detach().numpy() for o in out) if isinstance(out, tuple) else out.detach().numpy()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Two compiled models saved with their native plans: the MLP (batch dim dynamic) and the function."""
    tmp = tmp_path_factory.mktemp("native")
    module = mlp()
    compiled = ts.jit.compile(module, ts.randn(4, 16), dynamic={0: [0]})
    ts.jit.save(compiled, tmp / "mlp.tsm")
    fn = ts.jit.compile(elementwise, (ts.randn(8, 64), ts.randn(64)))
    ts.jit.save(fn, tmp / "fn.tsm")
    return tmp, module, compiled, fn


def native_kinds(graph) -> list:
    return [n.kind for n in graph.all_nodes() if n.kind in (GROUP, ROW_GROUP) and "kernel" in n.attrs]


# -- saving -----------------------------------------------------------------------------------------

def test_the_file_holds_the_plan_and_no_code(saved):
    tmp, _, compiled, _ = saved
    with zipfile.ZipFile(tmp / "mlp.tsm") as zf:
        manifest = json.loads(zf.read("manifest.json"))
        plan = json.loads(zf.read("forward.plan.json"))
        names = zf.namelist()
    assert manifest["version"] == 2
    assert not [n for n in names if n.endswith((".ll", ".o", ".so", ".bc"))]
    entry = manifest["entry_points"]["forward"]
    assert entry["plan"] == "forward.plan.json" and entry["dynamic"] == [[0, [0]]]
    assert plan == compiled.plan
    assert plan["kernels"] == {"k0": {"template": "row", "split_min": 65536}, "k1": {"template": "row", "split_min": 65536}}
    assert [s["template"] for s in plan["entry"]] == ["gemm", "kernel", "gemm", "kernel"]
    assert entry["inputs"] == [{"name": "input", "type": "tensor", "dtype": "float32", "shape": ["batch", 16],
                               "example_shape": [4, 16]}]  # what it was compiled with: planned at load
    assert entry["outputs"] == [{"type": "tensor", "dtype": "float32", "shape": ["batch", 10]}]
    graph = json.loads(zipfile.ZipFile(tmp / "mlp.tsm").read("forward.graph.json"))
    groups = [n for n in graph["nodes"] if n["kind"] in (GROUP, ROW_GROUP)]
    assert [n["attrs"]["kernel"] for n in groups] == ["k0", "k1"]
    assert all(set(n["attrs"]["subgraph"]) == {"graph"} for n in groups)
    assert sorted(manifest["params"]) == sorted(k for k, _ in mlp().state_dict().items())


def test_without_dynamic_every_dim_is_fixed(saved):
    tmp = saved[0]
    model = rt.load(tmp / "fn.tsm")
    assert str(model.signature) == "forward(x: float32[8, 64], y: float32[64]) -> (float32[8, 64], bool[8, 64])"
    with pytest.raises(rt.InputError, match=r"input 'x' \(position 0\): expected shape \[8, 64\], got \[5, 64\]"):
        model.run(rows(0, 5, 64), rows(1, 64))


def test_compiled_models_cannot_take_dynamic_at_save(saved, tmp_path):
    with pytest.raises(ValueError, match="pass dynamic= to tscript.jit.compile"):
        ts.jit.save(saved[2], tmp_path / "x.tsm", dynamic={0: [0]})
    assert not (tmp_path / "x.tsm").exists()


def test_training_models_save_forward_and_backward(tmp_path):
    ts.manual_seed(3)
    layer = nn.Linear(3, 2)
    x = ts.randn(4, 3)
    trained = ts.jit.compile(layer, x, backward=True, dynamic={0: [0]})
    ts.jit.save(trained, tmp_path / "t.tsm")
    model = rt.load(tmp_path / "t.tsm")
    assert set(model.entry_points) == {"forward", "backward"}
    out, grads = model.run_with_grad(x.numpy(), grad_outputs=np.ones((4, 2), np.float32))
    layer(x).sum().backward()
    np.testing.assert_allclose(out, layer(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert sorted(grads) == ["bias", "input", "weight"]  # inputs by their forward argument names
    np.testing.assert_allclose(grads["weight"], layer.weight.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads["bias"], layer.bias.grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(rt.InputError, match="grad_outputs must be given"):
        model.run_with_grad(x.numpy())


class Constants(nn.Module):
    """Tensor constants in the forward (B, A) and the backward (A): both graphs name one "c0"."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.a, self.b = ts.tensor([2.0, -3.0]), ts.tensor([0.5, 1.5])

    def forward(self, x):
        return (self.fc(x) + self.b) * self.a


def test_training_models_keep_each_entry_points_constants(tmp_path):
    ts.manual_seed(3)
    module = Constants()
    x = ts.randn(4, 3)
    ts.jit.save(ts.jit.compile(module, x, backward=True), tmp_path / "t.tsm")
    model = rt.load(tmp_path / "t.tsm")
    members = [set(model.manifest["entry_points"][e]["constants"].values()) for e in ("forward", "backward")]
    assert members[0] and members[1] and not members[0] & members[1]
    out, grads = model.run_with_grad(x.numpy(), grad_outputs=np.ones((4, 2), np.float32))
    module(x).sum().backward()
    np.testing.assert_allclose(out, module(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads["fc.weight"], module.fc.weight.grad.numpy(), rtol=1e-5, atol=1e-6)


# -- running in the runtime -------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [1, 4, 7])
def test_mlp_runs_natively_and_matches_eager(saved, batch):
    tmp, module, _, _ = saved
    model = rt.load(tmp / "mlp.tsm")
    executable = model.executables["forward"]
    assert executable.mode == "native" and len(executable.launchers) == 2 and executable.entry is not None
    x = rows(batch, batch, 16)
    assert_close(model.run(x), eager(module, x), rtol=1e-5, atol=1e-6)


def test_elementwise_function_runs_natively_and_matches_eager(saved):
    model = rt.load(saved[0] / "fn.tsm")
    x, y = rows(2, 8, 64), rows(3, 64)
    a, mask = model.run(x, y)
    want_a, want_mask = eager(elementwise, x, y)
    assert_close(a, want_a)
    np.testing.assert_array_equal(mask, want_mask)


def test_the_native_kernels_are_what_runs(saved, monkeypatch):
    """With native code the fusion groups never reach the reference kernels of their ops."""
    from tscript_runtime.ops import OPS
    model = rt.load(saved[0] / "fn.tsm")
    calls = []
    monkeypatch.setattr(OPS["aten::tanh"], "kernel", lambda *a: calls.append(a))
    model.run(rows(2, 8, 64), rows(3, 64))
    assert calls == []


def test_tscript_load_gives_a_compiled_model(saved):
    tmp, module, compiled, fn = saved
    loaded = ts.jit.load(tmp / "mlp.tsm")
    assert isinstance(loaded, ts.jit.CompiledModel) and loaded.dynamic == {0: [0]}
    assert loaded.plan == compiled.plan and native_kinds(loaded.graph) == native_kinds(compiled.graph)
    x = rows(5, 6, 16)
    assert_close(loaded(ts.tensor(x)), eager(module, x))
    loaded_fn = ts.jit.load(tmp / "fn.tsm")
    x, y = rows(2, 8, 64), rows(3, 64)
    assert_close(loaded_fn(ts.tensor(x), ts.tensor(y))[0], eager(elementwise, x, y)[0])


def test_first_run_costs_what_later_runs_do(saved):
    """Linking happens at load: the first run compiles nothing (best of three loads, against noise)."""
    x = rows(0, 4, 16)
    firsts, later = [], []
    for _ in range(3):
        model = rt.load(saved[0] / "mlp.tsm")
        for i in range(10):
            start = time.perf_counter()
            model.run(x)
            (later if i else firsts).append(time.perf_counter() - start)
    assert min(firsts) < 10 * np.median(later) + 0.001, (firsts, np.median(later))


def test_runs_from_several_threads_at_once(saved):
    tmp, module, _, _ = saved
    model = rt.load(tmp / "mlp.tsm")
    fn_model = rt.load(tmp / "fn.tsm")
    inputs = [rows(10 + i, 3 + i, 16) for i in range(4)]
    fn_inputs = [(rows(20 + i, 8, 64), rows(30 + i, 64)) for i in range(4)]
    expected = [eager(module, x) for x in inputs]
    fn_expected = [eager(elementwise, *xy)[0] for xy in fn_inputs]
    failures, start = [], threading.Barrier(4)

    def work(i):
        start.wait()
        for _ in range(200):
            if not np.allclose(model.run(inputs[i]), expected[i], rtol=1e-5, atol=1e-6):
                failures.append(("mlp", i))
            if not np.allclose(fn_model.run(*fn_inputs[i])[0], fn_expected[i], rtol=1e-5, atol=1e-6):
                failures.append(("fn", i))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


# -- the object cache and the fallback ----------------------------------------------------------------

def test_loading_emits_the_code_once_then_takes_it_from_the_cache(saved, tmp_path, monkeypatch):
    tmp, module, _, _ = saved
    monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path / "cache"))
    rt.load(tmp / "mlp.tsm")
    entries = list((tmp_path / "cache").iterdir())
    assert len(entries) >= 1
    monkeypatch.setattr(target, "optimize_and_emit", lambda ll: pytest.fail("emitted although cached"))
    model = rt.load(tmp / "mlp.tsm")
    x = rows(1, 5, 16)
    assert_close(model.run(x), eager(module, x))
    assert sorted((tmp_path / "cache").iterdir()) == sorted(entries)


def test_a_failing_link_falls_back_to_the_reference_kernels(saved, monkeypatch):
    def no_blas(*args):
        raise RuntimeError("native code needs BLAS, but numpy's bundled OpenBLAS was not found")
    monkeypatch.setattr(emit, "NativeLibrary", no_blas)
    with pytest.warns(RuntimeWarning, match=r"fn.tsm: entry point 'forward': native code cannot be used here "
                                            r"\(RuntimeError: .*OpenBLAS was not found\); its fusion groups run on the "
                                            r"reference kernels"):
        model = rt.load(saved[0] / "fn.tsm")
    assert model.executables["forward"].mode == "reference" and model.executables["forward"].launchers == {}
    x, y = rows(2, 8, 64), rows(3, 64)
    a, mask = model.run(x, y)
    want_a, want_mask = eager(elementwise, x, y)
    assert_close(a, want_a)
    np.testing.assert_array_equal(mask, want_mask)


# -- the standalone runtime in a process without tscript ------------------------------------------

BLOCKER = '''
import sys


class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"{{name}} is blocked", name=name)
        return None


sys.meta_path.insert(0, Block())
'''

CHECK = '''
import sys, warnings
import numpy as np
import tscript_runtime

for name in ("tscript", "lark"):
    try:
        __import__(name)
    except ImportError:
        pass
    else:
        sys.exit(f"{name} could be imported")
model_path, fn_path, expected_path = sys.argv[1:]
expected = np.load(expected_path, allow_pickle=False)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    model = tscript_runtime.load(model_path)
    fn = tscript_runtime.load(fn_path)
for w in caught:
    print("warning:", w.message)
np.testing.assert_allclose(model.run(expected["x"]), expected["y"], rtol=1e-5, atol=1e-6)
a, mask = fn.run(expected["u"], expected["v"])
np.testing.assert_allclose(a, expected["a"], rtol=1e-5, atol=1e-6)
np.testing.assert_array_equal(mask, expected["mask"])
print("mode:", model.executables["forward"].mode, fn.executables["forward"].mode)
'''


@pytest.fixture(scope="module")
def standalone(saved, tmp_path_factory):
    """A copy of the runtime alone, and eager results to compare with."""
    tmp, module, _, _ = saved
    site = tmp_path_factory.mktemp("site")
    shutil.copytree(Path(rt.__file__).parent, site / "tscript_runtime", ignore=shutil.ignore_patterns("__pycache__"))
    x, u, v = rows(1, 5, 16), rows(2, 8, 64), rows(3, 64)
    a, mask = eager(elementwise, u, v)
    np.savez(tmp / "expected.npz", x=x, y=eager(module, x), u=u, v=v, a=a, mask=mask)
    return site, tmp


def run_standalone(site: Path, tmp: Path, blocked: tuple):
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=blocked))
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1",
           "TSCRIPT_CACHE_DIR": str(tmp / "cache")}
    return subprocess.run([sys.executable, "-c", CHECK, str(tmp / "mlp.tsm"), str(tmp / "fn.tsm"),
                           str(tmp / "expected.npz")], capture_output=True, text=True, env=env, cwd=tmp, timeout=120)


def test_standalone_runtime_runs_the_native_code(standalone):
    done = run_standalone(*standalone, ("tscript", "lark"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["mode: native native"]


def test_standalone_runtime_without_llvmlite_uses_the_reference_kernels(standalone):
    done = run_standalone(*standalone, ("tscript", "lark", "llvmlite"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "mode: reference reference"
    assert len(lines) == 3 and all("(llvmlite is not installed); its fusion groups run on the reference kernels"
                                   in line for line in lines[:2])


# -- tsrt -------------------------------------------------------------------------------------------

def test_tsrt_info_shows_the_native_code(saved, capsys):
    assert tsrt(["info", str(saved[0] / "mlp.tsm")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-2:] == ["native code:", f"  forward: 2 kernels emitted for this CPU ({target.host()['cpu']}); "
                                     f"whole graph in one native call"]


def test_tsrt_bench_reports_latency_and_native_code(saved, capsys):
    assert tsrt(["bench", str(saved[0] / "mlp.tsm"), "--runs", "5"]) == 0
    first, second = capsys.readouterr().out.splitlines()
    assert "mlp.tsm forward: 5 runs, median " in first
    assert second == f"native code: 2 kernels emitted for this CPU ({target.host()['cpu']}); whole graph in one native call"
