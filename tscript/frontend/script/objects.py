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
from .library import SHIMS


class ScriptedFunction(ScriptFunction):
    """A function compiled from source."""

    def __init__(self, graph: Graph, fn, python_functions: dict, takes_self: bool = False):
        super().__init__(graph, fn.__name__)
        self.original = fn                #: the Python function
        self.python_functions = python_functions
        params = list(inspect.signature(fn).parameters.values())
        self._signature = inspect.Signature(params[1:] if takes_self else params)
        self.__doc__ = fn.__doc__

    def bind(self, args: tuple, kwargs: dict) -> tuple:
        """The graph's inputs (after %self) for a Python call: defaults filled in, types checked."""
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}(): {e}") from None
        bound.apply_defaults()
        values = tuple(bound.arguments.values())
        inputs = self.graph.inputs[len(self.graph.inputs) - len(values):]
        for value, graph_input in zip(values, inputs):
            _check_argument(self.name, graph_input, value)
        return values

    def __call__(self, *args, **kwargs):
        return self._run(self.bind(args, kwargs))

    def __repr__(self) -> str:
        return f"<tscript.jit.ScriptFunction {self.original.__qualname__}>"


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
        return self.fn._run(self.fn.bind(args, kwargs), self.module)

    def __getattr__(self, name: str):
        return getattr(self.fn, name)

    def __repr__(self) -> str:
        return f"<bound scripted method {self.fn.name} of {type(self.module).__name__}>"


class ModuleSession:
    """The compiled graphs of a scripted module tree, recompiled when train/eval modes change."""

    def __init__(self, root, compile_tree):
        self.root = root
        self._compile_tree = compile_tree   # root -> (compiler, exports by id(module))
        self._modes = None
        self.refresh()

    def refresh(self) -> None:
        """Recompile if the train/eval mode of any module changed since the last compilation."""
        modes = tuple(m.training for m in self.root.modules())
        if modes == self._modes:
            return
        compiler, exports = self._compile_tree(self.root)
        self.compiler, self.exports, self._modes = compiler, exports, modes
        self._functions: dict = {}

    def function(self, module, name: str) -> ScriptedFunction | None:
        """The compiled method `name` of `module` (None if it was not compiled)."""
        graph = self.compiler.methods.get(id(module), {}).get(name)
        if graph is None:
            return None
        if id(graph) not in self._functions:
            fn = inspect.getattr_static(type(module), name)
            fn = SHIMS.get(fn, fn)
            self._functions[id(graph)] = ScriptedFunction(graph, fn, self.compiler.python_functions, True)
        return self._functions[id(graph)]

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
        self._session.refresh()
        fn = self._session.function(self._module, "forward")
        if fn is None:
            raise RuntimeError(f"Method 'forward' is not defined: {self.original_name} has no forward method, or "
                               f"scripted code never calls this submodule")
        return fn

    def forward(self, *args, **kwargs):
        """Run the compiled forward (keyword arguments and defaults as in Python)."""
        fn = self._forward
        return fn._run(fn.bind(args, kwargs), self._module)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

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
