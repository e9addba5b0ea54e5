"""`tscript.jit.script`: compile functions and modules from their source with the TorchScript
language (SPEC §5). The pipeline, one file per stage:

    source.py (inspect.getsource, dedent) -> parser.py + tscript.lark (syntax.py tree, positions;
       tree_cache.py keeps parsed sources per user)
    -> compiler.py (sessions, specialization, what Python objects mean), module_values.py (modules)
    -> emitter.py + control.py + truthiness.py (SSA lowering; If/Loop, exits as flags in
       environment.py, truth values and `or`/`and`), using values.py (compile-time values),
       builtins.py / methods.py (what names and attributes mean), matching.py (op schemas),
       indexing.py, annotations.py (types), library.py (stand-ins)
    -> objects.py (ScriptedFunction / ScriptedModule; calltypes.py: recompiling for a call's types)

Errors are `CompileError`s naming file, line and column (errors.py). What the compiler computes
itself (folded constants, unrolled loops) is bounded by the limits of limits.py.
"""
from __future__ import annotations

import functools
import sys
import types as pytypes
from typing import Final

from .compiler import Compiler
from .errors import CompileError
from .objects import ModuleSession, ScriptedFunction, ScriptedModule

__all__ = ["CompileError", "Final", "export", "ignore", "script", "unused"]


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """Compile a function or an nn.Module from its source (also usable as a decorator). Names
    resolve to closure cells, then globals, then builtins; a name still unknown is looked up
    among the local variables of the code that called script() (as TorchScript's resolution
    callback does)."""
    caller = sys._getframe(1 + _frames_up).f_locals
    from ...nn.modules.module import Module
    from ..modules import ScriptFunction, ScriptModule
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if isinstance(obj, Module):
        return ScriptedModule(obj, ModuleSession(obj, functools.partial(_compile_tree, fallback=dict(caller))))
    if isinstance(obj, pytypes.FunctionType):
        return _script_function(obj, Compiler(dict(caller)), None)
    if isinstance(obj, type):
        raise CompileError(f"scripting classes ({obj.__name__}) is not supported; script an instance of an "
                           f"nn.Module, or a function")
    raise TypeError(f"tscript.jit.script expects a function or an nn.Module, got {type(obj).__name__}")


def _script_function(fn, compiler: Compiler, types: list | None) -> ScriptedFunction:
    """A function compiled for arguments of `types` (None: as annotated, Tensors otherwise)."""
    graph, _ = compiler.specialize(fn, None, None, None, arg_types=types)
    return ScriptedFunction(graph, fn, compiler.python_functions, result_class=compiler.named_results.get(id(graph)),
                            specializer=lambda call_types: _script_function(fn, compiler, call_types))


def _compile_tree(root, fallback: dict):
    """Compile `forward` (when defined) and the `@export`ed methods of every module in the tree:
    (compiler, exported method names by id(module), the CompileError of a root forward that only
    compiles for the types of its first call, or None)."""
    from ...nn.modules.module import Module
    compiler = Compiler(fallback)
    exports: dict = {}
    deferred = None
    for module in root.modules():
        names = _exported(type(module))
        is_root = module is root
        if is_root and type(module).forward is not Module.forward:
            names = ["forward"] + names
        for name in names:
            try:
                graph, _ = compiler.specialize(getattr(type(module), name), module, None, None)
            except CompileError as e:
                if not (is_root and name == "forward" and e.kind == "type" and _has_unannotated(type(module).forward)):
                    raise
                deferred = e  # perhaps a tuple or a list where a Tensor was assumed: see the first call
                continue
            compiler.methods.setdefault(id(module), {})[name] = graph
        exports[id(module)] = [n for n in names if n != "forward"]
    return compiler, exports, deferred


def _has_unannotated(fn) -> bool:
    """Does the method take a parameter (after self) without a type annotation?"""
    import inspect
    params = list(inspect.signature(fn).parameters.values())[1:]
    return any(p.annotation is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


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
