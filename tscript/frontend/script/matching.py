"""Schema matching: which op of a family a call means, and the argument values it gets.

Each candidate op binds the call's arguments to its schema (positional, keyword, defaults, and
PyTorch's varargs sizes: `x.view(2, 3)` packs into `int[] size`), then every argument is checked
against its schema type, with the implicit conversions TorchScript allows: an int where a float is
expected, a tuple or a single int where `int[]` is, a tuple of tensors where `Tensor[]` is. The
candidate needing the fewest conversions wins; nothing is emitted until one has won."""
from __future__ import annotations

import functools

from tscript_runtime.ops.schema import NO_DEFAULT

from ...ir.types import (ANY, BOOL, DEVICE, DTYPE, FLOAT, INT, NONE, STR, TENSOR, DictType, ListType, OptionalType,
                         TensorType, TupleType, Type)
from .annotations import type_name
from .values import ConstValue, EmptyList, SimpleValue, Sugared, TupleSugar

_NUMBERS = (INT, FLOAT, BOOL)
_SCALAR_TYPES = {"int": INT, "float": FLOAT, "bool": BOOL, "str": STR, "ScalarType": DTYPE}


class Mismatch(Exception):
    """Why one candidate does not fit the call."""


def match_call(em, ops: list, args: list, kwargs: dict, pos, name: str) -> Sugared:
    """Emit the best-fitting op of `ops` for the call; CompileError saying why none fits."""
    fits, reasons = [], []
    for op in ops:
        try:
            fits.append((_bind(op, args, kwargs), op))
        except Mismatch as e:
            reasons.append((op, str(e)))
    if not fits:
        raise em.error(_explain(name, reasons, args, kwargs), pos, "type")
    (cost, thunks), op = min(fits, key=lambda f: f[0][0])
    inputs = [thunk(em, pos) for thunk in thunks]
    return _emit(em, op, inputs)


def _explain(name: str, reasons: list, args: list, kwargs: dict) -> str:
    if len(reasons) == 1:
        return f"{name}(): {reasons[0][1]}"
    given = ", ".join([_describe(a) for a in args] + [f"{k}={_describe(v)}" for k, v in kwargs.items()])
    return f"no variant of {name}() accepts ({given}): " + "; ".join(f"{op.name}: {r}" for op, r in reasons)


def _describe(s: Sugared) -> str:
    return type_name(s.type) if s.type is not None else s.describe


# -- binding ------------------------------------------------------------------------------------------
def _bind(op, args: list, kwargs: dict) -> tuple:
    """(total conversion cost, one thunk per schema argument producing its Value)."""
    params = op.schema.args
    args = _pack_varargs(op, list(args))
    bound: list = [NO_DEFAULT] * len(params)
    for i, a in enumerate(args):
        bound[i] = a
    for key, value in kwargs.items():
        i = op.schema.index.get(key, op.schema.index.get("self") if key == "input" else None)
        if i is None and key in _PLACEMENT:
            _PLACEMENT[key](value)
            continue
        if i is None:
            raise Mismatch(f"unexpected keyword argument '{key}'")
        if bound[i] is not NO_DEFAULT:
            raise Mismatch(f"got multiple values for argument '{key}'")
        bound[i] = value
    _check_has_tensor(op, bound)
    total, thunks = 0, []
    for p, value in zip(params, bound):
        if value is NO_DEFAULT:
            if p.default is NO_DEFAULT:
                raise Mismatch(f"missing a value for argument '{p.name}'")
            value = ConstValue(tuple(p.default) if isinstance(p.default, list) else p.default)
        cost, thunk = (0, _value(value)) if (op.name, p.name) in _INT_OR_LIST and value.type == INT else \
            convert(value, p.type, p.name)
        total += cost
        thunks.append(thunk)
    return total, thunks


def _pack_varargs(op, args: list) -> list:
    """PyTorch's `x.view(2, 3)` / `zeros(2, 3)` / `einsum(eq, a, b)`: extra positional arguments
    go, with the one at its position, into the first list argument."""
    n_pos = op.n_positional
    if len(args) <= n_pos:
        return args
    for i, p in enumerate(op.schema.args[:len(args)]):
        if p.base_type in ("int[]", "Tensor[]", "float[]") and not p.kwarg_only:
            extra = len(args) - n_pos
            return args[:i] + [TupleSugar(args[i:i + extra + 1])] + args[i + extra + 1:]
    raise Mismatch(f"takes at most {n_pos} positional arguments ({len(args)} given)")


