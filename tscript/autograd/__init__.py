"""tscript.autograd: reverse-mode differentiation of eager tensor code (PyTorch's API)."""
from __future__ import annotations

from . import graph
from .anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from .derivatives import call
from .engine import execute
from .function import Function, FunctionCtx
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _root_grads(outputs: list, grads, name: str) -> list:
    grads = [None] * len(outputs) if grads is None else _as_list(grads)
    if len(grads) != len(outputs):
        raise RuntimeError(f"{name}: got {len(grads)} gradients for {len(outputs)} outputs")
    out = []
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if o.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = call("aten::ones_like", o)
        elif tuple(g.shape) != tuple(o.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] "
                               f"has a shape of {o.shape}.")
        out.append(g)
    return out


def _check_roots(outputs: list) -> None:
    for i, o in enumerate(outputs):
        if not o.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
    """Accumulate gradients of `tensors` into the `.grad` of the leaves (only `inputs`, when given)."""
    outputs = _as_list(tensors)
    _check_roots(outputs)
    grads = _root_grads(outputs, grad_tensors, "backward")
    if inputs is not None:
        inputs = _as_list(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    execute(outputs, grads, create_graph if retain_graph is None else retain_graph, create_graph, inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         allow_unused=None, is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """Gradients of `outputs` with respect to `inputs` (returned, not accumulated into `.grad`)."""
    from .._creation import zeros_like
    if is_grads_batched:
        raise NotImplementedError("tscript.autograd.grad: is_grads_batched=True is not supported")
    outputs, inputs = _as_list(outputs), _as_list(inputs)
    _check_roots(outputs)
    for i, t in enumerate(inputs):
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads = _root_grads(outputs, grad_outputs, "grad")
    result = execute(outputs, grads, create_graph if retain_graph is None else retain_graph, create_graph,
                     inputs, capture=True)
    out = []
    for i, (t, g) in enumerate(zip(inputs, result)):
        if g is None:
            if not (allow_unused or materialize_grads):
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   f"graph. Set allow_unused=True if this is the desired behavior.")
            g = zeros_like(t) if materialize_grads else None
        out.append(g if g is None or create_graph else g.detach())
    return tuple(out)


__all__ = ["Function", "FunctionCtx", "GradcheckError", "backward", "detect_anomaly", "enable_grad", "grad",
           "gradcheck", "gradgradcheck", "graph", "inference_mode", "is_anomaly_check_nan_enabled",
           "is_anomaly_enabled", "is_grad_enabled", "is_inference_mode_enabled", "no_grad", "set_detect_anomaly",
           "set_grad_enabled"]
