"""Exceptions a user can cause. Each is a subclass of the builtin PyTorch raises in the same case,
so `except RuntimeError` works as it does there; the `OpError` mixin marks a message we wrote
ourselves, so the dispatcher never wraps it a second time."""


class OpError(Exception):
    """Marker: this exception already carries a clear, user-facing message."""


class OpRuntimeError(OpError, RuntimeError):
    pass


class OpIndexError(OpError, IndexError):
    pass


class OpTypeError(OpError, TypeError):
    pass


class OpValueError(OpError, ValueError):
    pass


class OpNotImplementedError(OpError, NotImplementedError):
    """An op not defined for a dtype (PyTorch: `"trace" not implemented for 'Bool'`)."""


class ModelError(OpError, RuntimeError):
    """A saved file is missing, corrupt, tampered with or of an unknown format."""


class InputError(OpError, ValueError):
    """Inputs given to a saved model do not match its signature."""


def fmt_shape(shape) -> str:
    """`[2, 3]`, as PyTorch prints sizes in messages."""
    return "[" + ", ".join(str(s) for s in shape) + "]"
