"""Ops on Python numbers (sizes read from tensors and the arithmetic on them in traced or scripted
code): `aten::mul.int(int a, int b) -> int` and friends, as TorchScript has them."""
import math
import operator

from ..errors import OpRuntimeError
from .registry import register


def _floordiv(a, b):
    if b == 0:
        raise OpRuntimeError("ZeroDivisionError: integer division or modulo by zero")
    return a // b


def _truediv(a, b):
    if b == 0:
        raise OpRuntimeError("ZeroDivisionError: division by zero")
    return a / b


_BINARY = {"add": (operator.add, None), "sub": (operator.sub, None), "mul": (operator.mul, None),
           "floordiv": (_floordiv, None), "remainder": (lambda a, b: (_floordiv(a, b), a % b)[1], None),
           "pow": (operator.pow, None), "div": (_truediv, "float"), "eq": (operator.eq, "bool"),
           "ne": (operator.ne, "bool"), "lt": (operator.lt, "bool"), "le": (operator.le, "bool"),
           "gt": (operator.gt, "bool"), "ge": (operator.ge, "bool"), "min": (min, None), "max": (max, None)}

for _name, (_fn, _ret) in _BINARY.items():
    for _t in ("int", "float"):
        register(f"aten::{_name}.{_t}({_t} a, {_t} b) -> {_ret or _t}", shape=None, dtype=None)(_fn)

for _t in ("int", "float"):
    register(f"aten::neg.{_t}({_t} a) -> {_t}", shape=None, dtype=None)(operator.neg)

register("aten::sqrt.float(float a) -> float", shape=None, dtype=None)(math.sqrt)
register("aten::Int(Scalar a) -> int", shape=None, dtype=None)(int)
register("aten::Float(Scalar a) -> float", shape=None, dtype=None)(float)
