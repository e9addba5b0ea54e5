"""Example values of every forward value, nested blocks included: the backward graph is recorded by
running the derivative formulas on them (see `tscript.autodiff`).

Each block runs as a graph of its own in the array domain (its free values as inputs, everything it
defines as outputs). Both branches of a prim::If are run, so the backward of either can be recorded;
a branch that fails on the example (it was not taken for a reason) simply gets no values.

Values are taken at the end of a run, so a value whose memory an in-place op writes later holds
something else by then: `stale_values` names those (they can be neither saved nor recomputed).
"""
from __future__ import annotations

import numpy as np

from tscript_runtime.executor import ArrayDomain, Program
from tscript_runtime.meta import DataDependent, MetaDomain
from tscript_runtime.ops import OPS
from tscript_runtime.ops.random import default_generator

from ..frontend.modules import ModuleView
from ..ir.graph import Block, Graph, Value, clone_block_into
from ..ir.passes.effects import alias_groups, writes_memory
from ..ir.passes.inline import inline_calls
from ..ir.graph_json import graph_to_json
from .errors import unsupported


def example_values(graph: Graph, inputs: list, dataless: bool = False) -> dict[Value, object]:
    """Every value of `graph` (in If blocks too) on `inputs`. Nothing changes: the inputs are not
    modified (a module is read through a copying view, so running stats are not updated) and the
    default random generator is where it was (compiling does not shift the random stream).
    `dataless`: computed tensors are zeros of their shapes (tscript_runtime.meta; DataDependent when a
    value needs the data, e.g. control flow on it)."""
    env = {v: _snapshot(x) for v, x in zip(graph.inputs, inputs)}
    state = default_generator.get_state()
    try:
        _evaluate(graph, graph.block, list(graph.inputs), env, dataless)
    finally:
        default_generator.set_state(state)
    return env


def _evaluate(graph: Graph, block: Block, free: list, env: dict, dataless: bool = False) -> None:
    g = Graph()
    g.constants = graph.constants
    value_map = {v: g.add_input(v.type, v.name) for v in free}
    clone_block_into(block, g.block, value_map)
    defined = [o for n in block.nodes for o in n.outputs]
    for v in defined:
        g.add_output(value_map[v])
    inline_calls(g)  # traced autograd.Function calls run the ops of their forward
    for node in g.all_nodes():
        if node.kind == "prim::PythonOp":  # a scripted @ignore call: no IR to differentiate or run
            raise unsupported(node, f"it calls the Python function '{node.attrs.get('name', '?').split('#')[0]}' "
                                    f"(marked @tscript.jit.ignore), which a compiled model cannot run")
    if dataless and any(n.blocks for n in g.all_nodes()):
        raise DataDependent("control flow depends on the data")
    domain = MetaDomain(g.constants) if dataless else ArrayDomain(g.constants)
    outputs = Program(graph_to_json(g), domain).run([env[v] for v in free])
    env.update(zip(defined, outputs))
    for node in block.nodes:
        if node.kind == "prim::If":
            for b in node.blocks:
                _evaluate_branch(graph, b, env)


def _evaluate_branch(graph: Graph, block: Block, env: dict) -> None:
    try:
        _evaluate(graph, block, free_values(block), env)
    except Exception:  # noqa: BLE001 - a branch not taken may well fail on these inputs
        pass


def stale_values(graph: Graph) -> set[Value]:
    """Values whose memory an in-place op writes after they are defined: at the end of a run (when
    example values are taken and saved values returned) they no longer hold what they held."""
    order: dict = {}
    _number(graph.block, order)
    group = alias_groups(graph)
    writes: dict = {}  # alias group -> position of its last write
    for node in order:
        if writes_memory(node):
            target = group(node.inputs[OPS[node.kind].mutates])
            writes[target] = max(writes.get(target, -1), order[node])
    if not writes:
        return set()
    values = [*graph.inputs, *(v for node in order for v in [*node.outputs, *(p for b in node.blocks for p in b.params)])]
    return {v for v in values if writes.get(group(v), -1) > (order[v.node] if v.node is not None else -1)}


def _number(block: Block, order: dict) -> None:
    """Nodes in program order (a node, then the nodes of its blocks)."""
    for node in block.nodes:
        order[node] = len(order)
        for b in node.blocks:
            _number(b, order)


def free_values(block: Block) -> list[Value]:
    """Values read inside `block` (nested blocks included) but defined outside it, in first-use order."""
    defined, free = set(block.params), {}
    _collect(block, defined, free)
    return list(free)


def _collect(block: Block, defined: set, free: dict) -> None:
    for node in block.nodes:
        for v in node.inputs:
            if v not in defined:
                free.setdefault(v, None)
        for b in node.blocks:
            defined.update(b.params)
            _collect(b, defined, free)
            for v in b.returns:
                if v not in defined:
                    free.setdefault(v, None)
        defined.update(node.outputs)
    for v in block.returns:
        if v not in defined:
            free.setdefault(v, None)


class _SnapshotView:
    """A module as %self whose parameters and buffers are read as copies."""
    __slots__ = ("view",)

    def __init__(self, view):
        self.view = view

    def __getitem__(self, name: str):
        return _snapshot(self.view[name])


def _snapshot(x):
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, ModuleView):
        return _SnapshotView(x)
    return x
