"""Ops on Python numbers (sizes read from tensors and the arithmetic on them in traced or scripted
code): `aten::mul.int(int a, int b) -> int` and friends, as TorchScript has them."""
import math
import operator
import warnings

from .. import dtypes as dt
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


# -- more of TorchScript's ops on Python values (scripted code: math, bools, strings, lists, dicts) ---------
def _register_all(rows: dict) -> None:
    """`schema -> kernel` rows; none of them becomes a generated `tscript.<name>` function."""
    for schema, kernel in rows.items():
        register(schema, shape=None, dtype=None, method_only=True)(kernel)


def _one_element(name: str, convert):
    """A one-element tensor as a Python value, refusing others as PyTorch does."""
    def kernel(a):
        if a.size != 1:
            raise OpRuntimeError(f"a Tensor with {a.size} elements cannot be converted to Scalar" if name != "bool"
                                 else "Boolean value of Tensor with more than one value is ambiguous")
        return convert(a.reshape(()).item())
    return kernel


def _range_length(lo, hi, step):
    if step == 0:
        raise OpRuntimeError("range() arg 3 must not be zero")
    return len(range(lo, hi, step))


def _set_list_item(lst, idx, el):
    try:
        lst[idx] = el
    except IndexError:
        raise OpRuntimeError(f"list index {idx} out of range") from None
    return lst


def _mutating(method):
    """A list method as a kernel that returns the list it changed (in-place ops return their input)."""
    return lambda lst, *args: (method(lst, *args), lst)[1]


def _pop(lst, idx):
    try:
        return lst.pop(idx)
    except IndexError:
        raise OpRuntimeError("pop from empty list" if not lst else f"pop index {idx} out of range") from None


def _format(template, args):
    return template.format(*args)


_MATH = {"exp": math.exp, "log": math.log, "log10": math.log10, "log2": math.log2, "log1p": math.log1p,
         "expm1": math.expm1, "sin": math.sin, "cos": math.cos, "tan": math.tan, "tanh": math.tanh,
         "asin": math.asin, "acos": math.acos, "atan": math.atan, "erf": math.erf, "fabs": math.fabs}
_MATH_ROWS = {f"aten::{n}.float(float a) -> float": f for n, f in _MATH.items()}
_MATH_ROWS.update({
    "aten::floor.float(float a) -> int": math.floor, "aten::ceil.float(float a) -> int": math.ceil,
    "aten::trunc.float(float a) -> int": math.trunc, "aten::atan2.float(float a, float b) -> float": math.atan2,
    "aten::isnan.float(float a) -> bool": math.isnan, "aten::isinf.float(float a) -> bool": math.isinf,
    "aten::isfinite.float(float a) -> bool": math.isfinite, "aten::gcd.int(int a, int b) -> int": math.gcd,
    "aten::abs.int(int a) -> int": abs, "aten::abs.float(float a) -> float": abs,
    "aten::Bool(Scalar a) -> bool": bool,
})

_BOOL_ROWS = {
    "aten::__not__(bool self) -> bool": operator.not_,
    "aten::__is__(Any self, Any obj) -> bool": operator.is_,
    "aten::__isnot__(Any self, Any obj) -> bool": operator.is_not,
    "aten::__contains__(Any container, Any item) -> bool": lambda c, x: x in c,
    "aten::__range_length(int lo, int hi, int step) -> int": _range_length,
    "aten::sum.int(int[] self) -> int": sum,
    "aten::sum.float(float[] self) -> float": lambda values: float(sum(values)),
    "aten::any.bool(bool[] self) -> bool": any,
    "aten::all.bool(bool[] self) -> bool": all,
    "aten::__derive_index(int index, int start, int step) -> int": lambda i, start, step: start + i * step,
}
for _t in ("int", "bool"):
    for _name, _fn in (("__and__", operator.and_), ("__or__", operator.or_), ("__xor__", operator.xor)):
        _BOOL_ROWS[f"aten::{_name}.{_t}({_t} a, {_t} b) -> {_t}"] = _fn
