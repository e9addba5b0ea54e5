"""Lowering one function's syntax tree to SSA IR: statements and expressions become nodes of a
`Graph`; `if` becomes `prim::If` and loops become `prim::Loop` with the variables they change as
block outputs and loop-carried values (control.py has that half of the emitter).

Early exits (`return` in a branch or a loop, `break`, `continue`, `raise`) are flag variables
(environment.py). When a branch certainly exits, the statements after the `if` move into the
other branch, so the common `if x is None: return y` needs no flag at run time; only exits that
may or may not happen guard the rest of the block with `prim::If`."""
from __future__ import annotations

import os
from contextlib import contextmanager
from types import GeneratorType

from tscript_runtime.ops import OPS

from ..._device import device
from ...ir.graph import Graph, Value
from ...ir.types import (BOOL, DEVICE, FLOAT, INT, NONE, STR, TENSOR, DictType, ListType, OptionalType, TensorType,
                         TupleType, Type)
from . import syntax as S
from .annotations import UNKNOWN, AnnotationError, resolve_annotation, subtype, type_name, unify
from .builtins import ClassSugar, ExceptionClassSugar, ExceptionSugar, family, isinstance_of
from .control import ControlFlow, given
from .environment import BOUND, BROKE, CONTINUED, FALSE, RAISED, RET, RETURNED, TRUE, Env
from .errors import CompileError
from .indexing import SliceSugar, setitem
from .limits import check_fold, check_format, checked
from .matching import match_call
from .truthiness import Truthiness
from .values import (ConstValue, EmptyList, MaybeUnbound, SimpleValue, Sugared, TupleSugar, Undefined, Unrolled,
                     is_none)

_TENSOR_BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floor_divide", "%": "remainder",
                  "**": "pow", "@": "matmul", "&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor"}
_SCALAR_BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "remainder",
                  "**": "pow", "&": "__and__", "|": "__or__", "^": "__xor__"}
_INPLACE = {"+": "add_", "-": "sub_", "*": "mul_", "/": "div_", "//": "floor_divide_", "%": "remainder_",
            "**": "pow_", "&": "bitwise_and_", "|": "bitwise_or_", "^": "bitwise_xor_"}
_COMPARE = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
_FOLD = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
         "//": lambda a, b: a // b, "%": lambda a, b: a % b, "**": lambda a, b: a ** b,
         "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
         "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
         "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


