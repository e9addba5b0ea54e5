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
from ...ir.types import ANY, TENSOR, ModuleType, OptionalType, tensor_type
from . import syntax as S
from .annotations import AnnotationError, python_type, type_of_constant, widen
from .builtins import (MATH, NOT_CONSTANT, SPECIALS, BuiltinSugar, ClassSugar, ExceptionClassSugar, HandlerSugar,
                       OpSugar, OpTableSugar, PyModuleSugar, class_type, constant_value, dispatch_call, family,
                       is_python_module, math_sugar)
from .emitter import FunctionEmitter
from .library import SHIMS
from .parser import parse_function, parse_text, refuse_generator
from .source import get_source, scope_of
from .values import ConstValue, SimpleValue, Sugared, TupleSugar, Unrolled

_constant_names = itertools.count()


class Compiler:
    """One `tscript.jit.script` call: the graphs compiled so far and what they need at run time."""

    def __init__(self):
        self.graphs: dict = {}             # specialization key -> (Graph, owner objects kept alive)
        self.active: set = set()           # keys being compiled (a second visit is recursion)
        self.python_functions: dict = {}   # name -> Python callable run by prim::PythonOp (@ignore)
        self.methods: dict = {}            # id(module) -> {method name: Graph} (first specialization)

    # -- compiling ----------------------------------------------------------------------------------------
    def specialize(self, fn, module, args: list | None, kwargs: dict | None, pos=None, caller=None):
        """The graph of `fn` (a method of `module` if given) for this call, and the argument values
        the call passes (its graph inputs after `self`). Without a call (`args` None) unannotated
        parameters are Tensors (or the type of their default)."""
        target = SHIMS.get(fn, fn)
        source = get_source(target)
        refuse_generator(target, source)
        fdef = parse_function(source)
        graph = Graph()
        library = _is_library(target)
        em = FunctionEmitter(self, source, fdef, scope_of(target), graph, None, library)
        params = _parameters(em, fdef, module is not None)
        values = _bind_call(em, target, params, args, kwargs, pos, caller)
        specs = [_spec(em, p, v, library, caller, pos) for p, v in zip(params, values)]
        key = (id(target), id(module), tuple(s[:2] for s in specs))
        if key in self.graphs:
            return self.graphs[key][0], [v for s, v in zip(specs, values) if s[0] == "in"]
        if key in self.active:
            raise (caller or em).error(f"recursive call of '{target.__qualname__}' is not supported in scripted code",
                                       pos)
        self.active.add(key)
        try:
            self._emit(em, graph, fdef, module, params, specs)
        finally:
            self.active.discard(key)
        self.graphs[key] = (graph, (target, module))
        return graph, [v for s, v in zip(specs, values) if s[0] == "in"]

    def _emit(self, em, graph: Graph, fdef, module, params: list, specs: list) -> None:
        bindings = {}
        if module is not None:
            bindings[fdef.params[0].name] = ModuleSugar(self, module, graph.add_input(_module_type(module), "self"), ())
        for p, spec in zip(params, specs):
            kind, what, _ = spec
            bindings[p.name] = SimpleValue(graph.add_input(what, p.name)) if kind == "in" else spec[2]
        declared = em.annotation(fdef.returns) if fdef.returns is not None else ANY
        em.return_type = None if declared == ANY else declared
        try:
            em.emit(bindings)
            eliminate_dead_code(graph)
        except RecursionError:  # statements, lambdas, calls and the passes over nested blocks recurse
            raise em.error(f"too deeply nested to compile: Python's recursion limit (sys.getrecursionlimit() = "
                           f"{sys.getrecursionlimit()}) was reached") from None

    def call_function(self, em, fn, args: list, kwargs: dict, pos) -> Sugared:
        """A call of a Python function: prim::CallFunction of its compiled graph."""
        graph, inputs = self.specialize(fn, None, args, kwargs, pos, em)
        values = [v.as_value(em, pos) for v in inputs]
        node = em.insert("prim::CallFunction", values, [graph.outputs[0].type], {"name": _qualname(fn)})
        node.callee = graph
        return SimpleValue(node.output)

    def call_method(self, em, owner: "ModuleSugar", name: str, fn, args: list, kwargs: dict, pos) -> Sugared:
        """A call of a module's method: prim::CallMethod on the module value."""
        graph, inputs = self.specialize(fn, owner.module, args, kwargs, pos, em)
        self.methods.setdefault(id(owner.module), {}).setdefault(name, graph)
        values = [owner.as_value(em, pos)] + [v.as_value(em, pos) for v in inputs]
        node = em.insert("prim::CallMethod", values, [graph.outputs[0].type], {"name": name})
        node.callee = graph
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
        if isinstance(obj, type) or typing.get_origin(obj) is not None:
            return self._class(obj, pos, name, em)
        if is_python_module(obj):
            return PyModuleSugar(obj)
        return self._callable(obj, pos, name, em)

    def _class(self, obj, pos, name: str, em) -> Sugared:
        if isinstance(obj, type) and issubclass(obj, BaseException):
            return ExceptionClassSugar(obj)
        t = class_type(obj)
        if t is None and _hashable(obj) and obj in SPECIALS:
            return HandlerSugar(name, SPECIALS[obj])
        if t is None:
            raise em.error(f"the class '{name}' cannot be used in scripted code", pos)
        return ClassSugar(obj, t)

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
                node.output.rename(_attr_hint(name))
                return SimpleValue(node.output)
        if name in m._modules:
            child = m._modules[name]
            return ConstValue(None) if child is None else owner.child(name)
        if name == "training":
            return ConstValue(m.training)
        if _is_container(m) and name in ("items", "values", "keys"):
            return HandlerSugar(name, lambda em, args, kwargs, pos: owner.container_view(name))
        return self._class_attribute(em, owner, name, pos)

    def _class_attribute(self, em, owner: "ModuleSugar", name: str, pos) -> Sugared:
        m = owner.module
        static = inspect.getattr_static(type(m), name, None)
        if isinstance(static, staticmethod):
            return self.resolve(static.__func__, pos, name, em)
        if isinstance(static, pytypes.FunctionType):
            if getattr(static, "_tscript_ignore", False):
                return IgnoredSugar(self, getattr(m, name))
            if getattr(static, "_tscript_unused", False):
                return UnusedSugar(static)
            return MethodSugar(owner, name, static)
        if isinstance(static, property):
            raise em.error(f"properties of modules are not supported in scripted code ('{name}')", pos)
        if name in m.__dict__:
            return self.resolve(m.__dict__[name], pos, f"self.{name}", em)
        if static is not None:
            return self.resolve(static, pos, f"self.{name}", em)
        raise em.error(f"module '{type(m).__name__}' has no attribute '{name}'", pos)

    def peek_attribute(self, s, name: str):
        """The submodule `s.name`, without emitting anything (None if it is not one)."""
        if isinstance(s, ModuleSugar) and s.module._modules.get(name) is not None:
            return s.child(name)
        return None

    @staticmethod
    def is_module_container(s) -> bool:
        """Is `s` a ModuleList / Sequential / ModuleDict?"""
        return isinstance(s, ModuleSugar) and _is_container(s.module)

    @staticmethod
    def has_attribute(s: Sugared, name: str) -> bool:
        """`hasattr(s, name)` for modules (False for values)."""
        if isinstance(s, ModuleSugar):
            return hasattr(s.module, name)
        return False


