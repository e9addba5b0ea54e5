"""Issue 9's acceptance test: an MLP trained for 50 SGD steps three ways — eager, compiled with
backward, and in the standalone runtime (a subprocess where `tscript` and `lark` cannot be imported)
with a numpy SGD loop over `model.params` — gives loss curves that agree to 1e-4."""
import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import tscript as ts
import tscript_runtime
from tscript import nn
from tests.autodiff.test_training import batches
from tests.runtime.test_runtime_isolation import BLOCKER

LR, STEPS = 0.05, 50

RUNTIME_LOOP = '''
import json, sys
import numpy as np
for name in ("tscript", "lark"):
    try:
        __import__(name)
    except ImportError:
        pass
    else:
        sys.exit(f"{name} could be imported")
import tscript_runtime
model_path, data_path, lr = sys.argv[1], sys.argv[2], float(sys.argv[3])
data = np.load(data_path, allow_pickle=False)
model = tscript_runtime.load(model_path)
losses = []
for step in range(int(data["steps"])):
    loss, grads = model.run_with_grad(data[f"x{step}"], data[f"y{step}"])
    for name, g in grads.items():
        if name in model.params:
            model.params[name] -= lr * g  # in place: the next run reads the updated arrays
    losses.append(float(loss))
print(json.dumps(losses))
'''


class WithLoss(nn.Module):
    """The model plus its loss, so the compiled output is the scalar to differentiate."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        return nn.functional.cross_entropy(self.net(x), y)


def sgd_losses(step_fn, params, data) -> list[float]:
    losses = []
    for x, y in data:
        for p in params:
            p.grad = None
        loss = step_fn(x, y)
        loss.backward()
        with ts.no_grad():
            for p in params:
                p -= LR * p.grad
        losses.append(loss.item())
    return losses


def test_mlp_loss_curves_agree_eager_compiled_and_standalone_runtime(tmp_path):
    ts.manual_seed(4)
    net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))
    data = batches(STEPS, 16, (10,), 4, seed=3)
    eager, twin = WithLoss(copy.deepcopy(net)), WithLoss(copy.deepcopy(net))
    compiled = ts.jit.compile(twin, data[0], backward=True, dynamic={0: [0], 1: [0]})
    twin.load_state_dict(eager.state_dict())
    ts.jit.save(compiled, tmp_path / "train.tsm")  # the untrained parameters go into the file

    eager_losses = sgd_losses(eager, list(eager.parameters()), data)
    compiled_losses = sgd_losses(compiled, list(twin.parameters()), data)

    arrays = {"steps": np.array(STEPS)}
    for i, (x, y) in enumerate(data):
        arrays[f"x{i}"], arrays[f"y{i}"] = x.numpy(), y.numpy()
    np.savez(tmp_path / "data.npz", **arrays)
    site = tmp_path / "site"
    shutil.copytree(Path(tscript_runtime.__file__).parent, site / "tscript_runtime",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1", "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", RUNTIME_LOOP, str(tmp_path / "train.tsm"),
                           str(tmp_path / "data.npz"), str(LR)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    runtime_losses = json.loads(proc.stdout.strip().splitlines()[-1])

    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(runtime_losses, eager_losses, rtol=1e-4, atol=1e-6)
    assert eager_losses[-1] < 0.9 * eager_losses[0]  # it learned (plain SGD: 1.39 -> 1.17 here)


def test_deepcopy_gives_an_independent_leaf():
    layer = nn.Linear(3, 2)
    out = layer(ts.randn(4, 3))  # keep the original's graph alive
    clone = copy.deepcopy(layer)
    clone(ts.randn(4, 3)).sum().backward()
    assert layer.weight.grad is None and clone.weight.grad is not None
    assert isinstance(clone.weight, nn.Parameter) and clone.weight.requires_grad
    assert out.grad_fn is not None
