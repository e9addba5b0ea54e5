"""Symbolic autodiff on the IR (DESIGN.md "Autodiff on the IR").

`differentiate(graph, wrt, example_inputs)` -> (forward, backward, saved):
- `forward` is the graph returning its outputs followed by the values the backward reads (`saved`);
- `backward` takes one gradient per forward output, then the saved values, and returns one gradient
  per `wrt` value (zeros where a value does not influence the outputs).

There is no second set of derivative formulas: the backward graph is *recorded* by running the
derivative table's formulas (tscript ops) under the tracer, on example values, in reverse order
of the forward nodes. Sizes taken from saved tensors are recorded as `aten::size`, so symbolic
batch dims stay symbolic. Straight-line graphs (loops unrolled) are supported; prim::If and
prim::Loop raise a CompileError naming the node.
"""
from __future__ import annotations

import numpy as np

from tscript_runtime.executor import ArrayDomain, Program

from . import _tracing
from ._tensor import _make
from .autograd.grad_mode import no_grad
from .autograd.record import _flatten, plan, sum_to
from .frontend.traced_int import TracedInt
from .frontend.tracer import Frame, Recorder, type_of
from .ir.graph import Graph, Node, Value
from .ir.passes.constant_propagation import constant_value
from .ir.serialize import graph_to_json
from .ir.types import ListType, TensorType
from tscript_runtime.ops import OPS


class CompileError(RuntimeError):
    """A construct the compiler cannot handle, naming the node and its source line."""


_PASS_THROUGH = {"prim::GetAttr", "prim::Constant", "prim::ListConstruct", "prim::TupleConstruct",
                 "prim::ListUnpack", "prim::TupleUnpack", "prim::DictConstruct", "aten::__getitem__"}


def _requires_grad(graph: Graph, wrt: list[Value]) -> set:
    """Forward values that depend differentiably on `wrt` (float tensors only)."""
    live = set(wrt)
    for node in graph.nodes:
        if node.blocks:
            if any(v in live for v in node.inputs):
                raise CompileError(f"autodiff: {node.kind} (at {node.source or 'unknown'}) is not supported in a "
                                   f"differentiated graph; unroll the loop or trace the model instead")
            continue
        if not any(v in live for v in node.inputs):
            continue
        op = OPS.get(node.kind)
        if op is not None and plan(op) is None:
            continue
        for out in node.outputs:
            if isinstance(out.type, TensorType) and out.type.dtype is not None and out.type.dtype.kind == "f" \
                    or isinstance(out.type, ListType):
                live.add(out)
    return live


class _Backward:
    """Records the backward graph while walking the forward graph in reverse."""

    def __init__(self, forward: Graph, env: dict):
        self.forward, self.env = forward, env
        self.graph = Graph()
        self.rec = Recorder()
        self.rec.frames.append(Frame(self.graph))
        self.saved: list[Value] = []
        self.saved_tensors: dict = {}
        self.grads: dict = {}

    # -- values ---------------------------------------------------------------------------------------
    def saved_value(self, v: Value):
        """The backward graph's handle on forward value `v` (a constant, or a saved input)."""
        ok, value = constant_value(self.forward, v)
        if ok and not isinstance(value, np.ndarray):
            return value
        if v.node is not None and v.node.kind == "prim::ListConstruct":
            return [self.saved_value(i) for i in v.node.inputs]
        if v in self.saved_tensors:
            return self.saved_tensors[v]
        x = self.env[v.name]
        if isinstance(x, np.ndarray):
            obj = _make(x.copy())
        elif isinstance(x, int) and not isinstance(x, bool):
            obj = TracedInt(x, ("value",))
        else:
            return x
        self.rec.bind(obj, self.graph.add_input(type_of(obj) if not isinstance(x, np.ndarray)
                                                else v.type, f"saved_{v.name}"))
        self.saved.append(v)
        self.saved_tensors[v] = obj
        return obj

    def accumulate(self, v: Value, g) -> None:
        if g is None:
            return
        self.grads[v] = g if v not in self.grads else self.grads[v] + g

    # -- nodes ----------------------------------------------------------------------------------------
    def node(self, node: Node, live: set) -> None:
        if node.kind in ("prim::ListUnpack", "prim::TupleUnpack"):
            grads = [self.grads.get(o) for o in node.outputs]
            if any(g is not None for g in grads):
                self.grads[node.inputs[0]] = grads
            return
        if node.kind in ("prim::ListConstruct", "prim::TupleConstruct"):
            grads = self.grads.get(node.output)
            if isinstance(grads, list):
                for v, g in zip(node.inputs, grads):
                    self.accumulate(v, g)
            return
        op = OPS.get(node.kind)
        if op is None or not any(o in self.grads for o in node.outputs):
            return
        p = plan(op)
        if p is None:
            return
        grad = self._output_grads(node)
        values = self._formula_values(node, op, p, live)
        out = p.derivative.formula(grad, **values)
        flat = _flatten(out, -1) if (p.lists or out.__class__ is not tuple) else list(out)
        for v, g in zip(self._slot_values(node, p), flat):
            if v is not None and v in live and g is not None:
                self.accumulate(v, self._fit(g, v))

    def _output_grads(self, node: Node):
        outs = node.outputs
        if len(outs) == 1 and not isinstance(self.grads.get(outs[0]), list):
            g = self.grads[outs[0]]
            return g
        grads = self.grads.get(outs[0]) if len(outs) == 1 else [self.grads.get(o) for o in outs]
        return tuple(g if g is not None else self._zeros_like(o, i) for i, (g, o) in
                     enumerate(zip(grads, outs if len(outs) > 1 else [outs[0]] * len(grads))))

    def _zeros_like(self, v: Value, index: int):
        from . import zeros_like
        ref = self.saved_value(v)
        if isinstance(ref, list):
            ref = ref[index]
        return zeros_like(ref)

    def _formula_values(self, node: Node, op, p, live: set) -> dict:
        values = {}
        for name, kind, i, cond in p.saves:
            v = node.inputs[i]
            if kind == "shape":
                values[name] = tuple(self.saved_value(v).shape)
            else:
                values[name] = self.saved_value(v)
        if "result" in p.derivative.needs:
            res = [self.saved_value(o) for o in node.outputs]
            if len(res) > 1:
                values["result"] = tuple(res)
            else:
                values["result"] = tuple(res[0]) if isinstance(node.outputs[0].type, ListType) else res[0]
        if p.derivative.wants_mask:
            values["needs_input_grad"] = tuple(v is not None and v in live for v in self._slot_values(node, p))
        return values

    def _slot_values(self, node: Node, p) -> list:
        """Forward values of the differentiable argument slots (Tensor[] arguments expanded)."""
        out = []
        for i in p.slots:
            v = node.inputs[i]
            if i in p.lists:
                src = v.node
                out.extend(src.inputs if src is not None and src.kind == "prim::ListConstruct" else [None])
            else:
                out.append(v if isinstance(v.type, TensorType) else None)
        return out

    def _fit(self, g, v: Value):
        """Sum broadcast dims away and cast, against `v`'s (possibly symbolic) shape."""
        t = v.type
        shape = tuple(self.saved_value(v).shape) if any(isinstance(s, str) or s is None for s in t.shape) \
            else tuple(t.shape)
        if tuple(g.shape) != tuple(shape):
            g = sum_to(g, shape)
        if g._data.dtype != t.dtype:
            g = g.to(t.dtype)
        return g