@functools.lru_cache(maxsize=None)
def _takes_tensor_or_scalar(op) -> bool:
    return any(p.base_type == "Tensor|Scalar" for p in op.schema.args)


def _check_has_tensor(op, bound: list) -> None:
    """An op with `Tensor|Scalar` arguments computes a tensor: some argument must be one (so that
    `1 + 2` picks aten::add.int rather than aten::add)."""
    if _takes_tensor_or_scalar(op) and \
            not any(isinstance(getattr(bound[i], "type", None), TensorType) for i in op.tensor_pos):
        raise Mismatch("no argument is a Tensor")


# `int[]` arguments whose kernel reads one int differently from a list of one (split(x, 3): pieces of
# 3; split(x, [3]): one piece of 3), so an int passes as itself, as it does eagerly and when traced.
_INT_OR_LIST = {("aten::split", "split_size")}


# -- where a new tensor lives: PyTorch's factory arguments the schemas leave out -----------------------------
def _device(value: Sugared) -> None:
    from ..._device import check_device, device
    if value.type == DEVICE or isinstance(value, ConstValue) and value.value is None:
        return  # a Device value (the CPU: there is no other)
    if not (isinstance(value, ConstValue) and isinstance(value.value, (device, str))):
        raise Mismatch(f"expected a device for argument 'device' but found {_describe(value)}")
    try:
        check_device(value.value)
    except (RuntimeError, TypeError, AssertionError) as e:
        raise Mismatch(str(e)) from None


def _constant_in(name: str, allowed: tuple):
    def check(value: Sugared) -> None:
        if not (isinstance(value, ConstValue) and value.value in allowed):
            raise Mismatch(f"{name}={_describe(value)} is not supported in scripted code (only "
                           f"{' or '.join(map(repr, allowed))})")
    return check


# Checked, then left out: tensors are made on the CPU, strided, in plain memory, without grad.
_PLACEMENT = {"device": _device, "layout": _constant_in("layout", (None,)),
              "pin_memory": _constant_in("pin_memory", (False, None)),
              "requires_grad": _constant_in("requires_grad", (False,)),
              "memory_format": _constant_in("memory_format", (None,))}


# -- conversions ----------------------------------------------------------------------------------------
def convert(s: Sugared, schema_type: str, arg: str) -> tuple:
    """(cost, thunk(em, pos) -> Value) passing `s` where `schema_type` is expected, or Mismatch."""
    t = s.type
    if schema_type.endswith("?"):
        if isinstance(s, ConstValue) and s.value is None or t == NONE:
            return 0, _value(s)
        if isinstance(t, OptionalType):
            if _accepts(schema_type[:-1], t.elem):
                return 0, _value(s)
            raise _mismatch(schema_type, arg, t)
        return convert(s, schema_type[:-1], arg)
    if schema_type.endswith("[]"):
        return _convert_list(s, schema_type[:-2], arg)
    if t is None:
        raise Mismatch(f"expected a value of type '{schema_type}' for argument '{arg}' but found {s.describe}")
    if _accepts(schema_type, t):
        return 0, _value(s)
    if schema_type == "float" and t == INT:
        return 1, _to_float(s)
    raise _mismatch(schema_type, arg, t)


def _mismatch(schema_type: str, arg: str, t: Type) -> Mismatch:
    return Mismatch(f"expected a value of type '{_schema_label(schema_type)}' for argument '{arg}' but found "
                    f"'{type_name(t)}'")


def _schema_label(schema_type: str) -> str:
    return {"Tensor|Scalar": "Tensor or number", "Scalar": "number"}.get(schema_type, schema_type)


def _accepts(schema_type: str, t: Type) -> bool:
    if t == ANY or schema_type == "Any":
        return True
    if schema_type.endswith("?"):
        return t == NONE or _accepts(schema_type[:-1], t.elem if isinstance(t, OptionalType) else t)
    if schema_type == "Tensor":
        return isinstance(t, TensorType)
    if schema_type == "Tensor|Scalar":
        return isinstance(t, TensorType) or t in _NUMBERS
    if schema_type == "Scalar":
        return t in _NUMBERS
    if schema_type.endswith("[]"):
        return isinstance(t, ListType) and _accepts(schema_type[:-2], t.elem)
    return _SCALAR_TYPES.get(schema_type) == t


