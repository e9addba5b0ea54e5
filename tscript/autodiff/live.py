"""Which forward values carry gradients: those computed differentiably from a `wrt` value. An op
whose derivative table entry says "not differentiable" (comparisons, sizes, detach...) stops the
flow; a construct autodiff has no rule for raises a CompileError here, before anything is recorded."""
from __future__ import annotations

import numpy as np

from tscript_runtime.dtypes import is_inexact
from tscript_runtime.ops import OPS

from ..autograd.record import plan
from ..ir.graph import Block, Graph, Node, Value
from ..ir.passes.effects import alias_closure, writes_memory
from ..ir.types import ListType, TensorType, TupleType
from .errors import unsupported
from .examples import free_values


def live_values(graph: Graph, wrt: list[Value], env: dict) -> set[Value]:
    """The values (inputs `wrt` included) that gradients flow through."""
    live = set(wrt)
    _block(graph.block, live, env)
    _check_writes(graph, live)
    return live


def _check_writes(graph: Graph, live: set) -> None:
    """An in-place write into (a view of) a value that gradients flow through would be invisible to
    the backward, which sees each value as computed: refuse it (remove_mutation has already turned
    every write it could prove harmless into its functional form)."""
    for node in graph.all_nodes():
        if writes_memory(node):
            target = node.inputs[OPS[node.kind].mutates]
            if alias_closure(graph, {target}) & live:
                raise unsupported(node, f"it writes in place into %{target.name}, which gradients flow through "
                                        f"(use the out-of-place op)")


def _block(block: Block, live: set, env: dict) -> None:
    for node in block.nodes:
        if node.kind == "prim::If":
            for b in node.blocks:
                _block(b, live, env)
            for i, out in enumerate(node.outputs):
                if any(b.returns[i] in live for b in node.blocks) and carries_grad(out, env):
                    live.add(out)
        elif node.blocks:
            if any(v in live for v in node.inputs) or any(v in live for b in node.blocks for v in free_values(b)):
                raise unsupported(node, "a loop that was not unrolled (trace the model, or loop a constant number "
                                        "of times so that it unrolls)")
        elif any(v in live for v in node.inputs):
            live.update(differentiable_outputs(node, env))


def differentiable_outputs(node: Node, env: dict) -> list[Value]:
    """The outputs of `node` that gradients flow back through (given a differentiable input)."""
    outputs = [o for o in node.outputs if carries_grad(o, env)]
    op = OPS.get(node.kind)
    if op is not None and outputs:
        try:
            return outputs if plan(op) is not None else []
        except RuntimeError as e:  # no derivative formula in the table
            raise unsupported(node, str(e)) from None
    if node.kind == "prim::PythonOp":
        call = getattr(getattr(node, "callee", None), "traced_call", None)
        if call is None and outputs:
            raise unsupported(node, f"it calls the Python function '{node.attrs.get('name')}', whose "
                                    f"derivative is unknown")
        return [] if call is None else [o for k, o in enumerate(node.outputs[:call.n_outputs])
                if k not in call.non_differentiable and carries_grad(o, env)]
    return outputs


def output_reach(graph: Graph, outputs: list[Value], wrt: list[Value], live: set) -> list[frozenset[int]]:
    """Per output: the indices of the `wrt` values it depends on through differentiable ops. A
    gradient for that output alone reaches only those (eager autograd leaves the others' `.grad` None)."""
    deps = {v: 1 << i for i, v in enumerate(wrt)}  # value -> bit set of the wrt values it depends on
    _deps_block(graph.block, deps, live)
    return [frozenset(i for i in range(len(wrt)) if deps.get(v, 0) >> i & 1) for v in outputs]


def _deps_block(block: Block, deps: dict, live: set) -> None:
    for node in block.nodes:
        for b in node.blocks:
            _deps_block(b, deps, live)
        if node.kind == "prim::If":
            for i, out in enumerate(node.outputs):
                mask = 0
                for b in node.blocks:
                    mask |= deps.get(b.returns[i], 0)
                if mask and out in live:
                    deps[out] = mask
            continue
        mask = 0
        for v in node.inputs:
            if v in live:
                mask |= deps.get(v, 0)
        if mask:
            for out in node.outputs:
                if out in live:
                    deps[out] = mask


def carries_grad(v: Value, env: dict) -> bool:
    """A floating-point tensor (or a container that may hold one)."""
    t = v.type
    if isinstance(t, TensorType):
        if t.dtype is not None:
            return is_inexact(t.dtype)
        x = env.get(v)
        return not isinstance(x, np.ndarray) or is_inexact(x.dtype)
    return isinstance(t, (ListType, TupleType))
