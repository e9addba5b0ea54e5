"""Recording the backward graph: the forward graph is walked in reverse and each node's gradient
rule runs under the tracer, on example values of the forward, so the rule's ops land in the backward
graph. For an op the rule is its formula in the derivative table (the one eager autograd runs); the
other rules (containers, prim::If, traced autograd.Functions) are in `RULES`.

Forward values the formulas read become inputs of the backward graph ("saved" values, which the
forward graph returns), unless they are cheap to recompute (`recompute`, chosen by memory.py).
Sizes of forward values are constants when the forward type knows them and saved ints otherwise,
so a backward compiled at one batch size runs at any other.
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np

from tscript_runtime.ops import OPS

from .. import _tracing
from .._dispatch import dispatch
from .._tensor import _make
from ..autograd.derivatives import call
from ..autograd.grad_mode import no_grad
from ..autograd.record import _flatten, plan, sum_to
from ..frontend.traced_int import TracedFloat, TracedInt
from ..frontend.tracer import Frame, Recorder
from ..ir.graph import Block, Graph, Node, Value
from ..ir.passes.constant_propagation import constant_value
from ..ir.types import BOOL, FLOAT, INT, TensorType, tensor_type
from .branches import backward_if
from .errors import CompileError, unsupported
from .examples import stale_values
from .functions import backward_python_op


class _Recorder(Recorder):
    """The tracer's recorder, marking each recorded node with the source line of the forward node
    whose gradient it computes (so `# model.py:12` in the backward IR points at the model)."""
    source: str | None = None

    def _annotate(self, node: Node) -> None:
        node.source = self.source


class Backward:
    """The backward graph of `forward` being recorded (see the module docstring)."""

    def __init__(self, forward: Graph, env: dict, live: set, recompute: frozenset = frozenset()):
        self.forward, self.env, self.live, self.recompute = forward, env, live, recompute
        self.graph = Graph()
        self.rec = _Recorder()
        self.rec.frames.append(Frame(self.graph))
        #: what the backward reads from the forward, in input order: a value, or (value, dim) for a size
        self.saved: list = []
        #: forward value -> its gradient (a tensor; a list for a list value)
        self.grads: dict = {}
        #: the outermost open backward prim::If: nodes of the graph's top level go before it
        self.anchor: Node | None = None
        self._inputs: dict = {}   # saved key -> (object, backward graph input)
        self._local: dict = {}    # forward value -> recomputed tensor (only valid in the open block)
        self._stale = stale_values(forward)

    # -- the walk ---------------------------------------------------------------------------------------
    def record(self, outputs: list[Value], wrt: list[Value], dataless: bool = False) -> None:
        """Inputs: one gradient per forward output (then the saved values); outputs: one gradient
        per `wrt` value (zeros where it does not reach the outputs). `dataless`: the formulas' ops
        compute shapes only (tscript_runtime.meta)."""
        previous, _tracing.state.recorder = _tracing.state.recorder, self.rec
        was, _tracing.state.dataless = _tracing.state.dataless, dataless
        try:
            with no_grad(), warnings.catch_warnings():
                warnings.simplefilter("error", _tracing.TracerWarning)
                for v in outputs:
                    g = _make(np.array(self.env[v]))
                    self.rec.bind(g, self.graph.add_input(_tensor_type(v, g._data), f"grad_{v.name}"))
                    self.accumulate(v, g)
                self.walk(self.forward.block)
                for v in wrt:
                    g = self.grads.get(v)
                    self.graph.add_output(self.rec.value_of(g if g is not None else self.zeros(v)))
        finally:
            _tracing.state.recorder, _tracing.state.dataless = previous, was

    def walk(self, block: Block) -> None:
        """Run the gradient rule of every node of `block` that has an output gradient, last node first."""
        for node in list(block.reversed_nodes()):
            if any(o in self.grads for o in node.outputs):
                self.rec.source = node.source
                try:
                    RULES.get(node.kind, _op)(self, node)
                except _tracing.TracerWarning as w:
                    raise unsupported(node, f"its gradient reads a tensor as a Python value ({w})") from None
                except CompileError:
                    raise
                except Exception as e:  # noqa: BLE001 - a rule that cannot run on these values
                    raise unsupported(node, f"recording its gradient failed: {type(e).__name__}: {e}") from e

    # -- gradients --------------------------------------------------------------------------------------
    def accumulate(self, v: Value, g) -> None:
        """Add `g` to the gradient of `v` (if gradients flow through `v`)."""
        if g is None or v not in self.live:
            return
        old = self.grads.get(v)
        self.grads[v] = g if old is None else _add(old, g)

    def accumulate_item(self, v: Value, index: int, g) -> None:
        """Add `g` to the gradient of item `index` of the list value `v`."""
        if g is None or v not in self.live:
            return
        grads = [None] * len(self.env[v])
        grads[index] = g
        self.accumulate(v, grads)

    def fit(self, g, v: Value):
        """`g` summed over broadcast dims and cast, to the shape and dtype of `v`."""
        x = self.env[v]
        if tuple(g._data.shape) != x.shape:
            g = sum_to(g, self.shape(v))
        if g._data.dtype != x.dtype:
            g = g.to(x.dtype)
        return g

    def zeros(self, v: Value):
        return call("aten::zeros", self.shape(v), dtype=self.env[v].dtype)

    # -- forward values in the backward ---------------------------------------------------------------
    def value(self, v: Value):
        """The backward's handle on forward value `v`: a constant, a recomputed tensor or a saved input."""
        ok, c = constant_value(self.forward, v)
        if ok:
            return _make(c) if isinstance(c, np.ndarray) else c
        node = v.node
        if node is not None and node.kind in ("prim::ListConstruct", "prim::TupleConstruct"):
            items = [self.value(i) for i in node.inputs]
            return items if node.kind == "prim::ListConstruct" else tuple(items)
        if v in self._local:
            return self._local[v]
        if v in self.recompute:
            return self._recompute(v)
        return self.saved_input(v)[0]

    def shape(self, v: Value) -> tuple:
        """The shape of forward tensor `v`: ints where the forward type knows them, else saved sizes."""
        t = v.type
        dims = t.shape if isinstance(t, TensorType) and t.shape is not None else (None,) * self.env[v].ndim
        return tuple(d if isinstance(d, int) else self.saved_input((v, i))[0] for i, d in enumerate(dims))

    def saved_input(self, key) -> tuple:
        """(object, backward input Value) for a saved forward value or (value, dim) size."""
        hit = self._inputs.get(key)
        if hit is not None:
            return hit
        v, dim = key if isinstance(key, tuple) else (key, None)
        if v in self._stale:
            raise unsupported(v.node, f"%{v.name} is needed by the backward but changed in place later")
        if v not in self.env:
            raise unsupported(v.node, f"%{v.name} has no example value")
        obj, t = self._placeholder(v, dim)
        with self.at_graph_level():
            value = self.graph.add_input(t, f"saved_{v.name}" + (f"_size{dim}" if dim is not None else ""))
            self.rec.bind(obj, value)
        self.saved.append(key)
        self._inputs[key] = obj, value
        return obj, value

    def _placeholder(self, v: Value, dim: int | None) -> tuple:
        """An example object standing for saved `v` while recording, and its IR type."""
        x = self.env[v]
        if dim is not None:
            return TracedInt(int(x.shape[dim]), ("value",)), INT
        if isinstance(x, np.ndarray):  # (a copy, unless recording on zeros: nothing then reads or writes it)
            return _make(x.view() if _tracing.state.dataless else np.array(x)), _tensor_type(v, x)
        if isinstance(x, (bool, np.bool_)):
            return bool(x), BOOL
        if isinstance(x, int):
            return TracedInt(x, ("value",)), INT
        if isinstance(x, float):
            return TracedFloat(x, ("value",)), FLOAT
        if isinstance(x, list) and all(isinstance(i, np.ndarray) for i in x):
            return [_make(np.array(i)) for i in x], v.type
        raise unsupported(v.node, f"the backward needs %{v.name}, a {type(x).__name__}, which cannot be saved")

    def _recompute(self, v: Value):
        """Record `v`'s (elementwise) node again in the backward, on recomputed or saved inputs."""
        node = v.node
        result = dispatch(OPS[node.kind], tuple(self.value(i) for i in node.inputs))
        self._local[v] = result
        return result

    @contextlib.contextmanager
    def at_graph_level(self):
        """Insert at the top level of the backward graph (before any open prim::If)."""
        if self.anchor is None:
            yield
        else:
            with self.graph.inserting_before(self.anchor):
                yield

    @contextlib.contextmanager
    def scoped(self, block: Block):
        """Record into `block` (of a backward prim::If); afterwards forget what was bound inside it."""
        outer = self.anchor
        self.anchor = outer or block.owner
        try:
            with self.graph.inserting_at_end(block):
                yield
        finally:
            self.anchor = outer
            frame = self.rec.frame
            frame.values = {k: (o, val) for k, (o, val) in frame.values.items() if not _inside(val, block)}
            self._local = {v: t for v, t in self._local.items() if frame.lookup(t) is not None}