class FunctionEmitter(ControlFlow, Truthiness):
    """Emits the body of one function into `graph` (whose inputs the compiler has created)."""

    def __init__(self, compiler, source, fdef: S.FunctionDef, scope: dict, graph: Graph, return_type: Type | None,
                 library: bool = False):
        self.compiler = compiler
        self.source = source
        self.fdef = fdef
        self.scope = scope
        self.graph = graph
        self.return_type = return_type
        self.library = library  # tscript's own code: an exception message it cannot compile is simplified
        self.env = Env(None, graph.block)
        self.pos = fdef.pos
        self.file = os.path.basename(source.file)

    # -- entry ------------------------------------------------------------------------------------------
    def emit(self, bindings: dict) -> None:
        """Emit the body with the parameters bound to `bindings`; the graph returns its result."""
        self.env.vars.update(bindings)
        end = (self.fdef.body[-1].pos if self.fdef.body else self.fdef.pos)
        self.emit_block(_without_docstring(self.fdef.body) + [S.Return(end, None)])  # falling off the end
        result = self.env.lookup(RET)
        self.result = result
        if result is None:
            value = self.uninitialized(self.return_type or NONE)
        else:
            value = result.as_value(self, self.fdef.pos)
        self.graph.add_output(value)

    # -- helpers the sugared values use -------------------------------------------------------------------
    def error(self, message: str, pos=None, kind: str | None = None):
        """A CompileError at `pos` (default: the statement being compiled); `kind` "type" for a
        value of the wrong type."""
        return self.source.error(message, pos if pos is not None else self.pos, kind)

    def insert(self, kind: str, inputs, types: list, attrs: dict | None = None):
        """A node at the insertion point, with outputs of `types`, tagged with its source line."""
        node = self.graph.insert(kind, inputs, len(types), attrs, types)
        node.source = f"{self.file}:{self.pos[0] + self.source.line_offset}"
        return node

    def const(self, value) -> Value:
        """A prim::Constant of a Python value (a device is one of type Device, written as its name)."""
        if isinstance(value, device):
            return self.graph.insert("prim::Constant", (), 1, {"value": str(value)}, [DEVICE]).output
        return self.graph.constant(value)

    def uninitialized(self, t: Type) -> Value:
        """A placeholder of type `t` for a path that never uses it (prim::Uninitialized)."""
        return self.insert("prim::Uninitialized", [], [t]).output

    def call_ops(self, ops: list, args: list, kwargs: dict, pos, name: str) -> Sugared:
        """The best-matching op of `ops` called with these arguments (matching.py)."""
        return match_call(self, ops, args, kwargs, pos, name)

    def call_family(self, name: str, args: list, kwargs: dict, pos) -> Sugared:
        """A call of the op family `aten::<name>`."""
        ops = family(name)
        if not ops:
            raise self.error(f"unknown builtin '{name}'", pos)
        return self.call_ops(ops, args, kwargs, pos, name)

    def resolve_python(self, obj, pos, name: str) -> Sugared:
        """What the Python object `obj` (named `name`) means here."""
        return self.compiler.resolve(obj, pos, name, self)

    def iteration(self, s: Sugared, pos):
        """How a `for` over `s` runs: a Loop or Unrolled items."""
        return s.iterate(self, pos)

    def length(self, s: Sugared, pos) -> Sugared:
        """`len(s)`."""
        return s.length(self, pos)

    def has_attribute(self, s: Sugared, name: str) -> bool:
        """`hasattr(s, name)`, known at compile time."""
        return self.compiler.has_attribute(s, name)

    def empty_list(self, elem: Type, pos) -> Sugared:
        """A new empty list of `elem` items (a `[]` literal)."""
        return EmptyList(self.insert("prim::ListConstruct", [], [ListType(elem)]).output)

    @contextmanager
    def in_env(self, env: Env):
        """Emit into `env`'s block (at its end) inside the `with`."""
        saved = self.env
        self.env = env
        try:
            with self.graph.inserting_at_end(env.block):
                yield
        finally:
            self.env = saved

    # -- statements ---------------------------------------------------------------------------------------
    def emit_block(self, stmts: list) -> None:
        """Emit statements in order; dead ones after an exit are skipped, those after a possible exit guarded."""
        for k, stmt in enumerate(stmts):
            if self.env.terminated:
                return  # dead code after return/break/continue/raise
            self.pos = stmt.pos
            if self.emit_stmt(stmt, stmts[k + 1:]):
                return
            if self.env.pending():
                self.emit_guarded(stmts[k + 1:])
                return

    def emit_stmt(self, stmt: S.Stmt, rest: list) -> bool:
        """Emit one statement; True if it also emitted `rest` (an `if` moves it into a branch)."""
        handler = _STATEMENTS.get(type(stmt))
        if handler is None:
            raise self.error(f"{type(stmt).__name__} statements are not supported", stmt.pos)
        return bool(handler(self, stmt, rest))

    def stmt_expr(self, s: S.ExprStmt, rest):
        if isinstance(s.value, S.Const):
            return  # a docstring or a bare constant
        self.expr(s.value)

    def stmt_pass(self, s, rest):
        pass

    def stmt_unsupported(self, s: S.UnsupportedStmt, rest):
        raise self.error(f"{s.what} are not supported in scripted code", s.pos)

    def stmt_function_def(self, s: S.FunctionDef, rest):
        raise self.error("nested function definitions are not supported in scripted code; define the function "
                         "at module level", s.pos)

    def stmt_assign(self, s: S.Assign, rest):
        value = self.expr(s.value)
        for target in s.targets:
            self.assign(target, value, s.pos)

    def stmt_ann_assign(self, s: S.AnnAssign, rest):
        declared = self.annotation(s.annotation)
        if s.value is None:
            return
        value = self.convert_to(self.expr(s.value, expected=declared), declared, s.value.pos, "assigned value")
        self.assign(s.target, value, s.pos)

    def stmt_aug_assign(self, s: S.AugAssign, rest):
        if isinstance(s.target, S.Subscript):
            base = self.expr(s.target.value)
            index = self.index_expr(s.target.index)
            current = base.getitem(self, index, s.pos)
            self.store_item(base, index, self.augmented(current, s.op, self.expr(s.value), s.pos), s.pos)
            return
        if not isinstance(s.target, S.Name):
            raise self.error("augmented assignment is only supported to variables and items", s.target.pos)
        current = self.expr(s.target)
        self.assign(s.target, self.augmented(current, s.op, self.expr(s.value), s.pos), s.pos)

    def augmented(self, current: Sugared, op: str, value: Sugared, pos) -> Sugared:
        """`current op= value`: in place for tensors (and list +=), a new value otherwise."""
        if isinstance(current.type, TensorType) and op in _INPLACE:
            return self.call_family(_INPLACE[op], [current, value], {}, pos)
        if isinstance(current.type, ListType) and op == "+":
            self.call_ops([OPS["aten::extend.t"]], [current, value], {}, pos, "extend")
            return current
        return self.binary(op, current, value, pos)

    def stmt_return(self, s: S.Return, rest):
        self.emit_return(s.value, s.pos)

    def emit_return(self, expr, pos) -> None:
        """`return expr`: sets the result and the returned flag."""
        value = ConstValue(None) if expr is None else self.expr(expr, expected=self.return_type)
        if self.return_type is not None:
            value = self.convert_to(value, self.return_type, pos, "returned value")
        elif value.type is None:
            raise self.error(f"cannot return {value.describe}", pos)
        self.env.vars[RET] = value
        self.env.vars[RETURNED] = TRUE

    def stmt_break(self, s, rest):
        self._in_loop(s, "break")
        self.env.vars[BROKE] = TRUE

    def stmt_continue(self, s, rest):
        self._in_loop(s, "continue")
        self.env.vars[CONTINUED] = TRUE

    def _in_loop(self, s, what: str) -> None:
        if self.env.lookup(BROKE) is None:
            raise self.error(f"'{what}' outside a loop", s.pos)

    def stmt_raise(self, s: S.Raise, rest):
        try:
            message = self.exception_message(s.exc, s.pos)
        except CompileError:
            if not self.library:
                raise
            message = self.const(_static_message(s.exc))
        self.insert("prim::RaiseException", [message], [])
        self.env.vars[RAISED] = TRUE

    def exception_message(self, exc, pos) -> Value:
        """The message string of a raised exception ("ValueError: ...")."""
        if exc is None:
            return self.const("Exception")
        e = self.expr(exc)
        if isinstance(e, ExceptionClassSugar):
            e = ExceptionSugar(e.cls.__name__, [])
        if not isinstance(e, ExceptionSugar):
            raise self.error(f"exceptions must derive from BaseException, not {e.describe}", exc.pos)
        if not e.args:
            return self.const(e.name)
        if len(e.args) == 1 and isinstance(e.args[0], ConstValue):
            return self.const(f"{e.name}: {e.args[0].value}")
        parts = [e.args[0] if e.args[0].type == STR else self.call_ops([OPS["aten::str"]], [e.args[0]], {}, pos,
                                                                       "str")]
        return self.call_ops([OPS["aten::add.str"]], [ConstValue(f"{e.name}: "), parts[0]], {}, pos,
                             "add").as_value(self, pos)

    def stmt_assert(self, s: S.Assert, rest):
        cond, if_true, _ = self.condition(s.test)
        if isinstance(cond, ConstValue) and cond.value:
            return
        message = S.Call(s.pos, S.Name(s.pos, "AssertionError"), [s.msg] if s.msg else [], [])
        raise_stmt = S.Raise(s.pos, message)
        if isinstance(cond, ConstValue):
            self.stmt_raise(raise_stmt, [])
            return
        node = self.insert("prim::If", [cond.value], [])
        then_env, else_env = Env(self.env, node.add_block()), Env(self.env, node.add_block())
        with self.in_env(else_env):
            self.stmt_raise(raise_stmt, [])
        self.merge(node, [then_env, else_env])
        self.refine(self.env, if_true)

    # -- assignment -----------------------------------------------------------------------------------------------
    def assign(self, target: S.Expr, value: Sugared, pos) -> None:
        """Bind `value` to an assignment target: a name, a tuple of targets, an item."""
        if isinstance(target, S.Name):
            if isinstance(value, Undefined):
                raise self.error(value.message, pos)
            if isinstance(value, EmptyList):
                value = SimpleValue(value.value)  # a variable's list may be appended to: no longer a literal
            if isinstance(value, SimpleValue) and value.value.name.split(".")[0].isdigit() and \
                    value.value.node is not None and value.value.node.kind != "prim::Constant" and \
                    not target.id.startswith("$"):
                value.value.rename(target.id)  # `%h` reads better than `%12` in the printed graph
            self.env.set(target.id, value)
            if self.env.lookup(BOUND + target.id) is not None:
                self.env.set(BOUND + target.id, TRUE)  # (a loop defines it: see MaybeUnbound)
        elif isinstance(target, (S.TupleExpr, S.ListExpr)):
            items = value.unpack(self, len(target.elts), pos)
            for t, item in zip(target.elts, items):
                self.assign(t, item, pos)
        elif isinstance(target, S.Subscript):
            self.store_item(self.expr(target.value), self.index_expr(target.index), value, pos)
        elif isinstance(target, S.Attribute):
            raise self.error(f"assigning to attribute '{target.attr}' is not supported in scripted code (module "
                             f"attributes are constants; use a buffer and update it in place)", target.pos)
        else:
            raise self.error("cannot assign to this expression", target.pos)

    def store_item(self, base: Sugared, index: Sugared, value: Sugared, pos) -> None:
        """`base[index] = value`."""
        if not isinstance(base, SimpleValue):
            raise self.error(f"{base.describe} does not support item assignment", pos)
        setitem(self, base, index, value, pos)

    def convert_to(self, value: Sugared, declared: Type, pos, what: str) -> Sugared:
        """`value` where type `declared` is required (an int constant may become a float...)."""
        t = value.type
        if t is None:
            raise self.error(f"expected a value of type '{type_name(declared)}' for the {what} but found "
                             f"{value.describe}", pos)
        if isinstance(value, ConstValue) and declared == FLOAT and type(value.value) is int:
            return ConstValue(float(value.value))
        if declared == FLOAT and t == INT:
            return self.call_ops([OPS["aten::Float"]], [value], {}, pos, "float")
        if is_none(value) and isinstance(declared, OptionalType):
            node = self.insert("prim::Constant", [], [declared])
            return SimpleValue(node.output)
        if subtype(t, declared) or unify(t, declared) == declared and isinstance(declared, OptionalType):
            return value
        raise self.error(f"expected a value of type '{type_name(declared)}' for the {what} but found "
                         f"'{type_name(t)}'", pos, "type")

    def annotation(self, expr: S.Expr) -> Type:
        """The IR type an annotation names (string annotations are parsed first)."""
        if isinstance(expr, S.Const) and isinstance(expr.value, str):
            expr = self.compiler.parse_annotation(self.source, expr)
        try:
            return resolve_annotation(expr, self.scope_lookup)
        except AnnotationError as e:
            raise self.error(str(e), expr.pos) from None

    def scope_lookup(self, name: str):
        """The Python object `name` refers to where the function was written."""
        return self.scope.get(name, UNKNOWN)

    # -- expressions ----------------------------------------------------------------------------------------------
    # Expressions are lowered by generators run on an explicit stack (`run`), not by recursion:
    # source nests them thousands deep (a 3000-term sum, a chain of 1000 method calls), as CPython
    # allows, and Python's recursion limit would stop a recursive walk at a few hundred.
    def expr(self, e: S.Expr, expected: Type | None = None) -> Sugared:
        """Compile an expression; `expected` types empty containers and None."""
        return self.run(self.lower(e, expected))

    def run(self, work: GeneratorType):
        """The result of `work`, a lowering generator. A lowering generator yields what it needs
        first: an expression, (expression, expected type), or another lowering generator; the
        result is sent back to it (an exception is thrown into it, so its `with` blocks unwind)."""
        stack, value, error = [work], None, None
        while stack:
            try:
                need = stack[-1].throw(error) if error is not None else stack[-1].send(value)
            except StopIteration as done:
                stack.pop()
                value, error = done.value, None
            except Exception as e:  # thrown into the generator that asked, or raised below
                stack.pop()
                value, error = None, e
            else:
                if not isinstance(need, GeneratorType):
                    need = self.lower(*need) if isinstance(need, tuple) else self.lower(need)
                stack.append(need)
                value, error = None, None
        if error is not None:
            raise error
        return value

    def lower(self, e: S.Expr, expected: Type | None = None):
        """The lowering generator of an expression (its handler's, if that is one)."""
        handler = _EXPRESSIONS.get(type(e))
        if handler is None:
            raise self.error(f"{type(e).__name__} expressions are not supported", e.pos)
        result = handler(self, e, expected)
        if isinstance(result, GeneratorType):
            result = yield result
        return result

    def lower_all(self, needs: list):
        """A lowering generator of the results of `needs` (what a lowering generator may yield), in order."""
        out = []
        for need in needs:
            out.append((yield need))
        return out

    def expr_name(self, e: S.Name, expected):
        v = self.env.lookup(e.id)
        if isinstance(v, Undefined):
            raise self.error(v.message, e.pos)
        if isinstance(v, MaybeUnbound):
            return self._bound(e.id, v)
        if v is not None:
            return v
        if e.id in self.scope:
            return self.resolve_python(self.scope[e.id], e.pos, e.id)
        raise self.error(f"undefined value '{e.id}'", e.pos)

    def _bound(self, name: str, v: MaybeUnbound) -> Sugared:
        """A loop-defined variable, checked when it is read: Python raises if no iteration assigned it."""
        if isinstance(v.bound, ConstValue):
            if v.bound.value:
                return SimpleValue(v.value)
            raise self.error(f"'{name}' is defined only inside the loop at line {v.line}, which never runs")
        node = self.insert("prim::If", [v.bound.as_value(self, self.pos)], [])
        node.add_block()
        with self.graph.inserting_at_end(node.add_block()):
            self.insert("prim::RaiseException", [self.const(f"UnboundLocalError: local variable '{name}' (defined "
                                                            f"in the loop at line {v.line}) referenced before "
                                                            f"assignment")], [])
        return SimpleValue(v.value)

    def expr_const(self, e: S.Const, expected):
        if e.value is Ellipsis:
            raise self.error("'...' is only valid inside an index", e.pos)
        if e.value is None and isinstance(expected, OptionalType):
            return SimpleValue(self.insert("prim::Constant", [], [expected]).output)
        return ConstValue(e.value)

    def expr_fstring(self, e: S.FString, expected):
        values = yield self.lower_all(e.values)
        if all(isinstance(v, ConstValue) for v in values):
            check_format(self, e.format, e.pos)
            try:
                return ConstValue(checked(self, e.format.format(*(v.value for v in values)), e.pos))
            except (TypeError, ValueError):
                pass  # formatting raises when it runs, as in Python
        return self.call_ops([OPS["aten::format"]], [ConstValue(e.format), TupleSugar(values)], {}, e.pos, "format")

    def expr_attribute(self, e: S.Attribute, expected):
        value = yield e.value
        return value.attr(self, e.attr, e.pos)

    def expr_subscript(self, e: S.Subscript, expected):
        value = yield e.value
        index = yield self.lower_index(e.index)
        return value.getitem(self, index, e.pos)

    def index_expr(self, e: S.Expr) -> Sugared:
        """An index: slices, tuples of items and `...` as well as expressions."""
        return self.run(self.lower_index(e))

    def lower_index(self, e: S.Expr):
        """The lowering generator of an index (see index_expr)."""
        if isinstance(e, S.Slice):
            bounds = yield self.lower_all([b if b is not None else given(None) for b in (e.lower, e.upper, e.step)])
            return SliceSugar(*bounds)
        if isinstance(e, S.TupleExpr):
            return TupleSugar((yield self.lower_all([self.lower_index(x) for x in e.elts])))
        if isinstance(e, S.Const) and e.value is Ellipsis:
            return ConstValue(Ellipsis)
        return (yield e)

    def expr_call(self, e: S.Call, expected):
        func = yield e.func
        args = []
        for a in e.args:
            if isinstance(a, S.Starred):
                args += self._spread(a.pos, (yield a.value))
            else:
                args.append((yield a))
        kwargs = {}
        for name, value in e.keywords:
            items = self._spread_mapping(value.pos, (yield value)) if name is None else [(name, (yield value))]
            for key, item in items:
                if key in kwargs:
                    raise self.error(f"keyword argument '{key}' repeated", e.pos)
                kwargs[key] = item
        return func.call(self, args, kwargs, e.pos)

    def _spread(self, pos, value: Sugared) -> list:
        """The items of `*value` in a call: a tuple (or anything else of known length)."""
        items = self.iteration(value, pos)
        if not isinstance(items, Unrolled):
            raise self.error(f"*{_describe(value)} in a call: only tuples of known length can be spread into "
                             f"arguments in scripted code", pos)
        return items.items

    def _spread_mapping(self, pos, value: Sugared) -> list:
        """The (name, value) pairs of `**value` in a call: a dict known at compile time."""
        if not hasattr(value, "table"):
            raise self.error(f"**{_describe(value)} in a call: only dicts known at compile time (module-level "
                             f"tables) can be spread into keyword arguments in scripted code", pos)
        return [(key, value.getitem(self, ConstValue(key), pos)) for key in value.table]

    def expr_binop(self, e: S.BinOp, expected):
        left = yield e.left
        right = yield e.right
        return self.binary(e.op, left, right, e.pos)

    def binary(self, op: str, left: Sugared, right: Sugared, pos) -> Sugared:
        """`left op right`: folded for constants (within the limits of limits.py), else the op
        family for tensors, numbers, strings or lists."""
        if isinstance(left, ConstValue) and isinstance(right, ConstValue) and op in _FOLD:
            check_fold(self, op, left.value, right.value, pos)
            try:
                folded = _FOLD[op](left.value, right.value)
            except (ArithmeticError, TypeError, ValueError):
                folded = None  # the op raises when it runs, as Python would
            if folded is not None and not isinstance(folded, complex):  # (-8) ** 0.5 is complex in Python
                return ConstValue(checked(self, folded, pos))
        if isinstance(left, (TupleSugar, ConstValue)) and isinstance(right, (TupleSugar, ConstValue)) and \
                isinstance(left.type, TupleType) and op in ("+", "*"):
            return _tuple_arithmetic(left, op, right, self, pos)
        tensors = isinstance(left.type, TensorType) or isinstance(right.type, TensorType)
        if op == "+" and left.type == STR and right.type == STR:
            return self.call_ops([OPS["aten::add.str"]], [left, right], {}, pos, "+")
        if op == "+" and (isinstance(left.type, ListType) or
                          isinstance(right.type, ListType) and isinstance(left.type, TupleType)):
            return self.call_ops([OPS["aten::add.t"]], [left, right], {}, pos, "+")
        if op == "*" and isinstance(left.type, (ListType, TupleType)) and right.type == INT:
            return self.call_ops([OPS["aten::mul.left_t"]], [left, right], {}, pos, "*")
        name = (_TENSOR_BINARY if tensors else _SCALAR_BINARY).get(op)
        if name is None:
            raise self.error(f"the operator '{op}' is not supported for {_describe(left)} and {_describe(right)}", pos)
        ops = family(name) if tensors else [o for o in family(name) if "." in o.name]
        if not tensors and left.type in (INT, FLOAT, BOOL) and right.type in (INT, FLOAT, BOOL) or tensors:
            return self.call_ops(ops, [left, right], {}, pos, f"'{op}'")
        raise self.error(f"unsupported operand types for {op}: '{_describe(left)}' and '{_describe(right)}'", pos)

    def expr_unaryop(self, e: S.UnaryOp, expected):
        x = yield e.operand
        if e.op == "not":
            return self.negate(self.to_bool(x, e.pos), e.pos)
        if isinstance(x, ConstValue) and type(x.value) in ((int, bool) if e.op == "~" else (int, float, bool)):
            return ConstValue({"-": lambda v: -v, "+": lambda v: +v, "~": lambda v: ~v}[e.op](x.value))
        if e.op == "+":
            return x
        if e.op == "-":
            return self.call_family("neg", [x], {}, e.pos)
        if isinstance(x.type, TensorType):
            return self.call_ops([OPS["aten::bitwise_not"]], [x], {}, e.pos, "~")
        raise self.error(f"bad operand type for unary {e.op}: '{_describe(x)}'", e.pos)

    def expr_boolop(self, e: S.BoolOp, expected):
        return (yield self.lower_bool_value(e))

    def expr_compare(self, e: S.Compare, expected):
        left = yield e.left
        result = None
        for op, right_expr in zip(e.ops, e.comparators):
            right = yield right_expr
            c = self.compare(op, left, right, e.pos)
            result = c if result is None else self._and_values(result, c, e.pos)
            left = right
        return result

    def _and_values(self, a: Sugared, b: Sugared, pos) -> Sugared:
        if isinstance(a, ConstValue) or isinstance(b, ConstValue):
            const, other = (a, b) if isinstance(a, ConstValue) else (b, a)
            return other if const.value else FALSE
        return self.call_ops([OPS["aten::__and__.bool"]], [a, b], {}, pos, "and")

    def compare(self, op: str, left: Sugared, right: Sugared, pos) -> Sugared:
        """`left op right` for comparison operators, `in`, `is`."""
        if op in ("is", "is not"):
            return self._identity(op, left, right, pos)
        if op in ("in", "not in"):
            found = self.contains(right, left, pos)
            return found if op == "in" else self.negate(found, pos)
        if isinstance(left, ConstValue) and isinstance(right, ConstValue):
            try:
                return ConstValue(_FOLD[op](left.value, right.value))
            except TypeError:
                pass  # not comparable: refused below
        if op in ("==", "!=") and (is_none(left) or is_none(right)):
            return self._identity("is" if op == "==" else "is not", left, right, pos)
        lt, rt = left.type, right.type
        if op in ("==", "!=") and isinstance(lt, (ListType, TupleType)) and isinstance(rt, (ListType, TupleType)):
            return self._compare_sequences(op, left, right, pos)
        if isinstance(lt, TensorType) or isinstance(rt, TensorType) or {lt, rt} <= {INT, FLOAT, BOOL}:
            ops = family(_COMPARE[op])
            if not (isinstance(lt, TensorType) or isinstance(rt, TensorType)):
                ops = [o for o in ops if "." in o.name]
            return self.call_ops(ops, [left, right], {}, pos, f"'{op}'")
        if op in ("==", "!=") and lt == rt and lt is not None:
            return self.call_family(_COMPARE[op], [left, right], {}, pos)
        raise self.error(f"cannot compare {_describe(left)} and {_describe(right)} with '{op}'", pos)

    def _compare_sequences(self, op: str, left: Sugared, right: Sugared, pos) -> Sugared:
        """Lists (and a list and a tuple: a tuple of unknown length is a list here) compare item by
        item with aten::eq.list; two tuples of known length item by item at compile time."""
        if isinstance(left.type, TupleType) and isinstance(right.type, TupleType):
            a, b = self.iteration(left, pos).items, self.iteration(right, pos).items
            if len(a) != len(b):
                return ConstValue(op == "!=")
            result = TRUE
            for x, y in zip(a, b):
                result = self._and_values(result, self.compare("==", x, y, pos), pos)
            return result if op == "==" else self.negate(result, pos)
        return self.call_ops([OPS[f"aten::{_COMPARE[op]}.list"]], [left, right], {}, pos, op)

    def _identity(self, op: str, left: Sugared, right: Sugared, pos) -> Sugared:
        if is_none(right) or is_none(left):
            other = left if is_none(right) else right
            cond, _, _ = self._is_none(other, "", pos)
        elif left.type is None or right.type is None:
            cond = ConstValue(left is right)
        else:
            cond = SimpleValue(self.insert("aten::__is__", [left.as_value(self, pos), right.as_value(self, pos)],
                                           [BOOL]).output)
        return cond if op == "is" else self.negate(cond, pos)

    def contains(self, container: Sugared, item: Sugared, pos) -> Sugared:
        """`item in container`."""
        if hasattr(container, "contains"):
            return container.contains(self, item, pos)
        if isinstance(container, (TupleSugar, ConstValue)) and isinstance(container.iterate(self, pos), Unrolled):
            result = FALSE
            for candidate in container.iterate(self, pos).items:
                eq = self.compare("==", item, candidate, pos)
                result = eq if result is FALSE else self._or_values(result, eq, pos)
            return result
        t = container.type
        if isinstance(t, (ListType, DictType)) or t == STR:
            return self.call_ops([OPS["aten::__contains__"]], [container, item], {}, pos, "in")
        raise self.error(f"'in' is not supported for {_describe(container)}", pos)

    def _or_values(self, a: Sugared, b: Sugared, pos) -> Sugared:
        if isinstance(a, ConstValue) or isinstance(b, ConstValue):
            const, other = (a, b) if isinstance(a, ConstValue) else (b, a)
            return TRUE if const.value else other
        return self.call_ops([OPS["aten::__or__.bool"]], [a, b], {}, pos, "or")

    def expr_ifexp(self, e: S.IfExp, expected):
        cond, if_true, if_false = yield self.lower_condition(e.test)
        if isinstance(cond, ConstValue):
            return (yield (e.body if cond.value else e.orelse, expected))
        return (yield self.lower_if_value(cond, (e.body, expected), (e.orelse, expected), e.pos, if_true, if_false))

    def expr_tuple(self, e: S.TupleExpr, expected):
        hints = expected.elems if isinstance(expected, TupleType) and len(expected.elems) == len(e.elts) else \
            [None] * len(e.elts)
        items = yield self.lower_all(list(zip(e.elts, hints)))
        if all(isinstance(i, ConstValue) for i in items):
            return ConstValue(tuple(i.value for i in items))
        return TupleSugar(items)

    def expr_list(self, e: S.ListExpr, expected):
        hint = expected.elem if isinstance(expected, ListType) else None
        items = yield self.lower_all([(x, hint) for x in e.elts])
        if not items:
            return self.empty_list(hint or TENSOR, e.pos)
        values = [i.as_value(self, x.pos) for i, x in zip(items, e.elts)]
        elem = hint or _join(values)
        if elem is None:
            raise self.error(f"list items have different types: {', '.join(type_name(v.type) for v in values)}",
                             e.pos)
        values = [v if subtype(v.type, elem) else self.convert_to(SimpleValue(v), elem, e.pos, "list item")
                  .as_value(self, e.pos) for v in values]
        return SimpleValue(self.insert("prim::ListConstruct", values, [ListType(elem)]).output)

    def expr_dict(self, e: S.DictExpr, expected):
        hint = expected if isinstance(expected, DictType) else None
        keys = [k.as_value(self, x.pos) for k, x in zip((yield self.lower_all(e.keys)), e.keys)]
        values = yield self.lower_all([(v, hint.value if hint else None) for v in e.values])
        values = [v.as_value(self, x.pos) for v, x in zip(values, e.values)]
        key_t = hint.key if hint else (_join(keys) if keys else STR)
        value_t = hint.value if hint else (_join(values) if values else TENSOR)
        if key_t is None or value_t is None:
            raise self.error("dict keys (and values) must all have the same type", e.pos)
        inputs = [x for kv in zip(keys, values) for x in kv]
        return SimpleValue(self.insert("prim::DictConstruct", inputs, [DictType(key_t, value_t)]).output)

    def expr_comprehension(self, e: S.Comprehension, expected):
        return (yield self.lower_comprehension(e))

    def expr_slice(self, e: S.Slice, expected):
        raise self.error("a slice is only valid inside an index", e.pos)

    def expr_lambda(self, e: S.Lambda, expected):
        return LambdaSugar(self, e, self.env)

    def expr_unsupported(self, e: S.Unsupported, expected):
        raise self.error(f"{e.what} are not supported in scripted code", e.pos)

    def isinstance_check(self, x: Sugared, cls: Sugared, pos) -> Sugared:
        """`isinstance(x, cls)`: decided by the type, or a None check for an Optional; `cls` may be
        a tuple of classes (any of them)."""
        if isinstance(cls, TupleSugar):
            result = FALSE
            for c in cls.items:
                result = self._or_values(result, self.isinstance_check(x, c, pos), pos)
            return result
        if isinstance(cls, ClassSugar) and x.type is None and hasattr(x, "module") and isinstance(cls.cls, type):
            return ConstValue(isinstance(x.module, cls.cls))  # a module: its Python class decides
        target = self._class_target(cls, pos)
        if x.type is None or target is None:
            return FALSE  # no value of scripted code is an instance of a class without a type here
        static = isinstance_of(x.type, target)
        if static is not None:
            return ConstValue(static)
        cond, _, _ = self._is_none(x, "", pos)
        return self.negate(cond, pos) if target != NONE else cond

    def _class_target(self, cls: Sugared, pos):
        """The IR type isinstance() tests for (None for a tuple of classes or a class that names no type)."""
        if isinstance(cls, TupleSugar):
            return None
        if isinstance(cls, ClassSugar):
            return cls.ir_type
        raise self.error(f"isinstance() arg 2 must be a type, not {cls.describe}", pos)


