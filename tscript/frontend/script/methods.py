"""What attributes and methods mean on the values of scripted code: tensors (`x.shape`, `x.view(...)`,
every op family whose first argument is `self`, plus the methods PyTorch spells differently),
lists, dicts and strings; and how each kind of value is measured (`len`), iterated and unpacked."""
from __future__ import annotations

import numpy as np
from tscript_runtime import dtypes as dt
from tscript_runtime.ops import OPS

from ..._tensor import Tensor
from ...ir.types import ANY, BOOL, DEVICE, DTYPE, INT, STR, DictType, ListType, OptionalType, TensorType, TupleType
from .annotations import subtype, type_name
from .builtins import BuiltinSugar, HandlerSugar, arity, no_kwargs, family, op_call
from .values import ConstValue, Loop, SimpleValue, Sugared, TupleSugar, Unrolled


# -- tensors ------------------------------------------------------------------------------------------
class ShapeSugar(Sugared):
    """`x.shape` / `x.size()`: indexing it reads one size (`aten::size`), `len` is the rank."""
    describe = "a tensor's shape"

    def __init__(self, tensor: Sugared):
        self.tensor = tensor

    @property
    def type(self):
        return ListType(INT)

    def as_value(self, em, pos):
        return em.call_ops([OPS["aten::size.all"]], [self.tensor], {}, pos, "size").as_value(em, pos)

    def getitem(self, em, index, pos):
        if index.type == INT:
            return em.call_ops([OPS["aten::size"]], [self.tensor, index], {}, pos, "size")
        return SimpleValue(self.as_value(em, pos)).getitem(em, index, pos)

    def length(self, em, pos):
        return SimpleValue(em.insert("aten::dim", [self.tensor.as_value(em, pos)], [INT]).output)

    def iterate(self, em, pos):
        return SimpleValue(self.as_value(em, pos)).iterate(em, pos)

    def unpack(self, em, n, pos):
        return SimpleValue(self.as_value(em, pos)).unpack(em, n, pos)

    def attr(self, em, name, pos):
        return SimpleValue(self.as_value(em, pos)).attr(em, name, pos)


def static_shape(x: Sugared) -> tuple | None:
    """The sizes of a tensor fixed when compiling (a parameter's, a buffer's), or None."""
    t = x.type
    if isinstance(t, TensorType) and t.shape is not None and all(type(d) is int for d in t.shape):
        return t.shape
    return None


def shape_of(x: Sugared) -> Sugared:
    """`x.shape`: a constant tuple when the sizes are fixed, else read when the code runs."""
    shape = static_shape(x)
    return ConstValue(tuple(shape)) if shape is not None else ShapeSugar(x)


def _size(em, args, kwargs, pos):
    if len(args) == 1 and not kwargs:
        return shape_of(args[0])
    shape = static_shape(args[0])
    if shape is not None and len(args) == 2 and not kwargs and isinstance(args[1], ConstValue) and \
            type(args[1].value) is int and -len(shape) <= args[1].value < len(shape):
        return ConstValue(shape[args[1].value])
    return em.call_ops([OPS["aten::size"]], args, kwargs, pos, "size")


def _dim(em, args, kwargs, pos):
    no_kwargs(em, "dim", kwargs, pos)
    arity(em, "dim", args, 1, 1, pos)
    shape = static_shape(args[0])
    if shape is not None:
        return ConstValue(len(shape))
    return SimpleValue(em.insert("aten::dim", [args[0].as_value(em, pos)], [INT]).output)


def _convert_to(dtype):
    def handler(em, args, kwargs, pos):
        no_kwargs(em, "conversion", kwargs, pos)
        arity(em, "conversion", args, 1, 1, pos)
        return em.call_ops([OPS["aten::to"]], [args[0], ConstValue(np.dtype(dtype))], {}, pos, "to")
    return handler


def _dtype_of(em, tensor: Sugared, pos) -> Sugared:
    return SimpleValue(em.insert("prim::dtype", [tensor.as_value(em, pos)], [DTYPE]).output)


def _like(op: str, via: str):
    """`x.view_as(y)` and friends: the op applied with `y`'s sizes (via="size") or dtype."""
    def handler(em, args, kwargs, pos):
        no_kwargs(em, op, kwargs, pos)
        arity(em, f"{op}_as", args, 2, 2, pos)
        other = ShapeSugar(args[1]) if via == "size" else _dtype_of(em, args[1], pos)
        return em.call_ops(family(op), [args[0], other], {}, pos, op)
    return handler


