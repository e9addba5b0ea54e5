"""A scripting session: compiles functions and module methods from source into graphs, one graph
per function and *specialization* (the types of its unannotated arguments at a call site; library
code is also specialized on constant arguments, so `if return_indices:` folds), and says what
Python objects mean in scripted code (`resolve`).

Calls between compiled functions stay calls in `.graph` (`prim::CallFunction`, and
`prim::CallMethod` for module methods, with `node.callee` the callee's graph); `.inlined_graph`
flattens them."""
from __future__ import annotations

import inspect
import itertools
import sys
import types as pytypes
import typing

from tscript_runtime.graph_json import TensorRef
from tscript_runtime.ops import OPS, OpDef

from ..._tensor import Tensor
from ...ir.graph import Graph
from ...ir.passes.dce import eliminate_dead_code
from ...ir.passes.effects import has_side_effects
from ...ir.types import ANY, TENSOR, OptionalType, tensor_type
from . import syntax as S
from .annotations import AnnotationError, python_type, type_of_constant, widen
from .builtins import (MATH, NOT_CONSTANT, SPECIALS, BuiltinSugar, ClassSugar, ExceptionClassSugar, HandlerSugar,
                       OpSugar, OpTableSugar, PyModuleSugar, class_type, constant_value, dispatch_call, family,
                       is_named_tuple, is_python_module, math_sugar)
from .emitter import FunctionEmitter
from .errors import CompileError
from .library import SHIMS
from .methods import static_shape
from .parser import parse_function, parse_lambda, parse_text, refuse_generator
from .source import get_source, scope_of
from .module_values import (MethodSugar, ModuleClassSugar, ModuleSugar, RecordSugar, SuperSugar, attr_hint,
                            closes_over_modules, is_container, is_record, module_class, module_type, path_to)
from .values import ConstValue, NamedTupleSugar, SimpleValue, Sugared, TupleSugar

_constant_names = itertools.count()


