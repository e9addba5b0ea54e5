"""`tscript.compiler` and `tscript.compile`, accepted as PyTorch's `torch.compile` is called.

`compile(model)` returns `model` itself, which runs eagerly with the same results: code that wraps
its model in `torch.compile` runs unchanged. Native code needs example inputs, so it comes from
`tscript.jit.compile(model, example_inputs)` instead (or `jit.trace`/`jit.script` + `jit.save`).
"""
from typing import Callable


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,  # noqa: A001
            backend=None, mode: str | None = None, options: dict | None = None, name: str | None = None,
            disable: bool = False, **kwargs):
    """`model` unchanged (or, called without a model, a decorator doing the same); see the module docstring."""
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                  options=options, name=name, disable=disable)
    if not callable(model):
        raise RuntimeError("torch.compile expects a callable (a function or an nn.Module), got "
                           f"{type(model).__name__}")
    return model


def is_compiling() -> bool:
    """False: code never runs under a tracing compiler such as TorchDynamo here."""
    return False


is_dynamo_compiling = is_compiling


def is_exporting() -> bool:
    return False


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None):
    """`fn` unchanged (a decorator that keeps a function out of `torch.compile`, which never traces)."""
    return (lambda f: f) if fn is None else fn


def allow_in_graph(fn: Callable) -> Callable:
    return fn


def assume_constant_result(fn: Callable) -> Callable:
    return fn


def reset() -> None:
    """Nothing to reset: no compiled code is cached by `compile`."""
