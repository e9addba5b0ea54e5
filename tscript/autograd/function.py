"""`tscript.autograd.Function`: user-defined ops with a hand-written backward."""
from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass

from tscript_runtime.dtypes import is_inexact

from .. import _tracing
from . import anomaly
from .grad_mode import no_grad, state as grad_state
from .graph import FREED_MESSAGE, Node, SavedOutput, SavedTensor, edge


class FunctionCtx:
    """The `ctx` passed to `forward` and `backward`."""

    def __init__(self, inputs: tuple):
        self.needs_input_grad = tuple(bool(getattr(a, "_requires_grad", False)) for a in inputs)
        self._saved = ()
        self._freed = False
        self._node = None  # weak reference to the node running `backward`
        self.non_differentiable: set[int] = set()
        self.materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors for `backward` (read them back with `ctx.saved_tensors`)."""
        self._saved = tuple(SavedTensor(t) if t is not None else None for t in tensors)
        if _tracing.state.recorder is not None:  # the tracer records these as values of the graph
            self._traced_saved = tensors

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to `save_for_backward` (checked for in-place changes since)."""
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        owner = self._node() if self._node is not None else None
        return tuple(s.unpack(owner) if s is not None else None for s in self._saved)

    def mark_non_differentiable(self, *tensors) -> None:
        """These outputs do not require grad (e.g. indices)."""
        self.non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors) -> None:
        """Accepted for PyTorch compatibility: in-place outputs are tracked by version counters."""

    def set_materialize_grads(self, value: bool) -> None:
        """With False, `backward` receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)


class FunctionBackward(Node):
    """The graph node of one `Function.apply` call: runs the user's `backward`."""

    def __init__(self, fn_cls, ctx: FunctionCtx, inputs: tuple, output_metas: list):
        self.tensor_args = [i for i, a in enumerate(inputs) if hasattr(a, "_data")]
        super().__init__([edge(inputs[i]) for i in self.tensor_args], len(output_metas))
        self.input_metas = [(inputs[i]._data.shape, inputs[i]._data.dtype) if inputs[i]._requires_grad else None
                            for i in self.tensor_args]
        self.fn_cls, self.ctx, self.n_inputs, self.output_metas = fn_cls, ctx, len(inputs), output_metas

    def name(self) -> str:
        return f"{self.fn_cls.__name__}Backward"

    def release(self) -> None:
        self.ctx._freed = bool(self.ctx._saved)

    def apply(self, grads: list) -> list:
        from .._creation import zeros
        if self.ctx.materialize_grads:
            grads = [zeros(meta[0], dtype=meta[1]) if g is None and meta is not None else g
                     for g, meta in zip(grads, self.output_metas)]
        out = self.fn_cls.backward(self.ctx, *grads)
        out = out if isinstance(out, tuple) else (out,)
        if len(out) != self.n_inputs:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {self.n_inputs}, got {len(out)})")
        for i, g in enumerate(out):
            if g is not None and i not in self.tensor_args:
                raise RuntimeError(f"Function {self.name()} returned a gradient different than None at position "
                                   f"{i + 1}, but the corresponding forward input was not a Variable")
        return [self._check(k, out[i]) for k, i in enumerate(self.tensor_args)]

    def _check(self, k: int, grad):
        """A returned gradient summed to its input's shape (PyTorch's rule) and cast to its dtype."""
        from .record import sum_to
        meta = self.input_metas[k]
        if grad is None or meta is None:
            return None
        shape, dtype = meta
        if grad._data.shape != shape:
            if not _expandable(shape, grad._data.shape):
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {k} - got "
                                   f"{list(grad._data.shape)} but expected shape compatible with {list(shape)}")
            grad = sum_to(grad, shape)
        return grad if grad._data.dtype == dtype else grad.to(dtype)


def _expandable(shape: tuple, to: tuple) -> bool:
    """True when a tensor of `shape` broadcasts to `to` (so a gradient of shape `to` sums back)."""
    if len(shape) > len(to):
        return False
    return all(s == 1 or s == t for s, t in zip(shape[::-1], to[::-1]))


class Function:
    """Base class of custom autograd ops: define `@staticmethod forward(ctx, ...)` and
    `@staticmethod backward(ctx, *grads)`, then call `MyFn.apply(...)`."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("You must implement the backward function for custom autograd.Function.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run `forward` (not recorded) and connect its outputs to one node running `backward`.
        While tracing, the call is recorded as one prim::PythonOp node (see `TracedCall`)."""
        recorder = _tracing.state.recorder
        if recorder is not None:
            return recorder.call_function(cls, args, kwargs)
        return apply_function(cls, args, kwargs)[0]


def apply_function(fn_cls, args: tuple, kwargs: dict) -> tuple:
    """`fn_cls.apply(*args, **kwargs)`: (its result, the ctx its forward filled in)."""
    ctx = FunctionCtx(args)
    with no_grad():
        out = fn_cls.forward(ctx, *args, **kwargs)
    if not (grad_state.enabled and any(ctx.needs_input_grad)):
        return out, ctx
    outputs = out if isinstance(out, tuple) else (out,)
    outputs = tuple(_fresh(o, args, ctx) for o in outputs)
    metas = [(o._data.shape, o._data.dtype) if hasattr(o, "_data") else None for o in outputs]
    node = FunctionBackward(fn_cls, ctx, args, metas)
    anomaly.remember(node)
    for nr, o in enumerate(outputs):
        if metas[nr] is not None and id(o) not in ctx.non_differentiable and is_inexact(o._data.dtype):
            o._requires_grad, o.grad_fn, o._output_nr = True, node, nr
    _own_saved_outputs(ctx, node)
    return (outputs if isinstance(out, tuple) else outputs[0]), ctx


@dataclass
class TracedCall:
    """One `Function.apply` recorded while tracing, as a prim::PythonOp node whose callee graph holds
    the ops of `forward` (and this, as its `traced_call`): what autodiff needs to record the user's
    `backward` into a backward graph instead of differentiating those ops."""
    fn_cls: type
    ctx: FunctionCtx
    n_outputs: int               # the node's first outputs are the function's; then its saved tensors
    saved: tuple                 # per save_for_backward argument: True (a node output, in order) or None
    arg_inputs: tuple            # per positional argument: the index of its node input, or None (no tensor)
    non_differentiable: frozenset  # indices of outputs marked non-differentiable


def _fresh(output, args: tuple, ctx: FunctionCtx):
    """An input returned as an output is returned as a new tensor sharing its data."""
    if not any(output is a for a in args):
        return output
    alias = output.detach()
    if id(output) in ctx.non_differentiable:
        ctx.non_differentiable.add(id(alias))
    return alias


def _own_saved_outputs(ctx: FunctionCtx, node) -> None:
    """Saved outputs of this very call are kept without their tensor, which points at the node
    (a reference cycle); the ctx reaches the node weakly."""
    ctx._node = weakref.ref(node)
    ctx._saved = tuple(SavedOutput(s.tensor, node) if s is not None and s.tensor.grad_fn is node else s
                       for s in ctx._saved)


def once_differentiable(backward):
    """Decorate a Function's `backward` that is not itself differentiable: it runs without recording."""
    @functools.wraps(backward)
    def wrapped(ctx, *grads):
        with no_grad():
            return backward(ctx, *grads)
    return wrapped