def _tensor_type(v: Value, x: np.ndarray) -> TensorType:
    """`v`'s type, or (not known) the dtype and rank of its example `x`."""
    t = v.type
    if isinstance(t, TensorType) and t.dtype is not None and t.shape is not None:
        return t
    return tensor_type(x.dtype, (None,) * x.ndim)


def _inside(value: Value, block: Block) -> bool:
    node = value.node
    while node is not None:
        if node.owner is block:
            return True
        node = node.owner.owner if node.owner is not None else None
    return False


def _add(a, b):
    if isinstance(a, list):
        return [x if y is None else y if x is None else x + y for x, y in zip(a, b)]
    return a + b


# -- rules ---------------------------------------------------------------------------------------------

def _op(bw: Backward, node: Node) -> None:
    """An op: its formula from the derivative table, recorded."""
    op = OPS.get(node.kind)
    if op is None:
        raise unsupported(node, "autodiff has no rule for it")
    p = plan(op)
    slots = _slot_values(bw, node, p)
    values = _formula_values(bw, node, p, slots)
    out = p.derivative.formula(_output_grads(bw, node), **values)
    flat = _flatten(out, -1) if (p.lists or out.__class__ is not tuple) else list(out)
    for slot, g in zip(slots, flat):
        if isinstance(slot, tuple):
            bw.accumulate_item(*slot, g)
        elif slot is not None and slot in bw.live and g is not None:
            bw.accumulate(slot, bw.fit(g, slot))


