"""Recording dispatched ops into the backward graph. `_dispatch.dispatch` calls `run_recorded`
when grad mode is on and some input requires grad; everything op-specific comes from the
derivative table (looked up once per op and kept in a `Plan`).

This runs for every recorded op, so it is written to be cheap: one pass over the arguments, and
work (snapshots, saved results) only when the formula will need it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tscript_runtime.dtypes import is_complex, is_inexact

from . import anomaly, views
from .derivatives import DERIVATIVES, NODE_NAMES, NOT_DIFFERENTIABLE
from .graph import FREED_MESSAGE, Node, SavedOutput, SavedTensor, edge


@dataclass
class Plan:
    """What recording an op needs, worked out once per op."""
    derivative: object
    name: str                 # grad_fn name, e.g. "MulBackward0"
    namer: object             # or a rule naming it from the call (NODE_NAMES)
    slots: tuple              # schema positions of the differentiable arguments, in order
    lists: frozenset          # which of those positions are Tensor[] arguments
    saves: tuple              # (name, kind, position, slots): kind is "arg" or "shape"; saved only if one
                              # of `slots` (indices into the flattened slots; None: always) needs a grad
    result_if: tuple | None   # save the result: always (()), never (None), or if one of these slots needs a grad


_PLANS: dict[str, Plan | None] = {}
_FREED = object()  # stands in for a saved tensor dropped by `release`


def _camel(name: str) -> str:
    return "".join(part.title() for part in name.rstrip("_").split("_"))  # as PyTorch: log1p -> Log1P


def plan(op) -> Plan | None:
    """The recording plan of `op` (None for ops whose outputs never carry gradients)."""
    try:
        return _PLANS[op.name]
    except KeyError:
        pass
    if op.name in NOT_DIFFERENTIABLE:
        p = None
    else:
        functional = op.extra.get("functional", op.name)
        derivative = DERIVATIVES.get(functional) or DERIVATIVES.get(op.name)
        if derivative is None:
            raise RuntimeError(f"the derivative for '{op.name}' is not implemented")
        slots = tuple(sorted(op.tensor_pos + op.list_pos))
        saves = tuple(_save_entry(op, derivative, slots, n) for n in derivative.needs if n != "result")
        result_if = _save_entry(op, derivative, slots, "result")[3] or () if "result" in derivative.needs else None
        p = Plan(derivative, _camel(op.schema.short_name) + "Backward0", NODE_NAMES.get(functional), slots,
                 frozenset(op.list_pos), saves, result_if)
    _PLANS[op.name] = p
    return p


def _save_entry(op, derivative, slots: tuple, name: str) -> tuple:
    index = op.schema.index
    if name.endswith("_shape"):
        return (name, "shape", index[name[:-6]], None)
    cond = derivative.save_if.get(name)
    if cond is not None:
        assert not op.list_pos, f"{op.name}: save_if needs every Tensor argument to be one slot"
        cond = tuple(slots.index(index[c]) for c in cond)
    return (name, "arg", index.get(name), cond)


class OpNode(Node):
    """A recorded op: its derivative formula, saved values, and the metadata to shape gradients."""
    label = None           # the name, when the plan's rule gives one for this call
    holds_tensors = False  # something to drop on release

    def __init__(self, plan: Plan, saved: dict, edges, input_metas, output_metas, multi_output: bool):
        self.next_functions = tuple(edges)
        self.n_outputs = len(output_metas)
        self.seq = next(Node.sequence)
        self.plan, self.saved = plan, saved
        self.input_metas, self.output_metas = input_metas, output_metas
        self.multi_output = multi_output  # the op returns a tuple/list (perhaps of one tensor, e.g. unbind)

    def name(self) -> str:
        return self.label or self.plan.name

    def release(self) -> None:
        """Drop saved tensors; other saved values (dims, shapes, scalars) stay, as in PyTorch."""
        if self.holds_tensors:
            saved = self.saved
            for k, v in saved.items():
                if isinstance(v, SavedTensor):
                    saved[k] = _FREED
            self.holds_tensors = False

    def __getattr__(self, attr: str):
        """PyTorch's `grad_fn._saved_<name>`: the values the formula reads."""
        if attr.startswith("_saved_") and attr[7:] in self.__dict__.get("saved", ()):
            return self._unpack(self.saved[attr[7:]])
        raise AttributeError(f"'{self.name()}' object has no attribute '{attr}'")

    def _unpack(self, v):
        if isinstance(v, SavedTensor):
            return v.unpack(self)
        if v is _FREED:
            raise RuntimeError(FREED_MESSAGE)
        if isinstance(v, tuple) and v and isinstance(v[0], SavedTensor):
            return tuple(s.unpack(self) for s in v)
        return v

    def apply(self, grads: list) -> list:
        values = {k: self._unpack(v) for k, v in self.saved.items()}
        metas = self.input_metas
        if self.plan.derivative.wants_mask:
            values["needs_input_grad"] = tuple(m is not None for m in metas)
        if not self.multi_output:
            grad = grads[0]
        else:
            grad = tuple(g if g is not None else _zeros(meta) for g, meta in zip(grads, self.output_metas))
        out = self.plan.derivative.formula(grad, **values)
        if self.plan.lists or out.__class__ is not tuple:
            out = _flatten(out, len(metas))
        assert len(out) == len(metas), f"{self.name()}: {len(out)} gradients for {len(metas)} inputs"
        return [g if g is None or m is None or (g._data.shape == m[0] and g._data.dtype == m[1]) else _fit(g, m)
                for g, m in zip(out, metas)]


