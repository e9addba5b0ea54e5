"""Control flow of the SSA lowering (a part of FunctionEmitter): `if` as prim::If with the changed
variables as outputs, conditions with the narrowing of Optional variables they imply, short-circuit
`and`/`or`, loops as prim::Loop with loop-carried values (or unrolled over items known at compile
time), comprehensions, and the exits (environment.py) that leave blocks early."""
from __future__ import annotations

from ...ir.graph import Value
from ...ir.types import ANY, BOOL, INT, NONE, STR, TENSOR, DictType, ListType, OptionalType, TupleType, Type
from . import syntax as S
from .annotations import subtype, type_name, unify, widen
from .builtins import INT_MAX, RangeSugar
from .environment import BOUND, BROKE, CONTINUED, EXITS, FALSE, RAISED, RET, RETURNED, TRUE, Env
from .values import ConstValue, Loop, MaybeUnbound, SimpleValue, Sugared, TupleSugar, Undefined, Unrolled, is_none


class ControlFlow:
    """The control-flow half of FunctionEmitter (which provides expr, assign, insert, error...)."""

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
            envs[0].vars[pending[0]] = TRUE  # the condition is that one flag
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
            with self.in_env(e):  # a branch that never gets here (or returned another type) yields a placeholder
                live_here = v is not None and not e.dead
                if live_here and isinstance(out_type, ListType) and isinstance(v.type, TupleType):
                    e.block.add_return(self._as_list(v, out_type, pos))  # (see sequence_join)
                    continue
                flows = live_here and subtype(v.type, out_type)
                e.block.add_return(v.as_value(self, pos) if flows else self.uninitialized(out_type))
        parent.set(name, SimpleValue(out))

    def _join_type(self, name: str, present: list, pos) -> Type:
        t = present[0][1].type
        for e, v in present[1:]:
            joined = unify(t, v.type) or sequence_join(t, v.type)
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
        return self.run(self.lower_condition(test))

    def lower_condition(self, test: S.Expr):
        """The lowering generator of `condition` (see FunctionEmitter.run)."""
        if isinstance(test, S.UnaryOp) and test.op == "not":
            cond, t, f = yield self.lower_condition(test.operand)
            return self.negate(cond, test.pos), f, t
        if isinstance(test, S.BoolOp):
            return (yield self.lower_bool_op(test))
        refined = self._refining_test(test)
        if refined is not None:
            return refined
        return self.to_bool((yield test), test.pos), {}, {}

    def _refining_test(self, test):
        """`x is None`, `x is not None`, `isinstance(x, T)` on a variable: the check plus refinements."""
        if isinstance(test, S.Compare) and len(test.ops) == 1 and test.ops[0] in ("is", "is not"):
            name = _name_compared_to_none(test)
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
        """Narrow Optional variables in `env` (a prim::unchecked_cast where the narrowing starts)."""
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
        """`not cond`."""
        if isinstance(cond, ConstValue):
            return ConstValue(not cond.value)
        return SimpleValue(self.insert("aten::__not__", [cond.value], [BOOL]).output)

    def lower_bool_op(self, e: S.BoolOp):
        """`a and b and c` (or `or`) as `(a and b) and c`, like TorchScript: each operand runs only
        when needed (a prim::If), with the refinements of the operands before it visible."""
        cond, if_true, if_false = yield self.lower_condition(e.values[0])
        for operand in e.values[1:]:
            cond, if_true, if_false = yield self._short_circuit(e.op, cond, if_true, if_false, operand, e.pos)
        return cond, if_true, if_false

    def _short_circuit(self, op: str, cond, if_true: dict, if_false: dict, operand: S.Expr, pos):
        """`cond op operand`, `cond` (with its refinements) being what the operands before gave."""
        short = FALSE if op == "and" else TRUE
        if isinstance(cond, ConstValue):
            runs = cond.value if op == "and" else not cond.value
            return (yield self.lower_condition(operand)) if runs else (short, {}, {})
        refinements = if_true if op == "and" else if_false
        result = {}

        def rest():
            self.refine(self.env, refinements)
            c, result["t"], result["f"] = yield self.lower_condition(operand)
            return c

        branches = (rest(), given(short)) if op == "and" else (given(short), rest())
        value = yield self.lower_if_value(cond, *branches, pos)
        if op == "and":
            return value, {**if_true, **result.get("t", {})}, {}
        return value, {}, {**if_false, **result.get("f", {})}

    def lower_if_value(self, cond: SimpleValue, then_need, else_need, pos, then_refine=None, else_refine=None):
        """A lowering generator: a prim::If with one output, the value each branch computes
        (`then_need`, `else_need`: what a lowering generator may yield for it)."""
        node = self.insert("prim::If", [cond.value], [])
        envs = [Env(self.env, node.add_block()), Env(self.env, node.add_block())]
        results = []
        for env, need, refinements in zip(envs, (then_need, else_need), (then_refine, else_refine)):
            with self.in_env(env):
                self.refine(env, refinements or {})
                results.append((yield need))
        if all(isinstance(r, ConstValue) for r in results) and results[0].value == results[1].value and \
                type(results[0].value) is type(results[1].value):
            return results[0]
        t = unify(results[0].type or ANY, results[1].type or ANY)
        as_list = t is None and sequence_join(results[0].type, results[1].type)
        if as_list:
            t = as_list
        if t is None or results[0].type is None or results[1].type is None:
            a, b = (type_name(r.type) if r.type is not None else r.describe for r in results)
            raise self.error(f"the two branches of the conditional expression have different types: '{a}' and '{b}'",
                             pos)
        out = node.add_output(t)
        for env, r in zip(envs, results):
            with self.in_env(env):
                env.block.add_return(self._as_list(r, t, pos) if as_list else r.as_value(self, pos))
        return SimpleValue(out)

    def _as_list(self, s: Sugared, t: ListType, pos) -> Value:
        """A tuple (or list) as a value of the list type `t` (see sequence_join)."""
        if isinstance(s.type, ListType):
            return s.as_value(self, pos)
        items = [i.as_value(self, pos) for i in s.unpack(self, len(s.type.elems), pos)]
        return self.insert("prim::ListConstruct", items, [t]).output

    # -- loops --------------------------------------------------------------------------------------------------
    def stmt_while(self, s: S.While, rest):
        if s.orelse:
            raise self.error("'else' clauses of loops are not supported in scripted code", s.pos)
        cond, _, _ = self.condition(s.test)
        if isinstance(cond, ConstValue) and not cond.value:
            return
        self.emit_loop(ConstValue(INT_MAX), cond, s.body, lambda i: None, s.pos, while_test=s.test,
                       used_after=_names_used(rest))

    def stmt_for(self, s: S.For, rest):
        if s.orelse:
            raise self.error("'else' clauses of loops are not supported in scripted code", s.pos)
        iterable = self.expr(s.iter)
        if isinstance(iterable, RangeSugar) and iterable.constant() is not None and self._indexes_modules(s):
            iteration = iterable.unrolled(self, s.iter.pos)
        else:
            iteration = self.iteration(iterable, s.iter.pos)
        if isinstance(iteration, Unrolled):
            self.emit_unrolled(iteration.items, lambda item: self.assign(s.target, item, s.pos), s.body)
        else:
            self.emit_loop(iteration.trip, TRUE, s.body,
                           lambda i: self.assign(s.target, iteration.item(self, i), s.pos), s.pos,
                           targets=frozenset(S.target_names(s.target, set())), used_after=_names_used(rest))

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
                  targets: frozenset = frozenset(), used_after: set = frozenset()) -> None:
        """A prim::Loop. Variables the body assigns that exist before the loop are loop-carried, and
        so are those it defines that the rest of the block uses (as in Python, they keep the value of
        the last iteration; before the first one they hold nothing); their types are found by
        compiling the body (again, if a type had to be widened)."""
        assigned = (S.assigned_names(body) | targets)
        escaping = [n for n in sorted(assigned & set(used_after)) if self.env.lookup(n) is None]
        carried = [n for n in sorted(assigned) if self._carried(n, pos) or n in escaping]
        carried += [BOUND + n for n in escaping]  # whether an iteration assigned it
        if S.contains(body, (S.Return,)):
            carried += [RETURNED, RET]
        types = {n: self._initial_type(n) for n in carried}
        for _ in range(4):
            retry = self._try_loop(trip, cond, body, bind, pos, while_test, carried, types)
            if not retry:
                break
        for n in escaping:  # read after the loop: Python raises if no iteration assigned it
            self.env.set(n, MaybeUnbound(self.env.lookup(n), self.env.lookup(BOUND + n), node_line(self, pos)))
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
        if name == RETURNED or name.startswith(BOUND):
            return BOOL
        before = self.env.lookup(name)
        return ANY if before is None else widen(before.type)  # (defined in the loop: learnt from its body)

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
        with self.in_env(body_env):
            bind(index)
            self.emit_block(body)
            yields = [self.env.lookup(n) for n in carried]
            if self._widen_types(carried, yields, types, pos, self.env.dead):
                node.destroy()
                return True
            block.add_return(self._continue_condition(while_test))
            for n, y in zip(carried, yields):
                block.add_return(y.as_value(self, pos) if y is not None and not self.env.dead
                                 else self.uninitialized(types[n]))
        for n in carried:
            self.env.set(n, SimpleValue(node.add_output(types[n], None if n.startswith("$") else n)))
        return False

    def _loop_init(self, name: str, t: Type, pos) -> Value:
        if name.startswith(BOUND):
            return self.const(False)
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

        def test_again():
            return (yield self.lower_condition(while_test))[0]
        return self.run(self.lower_if_value(SimpleValue(stop), given(FALSE), test_again(), while_test.pos)) \
            .as_value(self, while_test.pos)

    # -- comprehensions -----------------------------------------------------------------------------------------
    def lower_comprehension(self, e: S.Comprehension):
        """[elt for x in it if cond] (and dict comprehensions), a lowering generator: a list filled
        by a loop whose variables are local to the comprehension."""
        if len(e.generators) != 1:
            raise self.error("comprehensions with several 'for' clauses are not supported", e.pos)
        target, it, conds = e.generators[0]
        iteration = self.iteration((yield it), it.pos)
        if e.kind == "generator" and isinstance(iteration, Unrolled):
            items = yield self._unrolled_generator(e, target, conds, iteration.items)
            if items is not None:
                return TupleSugar(items)
        kind_list = e.kind != "dict"
        out = self.insert("prim::ListConstruct" if kind_list else "prim::DictConstruct", [],
                          [ListType(ANY) if kind_list else DictType(ANY, ANY)]).output
        adds = []
        scope = Env(self.env, self.env.block)
        with self.in_env(scope):
            if isinstance(iteration, Unrolled):
                for item in iteration.items:
                    self.assign(target, item, e.pos)
                    yield self._comprehension_body(out, e, conds, adds)
            else:
                yield self._comprehension_loop(iteration, target, self._comprehension_body(out, e, conds, adds), e.pos)
        self._set_container_type(out, adds, e.pos)
        return SimpleValue(out)

    def _unrolled_generator(self, e: S.Comprehension, target, conds: list, items: list):
        """A generator expression over items known at compile time (a tuple, a module list) whose
        conditions fold: its items, kept apart like a tuple's (None when a condition is only known
        at run time: it is then a list)."""
        out = []
        with self.in_env(Env(self.env, self.env.block)):
            for item in items:
                self.assign(target, item, e.pos)
                keep = TRUE
                for cond in conds:
                    keep, _, _ = yield self.lower_condition(cond)
                    if not isinstance(keep, ConstValue):
                        return None
                    if not keep.value:
                        break
                if keep.value:
                    out.append((yield e.elt))
        return out

    def _comprehension_body(self, out: Value, e: S.Comprehension, conds: list, adds: list):
        """One iteration: the item added to `out` (if the conditions hold); its type goes to `adds`."""
        ok, _, _ = (yield self.lower_condition(S.BoolOp(e.pos, "and", conds))) if conds else (TRUE, {}, {})
        if isinstance(ok, ConstValue):
            if ok.value:
                adds.append((yield self._comprehension_add(out, e)))
            return
        node = self.insert("prim::If", [ok.value], [])
        envs = [Env(self.env, node.add_block()), Env(self.env, node.add_block())]
        with self.in_env(envs[0]):
            adds.append((yield self._comprehension_add(out, e)))
        self.merge(node, envs)

    def _comprehension_loop(self, iteration: Loop, target, body, pos):
        node = self.insert("prim::Loop", [iteration.trip.as_value(self, pos), self.const(True)], [])
        block = node.add_block()
        index = block.add_param(INT, "i")
        env = Env(self.env, block)
        env.vars[BROKE] = env.vars[CONTINUED] = FALSE
        with self.in_env(env):
            self.assign(target, iteration.item(self, index), pos)
            yield body
            block.add_return(self.const(True))

    def _comprehension_add(self, out: Value, e: S.Comprehension):
        if e.kind != "dict":
            item = (yield e.elt).as_value(self, e.elt.pos)
            self.insert("aten::append.t", [out, item], [out.type])
            return item.type
        key = (yield e.key).as_value(self, e.key.pos)
        value = (yield e.elt).as_value(self, e.elt.pos)
        self.insert("aten::_set_item.dict", [out, key, value], [out.type])
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
            comprehension = S.Comprehension(pos, "list", S.Name(pos, "$item"), None, [(S.Name(pos, "$item"), x, [])])
            return self.run(self.lower_comprehension(comprehension)).as_value(self, pos)


