"""`tscript.jit.trace`: record the ops a function or module runs into a graph, and check the trace."""
from __future__ import annotations

import warnings

import numpy as np

from .._tensor import Tensor
from .._tracing import TracerWarning
from ..frontend.modules import ScriptFunction, ScriptModule
from ..frontend.tracer import record_trace


def trace(func, example_inputs, check_trace: bool = True, check_inputs=None, check_tolerance: float = 1e-5,
          strict: bool = True):
    """Record the ops `func` (a function or nn.Module) runs on `example_inputs` into a graph.

    With `check_trace`, the function is traced again on the example inputs (or on each tuple of
    `check_inputs`) and a TracerWarning is emitted when the graphs differ or when the trace's results
    differ from the Python function's; module buffers are restored afterwards. With `strict`, a list
    or dict in the output gives a TracerWarning (its structure is frozen into the trace)."""
    from ..nn.modules.module import Module
    args = _as_args(example_inputs)
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
    if strict:
        _warn_mutable_outputs(out)
    if check_trace:
        module = func if isinstance(func, Module) else None
        _check(func, module, traced, [_as_args(c) for c in check_inputs] if check_inputs else [args],
               check_tolerance)
    return traced


def _as_args(example_inputs) -> tuple:
    return example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)


def _warn_mutable_outputs(out) -> None:
    """Lists and dicts in the output are frozen into the trace like tuples; warn, as PyTorch does for
    lists (PyTorch refuses dicts outright; our trace handles them as it handles tuples)."""
    kinds = _container_kinds(out)
    for kind in ("list", "dict"):
        if kind in kinds:
            warnings.warn(TracerWarning(
                f"Encountering a {kind} at the output of the tracer might cause the trace to be incorrect, this "
                f"is only valid if the container structure does not change based on the module's inputs. "
                f"Consider using a constant container instead (e.g. for `list`, use a `tuple` instead. for "
                f"`dict`, use a `NamedTuple` instead). If you absolutely need this and know the side effects, "
                f"pass strict=False to trace() to allow this behavior."), stacklevel=3)


def _container_kinds(x) -> set:
    if isinstance(x, dict):
        return {"dict"}.union(*map(_container_kinds, x.values()))
    if isinstance(x, (list, tuple)):
        return ({"list"} if isinstance(x, list) else set()).union(*map(_container_kinds, x))
    return set()


def _check(func, module, traced, checks: list, tolerance: float) -> None:
    """Trace again and run the trace on each check input; warn where anything disagrees."""
    saved = _save_buffers(module)
    try:
        for args in checks:
            fn = func.forward if module is not None else func
            with warnings.catch_warnings():  # conversions were reported by the first trace
                warnings.simplefilter("ignore", TracerWarning)
                graph, _, expected = record_trace(fn, _clone(args), module)
            if _structure(graph) != _structure(traced.graph):
                warnings.warn(TracerWarning(
                    f"Trace had nondeterministic nodes or Graphs differed across invocations! The traced graph "
                    f"is:\n{traced.graph}\nand a second trace gave:\n{graph}"), stacklevel=3)
            _compare_outputs(traced, args, expected, tolerance)
    finally:
        _restore_buffers(saved)


def _compare_outputs(traced, args, expected, tolerance: float) -> None:
    try:
        got = traced(*_clone(args))
    except Exception as e:  # a trace that cannot even rerun is worth a loud warning, not a crash
        warnings.warn(TracerWarning(f"The traced function failed to rerun on the check inputs: "
                                    f"{type(e).__name__}: {e}"), stacklevel=4)
        return
    for i, (a, b) in enumerate(zip(_flat(got), _flat(expected))):
        if a.shape != b.shape or not np.allclose(a._data, b._data, rtol=tolerance, atol=tolerance, equal_nan=True):
            warnings.warn(TracerWarning(
                f"Output nr {i + 1}. of the traced function does not match the corresponding output of the "
                f"Python function. Detailed error:\nTensor-likes are not close! (shapes {list(a.shape)} vs "
                f"{list(b.shape)}){_random_hint(traced.inlined_graph)}"), stacklevel=4)


def _random_hint(graph) -> str:
    from ..ir.passes.effects import is_random
    kinds = sorted({n.kind for n in graph.all_nodes() if is_random(n)})
    if not kinds:
        return ""
    return f"\nTrace had nondeterministic nodes. Did you forget call .eval() on your model? Nodes: {', '.join(kinds)}"


def _structure(graph) -> list:
    """What two traces of deterministic code share: node kinds, attributes and wiring (not the
    types, whose shapes follow the inputs, nor the names and source comments)."""
    number: dict = {v: i for i, v in enumerate(graph.inputs)}
    out = []
    for n in graph.all_nodes():
        for v in n.outputs + [p for b in n.blocks for p in b.params]:
            number[v] = len(number)
        out.append((n.kind, repr(sorted(n.attrs.items())), [number.get(v) for v in n.inputs], len(n.outputs),
                    [[number.get(r) for r in b.returns] for b in n.blocks]))
    return out + [[number.get(v) for v in graph.outputs]]


def _clone(x):
    """Example inputs copied, so a function mutating its inputs sees the same values on a rerun."""
    if isinstance(x, Tensor):
        return x.detach().clone().requires_grad_(x.requires_grad) if x.is_leaf else x.detach().clone()
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_clone(v) for v in x)
    if isinstance(x, dict):
        return {k: _clone(v) for k, v in x.items()}
    return x


def _save_buffers(module) -> list:
    if module is None:
        return []
    return [(m, name, b, b._data.copy()) for m in module.modules() for name, b in m._buffers.items()
            if b is not None]


def _restore_buffers(saved: list) -> None:
    """Put every buffer back (same tensor object, same array: compiled code shares the arrays)."""
    for m, name, b, data in saved:
        m._buffers[name] = b
        if b._data.shape == data.shape:
            np.copyto(b._data, data)
        else:
            b._data = data


def _flat(x) -> list:
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _flat(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _flat(v)]
    return []
