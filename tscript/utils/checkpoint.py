"""tscript.utils.checkpoint: activation checkpointing, as `torch.utils.checkpoint`.

Checkpointing trades memory for compute: PyTorch frees the activations of the wrapped function and
recomputes them in backward. tscript runs the function and keeps its activations, so outputs and
gradients are the same as PyTorch's; only the memory saving is absent. The reentrant variant's
rule is kept: when no input requires grad, its output does not either (parameters inside get no
gradient), with PyTorch's warning.
"""
from __future__ import annotations

import warnings

from .._tensor import Tensor
from ..autograd.grad_mode import is_grad_enabled, no_grad

__all__ = ["checkpoint", "checkpoint_sequential"]

_EXPLICIT = ("{}: the use_reentrant parameter should be passed explicitly. use_reentrant=False is recommended, but "
             "if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs "
             "for more details on the differences between the two variants.")


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=None, determinism_check: str = "default",
               debug: bool = False, early_stop: bool = True, preserve_rng_state: bool = True, **kwargs):
    """`function(*args, **kwargs)`, with PyTorch's checks of the arguments (see the module docstring)."""
    if use_reentrant is None:
        warnings.warn(_EXPLICIT.format("torch.utils.checkpoint"), UserWarning, stacklevel=2)
        use_reentrant = True
    if not use_reentrant:
        return function(*args, **kwargs)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if is_grad_enabled() and not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", UserWarning, stacklevel=2)
        with no_grad():
            return function(*args)
    return function(*args)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run `functions` (an `nn.Sequential` or a list of callables) one after another on `input`, checkpointed
    in `segments` pieces."""
    if use_reentrant is None:
        warnings.warn(_EXPLICIT.format("torch.utils.checkpoint.checkpoint_sequential"), UserWarning, stacklevel=2)
        use_reentrant = True
    if isinstance(functions, Tensor) or not hasattr(functions, "__iter__") and not hasattr(functions, "children"):
        raise TypeError(f"checkpoint_sequential(): expected an nn.Sequential or a list of functions, got "
                        f"{type(functions).__name__}")
    steps = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = len(steps) // segments
    end = -1
    for start in range(0, size * (segments - 1), size or 1):  # every segment but the last is checkpointed
        end = start + size - 1
        input = checkpoint(_chain(steps[start:end + 1]), input, use_reentrant=use_reentrant, **kwargs)
    return _chain(steps[end + 1:])(input)


def _chain(steps: list):
    def run(x):
        for step in steps:
            x = step(x)
        return x
    return run