class LambdaSugar(Sugared):
    """A lambda: a compile-time function whose body is compiled where it is called (possibly in
    another function's graph, when passed as an argument; it may then only capture constants)."""
    describe = "a lambda"

    def __init__(self, em: FunctionEmitter, node: S.Lambda, env: Env):
        self.em, self.node, self.env = em, node, env

    def call(self, em, args, kwargs, pos):
        if kwargs or len(args) != len(self.node.params):
            raise em.error(f"the lambda takes {len(self.node.params)} positional arguments", pos)
        sub = FunctionEmitter(self.em.compiler, self.em.source, self.em.fdef, self.em.scope, em.graph,
                              self.em.return_type, self.em.library)
        scope = _LambdaEnv(self.env, em.env.block, sub)
        scope.vars.update(zip(self.node.params, args))
        with sub.in_env(scope):
            sub.pos = self.node.pos
            return sub.expr(self.node.body)


class _LambdaEnv(Env):
    """The scope of a lambda's body: its parameters, then the scope it was written in."""

    def __init__(self, parent: Env, block, em: FunctionEmitter):
        super().__init__(parent, block)
        self.em = em

    def lookup(self, name: str):
        value = super().lookup(name)
        if isinstance(value, SimpleValue) and value.value.graph is not self.em.graph:
            raise self.em.error(f"the lambda uses '{name}', a run-time value of the function that defines it; a "
                                f"lambda called in another function may only capture constants", self.em.pos)
        return value