def _env_by_rerun(graph: Graph, inputs: list) -> dict:
    """Every forward value on the example inputs (the graph returns all of them for one run)."""
    g = graph.copy()
    values = [v for n in g.nodes for v in n.outputs]
    for v in values:
        g.add_output(v)
    outs = Program(graph_to_json(g), ArrayDomain(g.constants)).run(list(inputs))
    env = {v.name: x for v, x in zip(values, outs[len(graph.outputs):])}
    env.update({v.name: x for v, x in zip(g.inputs, inputs)})
    return env


def differentiate(graph: Graph, wrt: list[Value], example_inputs: list):
    """(forward graph with saved outputs, backward graph, saved forward values) for `graph`."""
    live = _requires_grad(graph, wrt)
    env = _env_by_rerun(graph, example_inputs)
    bw = _Backward(graph, env)
    outputs = _flat_outputs(graph)
    grad_inputs = []
    previous = _tracing.state.recorder
    _tracing.state.recorder = bw.rec
    try:
        with no_grad():
            for v in outputs:
                t = _make(np.asarray(env[v.name]).copy())
                bw.rec.bind(t, bw.graph.add_input(v.type, f"grad_{v.name}"))
                grad_inputs.append(t)
                if v in live:
                    bw.accumulate(v, t)
            for node in list(graph.block.reversed_nodes()):
                if any(o in live for o in node.outputs):
                    bw.node(node, live)
            results = [bw.grads.get(v) if v in bw.grads else bw._zeros_like(v, 0) for v in wrt]
            for g in results:
                bw.graph.add_output(bw.rec.value_of(g))
    finally:
        _tracing.state.recorder = previous
    _prune_saved(bw)
    forward = graph.copy()
    by_name = {v.name: v for n in forward.all_nodes() for v in n.outputs}
    by_name.update({v.name: v for v in forward.inputs})
    for v in bw.saved:
        forward.add_output(by_name[v.name])
    return forward, bw.graph, bw.saved


def _prune_saved(bw: _Backward) -> None:
    """Drop saved values the backward graph ends up not reading (less memory kept from forward)."""
    from .ir.passes.dce import eliminate_dead_code
    eliminate_dead_code(bw.graph)
    n_grads = len(bw.graph.inputs) - len(bw.saved)
    for k in reversed(range(len(bw.saved))):
        if not bw.graph.inputs[n_grads + k].uses:
            bw.graph.block.remove_param(n_grads + k)
            del bw.saved[k]


def _flat_outputs(graph: Graph) -> list[Value]:
    """Graph outputs with tuples/lists built at the end expanded to their tensors."""
    out = []
    for v in graph.outputs:
        n = v.node
        if n is not None and n.kind in ("prim::TupleConstruct", "prim::ListConstruct"):
            out.extend(i for i in n.inputs if isinstance(i.type, TensorType))
        elif isinstance(v.type, TensorType):
            out.append(v)
    return out
