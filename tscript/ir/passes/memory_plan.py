"""Memory planning: where a graph's intermediate tensors go in one arena, and how much memory the
graph needs at its peak.

`plan_memory(graph)` gives every intermediate tensor of the top-level block that owns fresh memory
(the output of an op that is neither a view nor in place) and has a static shape a lifetime (from
its node to the last reader of it or of anything aliasing it) and places it with THE arena planner
the whole-graph native entry uses (tscript_runtime/arena.py: first fit among the buffers alive).
Values that reach a graph output are not in the arena (the entry writes them into the output
arrays). The interpreter (`tscript_runtime.executor`) cannot write kernels' results into given
buffers, so there the plan is an account: the executor releases each value after its last reader.
`measure_peak` measures what a run really allocates.

Guarantee: two values overlap in the arena only if their lifetimes do not. Values inside nested
blocks and values of unknown shape are not planned (`unplanned` counts them). The graph is not
changed.
"""
from __future__ import annotations

import tracemalloc
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from tscript_runtime.arena import place

from ..graph import Graph, Node, Value
from ..types import TensorType
from .effects import alias_groups, fresh_result


@dataclass
class MemoryPlan:
    """Byte sizes, lifetimes and arena offsets of the planned values, and the arena's size."""
    sizes: dict = field(default_factory=dict)       #: Value -> bytes
    lifetimes: dict = field(default_factory=dict)   #: Value -> (position of its node, of its last reader)
    offsets: dict = field(default_factory=dict)     #: Value -> byte offset in the arena
    arena: int = 0                                  #: bytes of the arena
    peak_live: int = 0                              #: most bytes of planned values alive at one time
    unplanned: int = 0                              #: tensor results left out (unknown shape, nested)

    @property
    def total(self) -> int:
        """Bytes without any reuse: every planned value in its own buffer."""
        return sum(self.sizes.values())


def plan_memory(graph: Graph) -> MemoryPlan:
    """Plan the arena of `graph`'s intermediates (module docstring)."""
    nodes = list(graph.block.nodes)
    plan = MemoryPlan()
    group = alias_groups(graph)
    end: dict = {}  # alias group -> position of its last reader
    for i, node in enumerate(nodes):
        for v in _reads(node):
            end[group(v)] = i
    outputs = {group(v) for v in graph.outputs}
    for i, node in enumerate(nodes):
        size = _nbytes(node.output) if _fresh(node) else None
        if size is not None and group(node.output) not in outputs:
            plan.sizes[node.output] = size
            plan.lifetimes[node.output] = (i, max(end.get(group(node.output), i), i))
    plan.unplanned = sum(1 for n in graph.all_nodes() if _fresh(n) and n.output not in plan.sizes
                         and group(n.output) not in outputs)
    values = list(plan.sizes)
    offsets, plan.arena = place([(plan.sizes[v], *plan.lifetimes[v]) for v in values])
    plan.offsets = dict(zip(values, offsets))
    plan.peak_live = max((sum(plan.sizes[v] for v in values if plan.lifetimes[v][0] <= i <= plan.lifetimes[v][1])
                          for i in range(len(nodes))), default=0)
    return plan


def _fresh(node: Node) -> bool:
    """Does the node produce one tensor in new memory (an op that neither views nor writes)?"""
    return fresh_result(node) and len(node.outputs) == 1 and isinstance(node.outputs[0].type, TensorType)


def _nbytes(v: Value) -> int | None:
    t = v.type
    if not isinstance(t, TensorType) or t.dtype is None or t.shape is None or \
            not all(isinstance(d, int) for d in t.shape):
        return None
    return int(np.prod(t.shape, dtype=np.int64)) * t.dtype.itemsize


def _reads(node: Node):
    """Values the node reads, its nested blocks included."""
    yield from node.inputs
    for b in node.blocks:
        yield from b.returns
        for n in b.nodes:
            yield from _reads(n)


def measure_peak(fn: Callable[[], object]) -> int:
    """Peak bytes allocated (numpy arrays included) while `fn()` runs, above what was live before."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        if not was_tracing:
            tracemalloc.stop()
