"""The `tsrt` options test_tsrt_cli.py leaves out: --version, run --grad (with --output) and --entry
(an exported method), bench --input/--warmup/--entry, and --grad refusing an --entry."""
import numpy as np
import pytest

import tscript as ts
import tscript_runtime as rt
from tests.script.module_programs import Encoder
from tscript import nn
from tscript_runtime.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tsrt_options")
    ts.manual_seed(0)
    ts.jit.save(ts.jit.script(Encoder()), tmp / "encoder.tsm")
    trainable = nn.Sequential(nn.Linear(4, 3), nn.Tanh())
    ts.jit.save(ts.jit.compile(trainable, ts.randn(2, 4), backward=True), tmp / "train.tsm")
    np.save(tmp / "x.npy", np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32))
    return tmp


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"tsrt (tscript_runtime) {rt.__version__}\n"


def test_run_an_exported_method_with_entry(files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    assert main(["run", "encoder.tsm", "--entry", "encode", "--input", "x.npy", "--output", "h.npz"]) == 0
    model = rt.load("encoder.tsm")
    expected = model.run_method("encode", np.load("x.npy"))
    np.testing.assert_array_equal(np.load("h.npz")["output"], expected)
    assert capsys.readouterr().out.startswith("output: float32 [2, 8]")


def test_run_with_grad_writes_gradients(files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    np.save("g.npy", np.ones((2, 3), np.float32))
    assert main(["run", "train.tsm", "--input", "x.npy", "--grad", "--output", "grads.npz"]) == 2
    assert "grad_outputs must be given for non-scalar outputs" in capsys.readouterr().err
    model = rt.load("train.tsm")
    x = np.load("x.npy")
    scalar = ts.jit.compile(lambda a: (a * a).sum(), ts.randn(2, 4), backward=True)
    ts.jit.save(scalar, "scalar.tsm")
    assert main(["run", "scalar.tsm", "--input", "x.npy", "--grad", "--output", "grads.npz"]) == 0
    out = np.load("grads.npz")
    np.testing.assert_allclose(out["output"], (x * x).sum(), rtol=1e-5)
    np.testing.assert_allclose(out["grad.a"], 2 * x, rtol=1e-5)
    assert "grad.a: float32 [2, 4]" in capsys.readouterr().out
    assert model.entry_points.keys() == {"forward", "backward"}


def test_grad_with_another_entry_is_refused(files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    assert main(["run", "train.tsm", "--input", "x.npy", "--grad", "--entry", "backward"]) == 2
    assert "--grad computes the gradients of forward" in capsys.readouterr().err


def test_bench_inputs_warmup_and_entry(files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    assert main(["bench", "encoder.tsm", "--entry", "encode", "--input", "x.npy", "--runs", "5", "--warmup", "0"]) == 0
    assert capsys.readouterr().out.startswith("encoder.tsm encode: 5 runs, median ")
    assert main(["bench", "encoder.tsm", "--warmup", "-1"]) == 2
    assert "--warmup at least 0" in capsys.readouterr().err
