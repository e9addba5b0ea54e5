"""`tscript demo`: the main job end to end on a built-in model.

1. build an MLP and train it a few steps eagerly (autograd + Adam) on synthetic data;
2. trace it, print its IR, and compile it to native code (inference);
3. save one `.tsm` file, reload it with the standalone runtime in a fresh process (no tscript, no
   lark), run inference there and check it against eager;
4. print a timing table: eager vs compiled vs standalone runtime.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import tscript as ts
from tscript import nn


class DemoMLP(nn.Module):
    """784-256-10 classifier with GELU."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x), approximate="tanh"))


def _data(n: int, gen):
    x = ts.randn(n, 784, generator=gen)
    w = ts.randn(784, 10, generator=gen)
    return x, (x @ w).argmax(dim=1)


def _train(model, x, y, steps: int, out) -> None:
    opt = ts.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(steps + 1):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if step % 10 == 0:
            acc = (model(x).argmax(dim=1) == y).float().mean().item()
            out(f"  step {step:3d}  loss {loss.item():.4f}  train accuracy {acc:.3f}")


def _median_time(fn, repeat: int = 200, warm: float = 0.2) -> float:
    """Median seconds of `repeat` calls, after `warm` seconds of calls (worker threads settle)."""
    start = time.perf_counter()
    while time.perf_counter() - start < warm:
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


_RUNTIME_SCRIPT = r"""
import json, sys, time
import numpy as np
sys.modules["tscript"] = None  # prove the standalone runtime needs neither tscript...
sys.modules["lark"] = None     # ...nor lark
import tscript_runtime
model = tscript_runtime.load(sys.argv[1])
x = np.load(sys.argv[2])
t0 = time.perf_counter(); out = model.run(x); first = time.perf_counter() - t0
while time.perf_counter() - t0 < 0.2:
    model.run(x)
times = []
for _ in range(200):
    t = time.perf_counter(); model.run(x); times.append(time.perf_counter() - t)
np.save(sys.argv[3], out)
print(json.dumps({"first_run_s": first, "median_s": float(np.median(times)),
                  "entry_points": list(model.entry_points)}))
"""


def run(seed: int = 0, steps: int = 30, out=print) -> dict:
    """Run the demo; returns the measured figures."""
    gen = ts.Generator().manual_seed(seed)
    ts.manual_seed(seed)
    x, y = _data(512, gen)
    model = DemoMLP()
    out("1. eager training (autograd + Adam):")
    _train(model, x, y, steps, out)
    model.eval()
    batch = x[:8]
    with ts.no_grad():
        expected = model(batch)
        traced = ts.jit.trace(model, batch)
        out("\n2. traced IR (inlined):")
        out(str(traced.inlined_graph))
        compiled = ts.jit.compile(traced, batch, dynamic={0: [0]})
        out("optimized and fused IR (what native code is generated for):")
        out(str(compiled.graph))
        got = compiled(batch)
        assert np.allclose(got.numpy(), expected.numpy(), rtol=1e-4, atol=1e-5), "compiled output differs from eager"
        figures = {"eager_s": _median_time(lambda: model(batch)),
                   "compiled_s": _median_time(lambda: compiled(batch))}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "demo.tsm")
        ts.jit.save(compiled, path)
        out(f"\n3. saved {os.path.getsize(path) / 1024:.0f} KiB to one file; reloading in a fresh process "
            f"with only numpy + llvmlite ...")
        np.save(os.path.join(tmp, "x.npy"), batch.numpy())
        proc = subprocess.run([sys.executable, "-c", _RUNTIME_SCRIPT, path, os.path.join(tmp, "x.npy"),
                               os.path.join(tmp, "out.npy")], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"standalone runtime failed:\n{proc.stderr}")
        info = json.loads(proc.stdout.strip().splitlines()[-1])
        runtime_out = np.load(os.path.join(tmp, "out.npy"))
        assert np.allclose(runtime_out, expected.numpy(), rtol=1e-4, atol=1e-5), "runtime output differs from eager"
        out(f"   standalone runtime output matches eager (entry points: {', '.join(info['entry_points'])})")
    figures.update(runtime_s=info["median_s"], runtime_first_s=info["first_run_s"])
    out("\n4. latency, batch of 8 (median of 200 runs after 0.2 s of warm-up):")
    out(f"   {'eager tscript':24s} {figures['eager_s'] * 1e6:9.1f} us")
    out(f"   {'compiled (native)':24s} {figures['compiled_s'] * 1e6:9.1f} us   "
        f"{figures['eager_s'] / figures['compiled_s']:.2f}x eager")
    out(f"   {'standalone runtime':24s} {figures['runtime_s'] * 1e6:9.1f} us   first run "
        f"{figures['runtime_first_s'] * 1e6:.1f} us")
    return figures