class Compiler:
    """One `tscript.jit.script` call: the graphs compiled so far and what they need at run time."""

    def __init__(self, fallback_scope: dict | None = None):
        self.fallback_scope = fallback_scope or {}  # names of the frame that called script(), looked up last
        self.graphs: dict = {}             # specialization key -> (Graph, owner objects kept alive)
        self.active: set = set()           # keys being compiled (a second visit is recursion)
        self.failed: dict = {}             # key -> the CompileError compiling it raised
        self.python_functions: dict = {}   # name -> Python callable run by prim::PythonOp (@ignore)
        self.methods: dict = {}            # id(module) -> {method name: Graph} (first specialization)
        self.constant_results: dict = {}   # id(Graph) -> ConstValue it always returns (a folded result)
        self.named_results: dict = {}      # id(Graph) -> the NamedTuple class of its result

    # -- compiling ----------------------------------------------------------------------------------------
    def specialize(self, fn, module, args: list | None, kwargs: dict | None, pos=None, caller=None,
                   arg_types: list | None = None):
        """The graph of `fn` (a method of `module` if given) for this call, and the argument values
        the call passes (its graph inputs after `self`). Without a call (`args` None) unannotated
        parameters are Tensors (or the type of their default), or of `arg_types` (one type or None
        per parameter: the values an entry point was called with). Library code whose Python-level
        logic reads the sizes of a tensor (a parameter's, fixed when compiling) and does not
        compile without them is specialized on those sizes too."""
        try:
            return self._specialize(fn, module, args, kwargs, pos, caller, exact=False, arg_types=arg_types)
        except CompileError as e:
            if args is None or not _is_library(SHIMS.get(fn, fn)) or \
                    not any(static_shape(a) is not None for a in list(args) + list((kwargs or {}).values())):
                raise
            try:
                return self._specialize(fn, module, args, kwargs, pos, caller, exact=True)
            except CompileError:
                raise e from None

    def _specialize(self, fn, module, args, kwargs, pos, caller, exact: bool, arg_types=None):
        target = SHIMS.get(fn, fn)
        source = get_source(target)
        refuse_generator(target, source)
        fdef = parse_lambda(source, target) if target.__name__ == "<lambda>" else parse_function(source)
        graph = Graph()
        library = _is_library(target)
        em = FunctionEmitter(self, source, fdef, self.scope(target, fdef), graph, None, library)
        takes_self = module is not None and _takes_self(target, module)
        params = _parameters(em, fdef, takes_self)
        values = _bind_call(em, target, params, args, kwargs, pos, caller)
        given = list(arg_types or []) + [None] * len(params)
        specs = [_spec(em, p, v, library, caller, pos, exact, g) for p, v, g in zip(params, values, given)]
        key = (id(target), id(module), tuple(s[:2] for s in specs))
        if key in self.graphs:
            return self.graphs[key][0], [v for s, v in zip(specs, values) if s[0] == "in"]
        if key in self.failed:
            raise self.failed[key]
        if key in self.active:
            raise (caller or em).error(f"recursive call of '{target.__qualname__}' is not supported in scripted code",
                                       pos)
        self.active.add(key)
        try:
            self._emit(em, graph, fdef, module, params, specs, takes_self)
        except CompileError as e:
            self.failed[key] = e
            raise
        finally:
            self.active.discard(key)
        self.graphs[key] = (graph, (target, module))
        return graph, [v for s, v in zip(specs, values) if s[0] == "in"]

    def scope(self, fn, fdef: S.FunctionDef) -> dict:
        """What names mean in `fn`, as TorchScript resolves them: its closure cells, its globals,
        the builtins; then the names its evaluated annotations captured (a class defined inside a
        function that annotates with a local `Tensor = lib.Tensor`), then the caller's frame."""
        scope = scope_of(fn)
        for name, obj in _annotation_captures(fn, fdef):
            scope.setdefault(name, obj)
        for name, obj in self.fallback_scope.items():
            scope.setdefault(name, obj)
        return scope

    def _emit(self, em, graph: Graph, fdef, module, params: list, specs: list, takes_self: bool) -> None:
        bindings = {}
        if module is not None:
            em.self_module = ModuleSugar(self, module, graph.add_input(module_type(module), "self"), ())
            if takes_self:
                bindings[fdef.params[0].name] = em.self_module
        for p, spec in zip(params, specs):
            kind, what, _ = spec
            bindings[p.name] = SimpleValue(graph.add_input(what, p.name)) if kind == "in" else spec[2]
        declared = em.annotation(fdef.returns) if fdef.returns is not None else ANY
        em.return_type = None if declared == ANY else declared
        try:
            em.emit(bindings)
            eliminate_dead_code(graph)
            if isinstance(em.result, ConstValue):
                self.constant_results[id(graph)] = em.result
            named = em.result.cls if isinstance(em.result, NamedTupleSugar) else _named_return(em, fdef)
            if named is not None:
                self.named_results[id(graph)] = named
        except RecursionError:  # statements, lambdas, calls and the passes over nested blocks recurse
            raise em.error(f"too deeply nested to compile: Python's recursion limit (sys.getrecursionlimit() = "
                           f"{sys.getrecursionlimit()}) was reached") from None

    def call_function(self, em, fn, args: list, kwargs: dict, pos) -> Sugared:
        """A call of a Python function: prim::CallFunction of its compiled graph."""
        graph, inputs = self.specialize(fn, None, args, kwargs, pos, em)
        return self._call(em, graph, "prim::CallFunction", [v.as_value(em, pos) for v in inputs], _qualname(fn))

    def call_method(self, em, owner: "ModuleSugar", name: str, fn, args: list, kwargs: dict, pos,
                    public: bool = True) -> Sugared:
        """A call of a module's method: prim::CallMethod on the module value. A `public` method can
        then be called on the scripted module (not a property getter, nor a base class's method
        reached by super())."""
        graph, inputs = self.specialize(fn, owner.module, args, kwargs, pos, em)
        if public:
            self.methods.setdefault(id(owner.module), {}).setdefault(name, graph)
        values = [owner.as_value(em, pos)] + [v.as_value(em, pos) for v in inputs]
        return self._call(em, graph, "prim::CallMethod", values, name)

    def _call(self, em, graph: Graph, kind: str, values: list, name: str) -> Sugared:
        """The call node of a compiled graph; a result known at compile time stays a constant
        (`self._directions`, a helper returning a mode string), and a call that can do nothing
        else is left out."""
        const = self.constant_results.get(id(graph))
        if const is not None and not any(has_side_effects(n) for n in graph.nodes):
            return const
        node = em.insert(kind, values, [graph.outputs[0].type], {"name": name})
        node.callee = graph
        if const is not None:
            return const
        named = self.named_results.get(id(graph))
        if named is not None:
            return NamedTupleSugar(named, SimpleValue(node.output).unpack(em, len(named._fields), em.pos))
        return SimpleValue(node.output)

    # -- what Python objects mean ----------------------------------------------------------------------------
    def resolve(self, obj, pos, name: str, em) -> Sugared:
        """The sugared value of a Python object seen by scripted code (a global, a closure cell,
        a module attribute)."""
        c = constant_value(obj)
        if c is not NOT_CONSTANT:
            return ConstValue(c)
        if isinstance(obj, dict) and all(constant_value(k) is not NOT_CONSTANT for k in obj):
            return ConstDictSugar(self, obj, name)
        if isinstance(obj, (tuple, list)):
            items = [self.resolve(o, pos, name, em) for o in obj]
            if all(isinstance(i, ConstValue) for i in items):
                return ConstValue(tuple(i.value for i in items))
            return TupleSugar(items)
        if isinstance(obj, Tensor):
            return self._tensor_constant(em, obj)
        if isinstance(obj, module_class()):
            return self._submodule(obj, pos, name, em)
        if isinstance(obj, type) or typing.get_origin(obj) is not None or getattr(obj, "__module__", None) == "typing":
            return self._class(obj, pos, name, em)
        if is_record(obj) and not isinstance(obj, OpDef):
            return RecordSugar(self, obj, name)
        if is_python_module(obj):
            return PyModuleSugar(obj)
        return self._callable(obj, pos, name, em)

    def _submodule(self, obj, pos, name: str, em) -> Sugared:
        """A module reached by name (a closure cell, a global): the submodule of the module being
        compiled that it is, read through %self."""
        owner = getattr(em, "self_module", None)
        path = path_to(owner.module, obj) if owner is not None else None
        if path is None:
            raise em.error(f"'{name}' is a module that is not part of the scripted module; reach modules through "
                           f"self in scripted code", pos)
        for part in path:
            owner = owner.child(part)
        return owner

    def _class(self, obj, pos, name: str, em) -> Sugared:
        if isinstance(obj, type) and issubclass(obj, BaseException):
            return ExceptionClassSugar(obj)
        t = class_type(obj)
        if t is None and _hashable(obj) and obj in SPECIALS:
            return HandlerSugar(name, SPECIALS[obj])
        return ClassSugar(obj, t)  # (a class without an IR type: only isinstance() can use it)

    def _callable(self, obj, pos, name: str, em) -> Sugared:
        from ..._dispatch import dispatch
        from ..modules import ScriptFunction
        if obj is OPS:
            return OpTableSugar()
        if isinstance(obj, OpDef):
            return OpSugar(obj)
        if obj is dispatch:
            return HandlerSugar("dispatch", dispatch_call)
        if isinstance(obj, ScriptFunction):
            return ScriptFunctionSugar(self, obj)
        if getattr(obj, "_tscript_ignore", False):
            return IgnoredSugar(self, obj)
        if getattr(obj, "_tscript_unused", False):
            return UnusedSugar(obj)
        if _hashable(obj):
            if obj in SHIMS:
                return FunctionSugar(self, obj)
            if obj in SPECIALS:
                return HandlerSugar(name, SPECIALS[obj])
            if obj in MATH:
                return math_sugar(obj)
            op_name = _function_ops().get(id(obj))
            if op_name is not None and op_name[0] is obj:
                return BuiltinSugar(op_name[1], family(op_name[1]))
        if isinstance(obj, pytypes.FunctionType):
            return FunctionSugar(self, obj)
        raise em.error(f"'{name}' ({type(obj).__name__}) is not supported in scripted code", pos)

    def _tensor_constant(self, em, t: Tensor) -> Sugared:
        """A tensor captured from Python (a global or closure): a constant of the graph."""
        name = f"script_c{next(_constant_names)}"
        em.graph.constants[name] = t._data.copy()
        node = em.insert("prim::Constant", [], [tensor_type(t._data.dtype, t._data.shape)], {"value": TensorRef(name)})
        return SimpleValue(node.output)

    def class_of(self, s: Sugared, pos, em) -> Sugared:
        """`type(x)`: for a module, its class (whose static methods and constants can be read)."""
        if isinstance(s, ModuleSugar):
            return ModuleClassSugar(self, type(s.module))
        raise em.error(f"type() of {s.describe} is not supported in scripted code", pos)

    def parse_annotation(self, source, const: S.Const) -> S.Expr:
        """A string annotation ("Tensor", "List[int]") as an expression at the string's position."""
        text = " " * (const.pos[1] - 1) + const.value
        expr = parse_text(source, text, "eval_input", const.pos[0])
        for e in S.walk_exprs(expr):
            e.pos = (e.pos[0] + const.pos[0] - 1, e.pos[1])
        return expr

    # -- modules ----------------------------------------------------------------------------------------------
    def module_attribute(self, em, owner: "ModuleSugar", name: str, pos) -> Sugared:
        """`module.name`: a parameter or buffer (prim::GetAttr), a submodule, a constant, a method."""
        m = owner.module
        for table in (m._parameters, m._buffers):
            if name in table:
                t = table[name]
                if t is None:
                    return ConstValue(None)
                t_type = tensor_type(t._data.dtype, t._data.shape)
                node = em.insert("prim::GetAttr", [owner.as_value(em, pos)], [t_type], {"name": name})
                node.output.rename(attr_hint(name))
                return SimpleValue(node.output)
        if name in m._modules:
            child = m._modules[name]
            return ConstValue(None) if child is None else owner.child(name)
        if name == "training":
            return ConstValue(m.training)
        if is_container(m) and name in ("items", "values", "keys"):
            return HandlerSugar(name, lambda em, args, kwargs, pos: owner.container_view(em, name, pos))
        return self._class_attribute(em, owner, name, pos)

    def _class_attribute(self, em, owner: "ModuleSugar", name: str, pos) -> Sugared:
        m = owner.module
        static = inspect.getattr_static(type(m), name, None)
        if isinstance(static, (staticmethod, pytypes.FunctionType, property)):
            return self.class_member(em, owner, static, name, pos)
        if name in m.__dict__:
            value = m.__dict__[name]
            if isinstance(value, pytypes.FunctionType) and closes_over_modules(value):
                return MethodSugar(owner, name, value, public=False)  # its submodules are read through %self
            return self.resolve(value, pos, f"self.{name}", em)
        if static is not None:
            return self.resolve(static, pos, f"self.{name}", em)
        raise em.error(f"module '{type(m).__name__}' has no attribute '{name}'", pos)

    def class_member(self, em, owner: "ModuleSugar", static, name: str, pos) -> Sugared:
        """A method, static method or property found on the class of `owner` (or a base class, for
        super(); `name` then says which)."""
        if isinstance(static, staticmethod):
            return self.resolve(static.__func__, pos, name, em)
        public = "." not in name
        if isinstance(static, pytypes.FunctionType):
            if getattr(static, "_tscript_ignore", False):
                return IgnoredSugar(self, static.__get__(owner.module))
            if getattr(static, "_tscript_unused", False):
                return UnusedSugar(static)
            return MethodSugar(owner, name, static, public)
        if isinstance(static, property):  # compiled as a method (its result is often a constant)
            return MethodSugar(owner, name, static.fget, False).call(em, [], {}, pos)
        return self.resolve(static, pos, name, em)

    def super_of(self, em, obj: Sugared, cls, pos) -> Sugared:
        """`super()` in a method of a module."""
        if not isinstance(obj, ModuleSugar) or not isinstance(cls, type) or \
                cls not in type(obj.module).__mro__:
            raise em.error("super() is only supported in the methods of modules in scripted code", pos)
        return SuperSugar(obj, cls)

    def peek_attribute(self, s, name: str):
        """The submodule `s.name`, without emitting anything (None if it is not one)."""
        if isinstance(s, ModuleSugar) and s.module._modules.get(name) is not None:
            return s.child(name)
        return None

    @staticmethod
    def is_module_container(s) -> bool:
        """Is `s` a ModuleList / Sequential / ModuleDict?"""
        return isinstance(s, ModuleSugar) and is_container(s.module)

    @staticmethod
    def has_attribute(s: Sugared, name: str) -> bool:
        """`hasattr(s, name)` for modules (False for values)."""
        if isinstance(s, ModuleSugar):
            return hasattr(s.module, name)
        return False


