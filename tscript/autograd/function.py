"""`tscript.autograd.Function`: user-defined ops with a hand-written backward."""
from __future__ import annotations

from .grad_mode import no_grad, state as grad_state
from .graph import FREED_MESSAGE, Node, SavedTensor, edge


class FunctionCtx:
    """The `ctx` passed to `forward` and `backward`."""

    def __init__(self, inputs: tuple):
        self.needs_input_grad = tuple(bool(getattr(a, "_requires_grad", False)) for a in inputs)
        self._saved = ()
        self._freed = False
        self.non_differentiable: set[int] = set()
        self.materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        self._saved = tuple(SavedTensor(t) if t is not None else None for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        return tuple(s.unpack() if s is not None else None for s in self._saved)

    def mark_non_differentiable(self, *tensors) -> None:
        self.non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors) -> None:
        """Accepted for PyTorch compatibility: in-place outputs are tracked by version counters."""

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)


class FunctionBackward(Node):
    """The graph node of one `Function.apply` call: runs the user's `backward`."""

    def __init__(self, fn_cls, ctx: FunctionCtx, inputs: tuple, output_metas: list):
        self.tensor_args = [i for i, a in enumerate(inputs) if hasattr(a, "_data")]
        super().__init__([edge(inputs[i]) for i in self.tensor_args], len(output_metas))
        self.fn_cls, self.ctx, self.n_inputs, self.output_metas = fn_cls, ctx, len(inputs), output_metas

    def name(self) -> str:
        return f"{self.fn_cls.__name__}Backward"

    def release(self) -> None:
        self.ctx._freed = bool(self.ctx._saved)

    def apply(self, grads: list) -> list:
        from .._creation import zeros
        if self.ctx.materialize_grads:
            grads = [g if g is not None else zeros(s, dtype=d) for g, (s, d) in zip(grads, self.output_metas)]
        out = self.fn_cls.backward(self.ctx, *grads)
        out = out if isinstance(out, tuple) else (out,)
        if len(out) != self.n_inputs:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {self.n_inputs}, got {len(out)})")
        return [out[i] for i in self.tensor_args]


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
        ctx = FunctionCtx(args)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not (grad_state.enabled and any(ctx.needs_input_grad)):
            return out
        outputs = out if isinstance(out, tuple) else (out,)
        outputs = tuple(o.detach() if any(o is a for a in args) else o for o in outputs)
        metas = [(tuple(o._data.shape), o._data.dtype) for o in outputs]
        node = FunctionBackward(cls, ctx, args, metas)
        for nr, o in enumerate(outputs):
            if id(o) not in ctx.non_differentiable and o._data.dtype.kind == "f":
                o._requires_grad, o.grad_fn, o._output_nr = True, node, nr
        return outputs if isinstance(out, tuple) else outputs[0]