def _new(op: str):
    """`x.new_zeros(size)` and friends: a new tensor with `x`'s dtype unless one is given."""
    def handler(em, args, kwargs, pos):
        kwargs = dict(kwargs)
        kwargs.setdefault("dtype", _dtype_of(em, args[0], pos))
        kwargs.pop("requires_grad", None)
        return em.call_ops(family(op), list(args[1:]), kwargs, pos, f"new_{op}")
    return handler


def is_device(s: Sugared) -> bool:
    """Is `s` a device argument: a device (a compile-time constant), a device string, a value of type Device?"""
    from ..._device import device
    if isinstance(s, ConstValue):
        return isinstance(s.value, (device, str))
    return s.type == DEVICE


def check_device(em, s: Sugared, pos) -> None:
    """Refuse a device other than the CPU at compile time, with eager's error."""
    from ..._device import check_device as check
    if isinstance(s, ConstValue):
        try:
            check(s.value)
        except (RuntimeError, TypeError, AssertionError) as e:
            raise em.error(f"{type(e).__name__}: {e}", pos) from None


def _to(em, args, kwargs, pos):
    """`x.to(dtype)`, `x.to(device)`, `x.to(device, dtype)`, `x.to(other)` (its dtype): the device
    can only be the CPU, so only the dtype (and `copy`) reach aten::to."""
    for d in [a for a in args[1:] if is_device(a)] + [kwargs.get("device", ConstValue(None))]:
        check_device(em, d, pos)
    kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "non_blocking", "memory_format")}
    rest = [a for a in args[1:] if not is_device(a)]
    if rest and isinstance(rest[0].type, TensorType):
        rest[0] = _dtype_of(em, rest[0], pos)
    if rest and rest[0].type == BOOL:  # x.to(device, non_blocking, copy)
        rest = [ConstValue(None)] + rest
    return em.call_ops([OPS["aten::to"]], [args[0]] + rest[:1] + rest[2:3], kwargs, pos, "to")  # (non_blocking)


def _unsupported_method(reason: str):
    def handler(em, args, kwargs, pos):
        raise em.error(reason, pos)
    return handler


TENSOR_METHODS = {
    "size": _size, "dim": _dim, "ndimension": _dim,
    "numel": op_call("numel"), "nelement": op_call("numel"), "item": op_call("item"),
    "float": _convert_to(np.float32), "double": _convert_to(np.float64), "long": _convert_to(np.int64),
    "int": _convert_to(np.int32), "bool": _convert_to(np.bool_), "half": _convert_to(dt.float16),
    "bfloat16": _convert_to(dt.bfloat16), "byte": _convert_to(dt.uint8), "char": _convert_to(dt.int8),
    "short": _convert_to(dt.int16), "cfloat": _convert_to(dt.complex64), "cdouble": _convert_to(dt.complex128),
    "view_as": _like("view", "size"), "reshape_as": _like("reshape", "size"), "expand_as": _like("expand", "size"),
    "type_as": _like("to", "dtype"),
    "new_zeros": _new("zeros"), "new_ones": _new("ones"), "new_full": _new("full"), "new_empty": _new("empty"),
    "cpu": lambda em, args, kwargs, pos: args[0], "to": _to,
    "cuda": _unsupported_method("tscript runs on the CPU only: cuda() is not available"),
    "tolist": _unsupported_method("tolist() is not supported in scripted code (lists are not Tensor-valued)"),
    "numpy": _unsupported_method("numpy() is not supported in scripted code"),
}

TENSOR_ATTRIBUTES = {
    "shape": lambda em, x, pos: shape_of(x),
    "dtype": lambda em, x, pos: _dtype_of(em, x, pos),
    "ndim": lambda em, x, pos: _dim(em, [x], {}, pos),
    "T": lambda em, x, pos: em.call_ops([OPS["aten::t"]], [x], {}, pos, "t"),
    "is_cuda": lambda em, x, pos: ConstValue(False),
    "device": lambda em, x, pos: ConstValue(_cpu()),
    "requires_grad": lambda em, x, pos: SimpleValue(em.insert("prim::requires_grad", [x.as_value(em, pos)],
                                                              [BOOL]).output),
}