# -- sugared values that need the compiler -----------------------------------------------------------------------
class ConstDictSugar(Sugared):
    """A Python dict with constant keys (a module-level table), read with constant keys."""

    def __init__(self, compiler: Compiler, table: dict, name: str):
        self.compiler, self.table, self.name = compiler, table, name

    @property
    def describe(self) -> str:
        return f"the dict '{self.name}'"

    def getitem(self, em, index, pos):
        if not isinstance(index, ConstValue):
            raise em.error(f"{self.describe} can only be indexed by a constant in scripted code", pos)
        if index.value not in self.table:
            raise em.error(f"{index.value!r} is not a key of {self.describe}", pos)
        return self.compiler.resolve(self.table[index.value], pos, self.name, em)

    def contains(self, em, item, pos):
        """`item in table` (a constant key)."""
        if not isinstance(item, ConstValue):
            raise em.error(f"'in' {self.describe} needs a constant key in scripted code", pos)
        return ConstValue(item.value in self.table)


class FunctionSugar(Sugared):
    """A Python function, compiled when called (prim::CallFunction)."""

    def __init__(self, compiler: Compiler, fn):
        self.compiler, self.fn = compiler, fn

    @property
    def describe(self) -> str:
        return f"the function '{_qualname(self.fn)}'"

    def call(self, em, args, kwargs, pos):
        return self.compiler.call_function(em, self.fn, args, kwargs, pos)