def _convert_list(s: Sugared, elem: str, arg: str) -> tuple:
    t = s.type
    if isinstance(t, ListType) and _accepts(elem, t.elem):
        return 0, _value(s)
    if isinstance(s, EmptyList):
        return 0, _list_thunk([], [], elem)
    if elem == "int" and t == INT:  # one int for an int[] (kernels take it as a one-item list)
        return 0, _list_thunk([s], [_value(s)], elem)
    items = _items(s)
    if items is None:
        raise Mismatch(f"expected a value of type '{elem}[]' for argument '{arg}' but found "
                       f"'{type_name(t) if t is not None else s.describe}'")
    converted = [convert(i, elem, arg) for i in items]
    cost = sum(c for c, _ in converted)
    return cost, _list_thunk(items, [th for _, th in converted], elem)


def _items(s: Sugared) -> list | None:
    """The items of a tuple-like argument (tuple expression, constant tuple, tuple value)."""
    if isinstance(s, TupleSugar):
        return s.items
    if isinstance(s, ConstValue) and isinstance(s.value, tuple):
        return [ConstValue(v) for v in s.value]
    if isinstance(s, SimpleValue) and isinstance(s.type, TupleType):
        return [_TupleItem(s, i) for i in range(len(s.type.elems))]
    return None


class _TupleItem(Sugared):
    """Item `i` of a tuple value, unpacked only if the tuple is passed as a list."""

    def __init__(self, tup: SimpleValue, i: int):
        self.tup, self.i = tup, i

    @property
    def type(self):
        return self.tup.type.elems[self.i]

    def as_value(self, em, pos):
        return self.tup.unpack(em, len(self.tup.type.elems), pos)[self.i].as_value(em, pos)


def _list_thunk(items: list, thunks: list, elem: str):
    def thunk(em, pos):
        if all(isinstance(i, ConstValue) for i in items) and elem in ("int", "float") and items:
            return em.const([float(i.value) if elem == "float" else i.value for i in items])
        values = [th(em, pos) for th in thunks]
        elem_type = {"int": INT, "float": FLOAT, "bool": BOOL}.get(elem)
        if elem_type is None:
            elem_type = TENSOR if elem.startswith("Tensor") and all(isinstance(v.type, TensorType) for v in values) \
                else (values[0].type if values else TENSOR)
            if elem == "Tensor?":
                elem_type = OptionalType(TENSOR) if any(v.type == NONE for v in values) else TENSOR
        return em.insert("prim::ListConstruct", values, [ListType(elem_type)]).output
    return thunk


def _value(s: Sugared):
    return lambda em, pos: s.as_value(em, pos)


def _to_float(s: Sugared):
    def thunk(em, pos):
        if isinstance(s, ConstValue):
            return em.const(float(s.value))
        return em.insert("aten::Float", [s.as_value(em, pos)], [FLOAT]).output
    return thunk


# -- the node ---------------------------------------------------------------------------------------------
_RETURNS = {"Tensor": TENSOR, "int": INT, "float": FLOAT, "bool": BOOL, "str": STR, "Scalar": FLOAT,
            "ScalarType": DTYPE, "Tensor[]": ListType(TENSOR), "int[]": ListType(INT), "float[]": ListType(FLOAT)}


def _emit(em, op, inputs: list) -> Sugared:
    types = [_return_type(op, r.type, inputs) for r in op.schema.returns]
    node = em.insert(op.name, inputs, types)
    if not node.outputs:
        return ConstValue(None)
    if op.schema.returns_tuple:
        return TupleSugar([SimpleValue(o) for o in node.outputs])
    return SimpleValue(node.output)


def _return_type(op, ret: str, inputs: list) -> Type:
    if ret in _RETURNS:
        return _RETURNS[ret]
    written = inputs[op.mutates].type if op.mutates is not None else None
    if written is not None and (ret == "Any[]" or not isinstance(written, ListType)):
        return written  # the container the op changed (a list's pop returns an item instead)
    lists = [v.type for a, v in zip(op.schema.args, inputs) if a.type == "Any[]" and isinstance(v.type, ListType)]
    if ret == "Any[]":
        return lists[0] if lists else ListType(ANY)
    if ret == "Any":
        if lists:
            return lists[0].elem
        dicts = [v.type for v in inputs if isinstance(v.type, DictType)]
        return dicts[0].value if dicts else ANY
    return ANY
