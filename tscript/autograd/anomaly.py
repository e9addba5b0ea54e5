"""Anomaly detection: remember where each recorded op was created, and fail on NaN gradients naming
that op and showing its forward traceback."""
import threading
import traceback

import numpy as np


class _State(threading.local):
    enabled = False


state = _State()


def remember(node) -> None:
    """Keep the forward stack of `node` while anomaly mode is on."""
    if state.enabled:
        node.trace = "".join(traceback.format_stack()[:-3])


def check(node, grads) -> None:
    """Raise if `node` produced NaN gradients (anomaly mode only)."""
    if not state.enabled:
        return
    for i, g in enumerate(grads):
        if g is not None and g._data.dtype.kind == "f" and np.isnan(g._data).any():
            where = (f"\n\nTraceback of forward call that caused the error:\n{node.trace}" if node.trace
                     else "")
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.{where}")


class detect_anomaly:
    """Context manager (or decorator) enabling anomaly detection for autograd."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = state.enabled
        state.enabled = self.check_nan

    def __exit__(self, *exc):
        state.enabled = self._prev
        return False

    def __call__(self, fn):
        def wrapped(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapped


class set_detect_anomaly:
    """Turn anomaly detection on or off (takes effect at once; restores on exit when used with `with`)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = state.enabled
        state.enabled = bool(mode) and check_nan

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        state.enabled = self._prev
        return False


def is_anomaly_enabled() -> bool:
    return state.enabled
