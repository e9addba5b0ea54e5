"""What a name or expression stands for while compiling ("sugared values", as TorchScript calls
them): an IR value, a Python constant known at compile time, a tuple of such things, a module,
a function, a builtin... Each kind says what attribute access, calls, indexing and iteration
mean for it; the emitter (`em`) builds the IR nodes. Constants stay Python values until an op
needs them, so conditions on them (`if self.training:`, `if bias is None:`) fold away."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._device import device
from ...ir.graph import Value
from ...ir.types import TupleType, Type
from .annotations import type_name, type_of_constant


class Sugared:
    """Base: every operation is an error naming what the thing is."""
    describe = "this value"

    @property
    def type(self) -> Type | None:
        """The IR type, for things that are values (None otherwise)."""
        return None

    def as_value(self, em, pos) -> Value:
        raise em.error(f"{self.describe} cannot be used as a value", pos)

    def attr(self, em, name: str, pos) -> "Sugared":
        raise em.error(f"{self.describe} has no attribute '{name}'", pos)

    def call(self, em, args: list, kwargs: dict, pos) -> "Sugared":
        raise em.error(f"{self.describe} is not callable", pos)

    def getitem(self, em, index: "Sugared", pos) -> "Sugared":
        raise em.error(f"{self.describe} cannot be indexed", pos)

    def iterate(self, em, pos):
        raise em.error(f"{self.describe} is not iterable", pos)

    def length(self, em, pos) -> "Sugared":
        raise em.error(f"{self.describe} has no len()", pos)

    def unpack(self, em, n: int, pos) -> list:
        items = self.iterate(em, pos)
        if not isinstance(items, Unrolled):
            raise em.error(f"cannot unpack {self.describe} into {n} values", pos)
        if len(items.items) != n:
            raise em.error(f"cannot unpack {len(items.items)} values into {n} names", pos)
        return items.items


class SimpleValue(Sugared):
    """An IR value; what it supports depends on its type (builtins.py has the tables)."""

    def __init__(self, value: Value):
        self.value = value

    @property
    def type(self) -> Type:
        return self.value.type

    @property
    def describe(self) -> str:
        return f"a value of type '{type_name(self.value.type)}'"

    def as_value(self, em, pos) -> Value:
        return self.value

    def attr(self, em, name, pos):
        from .methods import value_attribute
        return value_attribute(em, self, name, pos)

    def getitem(self, em, index, pos):
        from .indexing import getitem
        return getitem(em, self, index, pos)

    def iterate(self, em, pos):
        from .methods import iterate_value
        return iterate_value(em, self, pos)

    def length(self, em, pos):
        from .methods import length_of
        return length_of(em, self, pos)

    def unpack(self, em, n, pos):
        from .methods import unpack_value
        return unpack_value(em, self, n, pos)

    def __repr__(self) -> str:
        return f"SimpleValue({self.value!r})"


class EmptyList(SimpleValue):
    """A `[]` literal used directly (an argument, a branch of a conditional): it also passes as an
    empty list of any element type, e.g. an op's `int[]` (without annotation `[]` is a List[Tensor])."""


class ConstValue(Sugared):
    """A Python constant (None, bool, int, float, str, dtype, or a tuple of them)."""

    def __init__(self, value):
        self.value = value

    @property
    def type(self) -> Type:
        return type_of_constant(self.value)

    @property
    def describe(self) -> str:
        return f"the constant {self.value!r}"

    def as_value(self, em, pos) -> Value:
        return em.const(self.value)

    def attr(self, em, name, pos):
        if isinstance(self.value, tuple):
            return TupleSugar([ConstValue(v) for v in self.value]).attr(em, name, pos)
        if isinstance(self.value, np.dtype):
            from .methods import dtype_attribute
            return dtype_attribute(em, self, name, pos)
        if isinstance(self.value, str):
            from .builtins import HandlerSugar
            from .methods import STR_METHODS
            if name in STR_METHODS:
                return HandlerSugar(name, STR_METHODS[name], self)  # (a constant receiver, so it may fold)
        if isinstance(self.value, device) and not name.startswith("_"):  # (its type and index)
            if not hasattr(self.value, name):
                raise em.error(f"'device' object has no attribute '{name}'", pos)
            return ConstValue(getattr(self.value, name))
        return SimpleValue(self.as_value(em, pos)).attr(em, name, pos)

    def getitem(self, em, index, pos):
        index = constant_slice(index)
        if isinstance(self.value, (tuple, str)):
            if isinstance(index, ConstValue) and isinstance(index.value, (int, slice)):
                try:
                    item = self.value[index.value]
                except IndexError:
                    raise em.error(f"index {index.value} is out of range for {self.describe}", pos) from None
                return ConstValue(item)
            if isinstance(self.value, tuple):
                return TupleSugar([ConstValue(v) for v in self.value]).getitem(em, index, pos)
        return SimpleValue(self.as_value(em, pos)).getitem(em, index, pos)

    def iterate(self, em, pos):
        if isinstance(self.value, tuple):
            return Unrolled([ConstValue(v) for v in self.value])
        return SimpleValue(self.as_value(em, pos)).iterate(em, pos)

    def length(self, em, pos):
        if isinstance(self.value, (tuple, str)):
            return ConstValue(len(self.value))
        return super().length(em, pos)

    def __repr__(self) -> str:
        return f"ConstValue({self.value!r})"


