"""The stages from an optimized graph to running code, shared by the driver (driver.py) and the
compiled objects that compile more graphs later (a training model's backward variants):

    pass pipeline, symbolic dims, fusion -> native plan (tscript.codegen) -> Executable (tscript_runtime)
"""
from __future__ import annotations

from tscript_runtime.executable import Executable

from ..codegen.plan import plan_native
from ..ir.graph import Graph
from ..ir.graph_json import graph_to_json
from ..ir.passes.pipeline import run_pipeline
from ..ir.passes.shape_propagation import mark_dynamic
from . import stage_cache


def optimize_for_codegen(graph: Graph, dynamic: dict | None = None) -> Graph:
    """The pass pipeline with the dims named in `dynamic` symbolic, ending with fusion."""
    if dynamic:
        mark_dynamic(graph, dynamic)
    run_pipeline(graph, level=2)
    return graph


def optimized_and_planned(graph: Graph, dynamic: dict | None = None) -> tuple[Graph, dict]:
    """`optimize_for_codegen`, then the native plan of the graph it gives (from the stage cache when
    this graph was optimized before: stage_cache.py); `graph` itself may be changed."""
    def compute(g: Graph) -> tuple[Graph, dict]:
        g = optimize_for_codegen(g, dynamic)
        return g, plan_native(g)
    return stage_cache.optimized(graph, dynamic, compute)


def executable(graph: Graph, reader=None, plan: dict | None = None) -> Executable:
    """The Executable of an optimized graph: its native plan decided here (or `plan`, one decided
    before, e.g. read from a saved model), its code emitted by the runtime (`reader` reads parameters
    from the module argument, see tscript_runtime.graph_entry)."""
    plan = plan if plan is not None else plan_native(graph)  # (names the groups' kernels in the graph)
    return Executable(graph_to_json(graph), graph.constants, plan, reader, "compiled model")