def _output_grads(bw: Backward, node: Node):
    """The gradient argument of a formula: a tensor, or a tuple (zeros for outputs without one)."""
    outs = node.outputs
    if isinstance(bw.grads.get(outs[0]), list):  # an op returning Tensor[]
        value = bw.value(outs[0])
        return tuple(g if g is not None else call("aten::zeros_like", value[i])
                     for i, g in enumerate(bw.grads[outs[0]]))
    if len(outs) == 1:
        return bw.grads[outs[0]]
    return tuple(bw.grads[o] if o in bw.grads else bw.zeros(o) for o in outs)


def _formula_values(bw: Backward, node: Node, p, slots: list) -> dict:
    """What the formula reads, by name: saved inputs, shapes, the result, the needs-grad mask."""
    values = {}
    for name, kind, i, cond in p.saves:
        v = node.inputs[i]
        if kind == "shape":
            values[name] = bw.shape(v)
        elif cond is not None and not any(slots[k] in bw.live for k in cond):
            values[name] = None  # only needed for gradients nobody wants (as eager: less saved)
        else:
            values[name] = bw.value(v)
    if "result" in p.derivative.needs:
        res = [bw.value(o) for o in node.outputs]
        values["result"] = tuple(res) if len(res) > 1 else res[0]
    if p.derivative.wants_mask:
        values["needs_input_grad"] = tuple(s in bw.live if not isinstance(s, tuple) else s[0] in bw.live
                                           for s in slots)
    return values


def _slot_values(bw: Backward, node: Node, p) -> list:
    """The forward values of the differentiable argument slots, Tensor[] arguments expanded: a value,
    None (not a tensor), or (list value, index) for an item of a list not built in the graph."""
    out = []
    for i in p.slots:
        v = node.inputs[i]
        if i not in p.lists:
            out.append(v if isinstance(v.type, TensorType) else None)
        elif v.node is not None and v.node.kind == "prim::ListConstruct":
            out.extend(v.node.inputs)
        else:
            out.extend((v, k) for k in range(len(bw.env[v])))
    return out


def _unpack(bw: Backward, node: Node) -> None:
    grads = [bw.grads.get(o) for o in node.outputs]
    bw.accumulate(node.inputs[0], [g if g is not None else bw.zeros(o) for g, o in zip(grads, node.outputs)])


def _construct(bw: Backward, node: Node) -> None:
    grads = bw.grads.get(node.output)
    for v, g in zip(node.inputs, grads):
        bw.accumulate(v, g)


def _getitem(bw: Backward, node: Node) -> None:
    ok, index = constant_value(bw.forward, node.inputs[1])
    if not ok or not isinstance(index, int):
        raise unsupported(node, "an item of a container read at an index that is not a constant")
    bw.accumulate_item(node.inputs[0], index, bw.grads[node.output])


# Gradient rules of the nodes that are not ops (ops: `_op`).
RULES = {"prim::ListUnpack": _unpack, "prim::TupleUnpack": _unpack, "prim::ListConstruct": _construct,
         "prim::TupleConstruct": _construct, "aten::__getitem__": _getitem, "prim::TupleIndex": _getitem,
         "prim::If": backward_if, "prim::PythonOp": backward_python_op}