# -- sugared values that need the compiler -----------------------------------------------------------------------
class ModuleSugar(Sugared):
    """A module: `root` is the graph's %self (the module `base`), `path` the submodule names from
    it (a GetAttr chain, emitted where the module is used)."""

    def __init__(self, compiler: Compiler, module, root, path: tuple, base=None):
        self.compiler, self.module, self.root, self.path = compiler, module, root, path
        self.base = module if base is None else base

    @property
    def describe(self) -> str:
        return f"the module '{type(self.module).__name__}'"

    def child(self, name: str) -> "ModuleSugar":
        """The submodule `name`."""
        return ModuleSugar(self.compiler, self.module._modules[name], self.root, self.path + (name,), self.base)

    def as_value(self, em, pos):
        value, module = self.root, self.base
        for name in self.path:
            module = module._modules[name]
            node = em.insert("prim::GetAttr", [value], [_module_type(module)], {"name": name})
            node.output.rename(_attr_hint(name))
            value = node.output
        return value

    def attr(self, em, name, pos):
        return self.compiler.module_attribute(em, self, name, pos)

    def call(self, em, args, kwargs, pos):
        if isinstance(self.module, _containers()[1:]):
            raise em.error(f"{self.describe} is not callable; iterate over it or index it", pos)
        return self.compiler.call_method(em, self, "forward", type(self.module).forward, args, kwargs, pos)

    def getitem(self, em, index, pos):
        if not _is_container(self.module):
            return super().getitem(em, index, pos)
        keys = list(self.module._modules)
        if isinstance(index, ConstValue) and isinstance(index.value, str) and index.value in keys:
            return self.child(index.value)
        if isinstance(index, ConstValue) and type(index.value) is int and -len(keys) <= index.value < len(keys):
            return self.child(keys[index.value])
        if isinstance(index, ConstValue) and isinstance(index.value, (int, str)):
            raise em.error(f"index {index.value!r} is out of range for {self.describe} of {len(keys)} modules", pos)
        raise em.error(f"{self.describe} can only be indexed by a constant, or by the variable of a loop over "
                       f"range(len(...)) or enumerate(...) (which is then unrolled)", pos)

    def iterate(self, em, pos):
        if isinstance(self.module, _containers()[2]):
            return Unrolled([ConstValue(k) for k in self.module._modules])
        if _is_container(self.module):
            return Unrolled([self.child(k) for k in self.module._modules])
        return super().iterate(em, pos)

    def length(self, em, pos):
        if _is_container(self.module):
            return ConstValue(len(self.module._modules))
        return super().length(em, pos)

    def container_view(self, what: str) -> Sugared:
        """`keys()`, `values()` or `items()` of a module container, as tuples."""
        keys = list(self.module._modules)
        if what == "keys":
            return ConstValue(tuple(keys))
        if what == "values":
            return TupleSugar([self.child(k) for k in keys])
        return TupleSugar([TupleSugar([ConstValue(k), self.child(k)]) for k in keys])


