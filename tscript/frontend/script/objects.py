"""What `tscript.jit.script` returns: `ScriptedFunction` and `ScriptedModule`, the ScriptFunction /
ScriptModule of modules.py plus what source compilation adds: Python signatures (keyword
arguments, defaults, argument type checks), compiled methods besides `forward` (`m.encode(x)`,
with `.graph`), `@export`ed entry points for `save`, and the Python functions of `@ignore`d calls.

Module attributes that are not tensors (`self.training`, sizes, flags) are compiled in as
constants, so a scripted module recompiles itself when the train/eval mode of any of its modules
changes (checked on every call)."""
from __future__ import annotations

import inspect

from ...ir.graph import Graph
from ...ir.types import BOOL, FLOAT, INT, STR, TensorType
from ..modules import ScriptFunction, ScriptModule
from .calltypes import argument_type, fits
from .errors import CompileError
from .library import SHIMS


class ScriptedFunction(ScriptFunction):
    """A function compiled from source. Called with a value of another type than an unannotated
    parameter was compiled for (a tuple where a Tensor was assumed), it is compiled again for the
    types of the call by `specializer` (types -> ScriptedFunction), once per combination."""

    def __init__(self, graph: Graph, fn, python_functions: dict, takes_self: bool = False, result_class=None,
                 specializer=None):
        super().__init__(graph, fn.__name__)
        self.original = fn                #: the Python function
        self.python_functions = python_functions
        self.result_class = result_class  #: the NamedTuple class of the result (None: a plain value)
        self._signature = python_signature(fn, takes_self)
        self._unannotated = {p.name for p in self._signature.parameters.values() if p.annotation is p.empty}
        self._specializer = specializer
        self._variants: dict = {}
        self.__doc__ = fn.__doc__

    def values(self, args: tuple, kwargs: dict) -> tuple:
        """The argument values of a Python call, in parameter order, defaults filled in."""
        return bind_values(self.name, self._signature, args, kwargs)

    def bind(self, args: tuple, kwargs: dict) -> tuple:
        """The graph's inputs (after %self) for a Python call: defaults filled in, types checked."""
        return self.check(self.values(args, kwargs))

    def check(self, values: tuple) -> tuple:
        """`values`, checked against the types of the graph's inputs."""
        inputs = self.graph.inputs[len(self.graph.inputs) - len(values):]
        for value, graph_input in zip(values, inputs):
            _check_argument(self.name, graph_input, value)
        return values

    def for_call(self, values: tuple) -> "ScriptedFunction":
        """The compilation of this function for `values`: this one, or one for their types when an
        unannotated parameter is given something its graph input does not take."""
        names = list(self._signature.parameters)
        inputs = self.graph.inputs[len(self.graph.inputs) - len(values):]
        odd = {n for n, v, i in zip(names, values, inputs) if not fits(i.type, v)}
        if not odd or self._specializer is None or not odd <= self._unannotated:
            return self
        types = tuple(argument_type(v) if n in self._unannotated else None for n, v in zip(names, values))
        if types not in self._variants:
            self._variants[types] = self._specializer(list(types))
        return self._variants[types]

    def __call__(self, *args, **kwargs):
        values = self.values(args, kwargs)
        fn = self.for_call(values)
        return fn.run_bound(fn.check(values))

    def run_bound(self, values: tuple, module=None):
        """Run on bound argument values (after `module`, for a method)."""
        out = self._run(values) if module is None else self._run(values, module)
        return self.result_class(*out) if self.result_class is not None else out

    def __repr__(self) -> str:
        return f"<tscript.jit.ScriptFunction {self.original.__qualname__}>"


def python_signature(fn, takes_self: bool) -> inspect.Signature:
    """The signature of a Python function (without `self` for a method)."""
    params = list(inspect.signature(fn).parameters.values())
    return inspect.Signature(params[1:] if takes_self else params)