def _tuple_arithmetic(left, op: str, right, em, pos) -> Sugared:
    """`a + b` of tuples and `t * n` (n a constant), item by item."""
    items = em.iteration(left, pos).items
    if op == "+" and isinstance(right.type, TupleType):
        return TupleSugar(checked(em, items + em.iteration(right, pos).items, pos))
    if op == "*" and isinstance(right, ConstValue) and type(right.value) is int:
        check_fold(em, op, items, right.value, pos)
        return TupleSugar(items * right.value)
    if op == "*" and right.type == INT:  # a tuple of run-time length: a list here
        return em.call_ops([OPS["aten::mul.left_t"]], [left, right], {}, pos, "*")
    raise em.error(f"unsupported operand types for {op}: '{_describe(left)}' and '{_describe(right)}'", pos)


def _static_message(exc) -> str:
    """An exception's message without its runtime parts (library code whose message does not compile)."""
    name = getattr(getattr(exc, "func", None), "id", "Exception")
    args = getattr(exc, "args", [])
    text = args[0].format if args and isinstance(args[0], S.FString) else \
        args[0].value if args and isinstance(args[0], S.Const) else ""
    return f"{name}: {text}" if text else name


def _describe(s: Sugared) -> str:
    return type_name(s.type) if s.type is not None else s.describe