def _names_used(stmts: list) -> set:
    """The names the statements read (or write)."""
    return {e.id for s in stmts for e in S.walk_exprs(s) if isinstance(e, S.Name)}


def given(value):
    """A lowering generator whose result is `value`, known already."""
    return value
    yield  # (makes this a generator)


def _public(name: str) -> str:
    return "the return value" if name == RET else name


def node_line(em, pos) -> int:
    """The file line of a position (for messages)."""
    p = pos if pos is not None else em.pos
    return p[0] + em.source.line_offset


def _name_compared_to_none(test: S.Compare):
    """The variable of `x is None` / `None is x` (None if the test has another form)."""
    left, right = test.left, test.comparators[0]
    if isinstance(left, S.Name) and isinstance(right, S.Const) and right.value is None:
        return left
    if isinstance(right, S.Name) and isinstance(left, S.Const) and left.value is None:
        return right
    return None


def sequence_join(a, b) -> ListType | None:
    """Tuples of different lengths (`hx or ()`, `x if c else (y, z)`) whose items all have one type
    join as a list of it, as a tuple of run-time length is a list elsewhere (None if they do not)."""
    elems = []
    for t in (a, b):
        if not isinstance(t, (TupleType, ListType)):
            return None
        elems += list(t.elems) if isinstance(t, TupleType) else [t.elem]
    if not elems:
        return None
    joined = elems[0]
    for e in elems[1:]:
        joined = unify(joined, e)
        if joined is None:
            return None
    return ListType(widen(joined))
