"""How objects made from a scripted function's graph take Python arguments. A frozen, optimized,
compiled or saved-and-loaded scripted function (or module) is called as the original is: by
position or by parameter name, with the original's defaults filling the rest (`forward(self, idx,
targets=None)` is called `m(idx)`)."""
from __future__ import annotations

from tscript_runtime.model import is_plain_default

from ..frontend.modules import ScriptFunction, ScriptModule


class Binder:
    """An entry point's parameter names and defaults (its inputs after the module)."""

    def __init__(self, name: str, names: list, defaults: dict):
        self.name, self.names, self.defaults = name, list(names), dict(defaults)

    def bind(self, args: tuple, kwargs: dict) -> tuple:
        """The inputs of a call, in parameter order (TypeError naming what is wrong)."""
        if len(args) > len(self.names):
            raise TypeError(f"{self.name}() takes {len(self.names)} arguments but {len(args)} were given")
        bound = dict(zip(self.names, args))
        for key, value in kwargs.items():
            if key not in self.names or key in bound:
                raise TypeError(f"{self.name}() got an unexpected or repeated argument '{key}'")
            bound[key] = value
        missing = [n for n in self.names if n not in bound and n not in self.defaults]
        if missing:
            raise TypeError(f"{self.name}() missing required argument '{missing[0]}'")
        return tuple(bound[n] if n in bound else self.defaults[n] for n in self.names)

    def plain_defaults(self) -> dict:
        """The defaults a saved model can hold (None, bool, int, finite float, str)."""
        return {k: v for k, v in self.defaults.items() if is_plain_default(v)}




def binder_of(obj) -> Binder | None:
    """The Binder of a scripted function or module (or of an object made from one), else None."""
    binder = getattr(obj, "__dict__", {}).get("_binder")
    if binder is not None:
        return binder
    fn = obj
    if isinstance(obj, ScriptModule):
        try:
            fn = obj._forward
        except RuntimeError:  # (a module without a compiled forward: nothing to bind)
            return None
    signature = getattr(fn, "_signature", None)
    if signature is None:
        return None
    params = signature.parameters.values()
    return Binder(fn.name, [p.name for p in params], {p.name: p.default for p in params if p.default is not p.empty})


class BoundScriptFunction(ScriptFunction):
    """A ScriptFunction taking keyword arguments and defaults (see the module docstring)."""

    def __init__(self, graph, name: str, binder: Binder):
        super().__init__(graph, name)
        self._binder = binder

    def __call__(self, *args, **kwargs):
        return self._run(self._binder.bind(args, kwargs))


class BoundScriptModule(ScriptModule):
    """A ScriptModule whose forward takes keyword arguments and defaults (see the module docstring)."""

    def forward(self, *args, **kwargs):
        return self._forward._run(self._binder.bind(args, kwargs), self._module)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)


def with_binder(obj, binder: Binder | None):
    """`obj` (a ScriptFunction or ScriptModule made from a graph) calling as `binder` says."""
    if binder is None:
        return obj
    if isinstance(obj, ScriptModule):
        bound = BoundScriptModule(obj._module, obj.graph, obj._method_graphs)
        bound.__dict__["_binder"] = binder
        return bound
    return BoundScriptFunction(obj.graph, obj.name, binder)
