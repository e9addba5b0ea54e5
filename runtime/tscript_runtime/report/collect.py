"""Report entries from what the runtime holds: an Executable with its graph document and IR text
(kernels, profile, memory), and a whole saved model (`tsrt report`). The compiler's report
(tscript.report) starts from these and adds what only it knows: the passes and the source files."""
from __future__ import annotations

import os

import numpy as np

from ..profile import profile_executable
from ..threads import get_num_threads
from .ir_text import read_ir
from .kernel_code import kernel_facts

PASSES_NOTE = ("A saved model keeps the optimized graph, not the passes that made it: `tscript report "
               "MODULE:FACTORY` records every pass while compiling (`tscript ir model.tsm --after-each-pass` "
               "runs the pipeline again on the saved IR).")


def executable_entry(name: str, executable, doc: dict, ir_text: str, args: list | None = None, runs: int = 10,
                     params: dict | None = None) -> dict:
    """The report entry of `executable` (its graph `doc` and `ir_text`), profiled over `runs` runs on
    `args` (its graph inputs) when given; `params` (name -> array) are counted in its memory."""
    entry = {"name": name, "ir": ir_text, "graph": doc, "describe": executable.describe(),
             "kernels": kernel_facts(executable, doc, read_ir(ir_text)), "profile": None,
             "profile_note": "Not profiled: no inputs were given."}
    outputs = None
    if args is not None and runs > 0:
        entry["profile"] = profile_executable(executable, args, runs, get_num_threads())
        entry["profile_note"] = ""
        outputs = executable.run(args)
    entry["memory"] = memory_facts(executable, entry["profile"], params or {}, args, outputs)
    return entry


def memory_facts(executable, profile, params: dict, args, outputs) -> list:
    """(what, bytes, remark) rows of the memory section."""
    rows = [(f"parameters and buffers ({len(params)})", _bytes(params.values()), "read in place, never copied"),
            (f"tensor constants ({len(executable.constants)})", _bytes(executable.constants.values()),
             "folded by the passes, stored with the graph")]
    if profile is not None:
        if profile.arena_bytes is not None:
            rows.append(("whole-graph entry's arena", profile.arena_bytes,
                         "one buffer for every intermediate of a call with these inputs, reused by each call"))
        rows.append(("peak of live intermediates (executor)", profile.peak_bytes,
                     "most bytes of computed arrays alive at once when the executor runs these inputs "
                     "(each freed after its last reader; views count nothing)"))
    if args is not None:
        rows.append(("inputs", _bytes(a for a in args if isinstance(a, np.ndarray)), "of the profiled call"))
    if outputs is not None:
        rows.append(("outputs", _bytes(_arrays(outputs)), "of the profiled call"))
    return rows


def model_report(model, path: str, runs: int = 10, layout: str = "auto") -> dict:
    """The report dict of a loaded saved model (tscript_runtime.Model) read from `path`: every entry
    point profiled on random inputs of its signature's example shapes."""
    from .. import __version__
    entries = []
    training = model.manifest.get("training")
    for name, point in model.entry_points.items():
        args = _example_args(model, point)
        entry = executable_entry(name, model.executables[name], point.graph, point.ir, args, runs, model.params)
        entry["passes"], entry["passes_note"] = None, PASSES_NOTE
        if args is None:
            entry["profile_note"] = "Not profiled: the signature gives no example inputs to run."
        elif name == "forward" and isinstance(training, dict) and args is not None:
            saved = model.executables[name].run(args)[training["outputs"]:]
            entry["memory"].append((f"values saved for backward ({len(saved)})", _bytes(_arrays(saved)),
                                    "returned by the training forward, read by backward"))
        entries.append(entry)
    kind = model.manifest.get("name", os.path.basename(path))
    return {"title": f"{kind} ({os.path.basename(path)})", "layout": layout,
            "subtitle": f"saved model {path} · produced by {model.manifest.get('producer', 'unknown')} · "
                        f"reported by tsrt {__version__}",
            "sources": find_sources(entries, [os.getcwd(), os.path.dirname(os.path.abspath(path))]),
            "entries": entries, "notes": []}


def _example_args(model, point) -> list | None:
    try:
        args = point.signature.check(point.signature.example_inputs(np.random.default_rng(0)))
    except Exception:  # a signature without usable examples (a list input, say): no profile
        return None
    return [model._tree] + args if point.takes_self else args


def find_sources(entries: list, folders: list) -> dict:
    """The text of every source file the entries' nodes name ("model.py:12"), found in `folders`."""
    names = {loc.rsplit(":", 1)[0] for e in entries for loc in read_ir(e["ir"]).source if loc}
    found = {}
    for name in sorted(names):
        for folder in folders:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate):
                found[name] = read_text(candidate)
                break
    return found


def read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def _arrays(values):
    for v in values:
        if isinstance(v, np.ndarray):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _arrays(v)


def _bytes(arrays) -> int:
    return int(sum(a.nbytes for a in arrays if isinstance(a, np.ndarray)))
