"""Anomaly detection: remember where each recorded op was created, and fail on NaN gradients naming
that op and showing its forward traceback (any other error in backward warns with it, as PyTorch)."""
import functools
import os
import threading
import traceback
import warnings

import numpy as np

from tscript_runtime.dtypes import is_inexact

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # tscript/


class _State(threading.local):
    enabled = False
    check_nan = True


state = _State()


def remember(node) -> None:
    """Keep the forward stack of `node` (up to the user's call into tscript) in anomaly mode."""
    if state.enabled:
        frames = traceback.extract_stack()
        while frames and frames[-1].filename.startswith(_PACKAGE):
            frames.pop()
        node.trace = "".join(traceback.format_list(frames))


def _forward_trace(node) -> str:
    return f"\n\nTraceback of forward call that caused the error:\n{node.trace}" if node.trace else ""


def check(node, grads) -> None:
    """Raise if `node` produced NaN gradients (anomaly mode with check_nan only)."""
    if not (state.enabled and state.check_nan):
        return
    for i, g in enumerate(grads):
        if g is not None and is_inexact(g._data.dtype) and np.isnan(g._data).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output."
                               f"{_forward_trace(node)}")


def report(node) -> None:
    """Warn with the forward traceback of a node whose backward failed (anomaly mode only)."""
    if state.enabled:
        warnings.warn(f"Error detected in {node.name()}.{_forward_trace(node)}", RuntimeWarning, stacklevel=2)


class detect_anomaly:
    """Context manager (or decorator) enabling anomaly detection for autograd."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = (state.enabled, state.check_nan)
        state.enabled, state.check_nan = True, self.check_nan

    def __exit__(self, *exc):
        state.enabled, state.check_nan = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapped


class set_detect_anomaly:
    """Turn anomaly detection on or off (takes effect at once; restores on exit when used with `with`)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = (state.enabled, state.check_nan)
        state.enabled, state.check_nan = bool(mode), check_nan

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        state.enabled, state.check_nan = self._prev
        return False


def is_anomaly_enabled() -> bool:
    """True while anomaly detection is on."""
    return state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """True while anomaly detection also checks backward results for NaN."""
    return state.enabled and state.check_nan
