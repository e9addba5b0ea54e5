"""Lowering one function's syntax tree to SSA IR: statements and expressions become nodes of a
`Graph`, `if` becomes `prim::If` and loops become `prim::Loop` with the variables they change as
block outputs and loop-carried values.

Early exits (`return` in a branch or a loop, `break`, `continue`, `raise`) are flag variables
(environment.py). When a branch certainly exits, the statements after the `if` move into the
other branch, so the common `if x is None: return y` needs no flag at run time; only exits that
may or may not happen guard the rest of the block with `prim::If`."""
from __future__ import annotations

import os
from contextlib import contextmanager

from tscript_runtime.ops import OPS

from ...ir.graph import Graph, Value
from ...ir.types import (ANY, BOOL, FLOAT, INT, NONE, STR, TENSOR, DictType, ListType, OptionalType, TensorType,
                         TupleType, Type)
from . import syntax as S
from .annotations import AnnotationError, resolve_annotation, subtype, type_name, unify, widen
from .builtins import INT_MAX, ClassSugar, ExceptionClassSugar, ExceptionSugar, RangeSugar, class_type, family, \
    isinstance_of
from .errors import CompileError
from .environment import BROKE, CONTINUED, EXITS, FALSE, RAISED, RET, RETURNED, TRUE, Env
from .indexing import SliceSugar, setitem
from .matching import match_call
from .values import ConstValue, EmptyList, Loop, SimpleValue, Sugared, TupleSugar, Undefined, Unrolled, is_none

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


