"""The standalone runtime runs a saved model in a process where `tscript` and `lark` cannot be
imported, from a copy of `runtime/tscript_runtime` alone, and gives the eager results."""
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tscript as ts
import tscript_runtime
from tscript import nn

BLOCKER = '''
import sys


class BlockCompiler:
    """Fail every import of the compiler and its parser library."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tscript", "lark"):
            raise ImportError(f"{name} is not available to the standalone runtime")
        return None


sys.meta_path.insert(0, BlockCompiler())
'''

CHECK = '''
import sys
import numpy as np

for name in ("tscript", "lark"):
    try:
        __import__(name)
    except ImportError:
        pass
    else:
        sys.exit(f"{name} could be imported")

import tscript_runtime

site, model_path, expected_path = sys.argv[1:]
assert tscript_runtime.__file__.startswith(site), tscript_runtime.__file__
expected = np.load(expected_path, allow_pickle=False)
model = tscript_runtime.load(model_path)
for batch in (3, 5):
    total, parts = model.run(expected[f"x{batch}"])
    np.testing.assert_allclose(total, expected[f"total{batch}"], rtol=1e-6, atol=1e-7)
    for key in ("h", "scaled"):
        np.testing.assert_allclose(parts[key], expected[f"{key}{batch}"], rtol=1e-6, atol=1e-7)
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("tscript", "lark"))
assert not leaked, leaked
print("standalone ok")
'''


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)
        self.register_buffer("scale", ts.tensor([1.0, 2.0, 3.0]))

    def forward(self, x):
        h = self.fc2(ts.relu(self.fc1(x))) * self.scale
        return h.sum(1), {"h": h, "scaled": h * ts.tensor([0.5, -1.0, 2.0])}


@pytest.fixture
def isolated(tmp_path):
    """A directory holding a copy of the runtime and a sitecustomize that blocks the compiler, and
    the environment to run Python with only that on its path."""
    site = tmp_path / "site"
    shutil.copytree(Path(tscript_runtime.__file__).parent, site / "tscript_runtime",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"}
    return site, env


@pytest.fixture
def saved(tmp_path):
    module = Net()
    path = tmp_path / "net.tsm"
    ts.jit.save(ts.jit.trace(module, ts.randn(3, 4)), path)
    expected = {}
    for batch in (3, 5):
        x = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
        total, parts = module(ts.tensor(x))
        expected.update({f"x{batch}": x, f"total{batch}": total.detach().numpy(),
                         f"h{batch}": parts["h"].detach().numpy(), f"scaled{batch}": parts["scaled"].detach().numpy()})
    np.savez(tmp_path / "expected.npz", **expected)
    return path, tmp_path / "expected.npz", expected


def test_saved_model_runs_without_tscript_or_lark(isolated, saved, tmp_path):
    site, env = isolated
    path, expected_path, _ = saved
    done = subprocess.run([sys.executable, "-c", CHECK, str(site), str(path), str(expected_path)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "standalone ok"


def test_tsrt_runs_without_tscript_or_lark(isolated, saved, tmp_path):
    site, env = isolated
    path, _, expected = saved
    np.save(tmp_path / "x.npy", expected["x5"])
    done = subprocess.run([sys.executable, "-m", "tscript_runtime", "run", str(path), "--input",
                           str(tmp_path / "x.npy"), "--output", str(tmp_path / "out.npz")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    out = np.load(tmp_path / "out.npz", allow_pickle=False)
    assert sorted(out.files) == ["output.0", "output.1.h", "output.1.scaled"]
    np.testing.assert_allclose(out["output.0"], expected["total5"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out["output.1.scaled"], expected["scaled5"], rtol=1e-6, atol=1e-7)
