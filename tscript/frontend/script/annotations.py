"""Types in scripted code: annotations (`Tensor`, `int`, `List[int]`, `list[int]`, `Optional[T]`,
`T | None`, `Tuple[...]`, `Dict[str, T]`, `Final[T]`) resolved to IR types, the type of a Python
constant, and how two types merge where control flow joins (`unify`)."""
from __future__ import annotations

import types as pytypes
import typing

import numpy as np

from ...ir.types import (ANY, BOOL, DEVICE, DTYPE, FLOAT, INT, NONE, STR, TENSOR, DictType, ListType, ModuleType,
                         OptionalType, ScalarType, TensorType, TupleType, Type, type_of_value)
from . import syntax as S

_SCALARS = {int: INT, float: FLOAT, bool: BOOL, str: STR, type(None): NONE}
_GENERICS = {"List": "list", "list": "list", "Tuple": "tuple", "tuple": "tuple", "Dict": "dict", "dict": "dict",
             "Optional": "optional", "Final": "final", "Union": "union"}


class AnnotationError(Exception):
    """An annotation that names no TorchScript type (the caller adds the position)."""


def resolve_annotation(expr: S.Expr, lookup) -> Type:
    """The IR type an annotation expression names; `lookup(name)` gives the Python object a name
    refers to where the annotation was written (a string annotation is parsed first, by the caller)."""
    if isinstance(expr, S.Const):
        if expr.value is None:
            return NONE
        raise AnnotationError(f"{expr.value!r} is not a type")
    if isinstance(expr, S.BinOp) and expr.op == "|":
        return _union([resolve_annotation(expr.left, lookup), resolve_annotation(expr.right, lookup)])
    if isinstance(expr, S.Subscript):
        kind = _generic_kind(_python_object(expr.value, lookup))
        args = expr.index.elts if isinstance(expr.index, S.TupleExpr) else [expr.index]
        return _generic(kind, [resolve_annotation(a, lookup) for a in args])
    return python_type(_python_object(expr, lookup))


def _python_object(expr: S.Expr, lookup):
    if isinstance(expr, S.Name):
        obj = lookup(expr.id)
        if obj is UNKNOWN:
            raise AnnotationError(f"unknown type '{expr.id}'")
        return obj
    if isinstance(expr, S.Attribute):
        base = _python_object(expr.value, lookup)
        if not hasattr(base, expr.attr):
            raise AnnotationError(f"unknown type '{expr.attr}'")
        return getattr(base, expr.attr)
    raise AnnotationError("this expression is not a type")


UNKNOWN = object()


def python_type(obj) -> Type:
    """The IR type of a Python annotation object (a class, or typing's `List[int]`...)."""
    from ..._device import device
    from ..._dtype import dtype
    from ..._tensor import Tensor
    if isinstance(obj, type) and issubclass(obj, Tensor):
        return TENSOR
    if obj is device or obj is dtype:
        return DEVICE if obj is device else DTYPE
    if obj in _SCALARS:
        return _SCALARS[obj]
    if obj in (list, tuple, dict):
        return ANY  # a bare container annotation says nothing about the items: inferred instead
    if obj is None:
        return NONE
    origin = typing.get_origin(obj)
    if origin is not None:
        kind = _generic_kind(origin)
        return _generic(kind, [python_type(a) for a in typing.get_args(obj)])
    if obj is typing.Any:
        return ANY
    from ...nn.modules.module import Module
    if isinstance(obj, type) and issubclass(obj, Module):
        return ModuleType(obj.__name__)
    if isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields"):
        return _named_tuple_type(obj)
    raise AnnotationError(f"unknown type annotation {getattr(obj, '__name__', obj)!r} (supported: Tensor, int, "
                          f"float, bool, str, List, Tuple, Dict, Optional)")


def _named_tuple_type(cls) -> TupleType:
    """A typing.NamedTuple class: the tuple of its fields' types."""
    try:
        hints = typing.get_type_hints(cls)
    except (NameError, TypeError) as e:
        raise AnnotationError(f"the fields of {cls.__name__} name unknown types: {e}") from None
    missing = [f for f in cls._fields if f not in hints]
    if missing:
        raise AnnotationError(f"the fields of {cls.__name__} need type annotations (typing.NamedTuple): "
                              f"{', '.join(missing)}")
    return TupleType(tuple(python_type(hints[f]) for f in cls._fields))


