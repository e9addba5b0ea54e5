"""Saved-model load benchmark: a ResNet-18 (torchvision's architecture, built from tscript.nn, eval
mode) is compiled with `tscript.jit.compile` and saved with `tscript.jit.save`; then, each time in a
fresh Python process that imports only numpy and the standalone runtime, the time from the start of
`tscript_runtime.load(path)` takes (the model checked, its native code emitted or found in the cache
and linked: ready to run), then its first and second `model.run(x)` (1x3x224x224). Cold:
TSCRIPT_CACHE_DIR is a new empty directory each time; warm: a directory that one earlier load of the
same file filled. Medians of 5 runs each, cold and warm alternating.

Targets: loaded and ready to run in <= 2 s cold, <= 50 ms warm.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import tscript as ts
import tscript_runtime
from tscript import nn

from .harness import fmt_time

RUNS = 5
TARGETS = {"cold": 2.0, "warm": 0.05}  # seconds until loaded and ready to run

# Runs in the fresh process: argv = model path; prints load and first-run seconds and the native mode.
CHILD = """
import json, sys, time
import numpy as np
import tscript_runtime
x = np.random.default_rng(0).standard_normal((1, 3, 224, 224), dtype=np.float32)
t0 = time.perf_counter()
model = tscript_runtime.load(sys.argv[1])
t1 = time.perf_counter()
model.run(x)
t2 = time.perf_counter()
model.run(x)
t3 = time.perf_counter()
assert not any(m == "tscript" or m.startswith("tscript.") for m in sys.modules), "the runtime imported tscript"
print(json.dumps({"load": t1 - t0, "first run": t2 - t1, "second run": t3 - t2,
                  "mode": model.executables["forward"].mode}))
"""


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths = (64, 128, 256, 512)
        for i, (cin, cout) in enumerate(zip((64, *widths), widths), 1):
            stride = 1 if i == 1 else 2
            setattr(self, f"layer{i}", nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout)))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.flatten(self.avgpool(x)))


def save_model(path: str) -> str:
    """Compile and save the ResNet-18 to `path`; a traced model if that fails. Says which."""
    ts.manual_seed(0)
    model = ResNet18().eval()
    x = ts.randn(1, 3, 224, 224)
    try:
        ts.jit.save(ts.jit.compile(model, (x,)), path)
        return "compiled (ts.jit.compile)"
    except Exception as e:
        ts.jit.save(ts.jit.trace(model, (x,)), path)
        return f"traced (ts.jit.trace): compile or save failed with {type(e).__name__}: {str(e)[:200]}"


def measure(path: str, cache: str) -> dict:
    """Load `path` and run it once in a fresh process of the standalone runtime, caching in `cache`."""
    runtime = os.path.dirname(os.path.dirname(tscript_runtime.__file__))
    env = {**os.environ, "PYTHONPATH": runtime, "TSCRIPT_CACHE_DIR": cache, "PYTHONNOUSERSITE": "1"}
    done = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(path), timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the runtime failed to load or run {path}:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def _row(name: str, samples: list[dict]) -> str:
    load, first, second = (statistics.median(s[k] for s in samples) for k in ("load", "first run", "second run"))
    verdict = "ok" if load <= TARGETS[name] else "MISSED"
    modes = ", ".join(sorted({s["mode"] for s in samples}))
    return (f"{name:8s}{fmt_time(load):>14s}{'<= ' + fmt_time(TARGETS[name]):>16s}{verdict:>8s}"
            f"{fmt_time(first):>14s}{fmt_time(second):>14s}   {modes}")


def cases() -> list:
    """Measure and print the table here (one fresh process per sample, which the interleaved
    in-process harness cannot time); no harness cases."""
    tmp = tempfile.mkdtemp(prefix="tscript-load-")
    try:
        path = os.path.join(tmp, "resnet18.tsm")
        how = save_model(path)
        warm_cache = os.path.join(tmp, "warm-cache")
        measure(path, warm_cache)  # fills the warm cache
        samples = {"cold": [], "warm": []}
        for i in range(RUNS):
            samples["cold"].append(measure(path, tempfile.mkdtemp(prefix=f"cold-{i}-", dir=tmp)))
            samples["warm"].append(measure(path, warm_cache))
        print(f"\n[load] ResNet-18 saved as {how}; file {os.path.getsize(path) / 2**20:.1f} MiB "
              f"({os.path.getsize(path):,} bytes)")
        print(f"medians of {RUNS} fresh processes (tscript_runtime + numpy only), input 1x3x224x224")
        head = f"{'cache':8s}{'load':>14s}{'target':>16s}{'':>8s}{'first run':>14s}{'second run':>14s}   native code"
        print("\n".join([head, "-" * len(head), *(_row(k, v) for k, v in samples.items())]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return []
