"""Timing harness: variants of one case are timed interleaved (in a new order every round) and reported as
medians, because these machines are shared and noisy (see shared/LLVM_NOTES.md)."""
import math
import os
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
WARM = 0.01  # seconds of untimed calls before each sample (PyTorch's OpenMP threads spin ~8 ms after a call)

try:
    import torch
except ImportError:  # PyTorch is an optional reference, never required
    torch = None


@dataclass
class Case:
    """One benchmark: variants keyed by name ("tscript", "numpy", "torch"), each a no-arg callable."""
    name: str
    variants: dict[str, Callable]
    inner: int = 1            # calls per timed sample (for sub-microsecond work)
    unit: str = "us"
    per: int = 1              # report time divided by this (e.g. per op in a chain)
    notes: dict = field(default_factory=dict)  # label -> fn(medians by variant) -> text, printed under the table


def _sample(fn: Callable, inner: int) -> float:
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t0) / inner


def _calibrate(fn: Callable, inner: int, budget: float) -> int:
    """Rounds of interleaved samples that fit in about `budget` seconds."""
    t = _sample(fn, inner)
    return max(5, min(200, int(budget / max(t * inner, 1e-9))))


def run_case(case: Case, budget: float = 1.0) -> dict[str, float]:
    """Median seconds per call (divided by `case.per`) for each variant."""
    warm = {k: max(2, math.ceil(WARM / max(_sample(fn, 1), 1e-9))) for k, fn in case.variants.items()}
    first = next(iter(case.variants.values()))
    rounds = _calibrate(first, case.inner, budget / max(len(case.variants), 1))
    samples = {k: [] for k in case.variants}
    order, shuffle = list(case.variants), random.Random(0).shuffle
    for _ in range(rounds):
        # a new order every round (rotating is not enough: it keeps who follows whom), and untimed
        # calls (about WARM seconds, two at least) before each sample: the worker threads of the
        # variant before (PyTorch's, OpenBLAS's, ours) spin a while after their last job, and this
        # variant's own may have gone to sleep; the sample is then taken in its steady state
        shuffle(order)
        for k in order:
            for _ in range(warm[k]):
                case.variants[k]()
            samples[k].append(_sample(case.variants[k], case.inner))
    return {k: statistics.median(v) / case.per for k, v in samples.items()}


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e3:.3f} ms"


def report(results: list[tuple[Case, dict]], baseline: str = "tscript") -> str:
    """A table: each variant's median and tscript's ratio to every other variant (numpy and torch
    always; others, such as "eager" or "copy", when a case has them), then each case's notes
    (`notes`: label -> fn(medians) -> text)."""
    extra = [n for _, res in results for n in res if n not in ("tscript", "numpy", "torch")]
    names = ["tscript", *dict.fromkeys(extra), "numpy", "torch"]
    others = names[1:]
    head = f"{'case':44s}" + "".join(f"{n:>14s}" for n in names) + "".join(f"{'ts/' + n:>12s}" for n in others)
    lines = [head, "-" * len(head)]
    for case, res in results:
        cells = "".join(f"{fmt_time(res[n]) if n in res else '-':>14s}" for n in names)
        ratios = "".join(f"{res[baseline] / res[n]:>12.2f}" if n in res else f"{'-':>12s}" for n in others)
        lines.append(f"{case.name:44s}{cells}{ratios}")
    lines += [f"  {case.name}: {label}: {fn(res)}" for case, res in results for label, fn in case.notes.items()]
    return "\n".join(lines)
