"""Optimization passes: the full pipeline's time per node on straight-line graphs of 1k, 10k and 100k
nodes (it must stay about constant: no pass may re-walk the graph per node), executor time of the
optimized graph against the unoptimized one for an MLP and a CNN with batch norm, and peak memory
of a model run with and without releasing dead intermediates, beside the static buffer plan.

    python -m benchmarks passes      # timings, as a suite of the benchmark runner
    python -m benchmarks.passes      # all tables: per-stage scaling, executor times, memory
"""
import functools
import gc
import os
import statistics
import time

# One BLAS thread when run alone (as the tests do): on a shared 2-core machine a spinning OpenBLAS
# pool makes the executor comparison swing by 10x from run to run.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import tscript as ts  # noqa: E402
from tscript import nn  # noqa: E402
from tscript.frontend.modules import _attr_tree  # noqa: E402
from tscript.ir import Graph, tensor_type  # noqa: E402
from tscript.ir.passes.memory_plan import measure_peak, plan_memory  # noqa: E402
from tscript.ir.passes.pipeline import PIPELINE, run_pipeline  # noqa: E402
from tscript.ir.graph_json import graph_to_json  # noqa: E402
from tscript_runtime.executor import ArrayDomain, Program  # noqa: E402

from .harness import Case, fmt_time, run_case  # noqa: E402

SIZES = (1_000, 10_000, 100_000)
SHAPE = (8, 16)


# -- a trace-like straight-line graph with work for every pass ----------------------------------------------
class _Chain:
    """Appends small patterns to a graph: each has its own constants (as a trace records them)."""

    def __init__(self):
        self.g = Graph()
        self.x = self.g.add_input(tensor_type(np.float32, SHAPE), "x")
        self.h = self.x
        self.t = tensor_type(np.float32, SHAPE)

    def op(self, kind, inputs, t=None):
        return self.g.insert(kind, inputs, 1, types=[t or self.t]).output

    def c(self, value):
        return self.g.constant(value)

    def unary(self):
        self.h = self.op("aten::relu", [self.h])

    def add_input(self):
        self.h = self.op("aten::add", [self.h, self.x, self.c(1)])

    def identity(self):  # canonicalize: x * 1
        self.h = self.op("aten::mul", [self.h, self.c(1)])

    def transpose_pair(self):  # canonicalize: transpose(transpose(h))
        t = self.op("aten::transpose", [self.h, self.c(0), self.c(1)], tensor_type(np.float32, SHAPE[::-1]))
        self.h = self.op("aten::transpose", [t, self.c(1), self.c(0)])

    def duplicate(self):  # CSE: the same sigmoid twice
        a, b = (self.op("aten::sigmoid", [self.h]) for _ in range(2))
        self.h = self.op("aten::mul", [a, b])

    def dead(self):  # DCE
        self.op("aten::tanh", [self.h])

    def in_place(self):  # remove_mutation: relu(h).add_(x)
        fresh = self.op("aten::relu", [self.h])
        self.h = self.op("aten::add_", [fresh, self.x, self.c(1)])

    def constant_operand(self):  # constant propagation: h * ones(shape), then x * 1 on a tensor
        ones = self.op("aten::ones", [self.c(list(SHAPE)), self.c(None)])
        self.h = self.op("aten::mul", [self.h, ones])

    def reshape_pair(self):  # canonicalize: reshape(reshape(h, [-1]), shape)
        flat = self.op("aten::reshape", [self.h, self.c([-1])], tensor_type(np.float32, (SHAPE[0] * SHAPE[1],)))
        self.h = self.op("aten::reshape", [flat, self.c(list(SHAPE))])


PATTERNS = [_Chain.unary, _Chain.add_input, _Chain.identity, _Chain.transpose_pair, _Chain.duplicate,
            _Chain.dead, _Chain.in_place, _Chain.constant_operand, _Chain.reshape_pair]


def build_graph(n: int) -> Graph:
    """A straight-line graph of about `n` nodes (constants included) cycling through `PATTERNS`."""
    chain, count, i = _Chain(), 0, 0
    while count < n:
        before = chain.g.block.last
        PATTERNS[i % len(PATTERNS)](chain)
        i += 1
        count += _nodes_since(chain.g, before)
    chain.g.add_output(chain.h)
    return chain.g


def _nodes_since(g: Graph, before) -> int:
    node, k = (before.next if before is not None else g.block.first), 0
    while node is not None:
        node, k = node.next, k + 1
    return k


def node_count(g: Graph) -> int:
    return sum(1 for _ in g.all_nodes())


def time_stages(n: int, repeats: int) -> dict[str, float]:
    """Median seconds of each pipeline stage (and the total) on fresh graphs of about `n` nodes.
    The cyclic garbage collector is off while timing, as `timeit` does: its full collections walk
    every object of the heap, so their cost depends on what else is alive, not on the pass."""
    samples: dict[str, list] = {}
    for _ in range(repeats):
        g = build_graph(n)
        gc.collect()
        gc.disable()
        try:
            total = 0.0
            for k, (name, fn, _) in enumerate(PIPELINE):
                t0 = time.perf_counter()
                fn(g)
                dt = time.perf_counter() - t0
                total += dt
                samples.setdefault(f"{k}:{name}", []).append(dt)
            samples.setdefault("total", []).append(total)
        finally:
            gc.enable()
    return {k: statistics.median(v) for k, v in samples.items()}


