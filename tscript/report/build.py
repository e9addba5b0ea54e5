"""`tscript.jit.report`: compile a model with every pass recorded, then write the report (the HTML is
tscript_runtime.report's): the source beside the IR, the IR after every pass as diffs, the graph, every
kernel's schedule and code, a profile of real runs on the example inputs, memory."""
from __future__ import annotations

import numpy as np

from tscript_runtime.progress import Progress
from tscript_runtime.report import write_report
from tscript_runtime.report.collect import executable_entry
from tscript_runtime.report.ir_text import read_ir

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..frontend.modules import to_arrays
from ..ir.graph_json import graph_to_json
from ..ir.passes.pipeline import observe_passes
from ..jit.driver import compile as compile_model
from .passes import PassRecorder
from .sources import source_files


def report(obj, example_inputs, path: str, runs: int = 10, backward: bool = False, dynamic: dict | None = None,
           layout: str = "auto") -> dict:
    """Compile `obj` (a module, function, ScriptModule or ScriptFunction) for `example_inputs` as
    `tscript.jit.compile` does, recording every pass, profile `runs` runs, and write the report to
    `path` (one self-contained HTML file). Returns the report's data (a dict)."""
    data = build_report(obj, example_inputs, runs, backward, dynamic, layout)
    write_report(data, path)
    return data


def build_report(obj, example_inputs, runs: int = 10, backward: bool = False, dynamic: dict | None = None,
                 layout: str = "auto", progress: Progress | None = None) -> dict:
    """The report's data (see tscript_runtime.report) for `obj` compiled on `example_inputs`."""
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 0:
        raise ValueError(f"runs must be an int >= 0, got {runs!r}")
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    progress = progress or Progress("report", enabled=False)
    recorder = PassRecorder(progress)
    progress.step("tracing and compiling")
    with observe_passes(recorder):
        if backward:
            compiled = compile_model(obj, args, backward=True, dynamic=dynamic)
        else:
            with no_grad():
                compiled = compile_model(obj, args, dynamic=dynamic)
    progress.step("profiling and reading the kernels' code")
    entries = _entries(compiled, args, runs)
    _title_runs(recorder.runs, backward)
    entries[0]["passes"] = recorder.runs
    for entry in entries[1:]:
        entry["passes"], entry["passes_note"] = None, "The pipeline runs that made this graph are listed under forward."
    names = {loc.rsplit(":", 1)[0] for e in entries for loc in read_ir(e["ir"]).source if loc}
    progress.step("laying out the graph and writing the page")
    return {"title": _name(obj), "layout": layout, "subtitle": _subtitle(args, compiled),
            "sources": source_files(obj, names), "entries": entries,
            "notes": [f"Profiled over {runs} runs on the example inputs." if runs else "Not profiled (runs=0)."]}


def _entries(compiled, args: tuple, runs: int) -> list:
    params = {name: p._data for name, p in compiled.module.state_dict().items()} if compiled.module is not None else {}
    forward_args = _forward_args(compiled, args)
    forward = _entry("forward", compiled.executable, compiled.graph, forward_args, runs, params)
    if not hasattr(compiled, "backward_executable"):
        return [forward]
    saved = compiled.saved_bytes(*args)
    forward["memory"].append((f"values saved for backward ({compiled.n_saved})", saved["activations"],
                              f"computed by the forward and kept for the backward; also kept: "
                              f"{saved['inputs']:,} bytes of (views of) inputs and parameters"))
    outs = compiled.executable.run(forward_args)
    n_out = len(outs) - compiled.n_saved
    grads = [np.ones_like(o) if isinstance(o, np.ndarray) else o for o in outs[:n_out]]
    backward = _entry("backward", compiled.backward_executable, compiled.backward_graph, grads + list(outs[n_out:]),
                      runs, {})
    return [forward, backward]


def _entry(name: str, executable, graph, args, runs: int, params: dict) -> dict:
    return executable_entry(name, executable, graph_to_json(graph), str(graph), args if runs else None, runs, params)


def _forward_args(compiled, args: tuple) -> list:
    """The forward Executable's inputs for the example arguments (the module's tree first)."""
    if hasattr(compiled, "_arrays"):
        return compiled._arrays(args)
    return list(compiled._tree) + [to_arrays(a) for a in args]


def _title_runs(runs: list, backward: bool) -> None:
    for k, run in enumerate(runs):
        what = "the graph" if not backward else ("the forward and backward" if k == 0 else f"graph {k + 1}")
        run["title"] = f"pipeline run {k + 1} of {len(runs)}: {what} ({run['nodes']} nodes in)"


def _name(obj) -> str:
    inner = getattr(obj, "_module", None) or obj
    return getattr(inner, "__name__", None) or type(inner).__name__


def _subtitle(args: tuple, compiled) -> str:
    from tscript_runtime.native.target import host

    from .. import __version__
    shapes = ", ".join(f"{a._data.dtype.name}{list(a._data.shape)}" if isinstance(a, Tensor) else type(a).__name__
                       for a in args)
    try:
        cpu = host()["cpu"]
    except Exception:  # no llvmlite: the report still shows the graph and the passes
        cpu = "unknown CPU"
    return f"compiled by tscript {__version__} for {cpu} · example inputs: {shapes}"
