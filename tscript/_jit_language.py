"""TorchScript-language helpers as they behave when the code runs as Python (eagerly or traced).

Model libraries call these in `forward` and at import time: `torch.jit.is_scripting()` (False here;
the script compiler folds it to True in compiled code), `is_tracing()` (True while `tscript.jit.trace`
records), and the overload declarations `_overload` / `_overload_method`, which only describe
signatures to the script compiler and return the function they decorate.
"""
from __future__ import annotations

import functools

from ._tracing import state as _trace_state

__all__ = ["annotate", "is_scripting", "is_tracing", "script_if_tracing"]


def is_scripting() -> bool:
    """False when running as Python; scripted code sees True (`if not torch.jit.is_scripting(): ...`)."""
    return False


def is_tracing() -> bool:
    """True while `tscript.jit.trace` records the running code."""
    return _trace_state.recorder is not None


def annotate(the_type, the_value):
    """`the_value`: the type only informs the script compiler."""
    return the_value


def script_if_tracing(fn):
    """`fn`, recorded op by op when called under a trace (its Python control flow runs once, as traced)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def _overload(fn):
    """A typed overload declaration of a function (a stub whose body is `...`): returned unchanged; the
    definition that follows it is what runs."""
    return fn


def _overload_method(fn):
    """A typed overload declaration of a method: returned unchanged (the later definition replaces it)."""
    return fn


_script_if_tracing = script_if_tracing
