"""Memory planning: which intermediate tensors can share one buffer, and how much memory a graph
needs at its peak.

`plan_memory(graph)` assigns every intermediate tensor of the top-level block that owns fresh
memory (the output of an op that is neither a view nor in place) and has a static shape to a
buffer of an arena: a buffer is reused by a later value of the same byte size once every value
living in it is dead (its last reader, and the last reader of every view or in-place result of
it, has run). Graph outputs live to the end. This is the plan whole-graph native code allocates
its arena from; the interpreter (`tscript_runtime.executor`) cannot write kernels' results into
given buffers (the reference kernels allocate their results), so there the plan is an account:
the executor releases each value after its last reader, and numpy's allocator hands the freed
block to the next result of that size. `measure_peak` measures what a run really allocates.

Guarantee: two values share a buffer only if their lifetimes (aliases included) do not overlap.
Values inside nested blocks and values of unknown shape are not planned (`unplanned` counts them).
Linear in the graph size (one walk to find last uses, one to assign).
"""
from __future__ import annotations

import tracemalloc
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..graph import Graph, Node, Value
from ..types import TensorType
from .effects import alias_groups, fresh_result


@dataclass
class MemoryPlan:
    """Byte sizes of the planned values, their buffers, and the peak of bytes live at once."""
    sizes: dict = field(default_factory=dict)       #: Value -> bytes
    buffer_of: dict = field(default_factory=dict)   #: Value -> index into `buffers`
    buffers: list = field(default_factory=list)     #: bytes of each arena buffer
    peak_live: int = 0                              #: most bytes of planned values live at one time
    unplanned: int = 0                              #: tensor results left out (unknown shape, nested)

    @property
    def total(self) -> int:
        """Bytes without any reuse: every intermediate kept in its own buffer."""
        return sum(self.sizes.values())

    @property
    def arena(self) -> int:
        """Bytes of the arena with buffers reused."""
        return sum(self.buffers)


def plan_memory(graph: Graph) -> MemoryPlan:
    """Plan buffers for `graph`'s intermediates (module docstring); the graph is not changed."""
    nodes = list(graph.block.nodes)
    plan = MemoryPlan()
    for node in nodes:
        size = _nbytes(node.output) if _fresh(node) else None
        if size is not None:
            plan.sizes[node.output] = size
    plan.unplanned = sum(1 for n in graph.all_nodes() if _fresh(n) and n.output not in plan.sizes)
    group = alias_groups(graph)
    end: dict[Value, int] = {}  # alias group -> position of its last reader
    for i, node in enumerate(nodes):
        for v in _reads(node):
            end[group(v)] = i
    for v in graph.outputs:
        end[group(v)] = len(nodes)
    _assign(plan, nodes, lambda v, i: max(end.get(group(v), i), i))
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


def _assign(plan: MemoryPlan, nodes: list, end: Callable[[Value, int], int]) -> None:
    """Greedy: each new value takes a free buffer of its size, or a new one; a buffer is free again
    after the last reader of its value and of everything aliasing it (`end(value, position)`)."""
    free: dict[int, list[int]] = {}
    dying: dict[int, list] = {}
    live = 0
    for i, node in enumerate(nodes):
        for out in node.outputs:
            if out not in plan.sizes:
                continue
            size = plan.sizes[out]
            pool = free.get(size)
            plan.buffer_of[out] = pool.pop() if pool else _new_buffer(plan, size)
            live += size
            dying.setdefault(end(out, i), []).append(out)
        plan.peak_live = max(plan.peak_live, live)
        for v in dying.pop(i, ()):
            free.setdefault(plan.sizes[v], []).append(plan.buffer_of[v])
            live -= plan.sizes[v]


def _new_buffer(plan: MemoryPlan, size: int) -> int:
    plan.buffers.append(size)
    return len(plan.buffers) - 1


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
