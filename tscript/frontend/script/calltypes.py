"""The types of the Python values a scripted entry point is called with. An unannotated parameter
is a Tensor (as in TorchScript) until the entry point is called with something else, e.g. the
`(h, c)` tuple of an LSTM's hidden state: it is then compiled again for the types of that call."""
from __future__ import annotations

from ...ir.types import (ANY, BOOL, FLOAT, INT, NONE, STR, TENSOR, DictType, ListType, OptionalType, TensorType,
                         TupleType, Type)

_SCALARS = {bool: BOOL, int: INT, float: FLOAT, str: STR, type(None): NONE}


def argument_type(value) -> Type:
    """The IR type a Python argument value has in a graph (ANY for what has none)."""
    from ..._tensor import Tensor
    if isinstance(value, Tensor):
        return TENSOR
    if type(value) in _SCALARS:
        return _SCALARS[type(value)]
    if isinstance(value, tuple):
        return TupleType(tuple(argument_type(v) for v in value))
    if isinstance(value, list) and value:
        items = {argument_type(v) for v in value}
        return ListType(items.pop()) if len(items) == 1 else ANY
    if isinstance(value, dict) and value:
        keys, values = {argument_type(k) for k in value}, {argument_type(v) for v in value.values()}
        return DictType(keys.pop(), values.pop()) if len(keys) == len(values) == 1 else ANY
    return ANY


def fits(t: Type, value) -> bool:
    """Can `value` be passed where a graph input of type `t` is?"""
    from ..._tensor import Tensor
    if t == ANY:
        return True
    if isinstance(t, TensorType):
        return isinstance(value, Tensor)
    if isinstance(t, OptionalType):
        return value is None or fits(t.elem, value)
    if isinstance(t, TupleType):
        return isinstance(value, (tuple, list)) and len(value) == len(t.elems) and all(map(fits, t.elems, value))
    if isinstance(t, ListType):
        return isinstance(value, (list, tuple)) and all(fits(t.elem, v) for v in value)
    if isinstance(t, DictType):
        return isinstance(value, dict) and all(fits(t.key, k) and fits(t.value, v) for k, v in value.items())
    if t == FLOAT:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    return t in _SCALARS.values() and type(value) in _SCALARS and _SCALARS[type(value)] == t