def _join(values: list) -> Type | None:
    t = values[0].type
    for v in values[1:]:
        t = unify(t, v.type)
        if t is None:
            return None
    return t


def _without_docstring(body: list) -> list:
    if body and isinstance(body[0], S.ExprStmt) and isinstance(body[0].value, S.Const):
        return body[1:]
    return body


_STATEMENTS = {
    S.ExprStmt: FunctionEmitter.stmt_expr, S.Pass: FunctionEmitter.stmt_pass,
    S.Assign: FunctionEmitter.stmt_assign, S.AnnAssign: FunctionEmitter.stmt_ann_assign,
    S.AugAssign: FunctionEmitter.stmt_aug_assign, S.Return: FunctionEmitter.stmt_return,
    S.Break: FunctionEmitter.stmt_break, S.Continue: FunctionEmitter.stmt_continue,
    S.Raise: FunctionEmitter.stmt_raise, S.Assert: FunctionEmitter.stmt_assert, S.If: FunctionEmitter.stmt_if,
    S.While: FunctionEmitter.stmt_while, S.For: FunctionEmitter.stmt_for,
    S.UnsupportedStmt: FunctionEmitter.stmt_unsupported, S.FunctionDef: FunctionEmitter.stmt_function_def,
}

_EXPRESSIONS = {
    S.Name: FunctionEmitter.expr_name, S.Const: FunctionEmitter.expr_const, S.FString: FunctionEmitter.expr_fstring,
    S.Attribute: FunctionEmitter.expr_attribute, S.Subscript: FunctionEmitter.expr_subscript,
    S.Call: FunctionEmitter.expr_call, S.BinOp: FunctionEmitter.expr_binop,
    S.UnaryOp: FunctionEmitter.expr_unaryop, S.BoolOp: FunctionEmitter.expr_boolop,
    S.Compare: FunctionEmitter.expr_compare, S.IfExp: FunctionEmitter.expr_ifexp,
    S.TupleExpr: FunctionEmitter.expr_tuple, S.ListExpr: FunctionEmitter.expr_list,
    S.DictExpr: FunctionEmitter.expr_dict, S.Comprehension: FunctionEmitter.expr_comprehension,
    S.Slice: FunctionEmitter.expr_slice, S.Unsupported: FunctionEmitter.expr_unsupported,
    S.Lambda: FunctionEmitter.expr_lambda,
}
