"""`tscript.jit.freeze`, `optimize` and `dump_passes`: the pass pipeline on scripted and traced graphs."""
from __future__ import annotations

from ..frontend.modules import ScriptFunction, ScriptModule
from .binding import binder_of, with_binder


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True) -> ScriptModule:
    """A new ScriptModule whose graph reads the parameters and buffers of `mod` (in eval mode) as
    constants, with batch norm folded into the conv/linear before it and the graph optimized.
    Later changes to `mod`'s parameters do not reach the frozen module."""
    from ..ir.passes.freeze import freeze_graph
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use tscript.jit.script or "
                           "tscript.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call "
                           ".eval() on your module before freezing.")
    graph = freeze_graph(mod.graph.copy(), mod._module)
    return with_binder(ScriptModule(mod._module, graph, mod._method_graphs), binder_of(mod))


def optimize(obj, level: int = 2):
    """A new ScriptModule/ScriptFunction running `obj`'s graph after the pass pipeline at `level`
    (0: inline only; 1: + constant folding, canonicalization, CSE, DCE, mutation removal, shape
    propagation; 2: + loop unrolling)."""
    from ..ir.passes.pipeline import run_pipeline
    graph = run_pipeline(_graph_of(obj, "optimize").copy(), _level(level))
    return _with_graph(obj, graph)


def dump_passes(obj, level: int = 2, passes=None, show: bool = False) -> str:
    """The IR after every pass of the pipeline that changed `obj`'s graph (only the passes named in
    `passes`, if given), each headed by the pass name and its time; printed too when `show`."""
    import io
    from ..ir.passes.pipeline import run_pipeline
    text = io.StringIO()
    run_pipeline(_graph_of(obj, "dump_passes").copy(), _level(level), set(passes or ()), text)
    if show:
        print(text.getvalue(), end="")
    return text.getvalue()


def _graph_of(obj, what: str):
    if not isinstance(obj, ScriptModule | ScriptFunction):
        raise TypeError(f"{what}() expects a ScriptModule or ScriptFunction (from tscript.jit.trace or "
                        f"tscript.jit.script), got {type(obj).__name__}")
    return obj.graph


def _level(level) -> int:
    if level not in (0, 1, 2) or isinstance(level, bool):
        raise ValueError(f"optimization level must be 0, 1 or 2, got {level!r}")
    return level


def _with_graph(obj, graph):
    """A new object running `graph`, called as `obj` is (binding.py)."""
    if isinstance(obj, ScriptModule):
        return with_binder(ScriptModule(obj._module, graph, obj._method_graphs), binder_of(obj))
    return with_binder(ScriptFunction(graph, obj.name), binder_of(obj))