class FunctionEmitter:
    """Emits the body of one function into `graph` (whose inputs the compiler has created)."""

    def __init__(self, compiler, source, fdef: S.FunctionDef, scope: dict, graph: Graph, return_type: Type | None,
                 self_module=None, library: bool = False):
        self.compiler = compiler
        self.source = source
        self.fdef = fdef
        self.scope = scope
        self.graph = graph
        self.return_type = return_type
        self.self_module = self_module
        self.library = library  # tscript's own code: an exception message it cannot compile is simplified
        self.env = Env(None, graph.block)
        self.pos = fdef.pos
        self.file = os.path.basename(source.file)
        self._loop_outer: list[Env] = []  # the env outside each enclosing prim::Loop

    # -- entry ------------------------------------------------------------------------------------------
    def emit(self, bindings: dict) -> None:
        """Emit the body with the parameters bound to `bindings`; the graph returns its result."""
        self.env.vars.update(bindings)
        end = (self.fdef.body[-1].pos if self.fdef.body else self.fdef.pos)
        self.emit_block(_without_docstring(self.fdef.body) + [S.Return(end, None)])  # falling off the end
        result = self.env.lookup(RET)
        if result is None:
            value = self.uninitialized(self.return_type or NONE)
        else:
            value = result.as_value(self, self.fdef.pos)
        self.graph.add_output(value)

    # -- helpers the sugared values use -------------------------------------------------------------------
    def error(self, message: str, pos=None):
        return self.source.error(message, pos if pos is not None else self.pos)

    def insert(self, kind: str, inputs, types: list, attrs: dict | None = None):
        node = self.graph.insert(kind, inputs, len(types), attrs, types)
        node.source = f"{self.file}:{self.pos[0] + self.source.line_offset}"
        return node

    def const(self, value) -> Value:
        return self.graph.constant(value)

    def uninitialized(self, t: Type) -> Value:
        return self.insert("prim::Uninitialized", [], [t]).output

    def call_ops(self, ops: list, args: list, kwargs: dict, pos, name: str) -> Sugared:
        return match_call(self, ops, args, kwargs, pos, name)

    def call_family(self, name: str, args: list, kwargs: dict, pos) -> Sugared:
        ops = family(name)
        if not ops:
            raise self.error(f"unknown builtin '{name}'", pos)
        return self.call_ops(ops, args, kwargs, pos, name)

    def resolve_python(self, obj, pos, name: str) -> Sugared:
        return self.compiler.resolve(obj, pos, name, self)

    def iteration(self, s: Sugared, pos):
        return s.iterate(self, pos)

    def length(self, s: Sugared, pos) -> Sugared:
        return s.length(self, pos)

    def has_attribute(self, s: Sugared, name: str) -> bool:
        return self.compiler.has_attribute(s, name)

    def empty_list(self, elem: Type, pos) -> Sugared:
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

    # -- if ---------------------------------------------------------------------------------------------------
    def stmt_if(self, s: S.If, rest) -> bool:
        cond, if_true, if_false = self.condition(s.test)
        if isinstance(cond, ConstValue):  # folded: compile only the branch that runs
            self.emit_block(s.body if cond.value else s.orelse)
            return False
        node = self.insert("prim::If", [cond.value], [])
        envs = [Env(self.env, node.add_block()), Env(self.env, node.add_block())]
        for env, body, refinements in zip(envs, (s.body, s.orelse), (if_true, if_false)):
            with self.in_env(env):
                self.refine(env, refinements)
                self.emit_block(body)
        moved = False
        if envs[0].terminated != envs[1].terminated and rest:
            live = envs[1] if envs[0].terminated else envs[0]
            with self.in_env(live):
                self.emit_block(rest)  # the other branch left: the rest only runs on this one
            moved = True
        self.merge(node, envs, s.pos)
        return moved

    def emit_guarded(self, rest: list) -> None:
        """The rest of a block after an exit that may have happened: `if <exited>: pass else: rest`."""
        if not rest:
            return
        pending = self.env.pending()
        flags = [self.env.flag(f) for f in pending]
        cond = flags[0].value
        for f in flags[1:]:
            cond = self.insert("aten::__or__.bool", [cond, f.value], [BOOL]).output
        node = self.insert("prim::If", [cond], [])
        envs = [Env(self.env, node.add_block()), Env(self.env, node.add_block())]
        for f in pending:
            envs[1].vars[f] = FALSE
        if len(pending) == 1:
            envs[0].vars[pending[0]] = TRUE  # the only flag that can be set here is
        with self.in_env(envs[1]):
            self.emit_block(rest)
        self.merge(node, envs)

    def merge(self, node, envs: list, pos=None) -> None:
        """Join the two branch environments of `node` (prim::If) into the current one: every
        variable either branch changed becomes an output of the If."""
        parent = self.env
        live = [e for e in envs if not e.dead]
        if not live:
            parent.vars[RAISED] = TRUE
        names = sorted(set().union(*(e.vars for e in envs)) - {RAISED})
        for name in names:
            self._merge_one(node, name, envs, live, pos)

    def _merge_one(self, node, name: str, envs: list, live: list, pos) -> None:
        parent = self.env
        values = {id(e): (e.lookup(name) if not (name in EXITS and e.lookup(name) is None) else FALSE)
                  for e in envs}
        live_values = [values[id(e)] for e in live]
        if not live_values:
            return
        first = live_values[0]
        if all(v is first for v in live_values) and (first is None or first is parent.lookup(name) or
                                                      isinstance(first, ConstValue) or first.type is None):
            if first is not None and first is not parent.lookup(name):
                parent.set(name, first)  # the same constant (or a value from before the if) everywhere
            return
        if any(isinstance(v, Undefined) for v in live_values):
            parent.set(name, next(v for v in live_values if isinstance(v, Undefined)))
            return
        missing = [e for e in live if values[id(e)] is None]
        if missing and not (name.startswith("$") or all(e.terminated for e in missing)):
            parent.set(name, Undefined(f"'{name}' is not defined in every branch of the if at line "
                                       f"{node_line(self, pos)}, so it cannot be used after it"))
            return
        present = [(e, values[id(e)]) for e in live if values[id(e)] is not None]
        if all(isinstance(v, ConstValue) for _, v in present) and len(present) == len(live) and \
                len({(type(v.value), v.value) for _, v in present}) == 1:
            parent.set(name, present[0][1])
            return
        for _, v in present:
            if v.type is None:
                parent.set(name, Undefined(f"'{name}' refers to different objects on the branches of the if, so "
                                           f"it cannot be used after it"))
                return
        out_type = self._join_type(name, present, pos)
        out = node.add_output(out_type, None if name.startswith("$") else name)
        for e in envs:
            v = values[id(e)]
            with self.in_env(e):
                ok = v is not None and not e.dead and subtype(v.type, out_type) or \
                    v is not None and not e.dead and unify(v.type, out_type) == out_type
                e.block.add_return(v.as_value(self, pos) if ok else self.uninitialized(out_type))
        parent.set(name, SimpleValue(out))

    def _join_type(self, name: str, present: list, pos) -> Type:
        t = present[0][1].type
        for e, v in present[1:]:
            joined = unify(t, v.type)
            if joined is None:
                returned = [e2 for e2, v2 in present if e2.returned]
                if returned and name != RET:  # a branch that returned never uses its values again
                    others = [v2.type for e2, v2 in present if not e2.returned]
                    return others[0] if others else t
                a, b = present[0][1].type, v.type
                raise self.error(f"type mismatch: '{_public(name)}' is '{type_name(a)}' in one branch of the if and "
                                 f"'{type_name(b)}' in the other", pos)
            t = joined
        return t

    # -- conditions ---------------------------------------------------------------------------------------------
    def condition(self, test: S.Expr):
        """(condition as a bool ConstValue or SimpleValue, refinements when true, when false).
        Refinements narrow Optional variables: `x is not None` makes `x` a T in the true branch."""
        if isinstance(test, S.UnaryOp) and test.op == "not":
            cond, t, f = self.condition(test.operand)
            return self.negate(cond, test.pos), f, t
        if isinstance(test, S.BoolOp):
            return self.bool_op(test)
        refined = self._refining_test(test)
        if refined is not None:
            return refined
        return self.to_bool(self.expr(test), test.pos), {}, {}

    def _refining_test(self, test):
        """`x is None`, `x is not None`, `isinstance(x, T)` on a variable: the check plus refinements."""
        if isinstance(test, S.Compare) and len(test.ops) == 1 and test.ops[0] in ("is", "is not"):
            name, other = _name_and_none(test)
            if name is not None:
                v = self.expr(name)
                cond, none_ref, some_ref = self._is_none(v, name.id, test.pos)
                if test.ops[0] == "is":
                    return cond, none_ref, some_ref
                return self.negate(cond, test.pos), some_ref, none_ref
        if isinstance(test, S.Call) and isinstance(test.func, S.Name) and test.func.id == "isinstance" and \
                len(test.args) == 2 and isinstance(test.args[0], S.Name) and self.env.lookup("isinstance") is None:
            v = self.expr(test.args[0])
            if isinstance(v.type, OptionalType):
                target = self._class_target(self.expr(test.args[1]), test.pos)
                if target is not None and not isinstance(target, str) and subtype(v.type.elem, target):
                    cond, none_ref, some_ref = self._is_none(v, test.args[0].id, test.pos)
                    return self.negate(cond, test.pos), some_ref, none_ref
        return None

    def _is_none(self, v: Sugared, name: str, pos):
        t = v.type
        if is_none(v) or t == NONE:
            return TRUE, {}, {}
        if not isinstance(t, OptionalType) and t != ANY:
            return FALSE, {}, {}
        cond = SimpleValue(self.insert("aten::__is__", [v.as_value(self, pos), self.const(None)], [BOOL]).output)
        elem = t.elem if isinstance(t, OptionalType) else ANY
        return cond, {name: NONE}, {name: elem}

    def refine(self, env: Env, refinements: dict) -> None:
        """Narrow variables in `env` (emitting prim::unchecked_cast at the start of its block)."""
        for name, t in refinements.items():
            current = env.lookup(name)
            if current is None or not isinstance(current.type, OptionalType) and current.type != ANY:
                continue
            if t == NONE:
                env.refined[name] = ConstValue(None)
            else:
                cast = self.insert("prim::unchecked_cast", [current.as_value(self, self.pos)], [t]).output
                env.refined[name] = SimpleValue(cast)

    def negate(self, cond: Sugared, pos) -> Sugared:
        if isinstance(cond, ConstValue):
            return ConstValue(not cond.value)
        return SimpleValue(self.insert("aten::__not__", [cond.value], [BOOL]).output)

    def to_bool(self, s: Sugared, pos) -> Sugared:
        """A condition: constants fold; tensors read their one element (aten::Bool.Tensor)."""
        if isinstance(s, ConstValue):
            return ConstValue(bool(s.value))
        if isinstance(s, TupleSugar):
            return ConstValue(bool(s.items))
        t = s.type
        if t == BOOL:
            return s
        if isinstance(t, TensorType):
            return self.call_ops([OPS["aten::Bool.Tensor"]], [s], {}, pos, "bool")
        if t in (INT, FLOAT):
            return self.call_ops([OPS["aten::Bool"]], [s], {}, pos, "bool")
        if isinstance(t, (ListType, DictType)) or t == STR:
            n = self.length(s, pos)
            return self.compare("!=", n, ConstValue(0), pos)
        what = type_name(t) if t is not None else s.describe
        raise self.error(f"cannot use a value of type '{what}' as a condition", pos)

    def bool_op(self, e: S.BoolOp):
        """`a and b` / `a or b`, short-circuit (b runs only when needed) with the refinements of
        `a` visible while `b` runs."""
        first, *others = e.values
        cond, if_true, if_false = self.condition(first)
        if not others:
            return cond, if_true, if_false
        rest = S.BoolOp(e.pos, e.op, others) if len(others) > 1 else others[0]
        short = FALSE if e.op == "and" else TRUE
        runs_rest = (lambda c: c.value) if e.op == "and" else (lambda c: not c.value)
        if isinstance(cond, ConstValue):
            if not runs_rest(cond):
                return short, {}, {}
            return self.condition(rest)
        refinements = if_true if e.op == "and" else if_false
        result = {}

        def rest_branch():
            self.refine(self.env, refinements)
            c, t, f = self.condition(rest)
            result["t"], result["f"] = t, f
            return c

        branches = (rest_branch, lambda: short) if e.op == "and" else (lambda: short, rest_branch)
        value = self.if_value(cond, *branches, e.pos)
        if e.op == "and":
            return value, {**if_true, **result.get("t", {})}, {}
        return value, {}, {**if_false, **result.get("f", {})}

    def if_value(self, cond: SimpleValue, then_fn, else_fn, pos, then_refine=None, else_refine=None) -> Sugared:
        """A prim::If with one output: the value `then_fn()` / `else_fn()` computes in each branch."""
        node = self.insert("prim::If", [cond.value], [])
        envs = [Env(self.env, node.add_block()), Env(self.env, node.add_block())]
        results = []
        for env, fn, refinements in zip(envs, (then_fn, else_fn), (then_refine, else_refine)):
            with self.in_env(env):
                self.refine(env, refinements or {})
                results.append(fn())
        if all(isinstance(r, ConstValue) for r in results) and results[0].value == results[1].value and \
                type(results[0].value) is type(results[1].value):
            return results[0]
        t = unify(results[0].type or ANY, results[1].type or ANY)
        if t is None or results[0].type is None or results[1].type is None:
            a, b = (type_name(r.type) if r.type is not None else r.describe for r in results)
            raise self.error(f"the two branches of the conditional expression have different types: '{a}' and '{b}'",
                             pos)
        out = node.add_output(t)
        for env, r in zip(envs, results):
            with self.in_env(env):
                env.block.add_return(r.as_value(self, pos))
        return SimpleValue(out)

    # -- loops --------------------------------------------------------------------------------------------------
    def stmt_while(self, s: S.While, rest):
        if s.orelse:
            raise self.error("'else' clauses of loops are not supported in scripted code", s.pos)
        cond, _, _ = self.condition(s.test)
        if isinstance(cond, ConstValue) and not cond.value:
            return
        self.emit_loop(ConstValue(INT_MAX), cond, s.body, lambda i: None, s.pos, while_test=s.test)

    def stmt_for(self, s: S.For, rest):
        if s.orelse:
            raise self.error("'else' clauses of loops are not supported in scripted code", s.pos)
        iterable = self.expr(s.iter)
        if isinstance(iterable, RangeSugar) and iterable.constant() is not None and self._indexes_modules(s):
            iteration = iterable.unrolled()
        else:
            iteration = self.iteration(iterable, s.iter.pos)
        if isinstance(iteration, Unrolled):
            self.emit_unrolled(iteration.items, lambda item: self.assign(s.target, item, s.pos), s.body)
        else:
            self.emit_loop(iteration.trip, TRUE, s.body,
                           lambda i: self.assign(s.target, iteration.item(self, i), s.pos), s.pos,
                           targets=_target_names(s.target))

    def _indexes_modules(self, s: S.For) -> bool:
        """Does the body index a module container with the loop variable (`self.layers[i]`)? Then
        the loop is unrolled, so each iteration calls a known module."""
        if not isinstance(s.target, S.Name):
            return False
        for stmt in s.body:
            for e in S.walk_exprs(stmt):
                if isinstance(e, S.Subscript) and isinstance(e.index, S.Name) and e.index.id == s.target.id and \
                        self.compiler.is_module_container(self.peek(e.value)):
                    return True
        return False

    def peek(self, e: S.Expr):
        """What a name or attribute chain refers to, without emitting anything (None if unknown)."""
        if isinstance(e, S.Name):
            return self.env.lookup(e.id)
        if isinstance(e, S.Attribute):
            return self.compiler.peek_attribute(self.peek(e.value), e.attr)
        return None

    def emit_unrolled(self, items: list, bind, body: list) -> None:
        """A loop over items known at compile time, emitted once per item."""
        saved = {f: self.env.lookup(f) for f in (BROKE, CONTINUED)}
        self.env.vars[BROKE] = self.env.vars[CONTINUED] = FALSE
        self._unroll_from(items, bind, body)
        for f, v in saved.items():
            if v is None:
                self.env.vars.pop(f, None)
            else:
                self.env.vars[f] = v

    def _unroll_from(self, items: list, bind, body: list) -> None:
        for k, item in enumerate(items):
            self.env.vars[CONTINUED] = FALSE
            if self.env.is_set(BROKE) or self.env.returned:
                return
            if isinstance(self.env.flag(BROKE), SimpleValue) or isinstance(self.env.flag(RETURNED), SimpleValue):
                node = self.insert("prim::If", [self._exit_value()], [])
                envs = [Env(self.env, node.add_block()), Env(self.env, node.add_block())]
                envs[1].vars[BROKE] = envs[1].vars[RETURNED] = FALSE
                with self.in_env(envs[1]):
                    self._unroll_from(items[k:], bind, body)
                self.merge(node, envs)
                return
            bind(item)
            self.emit_block(body)
        self.env.vars[CONTINUED] = FALSE

    def _exit_value(self) -> Value:
        """`$broke or $returned` as a bool value (both may be set in an unrolled loop)."""
        parts = [self.env.flag(f) for f in (BROKE, RETURNED)]
        dynamic = [p.value for p in parts if isinstance(p, SimpleValue)]
        cond = dynamic[0]
        for d in dynamic[1:]:
            cond = self.insert("aten::__or__.bool", [cond, d], [BOOL]).output
        return cond

    def emit_loop(self, trip: Sugared, cond: Sugared, body: list, bind, pos, while_test=None,
                  targets: frozenset = frozenset()) -> None:
        """A prim::Loop. Variables the body assigns that exist before the loop are loop-carried;
        their types are found by compiling the body (again, if a type had to be widened)."""
        assigned = (S.assigned_names(body) | targets)
        carried = [n for n in sorted(assigned) if self._carried(n, pos)]
        if S.contains(body, (S.Return,)):
            carried += [RETURNED, RET]
        types = {n: self._initial_type(n) for n in carried}
        for _ in range(4):
            retry = self._try_loop(trip, cond, body, bind, pos, while_test, carried, types)
            if not retry:
                break
        for n in sorted(assigned - set(carried)):
            if self.env.lookup(n) is None:
                self.env.set(n, Undefined(f"'{n}' is defined only inside the loop at line "
                                          f"{node_line(self, pos)}, so it cannot be used after it"))

    def _carried(self, name: str, pos) -> bool:
        v = self.env.lookup(name)
        if v is None or isinstance(v, Undefined):
            return False
        if v.type is None:
            raise self.error(f"'{name}' holds {v.describe} and cannot be reassigned inside a loop", pos)
        return True

    def _initial_type(self, name: str) -> Type:
        if name == RET:
            return self.return_type or ANY
        if name == RETURNED:
            return BOOL
        return widen(self.env.lookup(name).type)

    def _try_loop(self, trip, cond, body, bind, pos, while_test, carried: list, types: dict) -> bool:
        """Emit the loop with the carried `types`; True (and nothing emitted) if a type must widen."""
        inits = [self._loop_init(n, types[n], pos) for n in carried]
        node = self.insert("prim::Loop", [trip.as_value(self, pos), cond.as_value(self, pos)] + inits, [])
        block = node.add_block()
        index = block.add_param(INT, "i")
        body_env = Env(self.env, block)
        for n in carried:
            body_env.vars[n] = SimpleValue(block.add_param(types[n], None if n.startswith("$") else n))
        body_env.vars[BROKE] = body_env.vars[CONTINUED] = FALSE
        body_env.vars.setdefault(RETURNED, FALSE)
        self._loop_outer.append(self.env)
        try:
            with self.in_env(body_env):
                bind(index)
                self.emit_block(body)
                yields = [self.env.lookup(n) for n in carried]
                widened = self._widen_types(carried, yields, types, pos, self.env.dead)
                if widened:
                    node.destroy()
                    return True
                block.add_return(self._continue_condition(while_test))
                for n, y in zip(carried, yields):
                    block.add_return(y.as_value(self, pos) if y is not None and not self.env.dead
                                     else self.uninitialized(types[n]))
        finally:
            self._loop_outer.pop()
        for n in carried:
            self.env.set(n, SimpleValue(node.add_output(types[n], None if n.startswith("$") else n)))
        return False

    def _loop_init(self, name: str, t: Type, pos) -> Value:
        v = self.env.flag(name) if name in EXITS else self.env.lookup(name)
        if v is None or name == RET and t == ANY:
            return self.uninitialized(t)
        return v.as_value(self, pos)

    def _widen_types(self, carried, yields, types: dict, pos, dead: bool) -> bool:
        changed = False
        for n, y in zip(carried, yields):
            if y is None or y.type is None or dead:
                continue
            if types[n] == ANY and y.type != ANY:  # the return value's type, learnt from the body
                types[n] = y.type
                changed = True
                continue
            if subtype(y.type, types[n]):
                continue
            joined = unify(types[n], y.type)
            if joined is None:
                raise self.error(f"'{_public(n)}' is '{type_name(types[n])}' before the loop and "
                                 f"'{type_name(y.type)}' inside it; a variable keeps one type in a loop", pos)
            types[n] = widen(joined)
            changed = True
        return changed

    def _continue_condition(self, while_test) -> Value:
        """The body's last output: whether another iteration runs."""
        if any(self.env.is_set(f) for f in (BROKE, RETURNED)) or self.env.dead:
            return self.const(False)
        stops = [self.env.flag(f).value for f in (BROKE, RETURNED) if isinstance(self.env.flag(f), SimpleValue)]
        if not stops:
            if while_test is None:
                return self.const(True)
            return self.condition(while_test)[0].as_value(self, while_test.pos)
        stop = stops[0]
        for s in stops[1:]:
            stop = self.insert("aten::__or__.bool", [stop, s], [BOOL]).output
        if while_test is None:
            return self.insert("aten::__not__", [stop], [BOOL]).output
        return self.if_value(SimpleValue(stop), lambda: FALSE,
                             lambda: self.condition(while_test)[0], while_test.pos).as_value(self, while_test.pos)

    # -- comprehensions -----------------------------------------------------------------------------------------
    def comprehension(self, e: S.Comprehension) -> Sugared:
        """[elt for x in it if cond] (and dict comprehensions): a list filled by a loop whose
        variables are local to the comprehension."""
        if len(e.generators) != 1:
            raise self.error("comprehensions with several 'for' clauses are not supported", e.pos)
        target, it, conds = e.generators[0]
        kind_list = e.kind == "list"
        out = self.insert("prim::ListConstruct" if kind_list else "prim::DictConstruct", [],
                          [ListType(ANY) if kind_list else DictType(ANY, ANY)]).output
        adds = []

        def body():
            ok, _, _ = self.condition(S.BoolOp(e.pos, "and", conds)) if conds else (TRUE, {}, {})
            if isinstance(ok, ConstValue):
                if ok.value:
                    adds.append(self._comprehension_add(out, e))
                return
            node = self.insert("prim::If", [ok.value], [])
            envs = [Env(self.env, node.add_block()), Env(self.env, node.add_block())]
            with self.in_env(envs[0]):
                adds.append(self._comprehension_add(out, e))
            self.merge(node, envs)

        iteration = self.iteration(self.expr(it), it.pos)
        scope = Env(self.env, self.env.block)
        with self.in_env(scope):
            if isinstance(iteration, Unrolled):
                for item in iteration.items:
                    self.assign(target, item, e.pos)
                    body()
            else:
                self._comprehension_loop(iteration, target, body, e.pos)
        self._set_container_type(out, adds, e.pos)
        return SimpleValue(out)

    def _comprehension_loop(self, iteration: Loop, target, body, pos) -> None:
        node = self.insert("prim::Loop", [iteration.trip.as_value(self, pos), self.const(True)], [])
        block = node.add_block()
        index = block.add_param(INT, "i")
        env = Env(self.env, block)
        env.vars[BROKE] = env.vars[CONTINUED] = FALSE
        with self.in_env(env):
            self.assign(target, iteration.item(self, index), pos)
            body()
            block.add_return(self.const(True))

    def _comprehension_add(self, out: Value, e: S.Comprehension):
        if e.kind == "list":
            item = self.expr(e.elt).as_value(self, e.elt.pos)
            self.insert("aten::append.t", [out, item], [out.type])
            return item.type
        key = self.expr(e.key).as_value(self, e.key.pos)
        value = self.expr(e.elt).as_value(self, e.elt.pos)
        self.insert("aten::_set_item.dict", [out, key, value], [])
        return key.type, value.type

    def _set_container_type(self, out: Value, adds: list, pos) -> None:
        """The comprehension's element type, known once its element expression is compiled."""
        if not adds:
            out.type = ListType(TENSOR) if isinstance(out.type, ListType) else DictType(STR, TENSOR)
            return
        if isinstance(out.type, ListType):
            out.type = ListType(adds[0])
        else:
            out.type = DictType(adds[0][0], adds[0][1])
        for use in out.uses:
            for o in use.node.outputs:
                o.type = out.type

    def comprehension_of(self, iterable: Sugared, pos) -> Value:
        """`list(iterable)`: the items in a new list."""
        x = S.Name(pos, "$items")
        scope = Env(self.env, self.env.block)
        scope.vars["$items"] = iterable
        with self.in_env(scope):
            return self.comprehension(S.Comprehension(pos, "list", S.Name(pos, "$item"), None,
                                                      [(S.Name(pos, "$item"), x, [])])).as_value(self, pos)

    # -- assignment -----------------------------------------------------------------------------------------------
    def assign(self, target: S.Expr, value: Sugared, pos) -> None:
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
                         f"'{type_name(t)}'", pos)

    def annotation(self, expr: S.Expr) -> Type:
        if isinstance(expr, S.Const) and isinstance(expr.value, str):
            expr = self.compiler.parse_annotation(self.source, expr)
        try:
            return resolve_annotation(expr, self.scope_lookup)
        except AnnotationError as e:
            raise self.error(str(e), expr.pos) from None

    def scope_lookup(self, name: str):
        from .annotations import _UNKNOWN
        return self.scope.get(name, _UNKNOWN)

    # -- expressions ----------------------------------------------------------------------------------------------
    def expr(self, e: S.Expr, expected: Type | None = None) -> Sugared:
        handler = _EXPRESSIONS.get(type(e))
        if handler is None:
            raise self.error(f"{type(e).__name__} expressions are not supported", e.pos)
        return handler(self, e, expected)

    def expr_name(self, e: S.Name, expected):
        v = self.env.lookup(e.id)
        if isinstance(v, Undefined):
            raise self.error(v.message, e.pos)
        if v is not None:
            return v
        if e.id in self.scope:
            return self.resolve_python(self.scope[e.id], e.pos, e.id)
        raise self.error(f"undefined value '{e.id}'", e.pos)

    def expr_const(self, e: S.Const, expected):
        if e.value is Ellipsis:
            raise self.error("'...' is only valid inside an index", e.pos)
        if e.value is None and isinstance(expected, OptionalType):
            return SimpleValue(self.insert("prim::Constant", [], [expected]).output)
        return ConstValue(e.value)

    def expr_fstring(self, e: S.FString, expected):
        values = [self.expr(v) for v in e.values]
        if all(isinstance(v, ConstValue) for v in values):
            return ConstValue(e.format.format(*(v.value for v in values)))
        return self.call_ops([OPS["aten::format"]], [ConstValue(e.format), TupleSugar(values)], {}, e.pos, "format")

    def expr_attribute(self, e: S.Attribute, expected):
        return self.expr(e.value).attr(self, e.attr, e.pos)

    def expr_subscript(self, e: S.Subscript, expected):
        return self.expr(e.value).getitem(self, self.index_expr(e.index), e.pos)

    def index_expr(self, e: S.Expr) -> Sugared:
        if isinstance(e, S.Slice):
            return SliceSugar(*(None if b is None else self.expr(b) for b in (e.lower, e.upper, e.step)))
        if isinstance(e, S.TupleExpr):
            return TupleSugar([self.index_expr(x) for x in e.elts])
        if isinstance(e, S.Const) and e.value is Ellipsis:
            return ConstValue(Ellipsis)
        return self.expr(e)

    def expr_call(self, e: S.Call, expected):
        func = self.expr(e.func)
        args = [self.expr(a) for a in e.args]
        kwargs = {}
        for name, value in e.keywords:
            if name in kwargs:
                raise self.error(f"keyword argument '{name}' repeated", e.pos)
            kwargs[name] = self.expr(value)
        return func.call(self, args, kwargs, e.pos)

    def expr_binop(self, e: S.BinOp, expected):
        return self.binary(e.op, self.expr(e.left), self.expr(e.right), e.pos)

    def binary(self, op: str, left: Sugared, right: Sugared, pos) -> Sugared:
        if isinstance(left, ConstValue) and isinstance(right, ConstValue) and op in _FOLD:
            try:
                return ConstValue(_FOLD[op](left.value, right.value))
            except (ArithmeticError, TypeError, ValueError):
                pass  # the op raises when it runs, as Python would
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
        if e.op == "not":
            return self.negate(self.to_bool(self.expr(e.operand), e.pos), e.pos)
        x = self.expr(e.operand)
        if isinstance(x, ConstValue) and type(x.value) in (int, float, bool):
            return ConstValue({"-": lambda v: -v, "+": lambda v: +v, "~": lambda v: ~v}[e.op](x.value))
        if e.op == "+":
            return x
        if e.op == "-":
            return self.call_family("neg", [x], {}, e.pos)
        if isinstance(x.type, TensorType):
            return self.call_ops([OPS["aten::bitwise_not"]], [x], {}, e.pos, "~")
        raise self.error(f"bad operand type for unary {e.op}: '{_describe(x)}'", e.pos)

    def expr_boolop(self, e: S.BoolOp, expected):
        return self.bool_op(e)[0]

    def expr_compare(self, e: S.Compare, expected):
        left = self.expr(e.left)
        result = None
        for op, right_expr in zip(e.ops, e.comparators):
            right = self.expr(right_expr)
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
        if op in ("is", "is not"):
            return self._identity(op, left, right, pos)
        if op in ("in", "not in"):
            found = self.contains(right, left, pos)
            return found if op == "in" else self.negate(found, pos)
        if isinstance(left, ConstValue) and isinstance(right, ConstValue):
            return ConstValue(_FOLD[op](left.value, right.value))
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
        cond, if_true, if_false = self.condition(e.test)
        if isinstance(cond, ConstValue):
            return self.expr(e.body if cond.value else e.orelse, expected)
        return self.if_value(cond, lambda: self.expr(e.body, expected), lambda: self.expr(e.orelse, expected),
                             e.pos, if_true, if_false)

    def expr_tuple(self, e: S.TupleExpr, expected):
        hints = expected.elems if isinstance(expected, TupleType) and len(expected.elems) == len(e.elts) else \
            [None] * len(e.elts)
        items = [self.expr(x, h) for x, h in zip(e.elts, hints)]
        if all(isinstance(i, ConstValue) for i in items):
            return ConstValue(tuple(i.value for i in items))
        return TupleSugar(items)

    def expr_list(self, e: S.ListExpr, expected):
        hint = expected.elem if isinstance(expected, ListType) else None
        items = [self.expr(x, hint) for x in e.elts]
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
        keys = [self.expr(k).as_value(self, k.pos) for k in e.keys]
        values = [self.expr(v, hint.value if hint else None).as_value(self, v.pos) for v in e.values]
        key_t = hint.key if hint else (_join(keys) if keys else STR)
        value_t = hint.value if hint else (_join(values) if values else TENSOR)
        if key_t is None or value_t is None:
            raise self.error("dict keys (and values) must all have the same type", e.pos)
        inputs = [x for kv in zip(keys, values) for x in kv]
        return SimpleValue(self.insert("prim::DictConstruct", inputs, [DictType(key_t, value_t)]).output)

    def expr_comprehension(self, e: S.Comprehension, expected):
        return self.comprehension(e)

    def expr_slice(self, e: S.Slice, expected):
        raise self.error("a slice is only valid inside an index", e.pos)

    def expr_lambda(self, e: S.Lambda, expected):
        return LambdaSugar(self, e, self.env)

    def expr_unsupported(self, e: S.Unsupported, expected):
        raise self.error(f"{e.what} are not supported in scripted code", e.pos)

    def isinstance_check(self, x: Sugared, cls: Sugared, pos) -> Sugared:
        target = self._class_target(cls, pos)
        if x.type is None:
            return ConstValue(False)
        static = isinstance_of(x.type, target)
        if static is not None:
            return ConstValue(static)
        cond, _, _ = self._is_none(x, "", pos)
        return self.negate(cond, pos) if target != NONE else cond

    def _class_target(self, cls: Sugared, pos):
        if isinstance(cls, TupleSugar):
            raise self.error("isinstance() with a tuple of types is not supported; test each type", pos)
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
                              self.em.return_type, self.em.self_module, self.em.library)
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
        return TupleSugar(items + em.iteration(right, pos).items)
    if op == "*" and isinstance(right, ConstValue) and type(right.value) is int:
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


def _public(name: str) -> str:
    return "the return value" if name == RET else name


def node_line(em: FunctionEmitter, pos) -> int:
    p = pos if pos is not None else em.pos
    return p[0] + em.source.line_offset


def _target_names(t) -> frozenset:
    names: set = set()
    S._target_names(t, names)
    return frozenset(names)


def _name_and_none(test: S.Compare):
    left, right = test.left, test.comparators[0]
    if isinstance(left, S.Name) and isinstance(right, S.Const) and right.value is None:
        return left, right
    if isinstance(right, S.Name) and isinstance(left, S.Const) and left.value is None:
        return right, left
    return None, None


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
