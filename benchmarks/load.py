"""Saved-model load benchmark: three models are compiled with `tscript.jit.compile` and saved with
`tscript.jit.save`,

    ResNet-18   torchvision's architecture (built from tscript.nn), eval mode, input 1x3x224x224
    GPT step    the suite's GPT training step (benchmarks/models_training.py: 4 layers, 256 wide, 4 heads,
                vocab 1000, dropout 0) on 8x128 tokens, compiled with backward=True: a forward and a
                backward entry point
    LSTM LM     the suite's word-level LSTM language model (benchmarks/models.py), eval mode, 35x20 tokens

then, each time in a fresh Python process that imports only numpy and the standalone runtime, the time
`tscript_runtime.load(path)` takes (every entry point checked, its native code emitted or found in the
cache and linked: ready to run), then its first and second call (`model.run(x)`; the GPT step's is
`model.run_with_grad(x, grad_outputs=...)`: forward and backward). Cold: TSCRIPT_CACHE_DIR is a new
empty directory each time; warm: a directory that one earlier load of the same file filled. Medians
of 5 runs each, cold and warm alternating.

Targets: loaded and ready to run in <= 50 ms warm (issue 17, for each model); ResNet-18 in <= 2 s cold.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import tscript as ts
import tscript_runtime
from tscript import nn

from . import models, models_training
from .harness import fmt_time

RUNS = 5
WARM = 0.05  # seconds until loaded and ready to run, from a filled cache

# Runs in the fresh process: argv = model path, then the input as JSON ({"shape", "high"}: int64 tokens below
# `high`, else float32) and the gradient of the output for a training step (its shape, or null: run forward);
# prints load and call seconds and each entry point's native mode.
CHILD = """
import json, sys, time
import numpy as np
import tscript_runtime
spec, grad = json.loads(sys.argv[2]), json.loads(sys.argv[3])
rng = np.random.default_rng(0)
x = (rng.integers(0, spec["high"], spec["shape"], dtype=np.int64) if spec["high"]
     else rng.standard_normal(spec["shape"], dtype=np.float32))
t0 = time.perf_counter()
model = tscript_runtime.load(sys.argv[1])
t1 = time.perf_counter()
call = ((lambda: model.run_with_grad(x, grad_outputs=np.ones(grad, np.float32))) if grad is not None
        else (lambda: model.run(x)))
call()
t2 = time.perf_counter()
call()
t3 = time.perf_counter()
assert not any(m == "tscript" or m.startswith("tscript.") for m in sys.modules), "the runtime imported tscript"
print(json.dumps({"load": t1 - t0, "first run": t2 - t1, "second run": t3 - t2,
                  "mode": "/".join(e.mode for e in model.executables.values())}))
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


@dataclass
class LoadCase:
    name: str
    input: dict          # {"shape": [...], "high": token ids below it, or 0 for float32 normal}
    grad: list | None    # the output gradient's shape for a training step (run_with_grad), else None
    cold: float | None   # the cold-load target in seconds, if any


CASES = (LoadCase("ResNet-18", {"shape": [1, 3, 224, 224], "high": 0}, None, 2.0),
         LoadCase("GPT step", {"shape": [8, 128], "high": 1000}, [8, 128, 1000], None),
         LoadCase("LSTM LM", {"shape": [35, 20], "high": 1000}, None, None))


def save_resnet(path: str) -> str:
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


def save_gpt_step(path: str) -> str:
    """Compile the GPT training step (forward and backward) and save it to `path`."""
    spec = next(s for s in models_training.SPECS if s.key == "gpt_train")
    x, _ = spec.example()
    ts.jit.save(ts.jit.compile(models_training._build(spec), (ts.from_numpy(x),), backward=True), path)
    return "compiled (ts.jit.compile, backward=True)"


def save_lstm(path: str) -> str:
    """Compile the LSTM language model (eval mode) and save it to `path`."""
    spec = next(s for s in models._specs() if s.key == "lstm")
    ts.jit.save(ts.jit.compile(models._build(spec), (ts.from_numpy(spec.example()),)), path)
    return "compiled (ts.jit.compile)"


SAVERS = {"ResNet-18": save_resnet, "GPT step": save_gpt_step, "LSTM LM": save_lstm}


def measure(path: str, case: LoadCase, cache: str) -> dict:
    """Load `path` and call it twice in a fresh process of the standalone runtime, caching in `cache`."""
    runtime = os.path.dirname(os.path.dirname(tscript_runtime.__file__))
    env = {**os.environ, "PYTHONPATH": runtime, "TSCRIPT_CACHE_DIR": cache, "PYTHONNOUSERSITE": "1"}
    done = subprocess.run([sys.executable, "-c", CHILD, path, json.dumps(case.input), json.dumps(case.grad)],
                          capture_output=True, text=True, env=env, cwd=os.path.dirname(path), timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the runtime failed to load or run {path}:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def _row(case: LoadCase, cache: str, samples: list[dict]) -> str:
    load, first, second = (statistics.median(s[k] for s in samples) for k in ("load", "first run", "second run"))
    target = WARM if cache == "warm" else case.cold
    verdict = "" if target is None else "ok" if load <= target else "MISSED"
    modes = ", ".join(sorted({s["mode"] for s in samples}))
    return (f"{case.name:11s}{cache:6s}{fmt_time(load):>14s}{'<= ' + fmt_time(target) if target else '':>16s}"
            f"{verdict:>8s}{fmt_time(first):>14s}{fmt_time(second):>14s}   {modes}")


def _measure_case(case: LoadCase, tmp: str) -> tuple[str, dict]:
    """(what was saved, {"cold": samples, "warm": samples}) of one model."""
    path = os.path.join(tmp, case.name.replace(" ", "_") + ".tsm")
    how = SAVERS[case.name](path)
    warm_cache = os.path.join(tmp, f"warm-{case.name.replace(' ', '_')}")
    measure(path, case, warm_cache)  # fills the warm cache
    samples = {"cold": [], "warm": []}
    for i in range(RUNS):
        samples["cold"].append(measure(path, case, tempfile.mkdtemp(prefix=f"cold-{i}-", dir=tmp)))
        samples["warm"].append(measure(path, case, warm_cache))
    size = os.path.getsize(path)
    return f"{case.name} saved as {how}; file {size / 2**20:.1f} MiB ({size:,} bytes)", samples


def cases() -> list:
    """Measure and print the table here (one fresh process per sample, which the interleaved
    in-process harness cannot time); no harness cases."""
    tmp = tempfile.mkdtemp(prefix="tscript-load-")
    try:
        results = [(case, *_measure_case(case, tmp)) for case in CASES]
        print("\n[load] " + "\n       ".join(saved for _, saved, _ in results))
        print(f"medians of {RUNS} fresh processes (tscript_runtime + numpy only); first/second run: "
              f"model.run (GPT step: run_with_grad, forward and backward)")
        head = (f"{'model':11s}{'cache':6s}{'load':>14s}{'target':>16s}{'':>8s}{'first run':>14s}{'second run':>14s}"
                f"   native code")
        rows = [_row(case, k, v) for case, _, samples in results for k, v in samples.items()]
        print("\n".join([head, "-" * len(head), *rows]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return []