class ScriptFunctionSugar(Sugared):
    """A function scripted before (`@tscript.jit.script`): called with its own graph."""

    def __init__(self, compiler: Compiler, fn):
        self.compiler, self.fn = compiler, fn

    @property
    def describe(self) -> str:
        return f"the scripted function '{self.fn.name}'"

    def call(self, em, args, kwargs, pos):
        original = getattr(self.fn, "original", None)
        if original is None:
            values = [a.as_value(em, pos) for a in args]
        else:
            sugared = _bind_call(em, original, _parameters(em, parse_function(get_source(original)), False), args,
                                 kwargs, pos, em)
            values = [em.convert_to(v, g.type, pos, f"argument '{g.name}'").as_value(em, pos)
                      for v, g in zip(sugared, self.fn.graph.inputs)]
        self.compiler.python_functions.update(getattr(self.fn, "python_functions", {}))
        node = em.insert("prim::CallFunction", values, [self.fn.graph.outputs[0].type], {"name": self.fn.name})
        node.callee = self.fn.graph
        return SimpleValue(node.output)


class IgnoredSugar(Sugared):
    """A function marked @tscript.jit.ignore: left to Python, called through prim::PythonOp (only
    tscript can run it; saving such a graph is refused)."""

    def __init__(self, compiler: Compiler, fn):
        self.compiler, self.fn = compiler, fn

    @property
    def describe(self) -> str:
        return f"the ignored function '{_qualname(self.fn)}'"

    def call(self, em, args, kwargs, pos):
        if kwargs:
            raise em.error("keyword arguments to @ignore'd functions are not supported", pos)
        name = f"{_qualname(self.fn)}#{len(self.compiler.python_functions)}"
        self.compiler.python_functions[name] = self.fn
        node = em.insert("prim::PythonOp", [a.as_value(em, pos) for a in args], [_declared_return(self.fn)],
                         {"name": name})
        return SimpleValue(node.output)