def _flatten(out, n: int) -> list:
    """Formula results (one per differentiable argument; lists for Tensor[] arguments) as one flat list."""
    if not isinstance(out, (tuple, list)):
        return [out]
    flat = []
    for g in out:
        flat.extend(g) if isinstance(g, (list, tuple)) else flat.append(g)
    return flat


def _zeros(meta):
    from .._creation import zeros
    return zeros(meta[0], dtype=meta[1])


def _fit(grad, meta):
    """A gradient summed over broadcast dims and cast to its input's shape and dtype (None if the
    input needs none)."""
    if grad is None or meta is None:
        return None
    shape, dtype = meta
    if grad._data.shape != shape:
        grad = sum_to(grad, shape)
    if grad._data.dtype != dtype:
        if is_complex(grad._data.dtype) and not is_complex(dtype):
            grad = grad.real  # a real input's gradient from a complex result is the real part (PyTorch's)
        grad = grad.to(dtype)
    return grad


def sum_to(grad, shape: tuple):
    """Sum `grad` down to `shape` (undoing broadcasting)."""
    lead = grad.dim() - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and grad.shape[lead + i] != 1)
    if dims:
        grad = grad.sum(dim=dims, keepdim=True)
    return grad.view(shape) if lead or tuple(grad.shape) != shape else grad


def _inputs(p: Plan, args) -> tuple:
    """(tensors, edges, metas) of the differentiable argument slots, Tensor[] arguments flattened;
    a meta (shape, dtype) is None when that input needs no gradient."""
    if p.lists:
        tensors = [t for i in p.slots for t in (args[i] if i in p.lists else (args[i],))]
    else:
        tensors = [args[i] for i in p.slots]
    edges, metas = [], []
    for k, t in enumerate(tensors):
        if hasattr(t, "_data"):
            edges.append(edge(t))
            metas.append((t._data.shape, t._data.dtype) if t._requires_grad else None)
        else:  # a Python number (Tensor|Scalar) or None (Tensor?)
            tensors[k] = None
            edges.append((None, 0))
            metas.append(None)
    return tensors, edges, metas


def _save(p: Plan, args, metas: list, mutates) -> tuple:
    """The values the formula reads, by argument name ("result" is filled in after the kernel), and
    whether a tensor is among them. An argument about to be overwritten in place is saved as a
    copy of its old value."""
    saved, holds = {}, False
    for name, kind, i, cond in p.saves:
        a = args[i]
        if kind == "shape":
            a = a._data.shape
        elif cond is not None and all(metas[k] is None for k in cond):
            a = None
        elif hasattr(a, "_data"):
            a, holds = SavedTensor(_snapshot(a) if i == mutates else a), True
        elif isinstance(a, (list, tuple)) and a and hasattr(a[0], "_data"):
            a = list(a)
        saved[name] = a
    return saved, holds


def _check_inplace(target) -> None:
    if target.grad_fn is None and target._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def run_recorded(op, args, arrays, run, wrap):
    """Run `op` (via `run(arrays)`), wrap its outputs (`wrap(out)`) and connect them to the graph."""
    p = plan(op)
    if p is None:
        return wrap(run(arrays))
    tensors, edges, metas = _inputs(p, args)
    rebase = target = None
    if op.mutates is not None:
        target = args[op.mutates]
        if target._base is not None:
            rebase = views.prepare(target)
            self_slot = next(k for k, t in enumerate(tensors) if t is target)
            metas[self_slot] = (target._data.shape, target._data.dtype)
        else:
            _check_inplace(target)
    saved, holds = _save(p, args, metas, op.mutates)
    result = wrap(run(arrays))
    if op.mutates is None and op.out_alias is not None and result is args[op.out_alias]:
        return result  # `x.to(x.dtype)`, `x.real` of a real x: x itself, as in PyTorch (no node)
    multi_output = isinstance(result, (tuple, list))
    outputs = result if multi_output else (result,)
    node = OpNode(p, saved, edges, metas, [(o._data.shape, o._data.dtype) for o in outputs], multi_output)
    node.holds_tensors = holds
    if p.namer is not None:
        node.label = p.namer(args, outputs[0])
    if rebase is not None:
        views.rebase(target, node, self_slot, *rebase)
    else:
        _connect(outputs, node)
    if p.result_if is not None:
        _save_result(node, outputs, not p.result_if or any(metas[k] is not None for k in p.result_if))
    if anomaly.state.enabled:
        anomaly.remember(node)
    return result


def _connect(outputs, node) -> None:
    for nr, o in enumerate(outputs):
        if is_inexact(o._data.dtype):
            o._requires_grad, o.grad_fn, o._output_nr = True, node, nr
            if o._base is not None:
                o._view_version = o._vc[0]


def _save_result(node, outputs, wanted: bool) -> None:
    if not wanted:
        node.saved["result"] = None
    elif node.multi_output:  # formulas read some of the outputs (e.g. indices): changes to others are fine
        node.saved["result"] = tuple(SavedOutput(o, node, check=False) for o in outputs)
    else:
        node.saved["result"], node.holds_tensors = SavedOutput(outputs[0], node), True


def _snapshot(target):
    """A copy of a tensor about to be overwritten, standing in for its old value (same graph position)."""
    from .._tensor import _make
    t = _make(np.array(target._data))
    t._requires_grad, t.grad_fn, t._output_nr = target._requires_grad, target.grad_fn, target._output_nr
    return t
