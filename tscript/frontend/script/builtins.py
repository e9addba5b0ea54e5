"""What Python names mean in scripted code: op families of the op table (`tscript.relu`,
`math.sqrt`), Python's builtins (`len`, `range`, `enumerate`, `isinstance`, `float`...), classes
and exceptions, and the op table itself as library code uses it (`dispatch(OPS["aten::x"], ...)`).
Attributes and methods of values are in methods.py.

Calls to op families are matched against the op schemas by `matching.py`; everything here only
decides *which* ops (or prims) a name stands for."""
from __future__ import annotations

import functools
import math
import types as pytypes
import warnings

import numpy as np
from tscript_runtime.ops import OPS

from ... import _jit_language as _jit
from ..._device import device
from ...ir.types import (ANY, BOOL, DEVICE, FLOAT, INT, NONE, STR, TENSOR, DictType, ListType, OptionalType, TensorType,
                         TupleType)
from .annotations import AnnotationError, python_type, subtype, type_name
from .limits import check_unroll, checked
from .values import ConstValue, Loop, NamedTupleSugar, SimpleValue, Sugared, TupleSugar, Unrolled

INT_MAX = 9223372036854775807  # prim::Loop's trip count for `while` loops, as in TorchScript


# -- op families ------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def families() -> dict:
    """Short name -> the aten ops of that name, the plain op first (`add`: add, add.float, ...)."""
    out: dict = {}
    for name, op in OPS.items():
        if name.startswith("aten::"):
            out.setdefault(name[6:].split(".")[0], []).append(op)
    for ops in out.values():
        ops.sort(key=lambda op: "." in op.name)
    return out


def family(name: str) -> list:
    """The ops of the family `aten::<name>` (empty if there is none)."""
    return families().get(name, [])


class BuiltinSugar(Sugared):
    """An op family, optionally with `self` bound (a tensor method)."""

    def __init__(self, name: str, ops: list, bound: Sugared | None = None):
        self.name, self.ops, self.bound = name, ops, bound

    @property
    def describe(self) -> str:
        return f"the builtin '{self.name}'"

    def call(self, em, args, kwargs, pos):
        args = ([self.bound] if self.bound is not None else []) + list(args)
        return em.call_ops(self.ops, args, kwargs, pos, self.name)


class HandlerSugar(Sugared):
    """A builtin whose call is handled by a Python function `handler(em, args, kwargs, pos)`."""

    def __init__(self, name: str, handler, bound: Sugared | None = None):
        self.name, self.handler, self.bound = name, handler, bound

    @property
    def describe(self) -> str:
        return f"the builtin '{self.name}'"

    def call(self, em, args, kwargs, pos):
        args = ([self.bound] if self.bound is not None else []) + list(args)
        return self.handler(em, args, kwargs, pos)


