"""Training-step rows of `python -m benchmarks models` (issues 16 and 17). One step = forward, cross-entropy on
the output, backward and an SGD update (lr 0.01, each library its own optimizer), for

    cnn_train   a small CNN, conv-bn-relu-pool x2 + linear (3 -> 32 -> 64 channels, 10 classes), batch
                32 of 3x32x32, batch norm in training mode (batch statistics, running statistics updated)
    gpt_train   the suite's GPT (4 layers, 256 wide, 4 heads, vocab 1000) on 8x128 tokens, a 1000-way
                cross-entropy against random targets at every position; dropout 0 (see below)

Candidates, each from the same initial weights (the tscript model's state dict copied into the twins):
    ts.compiled    tscript.jit.compile(model, example, backward=True); loss, backward and SGD eager
    ts.eager       the tscript model itself
    torch          PyTorch eager                                        [anchor]
    torch.compile  torch.compile(twin) (inductor); loss, backward and SGD eager     [anchor]

Before timing, every candidate's first step is checked against PyTorch eager's (tscript eager's without
PyTorch): the loss and the gradients of two parameters within 1e-4 relative, else its time gets a `!`.
The table gives the median of whole steps, ts/best anchor (ts.compiled / the fastest anchor that agrees),
ts.compiled / torch.compile against the issue's target, the cold compile time (compile + first step;
tscript with an empty object cache, inductor with its caches disabled) and whether tscript's forward and
backward each ran as one native call (else the note names the first node that does not lower).

The GPT trains without dropout: the libraries draw different random masks (so no step could be checked
against another), and tscript's compiled forward runs dropout's masks in the executor.
"""
import contextlib
import os
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import tscript as ts

from . import models
from .harness import Case, torch

LR = 0.01
COLUMNS = ("ts.compiled", "ts.eager", "torch", "torch.compile")
ANCHORS = ("torch", "torch.compile")


@dataclass
class TrainSpec:
    name: str
    key: str              # for TSCRIPT_BENCH_MODELS
    cls: str              # class name in models.TS / models.TWINS
    kwargs: dict          # its constructor's arguments
    shape: tuple          # input shape
    checked: tuple        # parameters whose first-step gradients are compared
    target: float         # the target for ts.compiled / torch.compile
    tokens: int = 0       # > 0: token ids and next-token targets below this; else float32 images
    classes: int = 10     # image class targets below this

    def example(self) -> tuple[np.ndarray, np.ndarray]:
        """(input, target) arrays, from a fixed seed."""
        rng = np.random.default_rng(1)
        if self.tokens:
            return (rng.integers(0, self.tokens, self.shape, dtype=np.int64),
                    rng.integers(0, self.tokens, self.shape, dtype=np.int64))
        return (rng.standard_normal(self.shape, dtype=np.float32),
                rng.integers(0, self.classes, self.shape[0], dtype=np.int64))


SPECS = (TrainSpec("CNN training step, 32x3x32x32, train-mode BN", "cnn_train", "SmallCNN", {}, (32, 3, 32, 32),
                   checked=("features.0.weight", "features.1.weight"), target=1.0),
         TrainSpec("GPT 4x256 training step, 8x128 tokens, dropout 0", "gpt_train", "GPT", {"dropout": 0.0}, (8, 128),
                   checked=("transformer.wte.weight", "transformer.h.0.attn.c_attn.weight"), target=0.8, tokens=1000))


def selected(wanted: set) -> list[TrainSpec]:
    """The rows whose key is in `wanted` (every row when it is empty)."""
    return [s for s in SPECS if not wanted or s.key in wanted]


# -- the candidates ------------------------------------------------------------------------------------

@dataclass
class Candidate:
    step: Callable          # one whole training step; returns the loss
    loss: float             # of the first step
    grads: dict             # checked parameter -> its gradient in the first step
    seconds: float | None   # compile + first step (compiled candidates)


def _build(spec: TrainSpec):
    """The tscript model in training mode, from seed 0 (every call the same weights)."""
    ts.manual_seed(0)
    return getattr(models.TS, spec.cls)(**spec.kwargs).train()


def _twin(spec: TrainSpec, model):
    """The torch twin, in training mode, holding a copy of `model`'s state dict."""
    torch.manual_seed(0)
    twin = getattr(models.TWINS, spec.cls)(**spec.kwargs)
    twin.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in model.state_dict().items()})
    return twin.train()


def _step(lib, forward: Callable, model, x, y) -> Callable:
    """A training step of `forward` (the model, or its compiled form) with `lib`'s cross-entropy and SGD on
    `model`'s parameters; returns the loss."""
    optimizer = lib.optim.SGD(model.parameters(), lr=LR)
    cross_entropy = lib.nn.functional.cross_entropy

    def run():
        optimizer.zero_grad()
        out = forward(x)
        loss = cross_entropy(out.view(-1, out.size(-1)), y.view(-1))
        loss.backward()
        optimizer.step()
        return loss
    return run


