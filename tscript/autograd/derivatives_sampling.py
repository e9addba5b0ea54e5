"""Derivative rows of the resampling ops (same table and conventions as derivatives.py).

Resampling is linear in its input: each `upsample_*` op's gradient is its `_backward` op (the
adjoint) and the adjoint's gradient is the op itself, so gradients of any order stay in these two
ops. Every op has its own argument names (one scale per spatial dim, `align_corners` only when it
interpolates), so the rows are built from the op table instead of written out one by one.
"""
import inspect

from tscript_runtime.ops.sampling import SCALE_NAMES, UPSAMPLE_OPS, interpolates

from .derivatives import call, derivative


def _formula(params: tuple, body):
    """A formula reading the arguments named `params` (the table learns them from its signature)."""
    def formula(grad, **args):
        return body(grad, args)
    formula.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in ("grad",) + params])
    return formula


def _rows(name: str, nd: int, kind: str) -> None:
    options = (("align_corners",) if interpolates(kind) else ()) + SCALE_NAMES[nd]
    forward, backward = f"aten::{name}", f"aten::{name}_backward"

    def adjoint(grad, args):
        return call(backward, grad, args["output_size"], tuple(args["self_shape"]), *(args[o] for o in options))

    def again(grad, args):
        return call(forward, grad, args["output_size"], *(args[o] for o in options))

    derivative(forward)(_formula(("self_shape", "output_size") + options, adjoint))
    derivative(backward)(_formula(("output_size",) + options, again))


for _name, (_nd, _kind) in UPSAMPLE_OPS.items():
    _rows(_name, _nd, _kind)