class ModuleClassSugar(Sugared):
    """A module's class (`type(self)`): its static methods and class constants."""

    def __init__(self, compiler: Compiler, cls):
        self.compiler, self.cls = compiler, cls

    @property
    def describe(self) -> str:
        return f"the class '{self.cls.__name__}'"

    def attr(self, em, name, pos):
        static = inspect.getattr_static(self.cls, name, None)
        if isinstance(static, staticmethod):
            return self.compiler.resolve(static.__func__, pos, name, em)
        if static is None or isinstance(static, (pytypes.FunctionType, property, classmethod)):
            raise em.error(f"{self.describe} has no static attribute '{name}' usable in scripted code", pos)
        return self.compiler.resolve(static, pos, name, em)


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


class MethodSugar(Sugared):
    """A method of a module, compiled when called (prim::CallMethod)."""

    def __init__(self, owner: ModuleSugar, name: str, fn):
        self.owner, self.name, self.fn = owner, name, fn

    @property
    def describe(self) -> str:
        return f"the method '{self.name}'"

    def call(self, em, args, kwargs, pos):
        return self.owner.compiler.call_method(em, self.owner, self.name, self.fn, args, kwargs, pos)


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


def _spec(em, p: S.Param, value, library: bool, caller, pos) -> tuple:
    """How a parameter enters the graph: ("in", type, None) as an input, or ("const", key, value)
    baked in (constants of library calls, functions passed as arguments)."""
    declared = em.annotation(p.annotation) if p.annotation is not None else ANY
    if declared != ANY:
        if value is None:
            return "in", declared, None
        value = (caller or em).convert_to(value, declared, pos, f"argument '{p.name}'")
        if library and isinstance(value, ConstValue):
            return "const", _const_key(value), value
        return "in", declared, None
    if value is None:  # no call site: Tensor, or the type of the default
        default = _defaults_of_param(em, p)
        return "in", default, None
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


def _module_type(module) -> ModuleType:
    return ModuleType(type(module).__name__)


def _attr_hint(name: str) -> str:
    return f"_{name}" if name[:1].isdigit() else name


def _hashable(obj) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def _containers() -> tuple:
    from ...nn.modules.container import ModuleDict, ModuleList, Sequential
    return Sequential, ModuleList, ModuleDict


def _is_container(module) -> bool:
    return isinstance(module, _containers())


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

