"""tscript.jit: trace (and, later, script) PyTorch-style code into IR graphs; save and load them."""
from __future__ import annotations

import warnings

import numpy as np

from ._tensor import Tensor
from ._tracing import TracerWarning
from .frontend.modules import ScriptFunction, ScriptModule
from .frontend.tracer import record_trace

__all__ = ["ScriptFunction", "ScriptModule", "TracerWarning", "trace"]


def trace(func, example_inputs, check_trace: bool = True, check_tolerance: float = 1e-5, strict: bool = True):
    """Record the ops `func` (a function or nn.Module) runs on `example_inputs` into a graph."""
    from .nn.modules.module import Module
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    if isinstance(func, ScriptModule | ScriptFunction):
        return func
    if isinstance(func, Module):
        graph, rec, out = record_trace(func.forward, args, func)
        traced = ScriptModule(func, graph, rec.method_graphs)
    elif callable(func):
        graph, rec, out = record_trace(func, args)
        traced = ScriptFunction(graph, getattr(func, "__name__", "forward"))
    else:
        raise TypeError(f"trace() expects a function or an nn.Module, got {type(func).__name__}")
    if check_trace:
        _check(traced, args, out, check_tolerance)
    return traced


def _flat(x) -> list:
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _flat(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _flat(v)]
    return []


def _check(traced, args, expected, tolerance: float) -> None:
    """Rerun the trace on the example inputs; warn when it disagrees with the Python function."""
    try:
        got = traced(*args)
    except Exception as e:  # a trace that cannot even rerun is worth a loud warning, not a crash
        warnings.warn(TracerWarning(f"Trace had nondeterministic nodes or failed to rerun: {e}"))
        return
    for i, (a, b) in enumerate(zip(_flat(got), _flat(expected))):
        if a.shape != b.shape or not np.allclose(a._data, b._data, rtol=tolerance, atol=tolerance, equal_nan=True):
            warnings.warn(TracerWarning(
                f"Output nr {i + 1}. of the traced function does not match the corresponding output of the "
                f"Python function. Detailed error:\nTensor-likes are not close! (shapes {list(a.shape)} vs "
                f"{list(b.shape)})"), stacklevel=3)