def _cpu():
    from ..._device import CPU
    return CPU


# -- dtypes: their properties, known at compile time, or compared at run time --------------------------
_DTYPE_PROPERTIES = ("is_floating_point", "is_signed", "itemsize", "is_complex", "name")


def dtype_attribute(em, d: Sugared, name: str, pos) -> Sugared:
    """`dtype.is_floating_point` (and is_signed, itemsize, is_complex, name) of a dtype value
    (`dtype.np`, tscript's own numpy dtype of it, is the dtype itself here)."""
    from ..._dtype import FROM_NP
    if name == "np":
        return d
    if name not in _DTYPE_PROPERTIES:
        raise em.error(f"a dtype has no attribute '{name}' in scripted code", pos)
    if isinstance(d, ConstValue):
        known = FROM_NP.get(np.dtype(d.value))
        if known is None:
            raise em.error(f"the dtype {d.value} is not one of tscript's", pos)
        return ConstValue(getattr(known, name, False))
    groups: dict = {}
    for np_dtype, dtype in FROM_NP.items():
        groups.setdefault(getattr(dtype, name, False), []).append(np_dtype)
    *tests, (last, _) = sorted(groups.items(), key=lambda kv: len(kv[1]))
    result = ConstValue(last)
    for value, members in reversed(tests):
        cond = ConstValue(False)
        for m in members:
            cond = em._or_values(cond, em.compare("==", d, ConstValue(m), pos), pos)
        result = em.run(em.lower_if_value(cond, _known(ConstValue(value)), _known(result), pos))
    return result


def _known(value):
    return value
    yield  # (makes this a lowering generator)


def tensor_attribute(em, x: Sugared, name: str, pos) -> Sugared:
    """`x.name` for a tensor: an attribute, a method spelled specially, or an op family method."""
    if name in TENSOR_ATTRIBUTES:
        return TENSOR_ATTRIBUTES[name](em, x, pos)
    if name in TENSOR_METHODS:
        return HandlerSugar(name, TENSOR_METHODS[name], x)
    if name.startswith("is_") and isinstance(getattr(Tensor, name, None), bool):
        return ConstValue(getattr(Tensor, name))  # is_cuda, is_xpu, is_mps...: the CPU is the only device
    ops = [op for op in family(name) if op.schema.args and op.schema.args[0].name == "self"
           and op.schema.args[0].is_tensor]
    if not ops:
        raise em.error(f"'Tensor' object has no attribute or method '{name}'", pos)
    return BuiltinSugar(name, ops, x)


# -- lists, dicts, strings ----------------------------------------------------------------------------
def _list_op(name: str):
    def handler(em, args, kwargs, pos):
        if name in ("append", "insert") and len(args) >= 2:
            check_item(em, args[0].type, args[-1], pos)
        return em.call_ops([OPS[f"aten::{name}.t"]], args, kwargs, pos, name)
    return handler


def check_item(em, list_type, item: Sugared, pos) -> None:
    """A list keeps one item type: an item of another type is an error (not a silent mix)."""
    elem = list_type.elem
    if elem == ANY or item.type is not None and subtype(item.type, elem):
        return
    what = type_name(item.type) if item.type is not None else item.describe
    raise em.error(f"cannot add a value of type '{what}' to a list of type '{list_type}' (an empty list without "
                   f"annotation is a List[Tensor]; annotate it, e.g. `x: List[int] = []`)", pos)


LIST_METHODS = {n: _list_op(n) for n in ("append", "pop", "insert", "extend", "clear")}


def _dict_method(name: str, result):
    """A dict method; `result(dict type)` is the IR type of what it returns."""
    def handler(em, args, kwargs, pos):
        out = em.call_ops([OPS[f"aten::{name}.dict"]], args, kwargs, pos, name)
        out.value.type = result(args[0].type, args[2:] + list(kwargs.values()))
        return out
    return handler


DICT_METHODS = {
    "keys": _dict_method("keys", lambda t, _: ListType(t.key)),
    "values": _dict_method("values", lambda t, _: ListType(t.value)),
    "items": _dict_method("items", lambda t, _: ListType(TupleType((t.key, t.value)))),
    "get": _dict_method("get", lambda t, default: t.value if default and default[0].type == t.value
                        else OptionalType(t.value)),
}
STR_METHODS = {n: (lambda name: lambda em, args, kwargs, pos: em.call_ops([OPS[f"aten::{name}.str"]], args, kwargs,
                                                                          pos, name))(n)
               for n in ("join", "lower", "upper", "startswith", "endswith")}