class UnusedSugar(Sugared):
    """A function marked @tscript.jit.unused: not compiled; calling it raises."""

    def __init__(self, fn):
        self.fn = fn

    @property
    def describe(self) -> str:
        return f"the unused function '{_qualname(self.fn)}'"

    def call(self, em, args, kwargs, pos):
        message = f"{_qualname(self.fn)} was marked @tscript.jit.unused and cannot be called from scripted code"
        em.insert("prim::RaiseException", [em.const(message)], [])
        return SimpleValue(em.uninitialized(_declared_return(self.fn)))


# -- parameters and call binding --------------------------------------------------------------------------------
def _takes_self(fn, module) -> bool:
    """A method takes the module first; a function stored in a module attribute (`self.f = lambda
    x: ...`) does not, though it is compiled with the module (its closure may hold submodules)."""
    return not any(v is fn for v in vars(module).values())


def _parameters(em, fdef: S.FunctionDef, is_method: bool) -> list:
    params = fdef.params[1:] if is_method else fdef.params
    if is_method and not fdef.params:
        raise em.error("a method needs a 'self' parameter", fdef.pos)
    for p in params:
        if p.kind in ("varargs", "varkw"):
            raise em.error(f"*args and **kwargs parameters are not supported in scripted code ('{p.name}')", p.pos)
    return params


