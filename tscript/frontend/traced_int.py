"""Traced scalars: an int read from a tensor's shape (`TracedInt`), or an int/float argument of the
traced function (`TracedInt`/`TracedFloat`), while tracing. They behave as plain numbers but remember
where they came from, so ops that take them record `aten::size`, the graph input, and the arithmetic
on them instead of a constant (a traced model is then not frozen to the example's batch size or
to the example's scalar arguments).

A recipe (`source`) is ("size", tensor, dim), ("value",) (bound to an IR value when created: a graph
input or an op's int result), or ("op", "aten::mul.int", operands).
"""
from __future__ import annotations

import operator

# Python operator -> the `aten::<name>.int` / `aten::<name>.float` op recording it (ops/scalar.py).
_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv,
        "remainder": operator.mod, "div": operator.truediv}
_DUNDER = {"remainder": "mod", "div": "truediv"}


class TracedInt(int):
    """An int with a recipe (see the module docstring)."""

    def __new__(cls, value: int, source: tuple):
        obj = int.__new__(cls, value)
        obj.source = source
        return obj

    def __repr__(self) -> str:
        return int.__repr__(self)

    # Hashed by identity, like PyTorch's traced sizes (tensors): a cache keyed on shapes (einops'
    # lru_cache) must not hand one trace's sizes to another trace or to eager code.
    __hash__ = object.__hash__


class TracedFloat(float):
    """A float with a recipe (see the module docstring)."""

    def __new__(cls, value: float, source: tuple):
        obj = float.__new__(cls, value)
        obj.source = source
        return obj

    def __repr__(self) -> str:
        return float.__repr__(self)

    __hash__ = object.__hash__  # see TracedInt


def traced(value, source: tuple):
    """`value` as a traced scalar with `source` (bools and other values stay as they are)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return TracedInt(value, source)
    if isinstance(value, float):
        return TracedFloat(value, source)
    return value


def _as_float(x):
    """An int operand of a float op: converted with `aten::Float` when traced, else in Python."""
    if isinstance(x, TracedInt):
        return TracedFloat(float(x), ("op", "aten::Float", (x,)))
    return float(x) if isinstance(x, int) else x


def _binary(name: str, reflected: bool):
    fn = _OPS[name]

    def method(self, other):
        if isinstance(other, bool) or not isinstance(other, (int, float)):
            return NotImplemented  # e.g. `n * tensor`: Tensor.__rmul__ records it
        a, b = (other, self) if reflected else (self, other)
        is_float = isinstance(a, float) or isinstance(b, float)
        if is_float:
            a, b = _as_float(a), _as_float(b)
        value = fn(_plain(a), _plain(b))
        return traced(value, ("op", f"aten::{name}.{'float' if is_float else 'int'}", (a, b)))
    return method


def _plain(x):
    return int(x) if isinstance(x, int) else float(x)


for _cls in (TracedInt, TracedFloat):
    for _name in _OPS:
        _dunder = _DUNDER.get(_name, _name)
        setattr(_cls, f"__{_dunder}__", _binary(_name, False))
        setattr(_cls, f"__r{_dunder}__", _binary(_name, True))
TracedInt.__neg__ = lambda self: TracedInt(-int(self), ("op", "aten::neg.int", (self,)))
TracedFloat.__neg__ = lambda self: TracedFloat(-float(self), ("op", "aten::neg.float", (self,)))