def _first_step(spec: TrainSpec, step: Callable, model, t0: float | None = None) -> Candidate:
    """Run the first step; keep its loss, the checked gradients and (given `t0`) the seconds since `t0`."""
    loss = step().item()
    seconds = None if t0 is None else time.perf_counter() - t0
    params = dict(model.named_parameters())
    return Candidate(step, loss, {n: models._numpy(params[n].grad).copy() for n in spec.checked}, seconds)


@contextlib.contextmanager
def _cold_tscript():
    """An empty object cache (TSCRIPT_CACHE_DIR) for the duration: a cold compile of the model's code, not
    one from the cache. The kernel library (the same for every model, built once per install) is loaded first."""
    from tscript_runtime.native import library
    library.addresses()
    saved = os.environ.get("TSCRIPT_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="tscript-cold-") as tmp:
        os.environ["TSCRIPT_CACHE_DIR"] = tmp
        try:
            yield
        finally:
            if saved is None:
                del os.environ["TSCRIPT_CACHE_DIR"]
            else:
                os.environ["TSCRIPT_CACHE_DIR"] = saved


def _tscript_candidates(spec: TrainSpec, xn: np.ndarray, yn: np.ndarray) -> tuple[dict, object]:
    """ts.compiled and ts.eager, after their first steps; and the compiled model."""
    x, y = ts.from_numpy(xn.copy()), ts.from_numpy(yn.copy())
    model = _build(spec)
    with _cold_tscript():
        t0 = time.perf_counter()
        compiled = ts.jit.compile(model, (x,), backward=True)
        candidates = {"ts.compiled": _first_step(spec, _step(ts, compiled, model, x, y), model, t0)}
    eager = _build(spec)
    candidates["ts.eager"] = _first_step(spec, _step(ts, eager, eager, x, y), eager)
    return candidates, compiled


def _torch_candidates(spec: TrainSpec, xn: np.ndarray, yn: np.ndarray, skipped: dict) -> dict:
    """PyTorch eager and torch.compile (when it works here) on twins of a fresh tscript model."""
    if torch is None:
        return {}
    x, y = torch.from_numpy(xn.copy()), torch.from_numpy(yn.copy())
    twin = _twin(spec, _build(spec))
    candidates = {"torch": _first_step(spec, _step(torch, twin, twin, x, y), twin)}
    try:
        import torch._inductor.config as inductor
        twin = _twin(spec, _build(spec))
        with models._quiet(), inductor.patch(force_disable_caches=True):
            t0 = time.perf_counter()
            candidates["torch.compile"] = _first_step(spec, _step(torch, torch.compile(twin), twin, x, y), twin, t0)
    except Exception as e:  # no working compiler toolchain, or a model it cannot compile
        skipped["torch.compile"] = models._short(e)
    return candidates


# -- one row -------------------------------------------------------------------------------------------

@dataclass
class TrainResult:
    spec: TrainSpec
    medians: dict = field(default_factory=dict)    # candidate -> seconds per step
    errors: dict = field(default_factory=dict)     # candidate -> {"loss" or parameter: relative error}
    seconds: dict = field(default_factory=dict)    # compiled candidate -> compile + first step, cold
    native: dict = field(default_factory=dict)     # "fwd" / "bwd" -> ran as one native call
    why_not: list = field(default_factory=list)    # the first node that keeps each graph out of one call
    reference: str = ""
    skipped: dict = field(default_factory=dict)    # candidate -> reason

    def worst(self, k: str) -> float:
        return max(self.errors.get(k, {}).values(), default=0.0)


def _errors(candidates: dict, reference: str) -> dict:
    """Each candidate's first-step loss and checked gradients against the reference's, relative."""
    ref = candidates[reference]
    return {k: {"loss": models._relative_error(np.float64(c.loss), np.float64(ref.loss)),
                **{n: models._relative_error(g, ref.grads[n]) for n, g in c.grads.items()}}
            for k, c in candidates.items()}


def _native(compiled, step: Callable) -> tuple[dict, list]:
    """Whether the compiled forward and backward each ran as one native call (two more steps), and
    for those that did not, why."""
    step()  # the backward a step runs (the parameters' gradients only) is the variant compiled last
    executables = {"fwd": compiled.executable, "bwd": list(compiled._variants.values())[-1].executable}
    native = {k: models._one_native_call(e, step) for k, e in executables.items()}
    return native, [f"{k}: {executables[k].describe()}" for k, ok in native.items() if not ok]


def measure(spec: TrainSpec) -> TrainResult:
    """Build, check and time every candidate of one row."""
    result = TrainResult(spec)
    xn, yn = spec.example()
    candidates, compiled = _tscript_candidates(spec, xn, yn)
    print(f"    tscript: compiled + first step in {candidates['ts.compiled'].seconds:.1f} s (cold)", flush=True)
    candidates.update(_torch_candidates(spec, xn, yn, result.skipped))
    if "torch.compile" in candidates:
        print(f"    torch.compile: compiled + first step in {candidates['torch.compile'].seconds:.1f} s (cold)",
              flush=True)
    result.reference = "torch" if "torch" in candidates else "ts.eager"
    result.errors = _errors(candidates, result.reference)
    result.seconds = {k: c.seconds for k, c in candidates.items() if c.seconds is not None}
    result.native, result.why_not = _native(compiled, candidates["ts.compiled"].step)
    result.medians = models._time(Case(spec.name, {k: c.step for k, c in candidates.items()}))
    return result


# -- the table -------------------------------------------------------------------------------------

def _cell(r: TrainResult, k: str) -> str:
    if k not in r.medians:
        return "skip" if k in r.skipped else "-"
    return f"{r.medians[k] * 1e3:.2f}{'!' if r.worst(k) > models.TOLERANCE else ''}"


def _agreeing(r: TrainResult, k: str) -> float | None:
    """`k`'s median when it ran and its first step agreed with the reference."""
    return r.medians[k] if k in r.medians and r.worst(k) <= models.TOLERANCE else None


def _ratio(r: TrainResult) -> str:
    anchors = {k: _agreeing(r, k) for k in ANCHORS if _agreeing(r, k) is not None}
    if "ts.compiled" not in r.medians or not anchors:
        return "-"
    best = min(anchors, key=anchors.get)
    return f"{r.medians['ts.compiled'] / anchors[best]:.2f} ({best})"


def _target(r: TrainResult) -> str:
    anchor = _agreeing(r, "torch.compile")
    if "ts.compiled" not in r.medians or anchor is None:
        return f"- (<= {r.spec.target:.1f})"
    ratio = r.medians["ts.compiled"] / anchor
    return f"{ratio:.2f} (<= {r.spec.target:.1f}: {'met' if ratio <= r.spec.target else 'not met'})"


def _compile(r: TrainResult) -> str:
    return " / ".join(f"{r.seconds[k]:.1f}" if k in r.seconds else "-" for k in ("ts.compiled", "torch.compile"))


def _native_cell(r: TrainResult) -> str:
    return "+".join(k for k, ok in r.native.items() if ok) or "no"


def table(results: list[TrainResult]) -> str:
    """The rows: medians in ms per step, ratios, cold compile seconds, native calls, worst error."""
    head = (f"{'model, training step':50s}" + "".join(f"{k:>14s}" for k in COLUMNS) + f"  {'ts/best anchor':22s}"
            + f"{'ts/torch.compile (target)':28s}{'compile s ts / t.c':20s}{'one native call':17s}{'worst err':>9s}")
    lines = [head, "-" * len(head)]
    for r in results:
        worst = max((r.worst(k) for k in r.medians), default=0.0)
        lines.append(f"{r.spec.name:50s}" + "".join(f"{_cell(r, k):>14s}" for k in COLUMNS) + f"  {_ratio(r):22s}"
                     + f"{_target(r):28s}{_compile(r):20s}{_native_cell(r):17s}{worst:>9.1e}")
    return "\n".join(lines)


def notes(results: list[TrainResult]) -> list[str]:
    """Disagreements with the reference, graphs not in one native call, skipped candidates."""
    lines = []
    for r in results:
        for k, errors in r.errors.items():
            bad = ", ".join(f"{what} {e:.2e}" for what, e in errors.items() if e > models.TOLERANCE)
            if bad:
                lines.append(f"! {r.spec.name}: {k}'s first step disagrees with {r.reference}: {bad} "
                             f"> {models.TOLERANCE:g} relative")
        lines += [f"{r.spec.name}: not one native call: {why}" for why in r.why_not]
        lines += [f"{r.spec.name}: {k} skipped: {why}" for k, why in r.skipped.items()]
    return lines


def run(specs: list[TrainSpec]) -> None:
    """Measure the rows and print their table (a row tscript cannot train is reported and skipped)."""
    results, failed = [], []
    for spec in specs:
        print(f"  {spec.name} (load average {os.getloadavg()[0]:.2f})", flush=True)  # these rows take minutes
        try:
            results.append(measure(spec))
        except Exception as e:
            failed.append(f"{spec.name}: FAILED: {models._short(e)}")
            traceback.print_exc()
    print(f"\n[models] training steps (forward + cross-entropy + backward + SGD), medians of interleaved samples, "
          f"ms per step (budget {models.BUDGET:g} s per row; load average {os.getloadavg()[0]:.2f} now; '!' = "
          f"first step off the reference by more than {models.TOLERANCE:g} relative)")
    print(table(results))
    print("ts/best anchor = ts.compiled / fastest anchor whose first step agrees; compile s = compile + first step, "
          "cold (ts.compiled / torch.compile)")
    for line in failed + notes(results):
        print(line)
    if torch is None:
        print("PyTorch is not installed: tscript candidates only, checked against tscript eager")
