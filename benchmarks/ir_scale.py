"""IR scaling: time per node to build, print, parse and verify straight-line graphs of 1k, 10k and
100k nodes (a chain of aten::add / aten::mul / aten::relu on one tensor input). Every stage must be
linear, so the per-node times should stay about constant as the graph grows.

    python -m benchmarks ir          # as a suite of the benchmark runner (wall time, medians)
    python -m benchmarks.ir_scale    # a stage x size table of CPU time per node, GC on and paused

Reading the table: with the GC paused every stage is flat from 10k to 100k nodes. With it on,
building costs up to 4x more per node (parsing, which builds, 1.5x) once the graph dominates the
heap, because CPython's full collections walk every object; their number grows with the heap, so
that cost is amortised linear too. Verify's step from 1k to 10k is the graph outgrowing the caches.
"""
import contextlib
import functools
import gc
import statistics
import time

import numpy as np

from tscript.ir import Graph, parse_ir, tensor_type, verify

from .harness import Case, fmt_time

SIZES = (1_000, 10_000, 100_000)
KINDS = ("aten::add", "aten::mul", "aten::relu")


def build_chain(n: int) -> Graph:
    """`h = x; repeat n times: h = add(h, x, 1) | mul(h, x) | relu(h)`, returning h."""
    g = Graph()
    x = g.add_input(tensor_type(np.float32, (8, 16)), "x")
    alpha = g.constant(1, "alpha")
    h = x
    for i in range(n):
        kind = KINDS[i % 3]
        inputs = {"aten::add": [h, x, alpha], "aten::mul": [h, x], "aten::relu": [h]}[kind]
        h = g.insert(kind, inputs, 1, None, [x.type]).output
    g.add_output(h)
    return g


@functools.lru_cache(maxsize=1)  # the stages of one size share a graph; only one size is kept alive
def _inputs(n: int) -> tuple[Graph, str]:
    g = build_chain(n)
    return g, str(g)


STAGES = {
    "build": build_chain,
    "print": lambda n: str(_inputs(n)[0]),
    "parse": lambda n: parse_ir(_inputs(n)[1]),
    "verify": lambda n: verify(_inputs(n)[0]),
}


def _label(n: int) -> str:
    return f"{n // 1000}k"


def cases() -> list[Case]:
    """One case per (size, stage), timed per node."""
    return [Case(f"ir {stage} {_label(n)} nodes (per node)", {"tscript": functools.partial(fn, n)}, per=n)
            for n in SIZES for stage, fn in STAGES.items()]


def cpu_per_node(fn, n: int) -> float:
    """Median CPU seconds per node of `fn(n)`: CPU time, not wall time, so that other processes on a
    shared machine do not blur the growth with size that this benchmark is about."""
    fn(n)  # warm up (and build the shared inputs)
    samples = []
    for _ in range(max(3, 30_000 // n)):
        start = time.process_time()
        fn(n)
        samples.append(time.process_time() - start)
    return statistics.median(samples) / n


@contextlib.contextmanager
def gc_paused():
    """CPython's cyclic GC off for a while: its full collections walk the whole heap, which shows
    up as extra time per node once a graph is large next to the rest of the heap."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def measure() -> dict[tuple[str, int], float]:
    """CPU time per node of every stage and size, with the GC on and paused."""
    per_node = {}
    for n in SIZES:
        for stage, fn in STAGES.items():
            per_node[stage, n] = cpu_per_node(fn, n)
            with gc_paused():
                per_node[f"{stage}, GC paused", n] = cpu_per_node(fn, n)
    return per_node


def table(per_node: dict[tuple[str, int], float]) -> str:
    """Stages as rows, sizes as columns, and how much the per-node time grew from the smallest size
    to the largest (about 1 when linear)."""
    head = f"{'stage (CPU time per node)':28s}" + "".join(f"{_label(n) + ' nodes':>14s}" for n in SIZES) + \
        f"{'growth':>10s}"
    lines = [head, "-" * len(head)]
    for stage in dict.fromkeys(stage for stage, _ in per_node):
        cells = "".join(f"{fmt_time(per_node[stage, n]):>14s}" for n in SIZES)
        growth = per_node[stage, SIZES[-1]] / per_node[stage, SIZES[0]]
        lines.append(f"{stage:28s}{cells}{growth:>10.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(measure()))
