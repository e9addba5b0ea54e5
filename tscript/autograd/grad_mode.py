"""Grad mode: whether dispatched ops are recorded for autograd. Thread-local, as in PyTorch.

`no_grad`, `enable_grad`, `set_grad_enabled(mode)` and `inference_mode(mode)` work as context
managers and as decorators (`@no_grad()`, also bare `@no_grad` as PyTorch allows)."""
import functools
import threading


class _State(threading.local):
    enabled = True
    inference = False


state = _State()


def is_grad_enabled() -> bool:
    """True when operations are recorded for autograd."""
    return state.enabled


def is_inference_mode_enabled() -> bool:
    """True inside `inference_mode()`."""
    return state.inference


class _Switch:
    """Sets the mode on enter and restores it on exit; as a decorator, around every call."""

    def _target(self) -> tuple:
        """(grad enabled, inference) to switch to, given the current state."""
        raise NotImplementedError

    def __enter__(self):
        self._prev = (state.enabled, state.inference)
        state.enabled, state.inference = self._target()

    def __exit__(self, *exc):
        state.enabled, state.inference = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapped

    def clone(self):
        """A fresh switch with the same settings (each call of a decorated function needs its own)."""
        return self.__class__()


class _NoArgSwitch(_Switch):
    """A switch without arguments, which may also decorate bare (`@no_grad`)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoArgSwitch):
    """Disable gradient recording."""

    def _target(self):
        return False, state.inference


class enable_grad(_NoArgSwitch):
    """Enable gradient recording (inside a no_grad region)."""

    def _target(self):
        return True, state.inference


class inference_mode(_Switch):
    """Like no_grad (tscript has no separate inference tensors); `inference_mode(False)` changes nothing."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # bare decorator: `mode` is the function

    def __init__(self, mode: bool = True):
        self.mode = mode

    def _target(self):
        return (False, True) if self.mode else (state.enabled, state.inference)

    def clone(self):
        return inference_mode(self.mode)


class set_grad_enabled(_Switch):
    """Set grad mode to `mode`. Called plainly it takes effect at once; as a context manager the
    previous mode comes back on exit; as a decorator it only applies inside the function."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = (state.enabled, state.inference)
        state.enabled = self.mode

    def _target(self):
        return self.mode, state.inference

    def __enter__(self):
        return None

    def __call__(self, fn):
        state.enabled, state.inference = self._prev
        return super().__call__(fn)

    def clone(self):
        return _Set(self.mode)


class _Set(_Switch):
    """set_grad_enabled's decorator: switches only while the function runs."""

    def __init__(self, mode: bool):
        self.mode = mode

    def _target(self):
        return self.mode, state.inference

    def clone(self):
        return _Set(self.mode)