def _bind_call(em, fn, params: list, args, kwargs, pos, caller) -> list:
    """One Sugared per parameter: the call's arguments, then the defaults (None without a call)."""
    defaults = _defaults(fn)
    if args is None:
        return [None] * len(params)
    where = caller or em
    positional = [p for p in params if p.kind == "positional"]
    if len(args) > len(positional):
        raise where.error(f"{fn.__name__}() takes {len(positional)} positional arguments but {len(args)} were given",
                          pos)
    bound = {p.name: a for p, a in zip(positional, args)}
    names = {p.name for p in params}
    for k, v in (kwargs or {}).items():
        if k not in names:
            raise where.error(f"{fn.__name__}() got an unexpected keyword argument '{k}'", pos)
        if k in bound:
            raise where.error(f"{fn.__name__}() got multiple values for argument '{k}'", pos)
        bound[k] = v
    out = []
    for p in params:
        if p.name in bound:
            out.append(bound[p.name])
        elif p.name in defaults:
            out.append(em.compiler.resolve(defaults[p.name], pos, p.name, where))
        else:
            raise where.error(f"{fn.__name__}() missing required argument '{p.name}'", pos)
    return out


def _defaults(fn) -> dict:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return {}
    return {name: p.default for name, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}


def _spec(em, p: S.Param, value, library: bool, caller, pos, exact: bool = False, given=None) -> tuple:
    """How a parameter enters the graph: ("in", type, None) as an input, or ("const", key, value)
    baked in (constants of library calls, functions passed as arguments). An `exact` input keeps
    the sizes of a tensor whose sizes are fixed when compiling; without a call, an unannotated
    parameter takes the `given` type (the type of what an entry point was called with)."""
    if exact and value is not None and static_shape(value) is not None:
        return "in", value.type, None
    declared = em.annotation(p.annotation) if p.annotation is not None else ANY
    if declared != ANY:
        if value is None:
            return "in", declared, None
        value = (caller or em).convert_to(value, declared, pos, f"argument '{p.name}'")
        if library and isinstance(value, ConstValue):
            return "const", _const_key(value), value
        return "in", declared, None
    if value is None:  # no call site: Tensor, or the type of the default
        return "in", given if given is not None and given != ANY else _defaults_of_param(em, p), None
    if isinstance(value, ModuleSugar):
        raise (caller or em).error(f"modules cannot be passed as arguments in scripted code ('{p.name}')", pos)
    if value.type is None or library and isinstance(value, ConstValue):  # functions, lambdas, constants
        return "const", _const_key(value), value
    return "in", widen(value.type), None


