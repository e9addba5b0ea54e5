"""Recording dispatched ops into the backward graph. `_dispatch.dispatch` calls `run_recorded`
when grad mode is on and some input requires grad; everything op-specific comes from the
derivative table."""
from __future__ import annotations

import numpy as np

from tscript_runtime.dtypes import is_float

from . import anomaly
from .derivatives import DERIVATIVES, NOT_DIFFERENTIABLE
from .graph import FREED_MESSAGE, Node, SavedTensor, edge


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.rstrip("_").split("_"))


class OpNode(Node):
    """A recorded op: its derivative formula, saved values, and the metadata to shape gradients."""

    def __init__(self, op, derivative, saved: dict, edges, input_metas, output_metas):
        super().__init__(edges, len(output_metas))
        self.op, self.derivative, self.saved = op, derivative, saved
        self.input_metas, self.output_metas = input_metas, output_metas
        self._name = _camel(op.schema.short_name) + "Backward0"

    def name(self) -> str:
        return self._name

    def release(self) -> None:
        if self.saved:
            self.saved = None

    def apply(self, grads: list) -> list:
        if self.saved is None:
            raise RuntimeError(FREED_MESSAGE)
        values = {k: v.unpack() if isinstance(v, SavedTensor) else v for k, v in self.saved.items()}
        grads = [g if g is not None else _zeros(meta) for g, meta in zip(grads, self.output_metas)]
        out = self.derivative.formula(grads[0] if len(grads) == 1 else tuple(grads), **values)
        return [_fit(g, meta) for g, meta in zip(_flatten(out, len(self.input_metas)), self.input_metas)]


def _flatten(out, n: int) -> list:
    """Formula results (one per differentiable argument; lists for Tensor[] arguments) as one flat list."""
    if not isinstance(out, (tuple, list)):
        out = (out,)
    flat = []
    for g in out:
        flat.extend(g) if isinstance(g, (list, tuple)) else flat.append(g)
    assert len(flat) == n, f"derivative returned {len(flat)} gradients for {n} inputs"
    return flat


def _zeros(meta):
    from .._creation import zeros
    return zeros(meta[0], dtype=meta[1])


def _fit(grad, meta):
    """A gradient summed over broadcast dims and cast to its input's shape and dtype."""
    if grad is None or meta is None:
        return None
    shape, dtype = meta
    if tuple(grad.shape) != shape:
        grad = sum_to(grad, shape)
    if grad._data.dtype != dtype:
        grad = grad.to(dtype)
    return grad


def sum_to(grad, shape: tuple):
    """Sum `grad` down to `shape` (undoing broadcasting)."""
    lead = grad.dim() - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and grad.shape[lead + i] != 1)
    if dims:
        grad = grad.sum(dim=dims, keepdim=True)
    return grad.view(shape) if lead or tuple(grad.shape) != shape else grad


def _differentiable_inputs(op, args):
    """(position, tensor-or-None) per differentiable argument slot, lists flattened."""
    slots = []
    for i in sorted(op.tensor_pos + op.list_pos):
        a = args[i]
        if i in op.list_pos:
            slots.extend((i, t) for t in a)
        else:
            slots.append((i, a if hasattr(a, "_data") else None))
    return slots


def _meta(t):
    if t is None or not getattr(t, "_requires_grad", False):
        return None
    return (tuple(t._data.shape), t._data.dtype)


def _save(op, derivative, args, snapshot):
    """The values the formula reads, by argument name ("result" is filled in after the kernel)."""
    saved = {}
    for name in derivative.needs:
        if name == "result":
            continue
        if name.endswith("_shape"):
            saved[name] = tuple(args[op.schema.index[name[:-6]]]._data.shape)
            continue
        i = op.schema.index[name]
        a = snapshot if (i == op.mutates and snapshot is not None) else args[i]
        if hasattr(a, "_data"):
            saved[name] = SavedTensor(a)
        elif isinstance(a, (list, tuple)) and a and hasattr(a[0], "_data"):
            saved[name] = list(a)
        else:
            saved[name] = a
    return saved


def _check_inplace(op, target) -> None:
    if target.grad_fn is None and target._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if target._base is not None:
        raise RuntimeError(f"{op.schema.short_name}: in-place operation on a view of another tensor while "
                           f"recording gradients is not supported by tscript; write it out of place (e.g. "
                           f"torch.where / masked_fill / torch.cat) or run it under torch.no_grad()")


def run_recorded(op, args, arrays, run, wrap):
    """Run `op` (via `run(arrays)`), wrap its outputs (`wrap(out)`) and connect them to the graph."""
    if op.name in NOT_DIFFERENTIABLE:
        return wrap(run(arrays))
    derivative = DERIVATIVES.get(op.extra.get("functional", op.name)) or DERIVATIVES.get(op.name)
    if derivative is None:
        raise RuntimeError(f"the derivative for '{op.name}' is not implemented")
    slots = _differentiable_inputs(op, args)
    edges = [edge(t) if t is not None else (None, 0) for _, t in slots]
    snapshot = None
    if op.mutates is not None:
        target = args[op.mutates]
        _check_inplace(op, target)
        if "self" in derivative.needs:
            snapshot = _snapshot(target)
    saved = _save(op, derivative, args, snapshot)
    result = wrap(run(arrays))
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    metas = [(tuple(o._data.shape), o._data.dtype) for o in outputs]
    node = OpNode(op, derivative, saved, edges, [_meta(t) for _, t in slots], metas)
    if "result" in derivative.needs:
        saved["result"] = SavedTensor(result) if len(outputs) == 1 else tuple(outputs)
    anomaly.remember(node)
    for nr, o in enumerate(outputs):
        if is_float(o._data.dtype):
            o._requires_grad, o.grad_fn, o._output_nr = True, node, nr
    return result


def _snapshot(target):
    """A copy of a tensor about to be overwritten, standing in for its old value (same graph position)."""
    from .._tensor import _make
    t = _make(np.array(target._data))
    t._requires_grad, t.grad_fn, t._output_nr = target._requires_grad, target.grad_fn, target._output_nr
    return t