STR_METHODS["format"] = lambda em, args, kwargs, pos: _format(em, args, kwargs, pos)


def _format(em, args, kwargs, pos):
    """`"...{}...".format(a, b)` (positional fields only): folded for constants, else aten::format."""
    no_kwargs(em, "format", kwargs, pos)
    if all(isinstance(a, ConstValue) for a in args):
        try:
            return ConstValue(args[0].value.format(*(a.value for a in args[1:])))
        except (IndexError, KeyError, ValueError):
            pass  # raises when it runs, as in Python
    return em.call_ops([OPS["aten::format"]], [args[0], TupleSugar(list(args[1:]))], {}, pos, "format")


def value_attribute(em, v: SimpleValue, name: str, pos) -> Sugared:
    """`v.name` for an IR value, by its type."""
    t = v.type
    if isinstance(t, TensorType):
        return tensor_attribute(em, v, name, pos)
    if isinstance(t, ListType) and name in LIST_METHODS:
        return HandlerSugar(name, LIST_METHODS[name], v)
    if isinstance(t, DictType) and name in DICT_METHODS:
        return HandlerSugar(name, DICT_METHODS[name], v)
    if t == STR and name in STR_METHODS:
        return HandlerSugar(name, STR_METHODS[name], v)
    if t == DTYPE:
        return dtype_attribute(em, v, name, pos)
    if isinstance(t, OptionalType):
        raise em.error(f"'{name}' of a value of type '{type_name(t)}': it may be None; refine it first with "
                       f"`if x is not None:`", pos)
    raise em.error(f"{v.describe} has no attribute '{name}'", pos)


def length_of(em, v: SimpleValue, pos) -> Sugared:
    """`len(v)`: a constant for tuples, aten::len otherwise."""
    t = v.type
    if isinstance(t, TupleType):
        return ConstValue(len(t.elems))
    if isinstance(t, (TensorType, ListType, DictType)) or t == STR:
        return SimpleValue(em.insert("aten::len", [v.value], [INT]).output)
    raise em.error(f"{v.describe} has no len()", pos)


def iterate_value(em, v: SimpleValue, pos):
    """How a `for` over a value runs: tuples unrolled; lists, strings, dict keys, tensor rows in a loop."""
    t = v.type
    if isinstance(t, TupleType):
        return Unrolled(unpack_value(em, v, len(t.elems), pos))
    if isinstance(t, ListType) or t == STR:
        elem = t.elem if isinstance(t, ListType) else STR
        return Loop(length_of(em, v, pos),
                    lambda em, i: SimpleValue(em.insert("aten::__getitem__", [v.value, i], [elem]).output))
    if isinstance(t, DictType):
        return iterate_value(em, DICT_METHODS["keys"](em, [v], {}, pos), pos)
    if isinstance(t, TensorType):
        return Loop(length_of(em, v, pos),
                    lambda em, i: em.call_ops([OPS["aten::select"]], [v, ConstValue(0), SimpleValue(i)], {}, pos,
                                              "select"))
    raise em.error(f"{v.describe} is not iterable", pos)


def unpack_value(em, v: SimpleValue, n: int, pos) -> list:
    """`a, b = v`: tuple items, list items (checked at run time), tensor rows."""
    t = v.type
    if isinstance(t, TupleType):
        if len(t.elems) != n:
            raise em.error(f"cannot unpack a tuple of {len(t.elems)} values into {n} names", pos)
        node = v.value.node
        if node is not None and node.kind == "prim::TupleConstruct":
            return [SimpleValue(i) for i in node.inputs]
        return [SimpleValue(o) for o in em.insert("prim::TupleUnpack", [v.value], list(t.elems)).outputs]
    if isinstance(t, ListType):
        return [SimpleValue(o) for o in em.insert("prim::ListUnpack", [v.value], [t.elem] * n).outputs]
    if isinstance(t, TensorType):
        parts = em.call_ops([OPS["aten::unbind"]], [v], {}, pos, "unbind")
        return unpack_value(em, parts, n, pos)
    raise em.error(f"cannot unpack {v.describe}", pos)
