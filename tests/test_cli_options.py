"""Every option of the `tscript` command does what `--help` says: --version; demo --seed/--steps;
trace with a file or a MODULE:ATTR found from the current directory (no PYTHONPATH), several
--input-shape, --dtype, --script, --compile (also with --script), --backward (a model that trains
in the runtime); ir --entry, --format text|dot|svg, --after-each-pass."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tscript as ts
import tscript_runtime as rt
from tscript import cli
from tscript.cli import main

MODELS = '''
import tscript as ts
from tscript import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


class Pair(nn.Module):
    def forward(self, a, b):
        return a * 2 + b


def make_classifier():
    ts.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
'''


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A directory holding models.py, made the current directory (as a user runs `tscript` there)."""
    (tmp_path / "models.py").write_text(MODELS)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop("models", None)


def tscript_command(*args, cwd):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "tscript", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"tscript {ts.__version__}\n"


def test_demo_seed_and_steps(tmp_path):
    done = tscript_command("demo", "--seed", "3", "--steps", "12", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    steps = [line for line in done.stdout.splitlines() if line.startswith("  step ")]
    assert [line.split()[1] for line in steps] == ["0", "10"]  # a line every 10 steps, up to --steps
    from tscript import demo
    ts.manual_seed(3)
    x, y = demo._data(512, ts.Generator().manual_seed(3))
    loss = ts.nn.CrossEntropyLoss()(demo.DemoMLP()(x), y).item()  # what step 0 reports for seed 3
    assert steps[0].split()[3] == f"{loss:.4f}"
    assert "standalone runtime output matches eager" in done.stdout


def test_module_attr_resolves_from_the_current_directory_like_python_m(project):
    done = tscript_command("trace", "models:Net", "--input-shape", "2,4", "-o", "net.tsm", cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("saved net.tsm (") and "entry points: forward" in done.stdout
    assert rt.load(project / "net.tsm").run(np.ones((2, 4), np.float32)).shape == (2, 3)


def test_file_target_several_inputs_and_dtype(project):
    assert main(["trace", "models.py:Pair", "--input-shape", "2,3", "--input-shape", "1,3", "--dtype", "float64",
                 "-o", "pair.tsm"]) == 0
    model = rt.load(project / "pair.tsm")
    a, b = np.ones((2, 3)), np.full((1, 3), 0.5)
    np.testing.assert_array_equal(model.run(a, b), a * 2 + b)
    assert [str(s) for _, s in model.signature.inputs] == ["float64[batch, 3]", "float64[1, 3]"]


@pytest.mark.parametrize("flags, native", [([], False), (["--compile"], True), (["--script"], False),
                                           (["--script", "--compile"], True)])
def test_script_and_compile(project, flags, native):
    assert main(["trace", "models:Net", "--input-shape", "2,4", "-o", "net.tsm", *flags]) == 0
    model = rt.load(project / "net.tsm")
    assert (model.executables["forward"].mode == "native") == native
    x = np.random.default_rng(0).standard_normal((5 if native else 2, 4)).astype(np.float32)
    import models
    net = models.Net()
    net.load_state_dict({k: ts.tensor(v) for k, v in model.params.items()})
    np.testing.assert_allclose(model.run(x), net(ts.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_backward_saves_a_model_that_trains_in_the_runtime(project, capsys):
    assert main(["trace", "models:make_classifier", "--input-shape", "4,4", "-o", "train.tsm", "--backward"]) == 0
    assert "entry points: forward, backward" in capsys.readouterr().out
    model = rt.load(project / "train.tsm")
    x = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    out, grads = model.run_with_grad(x, grad_outputs=np.ones((4, 1), np.float32))
    import models
    reference = models.make_classifier()
    reference.load_state_dict({k: ts.tensor(v) for k, v in model.params.items()})
    xt = ts.tensor(x, requires_grad=True)
    reference(xt).sum().backward()
    np.testing.assert_allclose(grads["0.weight"], reference[0].weight.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(grads["input"], xt.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.fixture
def saved_compiled(project):
    assert main(["trace", "models:make_classifier", "--input-shape", "2,4", "-o", "train.tsm", "--backward"]) == 0
    assert main(["trace", "models:Net", "--input-shape", "2,4", "-o", "net.tsm"]) == 0
    assert main(["trace", "models:Net", "--input-shape", "2,4", "-o", "compiled.tsm", "--compile"]) == 0
    return project


def test_ir_entry_and_formats(saved_compiled, capsys):
    capsys.readouterr()
    assert main(["ir", "train.tsm", "--entry", "backward"]) == 0
    backward = capsys.readouterr().out
    assert backward.startswith("graph(%grad") and backward.rstrip().splitlines()[-1].startswith("  return (")
    assert main(["ir", "net.tsm", "--format", "dot"]) == 0
    assert capsys.readouterr().out.startswith('digraph "graph" {')
    if cli.shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    assert main(["ir", "net.tsm", "--format", "svg"]) == 0
    svg = capsys.readouterr().out
    assert "<svg" in svg and "aten::linear" in svg


def test_svg_without_graphviz_is_a_clear_error(saved_compiled, capsys, monkeypatch):
    monkeypatch.setattr(cli.shutil, "which", lambda name: None)
    assert main(["ir", "net.tsm", "--format", "svg"]) == 2
    assert "--format svg needs Graphviz's `dot` program on PATH" in capsys.readouterr().err


def test_after_each_pass_prints_the_ir_after_every_pass_that_changes_it(saved_compiled, capsys):
    capsys.readouterr()
    assert main(["ir", "net.tsm", "--after-each-pass"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("== saved IR of entry point 'forward' ==\ngraph(%self : __module__.Net,")
    assert "== after fuse (" in out and "tscript::FusionGroup" in out.split("== after fuse (")[1]
    assert main(["ir", "compiled.tsm", "--after-each-pass"]) == 0
    assert "(no pass changes it: it was saved optimized)" in capsys.readouterr().out
    assert main(["ir", "net.tsm", "--after-each-pass", "--format", "dot"]) == 2
    assert "--after-each-pass prints IR text" in capsys.readouterr().err
