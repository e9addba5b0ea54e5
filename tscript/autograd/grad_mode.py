"""Grad mode: whether dispatched ops are recorded for autograd. Thread-local, as in PyTorch.

`no_grad`, `enable_grad`, `set_grad_enabled(mode)` and `inference_mode(mode)` work both as context
managers and as decorators (`@no_grad()`)."""
import functools
import threading


class _State(threading.local):
    enabled = True


state = _State()


def is_grad_enabled() -> bool:
    """True when operations are recorded for autograd."""
    return state.enabled


class _Switch:
    """Sets grad mode on enter and restores it on exit; as a decorator, around every call."""

    def _target(self, prev: bool) -> bool:
        raise NotImplementedError

    def __enter__(self):
        self._prev = state.enabled
        state.enabled = self._target(self._prev)

    def __exit__(self, *exc):
        state.enabled = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            prev = state.enabled
            state.enabled = self._target(prev)
            try:
                return fn(*args, **kwargs)
            finally:
                state.enabled = prev
        return wrapped


class no_grad(_Switch):
    """Disable gradient recording."""

    def _target(self, prev):
        return False


class enable_grad(_Switch):
    """Enable gradient recording (inside a no_grad region)."""

    def _target(self, prev):
        return True


class inference_mode(_Switch):
    """Like no_grad (tscript has no separate inference tensors); `inference_mode(False)` changes nothing."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def _target(self, prev):
        return False if self.mode else prev


class set_grad_enabled(_Switch):
    """Set grad mode to `mode`. Called plainly it takes effect at once; as a context manager the
    previous mode comes back on exit."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = state.enabled
        state.enabled = self.mode

    def _target(self, prev):
        return self.mode

    def __enter__(self):
        return None
