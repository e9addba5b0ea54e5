"""Truth values in scripted code (a part of FunctionEmitter): what `if x:`, `not x` and `while x:`
test for each kind of value, and `a or b` / `a and b` as Python computes them, the value of the
operand that decides (`dtype or input.dtype`, `hx or ()`, `self.proj_size or self.hidden_size`).

A value's truth is decided at compile time where its type decides it (a dtype, a module or a
non-empty tuple is true, None is false), by a None check for an Optional whose value is always
true, and by the value at run time otherwise (a number, a tensor's one element, a list's length)."""
from __future__ import annotations

from tscript_runtime.ops import OPS

from ...ir.types import (BOOL, DEVICE, DTYPE, FLOAT, INT, NONE, STR, DictType, ListType, ModuleType, OptionalType,
                         TensorType, TupleType)
from . import syntax as S
from .annotations import type_name
from .control import given
from .environment import FALSE, TRUE
from .values import ConstValue, SimpleValue, Sugared, TupleSugar


def always_true(t) -> bool:
    """Is every value of type `t` true (a dtype, a device, a module, a non-empty tuple)?"""
    return t in (DTYPE, DEVICE) or isinstance(t, ModuleType) or isinstance(t, TupleType) and bool(t.elems)


class Truthiness:
    """The truth-value half of FunctionEmitter (which provides insert, call_ops, run, lower_if_value...)."""

    def to_bool(self, s: Sugared, pos) -> Sugared:
        """A condition: constants fold; tensors read their one element (aten::Bool.Tensor)."""
        if isinstance(s, ConstValue):
            return ConstValue(bool(s.value))
        if isinstance(s, TupleSugar):
            return ConstValue(bool(s.items))
        t = s.type
        if t is None:
            return self._object_truth(s, pos)
        if t == BOOL:
            return s
        if t == NONE or isinstance(t, TupleType) and not t.elems:
            return FALSE
        if always_true(t):
            return TRUE
        if isinstance(t, OptionalType):
            return self.run(self._optional_truth(s, t, pos))
        if isinstance(t, TensorType):
            return self.call_ops([OPS["aten::Bool.Tensor"]], [s], {}, pos, "bool")
        if t in (INT, FLOAT):
            return self.call_ops([OPS["aten::Bool"]], [s], {}, pos, "bool")
        if isinstance(t, (ListType, DictType)) or t == STR:
            n = self.length(s, pos)
            return self.compare("!=", n, ConstValue(0), pos)
        raise self.error(f"cannot use a value of type '{type_name(t)}' as a condition", pos)

    def _object_truth(self, s: Sugared, pos) -> Sugared:
        """A module (a container is true when it holds modules), a function or a class: known now."""
        if self.compiler.is_module_container(s):
            return ConstValue(bool(s.length(self, pos).value))
        if hasattr(s, "module") or hasattr(s, "fn") or hasattr(s, "cls"):
            return TRUE
        raise self.error(f"cannot use {s.describe} as a condition", pos)

    def _optional_truth(self, s: Sugared, t: OptionalType, pos):
        """`x` for an Optional: not None, and (when its value can be false) true itself."""
        present = self.negate(self._is_none(s, "", pos)[0], pos)
        if always_true(t.elem):
            return present

        def value_truth():
            cast = SimpleValue(self.insert("prim::unchecked_cast", [s.as_value(self, pos)], [t.elem]).output)
            return self.to_bool(cast, pos)
            yield  # (makes this a lowering generator)
        return (yield self.lower_if_value(present, value_truth(), given(FALSE), pos))

    # -- `a or b`, `a and b` as values ------------------------------------------------------------------
    def lower_bool_value(self, e: S.BoolOp):
        """The lowering generator of `a or b or c` (or `and`) used as a value: `(a or b) or c`, each
        operand compiled only where it runs (a prim::If when the one before is known at run time),
        with the refinements of the operands before it (`x is not None and x.sum() > 0`)."""
        value, if_true, if_false = yield self._operand(e.values[0])
        for operand in e.values[1:]:
            value, if_true, if_false = yield self._value_short_circuit(e.op, value, if_true, if_false, operand,
                                                                       e.pos)
        return value

    def _operand(self, test: S.Expr):
        """(value, refinements when it is true, when false) of one operand."""
        if isinstance(test, S.BoolOp):
            return (yield self.lower_bool_value(test)), {}, {}
        if isinstance(test, S.UnaryOp) and test.op == "not" or self._refining_test(test) is not None:
            return (yield self.lower_condition(test))
        return (yield test), {}, {}

    def _value_short_circuit(self, op: str, left: Sugared, if_true: dict, if_false: dict, operand: S.Expr, pos):
        cond = self.to_bool(left, pos)
        if isinstance(cond, ConstValue):
            if cond.value == (op == "or"):
                return left, if_true, if_false  # decided by `left`: the operand never runs
            return (yield self._operand(operand))
        result = {}

        def rest(refinements):
            self.refine(self.env, refinements)
            value, result["t"], result["f"] = yield self._operand(operand)
            return value

        def decided(truth: bool):
            return self._narrowed(left, cond, truth, pos)
            yield  # (makes this a lowering generator)

        branches = (decided(True), rest(if_false)) if op == "or" else (rest(if_true), decided(False))
        value = yield self.lower_if_value(cond, *branches, pos)
        if value.type != BOOL:
            return value, {}, {}
        if op == "and":
            return value, {**if_true, **result.get("t", {})}, {}
        return value, {}, {**if_false, **result.get("f", {})}

    def _narrowed(self, left: Sugared, cond: Sugared, truth: bool, pos) -> Sugared:
        """`left` where its truth is known to be `truth`: a bool is that constant; an Optional
        that is true is not None, and one whose values are all true is None when it is false."""
        t = left.type
        if t == BOOL:
            return ConstValue(truth)
        if isinstance(t, OptionalType) and truth:
            return SimpleValue(self.insert("prim::unchecked_cast", [left.as_value(self, pos)], [t.elem]).output)
        if isinstance(t, OptionalType) and always_true(t.elem):
            return ConstValue(None)
        return left