def _generic_kind(obj) -> str:
    name = getattr(obj, "_name", None) or getattr(obj, "__name__", None)
    if obj is typing.Union or obj is pytypes.UnionType:
        return "union"
    if obj is typing.Final:
        return "final"
    if name in _GENERICS:
        return _GENERICS[name]
    raise AnnotationError(f"'{name or obj}' is not a generic type")


def _generic(kind: str, args: list) -> Type:
    if kind == "list" and len(args) == 1:
        return ListType(args[0])
    if kind == "tuple":
        return TupleType(tuple(args))
    if kind == "dict" and len(args) == 2:
        return DictType(args[0], args[1])
    if kind == "optional" and len(args) == 1:
        return _union([args[0], NONE])
    if kind == "final" and len(args) == 1:
        return args[0]
    if kind == "union":
        return _union(args)
    raise AnnotationError(f"wrong number of type arguments for {kind}")


def _union(args: list) -> Type:
    others = [a for a in args if a != NONE]
    if len(others) == 1 and len(args) == 2:
        return OptionalType(others[0])
    raise AnnotationError("unions other than Optional[T] (T | None) are not supported")


def type_of_constant(x) -> Type:
    """The IR type of a Python constant in scripted code."""
    from ..._device import device
    if isinstance(x, np.dtype):
        return DTYPE
    if isinstance(x, device):
        return DEVICE
    if isinstance(x, tuple):
        return TupleType(tuple(type_of_constant(v) for v in x))
    return type_of_value(x)


def unify(a: Type, b: Type) -> Type | None:
    """The type of a value that is `a` on one path and `b` on another, or None if they do not mix
    (an int and a float, a Tensor and an int...). Tensors of different dtype/shape mix as Tensor."""
    if a == b:
        return a
    if a == ANY or b == ANY:
        return b if a == ANY else a
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return TENSOR if a.dtype != b.dtype else TensorType(a.dtype, None)
    if a == NONE or b == NONE:
        other = b if a == NONE else a
        return other if isinstance(other, OptionalType) else OptionalType(other)
    if isinstance(a, OptionalType) or isinstance(b, OptionalType):
        inner = unify(a.elem if isinstance(a, OptionalType) else a, b.elem if isinstance(b, OptionalType) else b)
        return None if inner is None else OptionalType(inner)
    if isinstance(a, ListType) and isinstance(b, ListType):
        inner = unify(a.elem, b.elem)
        return None if inner is None else ListType(inner)
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.elems) == len(b.elems):
        elems = [unify(x, y) for x, y in zip(a.elems, b.elems)]
        return None if None in elems else TupleType(tuple(elems))
    if isinstance(a, DictType) and isinstance(b, DictType) and a.key == b.key:
        inner = unify(a.value, b.value)
        return None if inner is None else DictType(a.key, inner)
    return None


def widen(t: Type) -> Type:
    """A loop-carried type: tensors lose dtype and shape (the body may change them)."""
    if isinstance(t, TensorType):
        return TENSOR
    if isinstance(t, OptionalType):
        return OptionalType(widen(t.elem))
    if isinstance(t, ListType):
        return ListType(widen(t.elem))
    if isinstance(t, TupleType):
        return TupleType(tuple(widen(e) for e in t.elems))
    return t


def subtype(a: Type, b: Type) -> bool:
    """Can a value of type `a` be used where `b` is declared (without a conversion node)?"""
    if a == b or b == ANY or a == ANY:
        return True
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return b.dtype is None and b.shape is None or a == b
    if isinstance(b, OptionalType):
        return a == NONE or subtype(a.elem if isinstance(a, OptionalType) else a, b.elem)
    if isinstance(a, ListType) and isinstance(b, ListType):
        return subtype(a.elem, b.elem) and subtype(b.elem, a.elem)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.elems) == len(b.elems) and all(map(subtype, a.elems, b.elems))
    if isinstance(a, DictType) and isinstance(b, DictType):
        return a.key == b.key and subtype(a.value, b.value)
    return False


def type_name(t: Type) -> str:
    """How messages name a type (TorchScript's spelling)."""
    if isinstance(t, TensorType):
        return "Tensor"
    if isinstance(t, ScalarType) and t.name == "NoneType":
        return "NoneType"
    return str(t)
