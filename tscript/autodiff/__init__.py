"""Symbolic autodiff on the IR (DESIGN.md "Autodiff on the IR").

`differentiate(graph, wrt, example_inputs)` gives
- `forward`: the graph returning its outputs followed by the values the backward reads (`saved`);
- `backward`: a graph taking one gradient per (flattened) forward output, then the saved values,
  and returning one gradient per `wrt` value (zeros where it does not influence the outputs).

There is no second set of derivative formulas: the backward graph is *recorded* by running the
derivative table's formulas (tscript ops) under the tracer, on example values, in reverse order of
the forward nodes (backward.py). Covered: straight-line code (loops unrolled), prim::If (the backward
of whichever branch ran, branches.py), traced `autograd.Function` calls (the user's own backward,
functions.py). Anything else raises a `CompileError` naming the node. Cheap elementwise values are
recomputed in the backward rather than saved (memory.py).

The stages, in order: example values (examples.py) -> which values carry gradients (live.py) ->
record -> choose recomputation and record again -> drop saved values the backward does not read ->
return the saved values from the forward.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.graph import Graph, Value
from ..ir.passes.dce import eliminate_dead_code
from ..ir.passes.inline import inline_calls
from ..ir.types import TensorType, tensor_type
from .backward import Backward
from .branches import saved_outputs
from .errors import CompileError, unsupported
from .examples import example_values
from .live import live_values, output_reach
from .memory import recomputable

__all__ = ["CompileError", "Differentiated", "differentiate", "differentiate_telling", "flat_outputs"]


@dataclass
class Differentiated:
    """The result of `differentiate`."""
    forward: Graph            #: returns the graph's outputs, then `saved`
    backward: Graph           #: (one gradient per output in `outputs`, *saved) -> one gradient per wrt
    outputs: list[Value]      #: the forward's tensor outputs (tuples flattened), one gradient input each
    saved: list[Value]        #: forward values returned for the backward (after the graph's outputs)
    reached: list[bool]       #: per wrt value: do the outputs depend on it? (else its gradient is zeros)
    reaches: list[frozenset[int]]  #: per output: the indices of the wrt values it depends on


def differentiate(graph: Graph, wrt: list[Value], example_inputs: list, recompute: bool = True) -> Differentiated:
    """Forward and backward graphs of `graph` for gradients with respect to `wrt` (inputs of `graph`),
    recorded on `example_inputs`; `recompute=False` saves every value the backward reads.

    Recording needs the shapes and dtypes of values, not their data: it runs on zeros of the right
    shapes, computing nothing (tscript_runtime.meta), unless a value depends on the data (control
    flow, data-dependent shapes); then it runs on the examples' values."""
    return differentiate_telling(graph, wrt, example_inputs, recompute)[0]


def differentiate_telling(graph: Graph, wrt: list[Value], example_inputs: list,
                          recompute: bool = True) -> tuple[Differentiated, bool]:
    """`differentiate`'s result, and whether it was recorded without the examples' data (on their
    shapes and dtypes alone: then it depends on nothing else of them)."""
    try:
        return _differentiate(graph, wrt, example_inputs, recompute, dataless=True), True
    except CompileError:
        raise
    except Exception:  # noqa: BLE001 - a value only the data can give: record on real values
        return _differentiate(graph, wrt, example_inputs, recompute, dataless=False), False


def _differentiate(graph: Graph, wrt: list[Value], example_inputs: list, recompute: bool,
                   dataless: bool) -> Differentiated:
    forward = graph.copy()
    by_name = {v.name: v for v in forward.inputs}
    wrt = [by_name[v.name] for v in wrt]
    env = example_values(forward, example_inputs, dataless)
    live = live_values(forward, wrt, env)
    outputs = flat_outputs(forward)
    reaches = output_reach(forward, outputs, wrt, live)
    bw = _record(forward, env, live, outputs, wrt, frozenset(), dataless)
    if recompute:
        chosen = recomputable(forward, bw.saved, env)
        if chosen:
            bw = _record(forward, env, live, outputs, wrt, chosen, dataless)
    _generalize_types(bw.graph)
    saved = saved_outputs(forward, bw.saved)
    for v in saved:
        forward.add_output(v)
    inline_calls(forward)  # traced autograd.Function calls: the forward runs their forward's ops
    return Differentiated(forward, bw.graph, outputs, saved, [v in bw.grads for v in wrt], reaches)


def _record(forward: Graph, env: dict, live: set, outputs: list, wrt: list, recompute: frozenset,
            dataless: bool) -> Backward:
    bw = Backward(forward, env, live, recompute)
    bw.record(outputs, wrt, dataless)
    eliminate_dead_code(bw.graph)
    n_grads = len(outputs)
    for k in reversed(range(len(bw.saved))):  # saved values the backward ended up not reading
        if not bw.graph.inputs[n_grads + k].uses:
            bw.graph.block.remove_param(n_grads + k)
            del bw.saved[k]
    return bw


def _generalize_types(backward: Graph) -> None:
    """Types recorded on the examples give example sizes: unless every input size is static, only
    ranks and dtypes are kept (the optimizer derives the sizes again from the inputs' types)."""
    if all(isinstance(v.type, TensorType) and v.type.shape is not None and all(isinstance(d, int) for d in v.type.shape)
           for v in backward.inputs if isinstance(v.type, TensorType)):
        return
    for node in backward.all_nodes():
        for v in node.outputs:
            if isinstance(v.type, TensorType) and v.type.shape is not None:
                v.type = tensor_type(v.type.dtype, (None,) * len(v.type.shape))


def flat_outputs(graph: Graph, count: int | None = None) -> list[Value]:
    """The tensor outputs of `graph` (its first `count` outputs, all when None), tuples and lists built
    in the graph expanded (depth first)."""
    out = []

    def walk(v: Value) -> None:
        node = v.node
        if node is not None and node.kind in ("prim::TupleConstruct", "prim::ListConstruct"):
            for i in node.inputs:
                walk(i)
        elif isinstance(v.type, TensorType):
            out.append(v)
        elif node is not None and node.kind == "prim::DictConstruct":
            raise unsupported(node, "a model returning a dict (return a tensor or a tuple of tensors)")
    for v in graph.outputs[:count]:
        walk(v)
    return out
