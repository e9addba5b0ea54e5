"""Graph executor benchmarks: the per-node overhead of running a trace (tiny tensors, so the cost is
the interpreter's, not numpy's) against eager tscript and PyTorch eager, and how the time per node
scales with the size of a straight-line graph (it must stay flat)."""
import numpy as np

import tscript as ts
from tscript.ir import Graph, tensor_type
from tscript.ir.graph_json import graph_to_json
from tscript_runtime.executor import ArrayDomain, Program

from .harness import Case, torch

CHAIN = 100


def _chain(x, n: int = CHAIN):
    """`n` dependent adds, written once for every library."""
    def run():
        t = x
        for _ in range(n):
            t = t + x
        return t
    return run


def _with_torch(variants: dict, n: int = CHAIN) -> dict:
    if torch is not None:
        variants["torch"] = _chain(torch.ones(4), n)
    return variants


def traced_chain() -> Case:
    traced = ts.jit.trace(lambda x: _chain(x)(), ts.ones(4))
    x = ts.ones(4)
    return Case(f"{CHAIN} adds on (4,): traced, executor (per op)", _with_torch(
        {"tscript": lambda: traced(x), "numpy": _chain(np.ones(4, np.float32))}), inner=20, per=CHAIN)


def eager_chain() -> Case:
    return Case(f"{CHAIN} adds on (4,): eager tscript (per op)", _with_torch(
        {"tscript": _chain(ts.ones(4)), "numpy": _chain(np.ones(4, np.float32))}), inner=20, per=CHAIN)


def straight_line_graph(n: int) -> Graph:
    """x -> add(x, x) -> add(., x) -> ... : `n` nodes built with the IR builder, as the runtime runs them."""
    g = Graph()
    x = g.add_input(tensor_type(np.float32, (4,)), "x")
    one = g.constant(1)
    v = x
    for _ in range(n):
        v = g.insert("aten::add", [v, x, one], 1, types=[x.type]).output
    g.add_output(v)
    return g


def scaling(n: int) -> Case:
    program = Program(graph_to_json(straight_line_graph(n)), ArrayDomain())
    x = np.ones(4, np.float32)
    return Case(f"straight-line graph, {n} nodes (per node)", _with_torch(
        {"tscript": lambda: program.run([x]), "numpy": _chain(x, n)}, n), per=n)


def cases() -> list[Case]:
    return [traced_chain(), eager_chain(), *(scaling(n) for n in (1_000, 10_000, 100_000))]