class TupleSugar(Sugared):
    """A tuple expression whose items are kept apart until it must become one value."""
    describe = "a tuple"

    def __init__(self, items: list):
        self.items = items

    @property
    def type(self) -> Type | None:
        types = [i.type for i in self.items]
        return None if None in types else TupleType(tuple(types))

    def as_value(self, em, pos) -> Value:
        values = [i.as_value(em, pos) for i in self.items]
        return em.insert("prim::TupleConstruct", values, [TupleType(tuple(v.type for v in values))]).output

    def getitem(self, em, index, pos):
        index = constant_slice(index)
        if isinstance(index, ConstValue) and isinstance(index.value, int) and not isinstance(index.value, bool):
            if not -len(self.items) <= index.value < len(self.items):
                raise em.error(f"tuple index {index.value} is out of range (the tuple has {len(self.items)} items)",
                               pos)
            return self.items[index.value]
        if isinstance(index, ConstValue) and isinstance(index.value, slice):
            return TupleSugar(self.items[index.value])
        raise em.error("tuples can only be indexed by integer constants (their items may have different types)",
                       pos)

    def iterate(self, em, pos):
        return Unrolled(list(self.items))

    def length(self, em, pos):
        return ConstValue(len(self.items))


class NamedTupleSugar(TupleSugar):
    """A NamedTuple (typing.NamedTuple, collections.namedtuple): a tuple whose items are also
    read by field name; a scripted function returning one gives Python an instance of `cls`."""

    def __init__(self, cls, items: list):
        super().__init__(items)
        self.cls = cls

    @property
    def describe(self) -> str:
        return f"a {self.cls.__name__}"

    def attr(self, em, name, pos):
        if name not in self.cls._fields:
            raise em.error(f"'{self.cls.__name__}' object has no attribute '{name}'", pos)
        return self.items[self.cls._fields.index(name)]


class MaybeUnbound(SimpleValue):
    """A variable a loop defines, read after it: its value from the last iteration, and `bound`,
    whether any iteration assigned it (reading it raises UnboundLocalError if none did)."""

    def __init__(self, value: Sugared, bound: Sugared, line: int):
        super().__init__(value.value)
        self.bound, self.line = bound, line


class Undefined(Sugared):
    """A name that is not defined here (e.g. assigned on one branch of an `if` only)."""

    def __init__(self, message: str):
        self.message = message


@dataclass
class Loop:
    """Iteration as a prim::Loop: `trip` iterations, `item(em, i)` the element of iteration `i`."""
    trip: object          # Sugared (an int)
    item: object          # (em, index Value) -> Sugared


@dataclass
class Unrolled:
    """Iteration unrolled at compile time over known items (tuples, ModuleLists...)."""
    items: list


def constant_slice(index: Sugared) -> Sugared:
    """A slice index whose bounds are constants as a ConstValue of a Python slice (else as it is)."""
    constant = getattr(index, "constant", None)
    if callable(constant) and isinstance(constant(), slice):
        return ConstValue(constant())
    return index


def is_none(s: Sugared) -> bool:
    """Is `s` the constant None?"""
    return isinstance(s, ConstValue) and s.value is None