def _defaults_of_param(em, p: S.Param):
    if p.default is None or isinstance(p.default, S.Const) and p.default.value is None:
        return TENSOR if p.default is None else OptionalType(TENSOR)
    if isinstance(p.default, S.Const):
        return type_of_constant(p.default.value)
    return TENSOR


def _const_key(value: Sugared):
    if isinstance(value, ConstValue):
        return ("value", type(value.value).__name__, repr(value.value))
    return ("object", id(getattr(value, "fn", getattr(value, "node", value))))


def _is_library(fn) -> bool:
    """Code of the tscript package itself (shims, nn.functional helpers): specialized on constants."""
    return getattr(fn, "__module__", "").startswith("tscript.")


def _annotation_captures(fn, fdef: S.FunctionDef):
    """(name, object) for the names in the function's annotations that Python evaluated when the
    function was defined (annotations are evaluated where the `def` runs, so a name they use
    need not be a global or a closure cell of the function)."""
    hints = getattr(inspect.unwrap(fn), "__annotations__", None) or {}
    annotated = [(p.name, p.annotation) for p in fdef.params] + [("return", fdef.returns)]
    for key, expr in annotated:
        obj = hints.get(key)
        if expr is None or obj is None or isinstance(obj, str):
            continue
        leaves = _typing_leaves(obj)
        for e in S.walk_exprs(expr):
            if isinstance(e, S.Name):
                match = [o for o in leaves if getattr(o, "__name__", None) == e.id]
                if match:
                    yield e.id, match[0]


def _typing_leaves(obj) -> list:
    """`obj` and, for a typing form like Optional[Tuple[Tensor, int]], every type inside it."""
    out = [obj]
    for arg in typing.get_args(obj):
        out += _typing_leaves(arg)
    return out


def _named_return(em, fdef: S.FunctionDef):
    """The NamedTuple class the function's return annotation names (None if it names another type)."""
    expr = fdef.returns
    if isinstance(expr, S.Const) and isinstance(expr.value, str) and expr.value.isidentifier():
        expr = S.Name(expr.pos, expr.value)
    cls = em.scope_lookup(expr.id) if isinstance(expr, S.Name) else None
    return cls if is_named_tuple(cls) else None


def _declared_return(fn):
    try:
        ann = inspect.signature(fn).return_annotation
    except (TypeError, ValueError):
        return TENSOR
    if ann is inspect.Signature.empty:
        return TENSOR
    try:
        return python_type(typing.get_type_hints(fn).get("return", ann) if isinstance(ann, str) else ann)
    except (AnnotationError, NameError, TypeError):
        return ANY


def _qualname(fn) -> str:
    return f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', getattr(fn, '__name__', 'fn'))}"


def _hashable(obj) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


_FUNCTION_OPS: dict = {}


def _function_ops() -> dict:
    """id(function) -> (function, op family) for the `tscript.<name>` functions named like an op
    family (the generated bindings and the hand-written ones of overloaded ops)."""
    if not _FUNCTION_OPS:
        import tscript
        for name, obj in vars(tscript).items():
            if callable(obj) and not isinstance(obj, type) and family(name):
                _FUNCTION_OPS[id(obj)] = (obj, name)
    return _FUNCTION_OPS
