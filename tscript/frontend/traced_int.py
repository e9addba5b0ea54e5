"""`TracedInt`: an int read from a tensor's shape while tracing. It behaves as a plain int but
remembers where it came from, so ops that take it record `aten::size` and the arithmetic on it
instead of a constant (a traced model is then not frozen to the example's batch size)."""
from __future__ import annotations

import operator

_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv,
        "remainder": operator.mod}


class TracedInt(int):
    """An int with a recipe: ("size", tensor, dim) or ("op", "aten::mul.int", operands)."""

    def __new__(cls, value: int, source: tuple):
        obj = int.__new__(cls, value)
        obj.source = source
        return obj

    def __repr__(self) -> str:
        return int.__repr__(self)


def _binary(name: str, reflected: bool):
    fn = _OPS[name]

    def method(self, other):
        if not isinstance(other, int) or isinstance(other, bool):
            return fn(other, int(self)) if reflected else fn(int(self), other)
        a, b = (other, self) if reflected else (self, other)
        return TracedInt(fn(int(a), int(b)), ("op", f"aten::{name}.int", (a, b)))
    return method


for _name in _OPS:
    _dunder = {"remainder": "mod"}.get(_name, _name)
    setattr(TracedInt, f"__{_dunder}__", _binary(_name, False))
    setattr(TracedInt, f"__r{_dunder}__", _binary(_name, True))
TracedInt.__neg__ = lambda self: TracedInt(-int(self), ("op", "aten::neg.int", (self,)))
TracedInt.__hash__ = int.__hash__
