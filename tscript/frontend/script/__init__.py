"""`tscript.jit.script`: compile functions and modules from their source with the TorchScript
language (SPEC §5). The pipeline, one file per stage:

    source.py (inspect.getsource, dedent) -> parser.py + tscript.lark (syntax.py tree, positions)
    -> compiler.py (sessions, specialization, modules, what Python objects mean)
    -> emitter.py + control.py (SSA lowering; If/Loop, exits as flags in environment.py), using
       values.py (compile-time values), builtins.py / methods.py (what names and attributes mean),
       matching.py (op schemas), indexing.py, annotations.py (types), library.py (stand-ins)
    -> objects.py (ScriptedFunction / ScriptedModule)

Errors are `CompileError`s naming file, line and column (errors.py). What the compiler computes
itself (folded constants, unrolled loops) is bounded by the limits of limits.py.
"""
from __future__ import annotations

import types as pytypes
from typing import Final

from .compiler import Compiler
from .errors import CompileError
from .objects import ModuleSession, ScriptedFunction, ScriptedModule

__all__ = ["CompileError", "Final", "export", "ignore", "script", "unused"]


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """Compile a function or an nn.Module from its source (also usable as a decorator)."""
    from ...nn.modules.module import Module
    from ..modules import ScriptFunction, ScriptModule
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if isinstance(obj, Module):
        return ScriptedModule(obj, ModuleSession(obj, _compile_tree))
    if isinstance(obj, pytypes.FunctionType):
        compiler = Compiler()
        graph, _ = compiler.specialize(obj, None, None, None)
        return ScriptedFunction(graph, obj, compiler.python_functions)
    if isinstance(obj, type):
        raise CompileError(f"scripting classes ({obj.__name__}) is not supported; script an instance of an "
                           f"nn.Module, or a function")
    raise TypeError(f"tscript.jit.script expects a function or an nn.Module, got {type(obj).__name__}")


def _compile_tree(root):
    """Compile `forward` (when defined) and the `@export`ed methods of every module in the tree."""
    from ...nn.modules.module import Module
    compiler = Compiler()
    exports: dict = {}
    for module in root.modules():
        names = _exported(type(module))
        is_root = module is root
        if is_root and type(module).forward is not Module.forward:
            names = ["forward"] + names
        for name in names:
            graph, _ = compiler.specialize(getattr(type(module), name), module, None, None)
            compiler.methods.setdefault(id(module), {})[name] = graph
        exports[id(module)] = [n for n in names if n != "forward"]
    return compiler, exports


def _exported(cls) -> list:
    return [name for name in dir(cls) if getattr(getattr(cls, name, None), "_tscript_export", False)]


def export(fn):
    """Mark a module method as an entry point of its scripted module (kept by `save`)."""
    fn._tscript_export = True
    return fn


def ignore(drop=False, **kwargs):
    """Leave a function to Python: scripted code calls it through Python (`@ignore`, or
    `@ignore(drop=True)`, which makes calls raise instead, like `@unused`)."""
    if callable(drop):
        drop._tscript_ignore = True
        return drop

    def deco(fn):
        if drop:
            fn._tscript_unused = True
        else:
            fn._tscript_ignore = True
        return fn
    return deco


def unused(fn):
    """Do not compile a function; calling it from scripted code raises."""
    fn._tscript_unused = True
    return fn
