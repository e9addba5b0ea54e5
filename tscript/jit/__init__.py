"""tscript.jit: the driver on top of the frontend, the passes, autodiff, the code generator and the
runtime, and the objects users hold.

    trace (tracing.py) | script (frontend.script)   -> ScriptModule / ScriptFunction
    freeze, optimize, dump_passes (passes.py)        -> the pass pipeline on their graphs
    compile (driver.py)                              -> CompiledModel (compiled.py): native code
    save, load (model_file.py)                       -> one `.tsm` file, read back
    report (reporting.py)                            -> one HTML file: passes, graph, kernels, profile
    is_scripting, is_tracing, _overload               -> TorchScript helpers as Python runs them (_jit_language.py)
"""
from .._jit_language import (_overload, _overload_method, _script_if_tracing, annotate, is_scripting, is_tracing,
                            script_if_tracing)
from .._tracing import TracerWarning
from ..frontend.modules import ScriptFunction, ScriptModule
from ..frontend.script import CompileError, Final, export, ignore, script, unused
from .compiled import CompiledModel
from .driver import compile
from .model_file import load, save
from .passes import dump_passes, freeze, optimize
from .reporting import report
from .tracing import trace

__all__ = ["CompileError", "CompiledModel", "Final", "ScriptFunction", "ScriptModule", "TracerWarning", "compile",
           "dump_passes", "export", "freeze", "ignore", "load", "optimize", "report", "save", "script", "trace",
           "unused",
           "annotate", "is_scripting", "is_tracing", "script_if_tracing"]