# -- models ----------------------------------------------------------------------------------------------------
def _mlp():
    return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Dropout(0.1),
                         nn.Linear(512, 10)), ts.randn(64, 256)


def _cnn():
    m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                      nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
    return m, ts.randn(16, 3, 16, 16)


MODELS = {"mlp": _mlp, "cnn": _cnn}


@functools.lru_cache(maxsize=None)
def programs(name: str) -> dict:
    """Executor programs of one model: the traced graph as is, optimized, and frozen (+ inputs)."""
    ts.manual_seed(0)
    model, x = MODELS[name]()
    model.eval()
    with ts.no_grad():
        traced = ts.jit.trace(model, x)
    variants = {"unoptimized": traced, "optimize(2)": ts.jit.optimize(traced, 2), "freeze": ts.jit.freeze(traced)}
    args = [_attr_tree(model), x.numpy()]
    out = {}
    for label, obj in variants.items():
        g = obj.inlined_graph
        out[label] = (g, functools.partial(Program(graph_to_json(g), ArrayDomain(g.constants)).run, args))
    return out


def peak_memory(name: str) -> dict:
    """Measured peak bytes of one run without and with release of dead values, and the static plan."""
    g, run = programs(name)["unoptimized"]
    args = run.args[0]
    keep_all = Program(graph_to_json(g), ArrayDomain(g.constants), release=False)
    plan = plan_memory(g)
    return {"measured, keep all": measure_peak(lambda: keep_all.run(args)),
            "measured, release at last use": measure_peak(run),
            "plan: no reuse": plan.total, "plan: arena with reuse": plan.arena,
            "plan: peak live": plan.peak_live}


# -- runner suite ---------------------------------------------------------------------------------------------------
def _pipeline_case(n: int) -> Case:
    run = lambda: run_pipeline(build_graph(n), 2, log=None)  # noqa: E731
    return Case(f"passes build+pipeline {n // 1000}k nodes (per node)", {"tscript": run},
                per=node_count(build_graph(n)))


def cases() -> list[Case]:
    """Graph building plus the level-2 pipeline, per node (1k and 10k nodes; the 100k size is in
    `main`'s table), and one model call per executor variant."""
    out = [_pipeline_case(n) for n in SIZES[:2]]
    for name in MODELS:
        for label, (_, run) in programs(name).items():
            out.append(Case(f"executor {name} {label}", {"tscript": run}))
    return out


# -- tables ------------------------------------------------------------------------------------------------------------
def _scaling_table() -> str:
    per_node = {}
    for n in SIZES:
        count = node_count(build_graph(n))
        per_node[n] = {k: v / count for k, v in time_stages(n, 5 if n < 100_000 else 2).items()}
    rows = list(per_node[SIZES[0]])
    head = f"{'stage (time per node)':28s}" + "".join(f"{n // 1000}k nodes".rjust(14) for n in SIZES) + \
        "10k->100k".rjust(11)
    lines = [head, "-" * len(head)]
    for row in rows:
        cells = "".join(fmt_time(per_node[n][row]).rjust(14) for n in SIZES)
        growth = per_node[SIZES[-1]][row] / max(per_node[SIZES[1]][row], 1e-12)
        lines.append(f"{row:28s}{cells}{growth:>11.2f}")
    return "\n".join(lines) + "\n(growth of the time per node from 10k to 100k nodes: about 1 when linear; a 1k graph " \
                              "still fits the CPU caches, so it is faster per node)"


def _executor_table(budget: float) -> str:
    lines = [f"{'model':8s}{'graph':14s}{'nodes':>8s}{'median':>14s}{'vs unoptimized':>16s}"]
    for name in MODELS:
        variants = programs(name)
        times = run_case(Case(name, {label: run for label, (_, run) in variants.items()}), budget)
        for label, (g, _) in variants.items():
            lines.append(f"{name:8s}{label:14s}{node_count(g):>8d}{fmt_time(times[label]):>14s}"
                         f"{times['unoptimized'] / times[label]:>15.2f}x")
    return "\n".join(lines)


def _memory_table() -> str:
    lines = []
    for name in MODELS:
        for label, nbytes in peak_memory(name).items():
            lines.append(f"{name:8s}{label:34s}{nbytes / 1024:>12.1f} KiB")
    return "\n".join(lines)


def main(budget: float = 1.0) -> None:
    print("[pipeline scaling] median per node, by stage (stage k:name)\n" + _scaling_table())
    print("\n[executor] optimized vs unoptimized graphs\n" + _executor_table(budget))
    print("\n[memory] peak of one run (tracemalloc) and the static buffer plan\n" + _memory_table())


if __name__ == "__main__":
    main()