for _t, _schema in (("str", "str"), ("bool", "bool"), ("dtype", "ScalarType")):
    _BOOL_ROWS[f"aten::eq.{_t}({_schema} a, {_schema} b) -> bool"] = operator.eq
    _BOOL_ROWS[f"aten::ne.{_t}({_schema} a, {_schema} b) -> bool"] = operator.ne

# Tensors read as Python values (`int(x)`, `x.item()`, `if x:`, sizes); not differentiable.
TENSOR_QUERIES = {
    "aten::Int.Tensor(Tensor a) -> int": _one_element("int", int),
    "aten::Float.Tensor(Tensor a) -> float": _one_element("float", float),
    "aten::Bool.Tensor(Tensor a) -> bool": _one_element("bool", bool),
    "aten::item(Tensor self) -> Scalar": _one_element("number", lambda v: v),
    "aten::numel(Tensor self) -> int": lambda a: int(a.size),
    "aten::size.all(Tensor self) -> int[]": lambda a: list(a.shape),
    "aten::is_floating_point(Tensor self) -> bool": lambda a: dt.is_float(a.dtype),
    "aten::is_complex(Tensor self) -> bool": lambda a: dt.is_complex(a.dtype),
}

# Lists, dicts and strings: the containers are Python objects, changed in place where PyTorch does
# (those ops return the container, as in-place ops return their input).
_CONTAINER_ROWS = {
    "aten::append.t(Any(a!)[] self, Any el) -> Any[]": _mutating(list.append),
    "aten::pop.t(Any(a!)[] self, int idx=-1) -> Any": _pop,
    "aten::insert.t(Any(a!)[] self, int idx, Any el) -> Any[]": _mutating(list.insert),
    "aten::extend.t(Any(a!)[] self, Any[] other) -> Any[]": _mutating(list.extend),
    "aten::clear.t(Any(a!)[] self) -> Any[]": _mutating(list.clear),
    "aten::_set_item.t(Any(a!)[] l, int idx, Any el) -> Any[]": _set_list_item,
    "aten::_set_item.dict(Any(a!) d, Any key, Any value) -> Any": lambda d, k, v: (d.__setitem__(k, v), d)[1],
    "aten::slice.t(Any[] l, int? start=None, int? end=None, int step=1) -> Any[]":
        lambda lst, start, end, step: lst[start:end:step],
    "aten::add.t(Any[] a, Any[] b) -> Any[]": operator.add,
    "aten::list.t(Any[] l) -> Any[]": list,
    "aten::keys.dict(Any self) -> Any[]": lambda d: list(d.keys()),
    "aten::values.dict(Any self) -> Any[]": lambda d: list(d.values()),
    "aten::items.dict(Any self) -> Any[]": lambda d: list(d.items()),
    "aten::get.dict(Any self, Any key, Any default_value=None) -> Any": lambda d, k, default: d.get(k, default),
    "aten::add.str(str a, str b) -> str": operator.add,
    "aten::mul.left_t(Any[] l, int n) -> Any[]": operator.mul,
    "aten::eq.list(Any[] a, Any[] b) -> bool": lambda a, b: list(a) == list(b),
    "aten::ne.list(Any[] a, Any[] b) -> bool": lambda a, b: list(a) != list(b),
    "aten::join.str(str self, str[] values) -> str": lambda sep, values: sep.join(values),
    "aten::lower.str(str self) -> str": str.lower,
    "aten::upper.str(str self) -> str": str.upper,
    "aten::startswith.str(str self, str prefix) -> bool": str.startswith,
    "aten::endswith.str(str self, str suffix) -> bool": str.endswith,
    "aten::warn(str message, int stacklevel=2) -> ()": lambda message, stacklevel: warnings.warn(message),
    "aten::str(Any elem) -> str": str,
    "aten::format(str self, Any[] args) -> str": _format,
}

for _rows in (_MATH_ROWS, _BOOL_ROWS, TENSOR_QUERIES, _CONTAINER_ROWS):
    _register_all(_rows)
