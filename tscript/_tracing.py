"""Tracing state shared by the dispatcher, Tensor and nn.Module: while a recorder is active, every
dispatched op is also recorded into a graph (DESIGN.md: tracing is a mode of dispatch)."""
from __future__ import annotations

import os
import sys
import warnings


class _State:
    recorder = None  # the active tscript.frontend.tracer.Recorder, if any
    dataless = False  # ops that make fresh tensors give zeros of their shape (tscript_runtime.meta)


state = _State()


class TracerWarning(Warning):
    """The trace may not generalize: a tensor became a Python value, or results differed on rerun."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def user_frame():
    """The innermost stack frame outside the tscript package (the user's code)."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE):
        f = f.f_back
    return f


def source_of_caller() -> str | None:
    """`file.py:line` of the user code currently running."""
    f = user_frame()
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}" if f is not None else None


def warn_conversion(what: str) -> None:
    """Warn (while tracing) that a tensor is being turned into a Python value."""
    if state.recorder is None:
        return
    f = user_frame()
    where = f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "<unknown>"
    noun = what if what.startswith("NumPy") else f"Python {what}"
    msg = (f"{where}: Converting a tensor to a {noun} might cause the trace to be incorrect. We can't "
           f"record the data flow of Python values, so this value will be treated as a constant in the "
           f"future. This means that the trace might not generalize to other inputs!")
    if f is not None:
        warnings.warn_explicit(msg, TracerWarning, f.f_code.co_filename, f.f_lineno)
    else:
        warnings.warn(msg, TracerWarning)
