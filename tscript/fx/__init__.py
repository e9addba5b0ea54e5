"""tscript.fx: the part of `torch.fx` model libraries run at import time.

tscript records graphs with its own tracer (`tscript.jit.trace`) and has no FX graphs; `wrap`, which
only marks a function as a leaf for FX tracing, is accepted and returns its argument, as PyTorch's does.
"""

__all__ = ["wrap"]


def wrap(fn_or_name):
    """Returns `fn_or_name` (a function or a function's name) unchanged; usable as a decorator."""
    return fn_or_name
