"""The type language of graphs (IR types): tensors with dtype and (possibly symbolic) shape, scalars, containers, modules.

Printed as TorchScript does: `Tensor` (nothing known), `Float(8, 10)`, `Float(batch, 10)`, `Float(*, 10)`
(unknown dim), `Float(...)` (dtype known, rank unknown), `int`, `List[int]`, `Tuple[Tensor, int]`,
`Optional[Tensor]`, `Dict[str, Tensor]`, `__module__.Net`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import dtypes as _dt

__all__ = ["ANY", "BOOL", "DEVICE", "DTYPE", "DTYPE_BY_NAME", "DTYPE_NAMES", "FLOAT", "GENERATOR", "INT", "NONE",
           "SCALARS", "STR", "TENSOR", "DictType", "ListType", "ModuleType", "OptionalType", "ScalarType",
           "TensorType", "TupleType", "Type", "is_tensor", "parse_type", "tensor_type", "type_of_value"]
MAX_TYPE_TEXT = 1 << 16  # characters: a longer type string is not one the compiler writes

# TorchScript's scalar-type names in tensor types (Float, Double, Half, BFloat16, Long, Byte, ComplexFloat, ...).
DTYPE_NAMES = dict(_dt.TORCH_NAMES)
DTYPE_BY_NAME = {v: k for k, v in DTYPE_NAMES.items()}


class Type:
    """Base of IR types; equality is structural."""


@dataclass(frozen=True)
class TensorType(Type):
    """A tensor: `dtype` (numpy dtype or None) and `shape` (None: rank unknown; entries are ints,
    symbol strings, or None for an unknown size)."""
    dtype: np.dtype | None = None
    shape: tuple | None = None

    def __str__(self) -> str:
        if self.dtype is None and self.shape is None:
            return "Tensor"
        name = DTYPE_NAMES[self.dtype] if self.dtype is not None else "Tensor"
        if self.shape is None:
            return f"{name}(...)"
        return f"{name}({', '.join('*' if s is None else str(s) for s in self.shape)})"

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)


@dataclass(frozen=True)
class ScalarType(Type):
    """int, float, bool, str, NoneType, ScalarType (a dtype), Device, Generator, Any."""
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ListType(Type):
    elem: Type

    def __str__(self) -> str:
        return f"List[{self.elem}]"


@dataclass(frozen=True)
class TupleType(Type):
    elems: tuple

    def __str__(self) -> str:
        return f"Tuple[{', '.join(str(e) for e in self.elems)}]" if self.elems else "Tuple[()]"


@dataclass(frozen=True)
class OptionalType(Type):
    elem: Type

    def __str__(self) -> str:
        return f"Optional[{self.elem}]"


@dataclass(frozen=True)
class DictType(Type):
    key: Type
    value: Type

    def __str__(self) -> str:
        return f"Dict[{self.key}, {self.value}]"


@dataclass(frozen=True)
class ModuleType(Type):
    """The type of `%self` and submodule values: `__module__.<ClassName>`."""
    name: str

    def __str__(self) -> str:
        return f"__module__.{self.name}"


TENSOR = TensorType()
INT, FLOAT, BOOL, STR = ScalarType("int"), ScalarType("float"), ScalarType("bool"), ScalarType("str")
NONE, DTYPE, DEVICE, ANY = ScalarType("NoneType"), ScalarType("ScalarType"), ScalarType("Device"), ScalarType("Any")
GENERATOR = ScalarType("Generator")
SCALARS = {t.name: t for t in (INT, FLOAT, BOOL, STR, NONE, DTYPE, DEVICE, ANY, GENERATOR)}


def tensor_type(dtype=None, shape=None) -> TensorType:
    return TensorType(None if dtype is None else np.dtype(dtype), None if shape is None else tuple(shape))


def is_tensor(t: Type) -> bool:
    return isinstance(t, TensorType)


def type_of_value(x) -> Type:
    """The IR type of a Python constant (for prim::Constant)."""
    if x is None:
        return NONE
    if isinstance(x, bool):
        return BOOL
    if isinstance(x, int):
        return INT
    if isinstance(x, float):
        return FLOAT
    if isinstance(x, str):
        return STR
    if isinstance(x, np.dtype):
        return DTYPE
    if isinstance(x, (list, tuple)):
        elems = [type_of_value(e) for e in x]
        if isinstance(x, tuple):
            return TupleType(tuple(elems))
        return ListType(elems[0] if elems and all(e == elems[0] for e in elems) else (INT if not elems else ANY))
    if isinstance(x, np.ndarray):
        return tensor_type(x.dtype, x.shape)
    return ANY


@functools.lru_cache(maxsize=4096)  # graphs repeat a few type strings many times; types are immutable
def parse_type(text: str) -> Type:
    """The Type printed as `text` (inverse of str(type)); ValueError when it is not one (graph files
    are untrusted: overlong or too deeply nested text is refused too)."""
    if len(text) > MAX_TYPE_TEXT:
        raise ValueError(f"type text of {len(text)} characters (at most {MAX_TYPE_TEXT})")
    try:
        t, rest = _parse(text.strip())
    except RecursionError:
        raise ValueError("type nested too deeply") from None
    if rest.strip():
        raise ValueError(f"unexpected text after type: {rest!r} in {text!r}")
    return t


def _split_args(s: str) -> tuple[list[str], str]:
    """Top-level comma-separated items of `s` up to its closing bracket, and the text after it."""
    depth, items, cur = 0, [], ""
    for i, ch in enumerate(s):
        if ch in "([" :
            depth += 1
        elif ch in ")]":
            if depth == 0:
                if cur.strip():
                    items.append(cur.strip())
                return items, s[i + 1:]
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    raise ValueError(f"unbalanced brackets in type {s!r}")


def _parse(s: str) -> tuple[Type, str]:
    head = ""
    i = 0
    while i < len(s) and (s[i].isalnum() or s[i] in "_."):
        head += s[i]
        i += 1
    rest = s[i:]
    if head.startswith("__module__."):
        return ModuleType(head[len("__module__."):]), rest
    if head in SCALARS and not rest.startswith(("(", "[")):
        return SCALARS[head], rest
    if head == "Tensor" and not rest.startswith("("):
        return TENSOR, rest
    if head in DTYPE_BY_NAME or head == "Tensor":
        items, rest = _split_args(rest[1:])
        dtype = DTYPE_BY_NAME.get(head)
        if items == ["..."]:
            return TensorType(dtype, None), rest
        dims = tuple(None if d == "*" else int(d) if d.lstrip("-").isdigit() else d for d in items)
        return TensorType(dtype, dims), rest
    if head in ("List", "Optional", "Tuple", "Dict") and rest.startswith("["):
        items, rest = _split_args(rest[1:])
        if head == "Tuple" and items == ["()"]:
            return TupleType(()), rest
        elems = [parse_type(x) for x in items]
        if head == "List":
            return ListType(elems[0]), rest
        if head == "Optional":
            return OptionalType(elems[0]), rest
        if head == "Dict":
            return DictType(elems[0], elems[1]), rest
        return TupleType(tuple(elems)), rest
    raise ValueError(f"unknown type {s!r}")
