"""The `tsrt` command (run as `python -m tscript_runtime`): info, run, ir and bench on a saved
model; every error is one line on stderr with exit code 2 and no traceback."""
import json
import subprocess
import sys

import numpy as np
import pytest

import tscript as ts
from tscript import nn
from tscript_runtime.cli import main


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        h = self.fc(x)
        return h.sum(1), {"h": h}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A saved model, an input for it, and the eager outputs."""
    tmp = tmp_path_factory.mktemp("tsrt")
    module = TwoHeads()
    ts.jit.save(ts.jit.trace(module, ts.randn(3, 4)), tmp / "m.tsm")
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.save(tmp / "x.npy", x)
    total, parts = module(ts.tensor(x))
    return tmp, module, total.detach().numpy(), parts["h"].detach().numpy()


def tsrt(*args, cwd):
    return subprocess.run([sys.executable, "-m", "tscript_runtime", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def test_info(files):
    tmp, module, _, _ = files
    done = tsrt("info", "m.tsm", cwd=tmp)
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    size = (tmp / "m.tsm").stat().st_size
    assert lines[0] == (f"m.tsm: module TwoHeads, {size / 1024:.1f} KiB, format tscript-model v2, "
                        f"produced by tscript {ts.__version__}")
    assert lines[1:] == ["entry points:",
                         "  forward(x: float32[batch, 4]) -> (float32[batch], Dict[str, float32[batch, 3]])",
                         "parameters and buffers: 2 tensors, 15 values",
                         "  fc.weight  float32 [3, 4]",
                         "  fc.bias    float32 [3]",
                         "native code:",
                         "  forward: no native code: the executor runs the graph on the reference kernels"]


def test_run_prints_a_summary_and_writes_npz(files):
    tmp, _, total, h = files
    done = tsrt("run", "m.tsm", "--input", "x.npy", "--output", "out.npz", cwd=tmp)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    head, values = first.split(" [5] ")
    assert head == "output.0: float32"
    np.testing.assert_allclose(json.loads(values), total, rtol=1e-5, atol=1e-6)  # small outputs in full
    assert second == (f"output.1.h: float32 [5, 3] min {h.min():.6g} max {h.max():.6g} "
                      f"mean {h.astype(np.float64).mean():.6g}")
    out = np.load(tmp / "out.npz", allow_pickle=False)
    np.testing.assert_allclose(out["output.0"], total, rtol=1e-6)
    np.testing.assert_allclose(out["output.1.h"], h, rtol=1e-6)


def test_ir(files):
    tmp = files[0]
    done = tsrt("ir", "m.tsm", "--entry", "forward", cwd=tmp)
    assert done.returncode == 0
    assert done.stdout.startswith("graph(%self : __module__.TwoHeads,\n      %x : Float(3, 4)):\n")
    assert "= aten::linear(%x, %weight, %bias)" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("  return (")


def test_bench_with_random_inputs(files):
    tmp = files[0]
    done = tsrt("bench", "m.tsm", "--runs", "20", cwd=tmp)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("m.tsm forward: 20 runs, median ")
    for label in ("median", "p90", "min", "mean"):
        assert f"{label} " in done.stdout and " ms" in done.stdout


def test_errors_are_one_line_with_exit_code_2(files):
    tmp = files[0]
    np.save(tmp / "x64.npy", np.zeros((5, 4)))
    done = tsrt("run", "m.tsm", "--input", "x64.npy", cwd=tmp)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "tsrt: error: input 'x' (position 0): expected dtype float32, got float64\n"


# In-process, for the remaining error cases (same code path as the command).
@pytest.mark.parametrize("argv,message", [
    (["info", "missing.tsm"], "tsrt: error: missing.tsm: no such file"),
    (["run", "m.tsm"], r"tsrt: error: forward() expects 1 input (x), got 0"),
    (["run", "m.tsm", "--input", "nope.npy"], "tsrt: error: [Errno 2] No such file or directory: 'nope.npy'"),
    (["run", "m.tsm", "--input", "pickled.npy"], "tsrt: error: pickled.npy: not a .npy array without pickled objects"),
    (["ir", "m.tsm", "--entry", "backward"], "tsrt: error: m.tsm: the model has no entry point 'backward' "
                                              "(it has: forward)"),
    (["bench", "m.tsm", "--runs", "0"], "tsrt: error: --runs must be at least 1 and --warmup at least 0"),
    (["info", "x.npy"], "tsrt: error: x.npy: not a valid archive (not a zip file, or truncated)"),
])
def test_error_messages(files, monkeypatch, capsys, argv, message):
    tmp = files[0]
    np.save(tmp / "pickled.npy", np.array([{}], dtype=object), allow_pickle=True)
    monkeypatch.chdir(tmp)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err


def test_usage_errors_exit_with_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    assert "the following arguments are required: COMMAND" in capsys.readouterr().err