def bind_values(name: str, signature: inspect.Signature, args: tuple, kwargs: dict) -> tuple:
    """The values of a call in parameter order, defaults filled in (TypeError as Python's)."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{name}(): {e}") from None
    bound.apply_defaults()
    return tuple(bound.arguments.values())


_PYTHON = {INT: (int,), FLOAT: (int, float), BOOL: (bool,), STR: (str,)}


def _check_argument(fn: str, graph_input, value) -> None:
    from ..._tensor import Tensor
    t = graph_input.type
    if isinstance(t, TensorType):
        ok = isinstance(value, Tensor)
    elif t in _PYTHON:
        ok = isinstance(value, _PYTHON[t]) and (t == BOOL or not isinstance(value, bool))
    else:
        return
    if not ok:
        raise TypeError(f"{fn}() expected a value of type '{'Tensor' if isinstance(t, TensorType) else t}' for "
                        f"argument '{graph_input.name}' but instead found type '{type(value).__name__}'")


class BoundMethod:
    """A compiled method of a scripted module, bound to it: call it, or read `.graph` / `.code`."""

    def __init__(self, fn: ScriptedFunction, module):
        self.fn, self.module = fn, module

    def __call__(self, *args, **kwargs):
        values = self.fn.values(args, kwargs)
        fn = self.fn.for_call(values)
        return fn.run_bound(fn.check(values), self.module)

    def __getattr__(self, name: str):
        return getattr(self.fn, name)

    def __repr__(self) -> str:
        return f"<bound scripted method {self.fn.name} of {type(self.module).__name__}>"


class ModuleSession:
    """The compiled graphs of a scripted module tree, recompiled when train/eval modes change.
    When `forward` does not compile for Tensors in its unannotated parameters, compiling it waits
    for the first call, whose argument types it then takes (`deferred` holds the error till then)."""

    def __init__(self, root, compile_tree):
        self.root = root
        self._compile_tree = compile_tree   # root -> (compiler, exports by id(module), deferred error or None)
        self._modes = None
        self.refresh()

    def refresh(self) -> None:
        """Recompile if the train/eval mode of any module changed since the last compilation."""
        modes = tuple(m.training for m in self.root.modules())
        if modes == self._modes:
            return
        compiler, exports, deferred = self._compile_tree(self.root)
        self.compiler, self.exports, self.deferred, self._modes = compiler, exports, deferred, modes
        self._functions: dict = {}
        self._called: dict = {}

    def function(self, module, name: str) -> ScriptedFunction | None:
        """The compiled method `name` of `module` (None if it was not compiled)."""
        graph = self.compiler.methods.get(id(module), {}).get(name)
        return None if graph is None else self._scripted(graph, module, name)

    def _scripted(self, graph: Graph, module, name: str) -> ScriptedFunction:
        if id(graph) not in self._functions:
            fn = _python_method(module, name)
            self._functions[id(graph)] = ScriptedFunction(graph, fn, self.compiler.python_functions, True,
                                                          self.compiler.named_results.get(id(graph)),
                                                          lambda types: self._specialized(module, name, types))
        return self._functions[id(graph)]

    def _specialized(self, module, name: str, types: list) -> ScriptedFunction:
        """The method compiled for arguments of `types` (None: as annotated or defaulted)."""
        graph, _ = self.compiler.specialize(_python_method(module, name), module, None, None, arg_types=types)
        return self._scripted(graph, module, name)

    def entry(self, module, name: str, args: tuple, kwargs: dict) -> tuple:
        """(the compilation of `module.name` to run for this call, the call's argument values), or
        (None, None) when the method was not compiled."""
        self.refresh()
        fn = self.function(module, name)
        if fn is None and self.deferred is not None and module is self.root and name == "forward":
            values = bind_values(name, python_signature(_python_method(module, name), True), args, kwargs)
            try:
                fn = self._specialized(module, name, [argument_type(v) for v in values])
            except CompileError as e:
                raise e from self.deferred
            self.compiler.methods.setdefault(id(module), {})[name] = fn.graph  # forward is what this call compiled
            return fn, values
        if fn is None:
            return None, None
        values = fn.values(args, kwargs)
        return fn.for_call(values), values

    def method_names(self, module) -> set:
        """The methods of `module` that were compiled."""
        return set(self.compiler.methods.get(id(module), {}))


class ScriptedModule(ScriptModule):
    """A module compiled from source (see the module docstring)."""

    def __init__(self, module, session: ModuleSession):
        super().__init__(module, None, {})
        self.__dict__["_session"] = session

    @property
    def _forward(self) -> ScriptedFunction:
        session = self._session
        session.refresh()
        fn = session.function(self._module, "forward")
        if fn is None and session.deferred is not None and self._module is session.root:
            raise session.deferred  # (forward compiles when it is first called, for the types of that call)
        if fn is None:
            raise RuntimeError(f"Method 'forward' is not defined: {self.original_name} has no forward method, or "
                               f"scripted code never calls this submodule")
        return fn

    def forward(self, *args, **kwargs):
        """Run the compiled forward (keyword arguments and defaults as in Python)."""
        fn, values = self._session.entry(self._module, "forward", args, kwargs)
        if fn is None:
            fn = self._forward  # (raises: there is no forward)
        return fn.run_bound(fn.check(values), self._module)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def prepare(self, args: tuple) -> None:
        """Compile forward for these arguments if it waits for its first call (see ModuleSession)."""
        self._session.entry(self._module, "forward", args, {})

    @property
    def exported_methods(self) -> dict:
        """The `@tscript.jit.export` methods of this module, by name."""
        self._session.refresh()
        names = self._session.exports.get(id(self._module), ())
        return {name: self._session.function(self._module, name) for name in names}

    def __getattr__(self, name: str):
        session = self.__dict__["_session"]
        session.refresh()
        if name != "forward" and name in session.method_names(self._module):
            return BoundMethod(session.function(self._module, name), self._module)
        return super().__getattr__(name)

    def _wrap(self, value):
        from ...nn.modules.module import Module
        if isinstance(value, Module):
            return ScriptedModule(value, self._session)
        return value


def _python_method(module, name: str):
    """The Python function of a module's method (its scriptable stand-in, if it has one)."""
    fn = inspect.getattr_static(type(module), name)
    return SHIMS.get(fn, fn)