def no_kwargs(em, name: str, kwargs: dict, pos) -> None:
    """Refuse keyword arguments to a builtin that takes none."""
    if kwargs:
        raise em.error(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'", pos)


def arity(em, name: str, args: list, lo: int, hi: int, pos) -> None:
    """Refuse a call with fewer than `lo` or more than `hi` arguments."""
    if not lo <= len(args) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise em.error(f"{name}() takes {want} arguments ({len(args)} given)", pos)


def op_call(name: str):
    """A handler calling the op `aten::<name>` (exactly that overload)."""
    return lambda em, args, kwargs, pos: em.call_ops([OPS[f"aten::{name}"]], args, kwargs, pos, name)


# -- Python's builtins ------------------------------------------------------------------------------------
class RangeSugar(Sugared):
    """range(start, stop, step): iterated by a prim::Loop (or unrolled, when asked and constant)."""
    describe = "a range"

    def __init__(self, start: Sugared, stop: Sugared, step: Sugared):
        self.start, self.stop, self.step = start, stop, step

    def constant(self) -> range | None:
        """The range as a Python range when its bounds are constants (else None; a step of 0
        is left to raise when the loop runs, as in Python)."""
        parts = (self.start, self.stop, self.step)
        if all(isinstance(p, ConstValue) for p in parts) and self.step.value != 0:
            return range(*(p.value for p in parts))
        return None

    def length(self, em, pos):
        known = self.constant()
        if known is not None:
            n = _range_length(known)
            if n > INT_MAX:
                raise em.error(f"range() of {n} items: a loop runs at most INT_MAX = 2**63 - 1 times", pos)
            return ConstValue(n)
        if isinstance(self.start, ConstValue) and self.start.value == 0 and \
                isinstance(self.step, ConstValue) and self.step.value == 1:
            return self.stop
        return em.call_ops([OPS["aten::__range_length"]], [self.start, self.stop, self.step], {}, pos, "range")

    def iterate(self, em, pos):
        simple = isinstance(self.start, ConstValue) and self.start.value == 0 and \
            isinstance(self.step, ConstValue) and self.step.value == 1

        def item(em, i):
            if simple:
                return SimpleValue(i)
            return em.call_ops([OPS["aten::__derive_index"]], [SimpleValue(i), self.start, self.step], {}, pos,
                               "range")
        return Loop(self.length(em, pos), item)

    def unrolled(self, em, pos) -> Unrolled:
        """The constant range as unrolled items (at most MAX_UNROLL)."""
        check_unroll(em, self.length(em, pos).value, pos)
        return Unrolled([ConstValue(i) for i in self.constant()])

    def as_value(self, em, pos):
        return em.comprehension_of(self, pos)


def _range_length(r: range) -> int:
    """len(r), also past sys.maxsize (where len() raises OverflowError)."""
    return max(0, (r.stop - r.start + r.step - (1 if r.step > 0 else -1)) // r.step)


class EnumerateSugar(Sugared):
    describe = "enumerate(...)"

    def __init__(self, inner: Sugared, start: Sugared):
        self.inner, self.start = inner, start

    def iterate(self, em, pos):
        inner = em.iteration(self.inner, pos)
        if isinstance(inner, Unrolled) and isinstance(self.start, ConstValue):
            return Unrolled([TupleSugar([ConstValue(self.start.value + k), item])
                             for k, item in enumerate(inner.items)])
        if isinstance(inner, Unrolled):
            raise em.error("enumerate() over a tuple or module list needs a constant start", pos)

        def item(em, i):
            index = SimpleValue(i) if isinstance(self.start, ConstValue) and self.start.value == 0 else \
                em.binary("+", SimpleValue(i), self.start, pos)
            return TupleSugar([index, inner.item(em, i)])
        return Loop(inner.trip, item)

    def length(self, em, pos):
        return em.length(self.inner, pos)


class ZipSugar(Sugared):
    describe = "zip(...)"

    def __init__(self, inners: list):
        self.inners = inners

    def iterate(self, em, pos):
        its = [em.iteration(i, pos) for i in self.inners]
        if any(isinstance(it, Unrolled) for it in its):
            n = min(len(it.items) for it in its if isinstance(it, Unrolled))
            return Unrolled([TupleSugar([it.items[k] if isinstance(it, Unrolled) else
                                         it.item(em, em.const(k)) for it in its]) for k in range(n)])
        trip = its[0].trip
        for it in its[1:]:
            trip = em.call_family("min", [trip, it.trip], {}, pos)
        return Loop(trip, lambda em, i: TupleSugar([it.item(em, i) for it in its]))


def _len(em, args, kwargs, pos):
    no_kwargs(em, "len", kwargs, pos)
    arity(em, "len", args, 1, 1, pos)
    return em.length(args[0], pos)


def _range(em, args, kwargs, pos):
    no_kwargs(em, "range", kwargs, pos)
    arity(em, "range", args, 1, 3, pos)
    for a in args:
        if a.type != INT:
            raise em.error(f"range() arguments must be int, not '{type_name(a.type) if a.type else a.describe}'", pos)
    if len(args) == 1:
        return RangeSugar(ConstValue(0), args[0], ConstValue(1))
    return RangeSugar(args[0], args[1], args[2] if len(args) == 3 else ConstValue(1))


def _enumerate(em, args, kwargs, pos):
    arity(em, "enumerate", args, 1, 2, pos)
    start = args[1] if len(args) == 2 else kwargs.get("start", ConstValue(0))
    if start.type != INT:
        raise em.error(f"enumerate() start must be an int, not {start.describe}", pos)
    return EnumerateSugar(args[0], start)


def _zip(em, args, kwargs, pos):
    no_kwargs(em, "zip", kwargs, pos)
    arity(em, "zip", args, 1, 8, pos)
    return ZipSugar(list(args))


def _scalar_conversion(name: str, target):
    """float(x), int(x), bool(x): constants fold; tensors read their one element."""
    python = {"float": float, "int": int, "bool": bool}[name]

    def handler(em, args, kwargs, pos):
        no_kwargs(em, name, kwargs, pos)
        if not args:
            return ConstValue(python())
        arity(em, name, args, 1, 1, pos)
        x = args[0]
        if isinstance(x, ConstValue) and isinstance(x.value, (bool, int, float, str)):
            try:
                return ConstValue(checked(em, python(x.value), pos))
            except (OverflowError, ValueError) as e:
                raise em.error(f"{name}(): {e}", pos) from None
        if x.type == target:
            return x
        if isinstance(x.type, TensorType):
            return em.call_ops([OPS[f"aten::{name.title()}.Tensor"]], [x], {}, pos, name)
        if x.type in (INT, FLOAT, BOOL):
            return em.call_ops([OPS[f"aten::{name.title()}"]], [x], {}, pos, name)
        raise em.error(f"{name}() of {x.describe} is not supported", pos)
    return handler


def _str(em, args, kwargs, pos):
    no_kwargs(em, "str", kwargs, pos)
    arity(em, "str", args, 1, 1, pos)
    if isinstance(args[0], ConstValue):
        return ConstValue(str(args[0].value))
    return em.call_ops([OPS["aten::str"]], args, {}, pos, "str")


def _min_max(name: str):
    def handler(em, args, kwargs, pos):
        no_kwargs(em, name, kwargs, pos)
        if len(args) == 1:
            raise em.error(f"{name}() of one iterable is not supported in scripted code; pass the values as "
                           f"arguments", pos)
        arity(em, name, args, 2, 16, pos)
        if any(isinstance(a.type, TensorType) for a in args):
            raise em.error(f"{name}() of tensors is ambiguous; use tscript.{name}imum or x.{name}(dim)", pos)
        out = args[0]
        for a in args[1:]:
            out = _fold_min_max(name, out, a) or \
                em.call_ops([op for op in family(name) if "." in op.name], [out, a], {}, pos, name)
        return out
    return handler


def _fold_min_max(name: str, a: Sugared, b: Sugared) -> ConstValue | None:
    """min/max of two constants, or None (not constants, or not comparable: left to the ops)."""
    if not (isinstance(a, ConstValue) and isinstance(b, ConstValue)):
        return None
    try:
        return ConstValue((min if name == "min" else max)(a.value, b.value))
    except TypeError:
        return None


def _reduce_list(name: str):
    """sum(xs), any(xs), all(xs) of a list (or tuple) of numbers or bools."""
    def handler(em, args, kwargs, pos):
        no_kwargs(em, name, kwargs, pos)
        arity(em, name, args, 1, 1, pos)
        if isinstance(args[0].type, TensorType):
            raise em.error(f"{name}() of a tensor iterates over its rows; use x.{name}(0) in scripted code", pos)
        return em.call_ops([op for op in family(name) if "." in op.name], args, {}, pos, name)
    return handler


def _abs(em, args, kwargs, pos):
    no_kwargs(em, "abs", kwargs, pos)
    arity(em, "abs", args, 1, 1, pos)
    if isinstance(args[0], ConstValue) and isinstance(args[0].value, (int, float)):
        return ConstValue(abs(args[0].value))
    return em.call_ops(family("abs"), args, {}, pos, "abs")


def _list(em, args, kwargs, pos):
    no_kwargs(em, "list", kwargs, pos)
    arity(em, "list", args, 0, 1, pos)
    if not args:
        return em.empty_list(TENSOR, pos)
    x = args[0]
    if isinstance(x, SimpleValue) and isinstance(x.type, ListType):
        return em.call_ops([OPS["aten::list.t"]], [x], {}, pos, "list")
    return SimpleValue(em.comprehension_of(x, pos))


def _tuple(em, args, kwargs, pos):
    no_kwargs(em, "tuple", kwargs, pos)
    arity(em, "tuple", args, 1, 1, pos)
    if isinstance(args[0].type, ListType):
        return args[0]  # a tuple of unknown length: the list itself stands for it (e.g. as int[])
    items = em.iteration(args[0], pos)
    if not isinstance(items, Unrolled):
        return SimpleValue(em.comprehension_of(args[0], pos))  # run-time length: a list
    return TupleSugar(items.items)


def _isinstance(em, args, kwargs, pos):
    no_kwargs(em, "isinstance", kwargs, pos)
    arity(em, "isinstance", args, 2, 2, pos)
    return em.isinstance_check(args[0], args[1], pos)


def _getattr(em, args, kwargs, pos):
    no_kwargs(em, "getattr", kwargs, pos)
    arity(em, "getattr", args, 2, 3, pos)
    name = args[1]
    if not (isinstance(name, ConstValue) and isinstance(name.value, str)):
        raise em.error("getattr() needs a constant attribute name in scripted code", pos)
    if len(args) == 3 and not em.has_attribute(args[0], name.value):
        return args[2]
    return args[0].attr(em, name.value, pos)


def _hasattr(em, args, kwargs, pos):
    no_kwargs(em, "hasattr", kwargs, pos)
    arity(em, "hasattr", args, 2, 2, pos)
    if not (isinstance(args[1], ConstValue) and isinstance(args[1].value, str)):
        raise em.error("hasattr() needs a constant attribute name in scripted code", pos)
    return ConstValue(em.has_attribute(args[0], args[1].value))


def _type(em, args, kwargs, pos):
    no_kwargs(em, "type", kwargs, pos)
    arity(em, "type", args, 1, 1, pos)
    return em.compiler.class_of(args[0], pos, em)


def _warn(em, args, kwargs, pos):
    """warnings.warn(message, ...): aten::warn (the category and stack level are not kept)."""
    arity(em, "warn", args, 1, 3, pos)
    message = args[0] if args[0].type == STR else em.call_ops([OPS["aten::str"]], [args[0]], {}, pos, "str")
    return em.call_ops([OPS["aten::warn"]], [message], {}, pos, "warn")


def _super(em, args, kwargs, pos):
    """super() in a method (its class is the `__class__` cell Python gives methods using it), or
    super(Class, self)."""
    no_kwargs(em, "super", kwargs, pos)
    arity(em, "super", args, 0, 2, pos)
    if len(args) == 2:
        return em.compiler.super_of(em, args[1], getattr(args[0], "cls", None), pos)
    if args:
        raise em.error("super() with one argument is not supported in scripted code", pos)
    this = em.env.lookup(em.fdef.params[0].name) if em.fdef.params else None
    return em.compiler.super_of(em, this, em.scope.get("__class__"), pos)


def _device(em, args, kwargs, pos):
    """torch.device("cpu"): a compile-time constant (a Device value passes through)."""
    if len(args) == 1 and not kwargs and args[0].type == DEVICE and not isinstance(args[0], ConstValue):
        return args[0]
    if not all(isinstance(a, ConstValue) for a in list(args) + list(kwargs.values())):
        raise em.error("device() needs constant arguments in scripted code", pos)
    try:
        return ConstValue(device(*(a.value for a in args), **{k: v.value for k, v in kwargs.items()}))
    except (RuntimeError, TypeError, ValueError) as e:
        raise em.error(f"device(): {e}", pos) from None


def _annotate(em, args, kwargs, pos):
    """torch.jit.annotate(T, value): `value` with the type T (an empty list or dict, None)."""
    no_kwargs(em, "annotate", kwargs, pos)
    arity(em, "annotate", args, 2, 2, pos)
    t, value = getattr(args[0], "ir_type", None), args[1]
    if t is None:
        raise em.error(f"annotate() needs a type as its first argument, not {args[0].describe}", pos)
    node = getattr(getattr(value, "value", None), "node", None)
    if node is not None and node.kind in ("prim::ListConstruct", "prim::DictConstruct") and not node.inputs and \
            isinstance(t, (ListType, DictType)) and not node.output.uses:
        node.output.type = t  # a new empty container: it holds items of the annotated type
        return SimpleValue(node.output)
    return em.convert_to(value, t, pos, "annotated value")


def _print(em, args, kwargs, pos):
    raise em.error("print() is not supported in scripted code (the standalone runtime has no Python to print "
                   "with); return the value instead", pos)


SPECIALS = {
    len: _len, range: _range, enumerate: _enumerate, zip: _zip, isinstance: _isinstance,
    float: _scalar_conversion("float", FLOAT), int: _scalar_conversion("int", INT),
    bool: _scalar_conversion("bool", BOOL), str: _str, min: _min_max("min"), max: _min_max("max"), abs: _abs,
    list: _list, tuple: _tuple, getattr: _getattr, hasattr: _hasattr, print: _print, type: _type,
    sum: _reduce_list("sum"), any: _reduce_list("any"), all: _reduce_list("all"),
    warnings.warn: _warn, super: _super, device: _device, _jit.annotate: _annotate,
    _jit.is_scripting: lambda em, args, kwargs, pos: ConstValue(True),  # so `if not is_scripting():` folds away
    _jit.is_tracing: lambda em, args, kwargs, pos: ConstValue(False),
}

MATH = {math.sqrt: "sqrt", math.pow: "pow", **{getattr(math, n): n for n in (
    "exp", "log", "log10", "log2", "log1p", "expm1", "sin", "cos", "tan", "tanh", "asin", "acos", "atan", "erf",
    "fabs", "floor", "ceil", "trunc", "atan2", "isnan", "isinf", "isfinite", "gcd")}}


def math_sugar(fn) -> Sugared:
    """`math.<fn>`: the scalar overloads of the op family of that name."""
    name = MATH[fn]
    return BuiltinSugar(f"math.{name}", [op for op in family(name) if "." in op.name])


# -- the op table itself: library code calls `dispatch(OPS["aten::x"], (args...))` --------------------------
class OpSugar(Sugared):
    """One op of the table (`OPS["aten::linear"]`), as library code hands it to `dispatch`."""

    def __init__(self, op):
        self.op = op

    @property
    def describe(self) -> str:
        return f"the op {self.op.name}"


class OpTableSugar(Sugared):
    """`OPS`: indexed by a constant op name."""
    describe = "the op table"

    def getitem(self, em, index, pos):
        if not (isinstance(index, ConstValue) and index.value in OPS):
            raise em.error("the op table can only be indexed by the constant name of an op", pos)
        return OpSugar(OPS[index.value])


def dispatch_call(em, args, kwargs, pos):
    """`dispatch(op, (a, b, ...))`: that op called with those arguments, in schema order."""
    no_kwargs(em, "dispatch", kwargs, pos)
    arity(em, "dispatch", args, 2, 2, pos)
    op, call_args = args
    items = em.iteration(call_args, pos) if isinstance(call_args, (TupleSugar, ConstValue)) else None
    if not isinstance(op, OpSugar) or not isinstance(items, Unrolled):
        raise em.error("dispatch() needs an op of the table and a tuple of arguments", pos)
    return em.call_ops([op.op], items.items, {}, pos, op.op.schema.short_name)


# -- classes: isinstance targets and exceptions -----------------------------------------------------------
class ClassSugar(Sugared):
    """A class used as a value: a type for isinstance(), callable when it is a builtin conversion."""

    def __init__(self, cls, ir_type):
        self.cls, self.ir_type = cls, ir_type

    @property
    def describe(self) -> str:
        return f"the class '{getattr(self.cls, '__name__', self.cls)}'"

    def call(self, em, args, kwargs, pos):
        if self.cls in SPECIALS:
            return SPECIALS[self.cls](em, args, kwargs, pos)
        if is_named_tuple(self.cls):
            return _named_tuple(em, self.cls, args, kwargs, pos)
        if self.ir_type is None:
            raise em.error(f"{self.describe} cannot be used in scripted code (only as a type, e.g. in isinstance())",
                           pos)
        return super().call(em, args, kwargs, pos)

    def getitem(self, em, index, pos):
        """`List[int]`, `Optional[Tensor]`...: a typing form used as a value (torch.jit.annotate)."""
        parts = index.items if isinstance(index, TupleSugar) else [index]
        if not all(isinstance(p, ClassSugar) for p in parts):
            raise em.error(f"{self.describe} can only be subscripted with types", pos)
        try:
            obj = self.cls[tuple(p.cls for p in parts) if len(parts) > 1 else parts[0].cls]
        except TypeError as e:
            raise em.error(f"{self.describe}[...]: {e}", pos) from None
        return ClassSugar(obj, class_type(obj))


def is_named_tuple(cls) -> bool:
    """A class made by typing.NamedTuple or collections.namedtuple."""
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")


def _named_tuple(em, cls, args, kwargs, pos):
    """`Point(x, y=...)`: the fields in order, defaults filled in."""
    fields, defaults = cls._fields, getattr(cls, "_field_defaults", {})
    if len(args) > len(fields):
        raise em.error(f"{cls.__name__}() takes {len(fields)} arguments but {len(args)} were given", pos)
    values = dict(zip(fields, args))
    for k, v in kwargs.items():
        if k not in fields or k in values:
            raise em.error(f"{cls.__name__}() got an unexpected or repeated argument '{k}'", pos)
        values[k] = v
    for f in fields:
        if f not in values:
            if f not in defaults:
                raise em.error(f"{cls.__name__}() missing required argument '{f}'", pos)
            values[f] = em.resolve_python(defaults[f], pos, f)
    return NamedTupleSugar(cls, [values[f] for f in fields])


class ExceptionClassSugar(Sugared):
    """An exception class; calling it makes the exception `raise` turns into prim::RaiseException."""

    def __init__(self, cls):
        self.cls = cls

    @property
    def describe(self) -> str:
        return f"the exception class '{self.cls.__name__}'"

    def call(self, em, args, kwargs, pos):
        no_kwargs(em, self.cls.__name__, kwargs, pos)
        return ExceptionSugar(self.cls.__name__, args)


class ExceptionSugar(Sugared):
    """An exception object (what `raise` accepts)."""

    def __init__(self, name: str, args: list):
        self.name, self.args = name, args

    @property
    def describe(self) -> str:
        return f"a {self.name}"


class PyModuleSugar(Sugared):
    """A Python module (`math`, `tscript`, `F`): its attributes resolve like globals."""

    def __init__(self, module):
        self.module = module

    @property
    def describe(self) -> str:
        return f"the module '{self.module.__name__}'"

    def attr(self, em, name, pos):
        if not hasattr(self.module, name):
            raise em.error(f"module '{self.module.__name__}' has no attribute '{name}'", pos)
        return em.resolve_python(getattr(self.module, name), pos, f"{self.module.__name__}.{name}")


def class_type(cls):
    """The IR type isinstance() tests for a class or typing form, or None if it names none."""
    if cls in (list, tuple, dict):
        return {list: "list", tuple: "tuple", dict: "dict"}[cls]
    try:
        return python_type(cls)
    except AnnotationError:
        return None


def isinstance_of(t, target) -> bool | None:
    """Static isinstance: True/False when the type decides it, None when it depends on a value
    (an Optional)."""
    if isinstance(target, str):  # a bare list / tuple / dict
        kind = {"list": ListType, "tuple": TupleType, "dict": DictType}[target]
        if isinstance(t, OptionalType):
            return None if isinstance(t.elem, kind) else False
        return isinstance(t, kind)
    if isinstance(t, OptionalType):
        return None if subtype(t.elem, target) else (True if target == NONE else False)
    if t == ANY:
        return None
    return subtype(t, target)


def constant_value(obj):
    """A Python object as a compile-time constant (tscript dtypes as numpy dtypes), or a sentinel."""
    if obj is None or isinstance(obj, (bool, int, float, str, np.dtype)):
        return obj
    if hasattr(obj, "np") and isinstance(getattr(obj, "np"), np.dtype):
        return obj.np
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return obj.item()
    return NOT_CONSTANT


NOT_CONSTANT = object()


def is_python_module(obj) -> bool:
    """Is `obj` a Python module (`math`, `tscript`, `F`)?"""
    return isinstance(obj, pytypes.ModuleType)
