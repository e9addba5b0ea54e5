"""The public API generated from the op table: for every `aten::name` op without a hand-written
binding, `tscript.name(...)` and (when its first argument is `self`) `Tensor.name(...)`.

Hand-written bindings (ops whose Python signature PyTorch parses specially: varargs sizes,
overloads like `max(dim)` vs `max(other)`) live in the `_api_*` modules and win over generated ones.
"""
from tscript_runtime.ops import OPS, OpDef

from ._dispatch import dispatch
from ._tensor import Tensor


def _function(op: OpDef):
    def fn(*args, **kwargs):
        return dispatch(op, args, kwargs or None)
    fn.__name__ = fn.__qualname__ = op.schema.short_name
    fn.__doc__ = f"`{op.schema}` (see the PyTorch function of the same name)."
    return fn


def _method(op: OpDef):
    def method(self, *args, **kwargs):
        return dispatch(op, (self,) + args, kwargs or None)
    method.__name__ = method.__qualname__ = op.schema.short_name
    method.__doc__ = f"`{op.schema}` (see the PyTorch method of the same name)."
    return method


def _is_method(op: OpDef) -> bool:
    first = op.schema.args[0] if op.schema.args else None
    return first is not None and first.name == "self" and first.is_tensor


def generated(namespace: dict) -> dict:
    """Functions for every public, non-overloaded aten op missing from `namespace`; also adds
    the missing Tensor methods. Returns the new functions."""
    new = {}
    for name, op in OPS.items():
        if not name.startswith("aten::") or "." in name or name[6:].startswith("_"):
            continue
        short = name[6:]
        if _is_method(op) and short not in Tensor.__dict__:
            setattr(Tensor, short, _method(op))
        if short not in namespace and not short.endswith("_") and not op.extra.get("method_only"):
            new[short] = _function(op)
    return new


def install_methods(methods: dict) -> None:
    """Hand-written Tensor methods from an `_api_*` module's METHODS table."""
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
