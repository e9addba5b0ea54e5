"""The compiler's own work kept on disk: an optimized graph with its native plan, and autodiff's forward
and backward graphs, each under a hash of all it was derived from. A model compiled again in another
process (the same code, shapes and tscript) then skips the pass pipeline, the planning and autodiff's
recording, as the runtime skips LLVM for code it emitted before (tscript_runtime/native/cache.py,
whose directory and entry format this shares: TSCRIPT_CACHE_DIR, written atomically behind a SHA-256,
an entry that does not check out computed again).

A key covers the graph's document and tensor constants, the stage's other arguments, the code of
tscript and of the runtime and the host CPU (cache_key). Not kept, their stages run every time: graphs
holding more than MAX_CONSTANT_BYTES of tensor constants (frozen or imported weights), graphs with no
whole document (a traced `autograd.Function` is a Python object), and backwards autodiff had to record
on the examples' data (they may depend on it).
"""
from __future__ import annotations

import hashlib
import io
import json
import os

import numpy as np

from tscript_runtime.native.cache import cache_key, package_digest, read_checked, write_checked
from tscript_runtime.user_cache import cache_dir

from ..frontend.modules import ModuleView
from ..ir.graph import Graph
from ..ir.graph_json import graph_from_json, graph_to_json
from ..ir.passes.pipeline import watched

MAGIC = b"tscript-stage 1\n"
MAX_CONSTANT_BYTES = 1 << 20  # graphs holding more tensor constants are not kept
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def optimized(graph: Graph, dynamic: dict | None, compute) -> tuple[Graph, dict]:
    """(optimized graph, native plan) of `graph`: `compute(graph)`'s, or the same from the cache."""
    key = _key("optimized", [graph], {"dynamic": dynamic})
    found = _read(key)
    if found is not None:
        (g,), extra = found
        return g, extra["plan"]
    g, plan = compute(graph)
    if key is not None:
        _write(key, [g], {"plan": plan})
    return g, plan


def differentiated(graph: Graph, wrt: list, examples: list, compute):
    """autodiff's Differentiated of `graph` for `wrt` on `examples`: `compute()`'s (which returns it and
    whether it was recorded without the examples' data), or the same from the cache."""
    from ..autodiff import Differentiated, flat_outputs
    key = _key("differentiated", [graph], {"wrt": [v.name for v in wrt], "examples": _describe(graph, examples)})
    found = _read(key)
    if found is not None:
        (forward, backward), extra = found
        kept = len(forward.outputs) - extra["saved"]
        outputs = flat_outputs(forward, kept)
        if len(outputs) == extra["outputs"]:
            return Differentiated(forward, backward, outputs, list(forward.outputs[kept:]), extra["reached"],
                                  [frozenset(r) for r in extra["reaches"]])
    d, dataless = compute()
    if key is not None and dataless:
        _write(key, [d.forward, d.backward], {"outputs": len(d.outputs), "saved": len(d.saved), "reached": d.reached,
                                              "reaches": [sorted(r) for r in d.reaches]})
    return d


# -- keys ----------------------------------------------------------------------------------------------

def _key(stage: str, graphs: list, extra: dict) -> str | None:
    """The entry's key, or None when the passes are watched (tscript.report, TSCRIPT_LOG: they must run),
    or a graph has no whole document: a node calling a graph of its own
    (a traced autograd.Function's prim::PythonOp: its document names the class, not what it runs), an
    attribute no document holds, or `extra` not JSON."""
    if watched() or any(hasattr(n, "callee") or n.kind == "prim::PythonOp" for g in graphs for n in g.all_nodes()):
        return None
    if _too_big(graphs):
        return None  # (a frozen or imported model's weights: not copied into the cache at every compile)
    try:
        text = json.dumps([[graph_to_json(g) for g in graphs], extra], sort_keys=True)
    except (TypeError, ValueError):
        return None
    h = hashlib.sha256(text.encode())
    for g in graphs:
        for name in sorted(g.constants):
            a = np.ascontiguousarray(g.constants[name])
            h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
            h.update(a.tobytes())
    return cache_key("stage", stage, package_digest(_PACKAGE), h.hexdigest())


def _too_big(graphs: list) -> bool:
    """Do `graphs` hold more than MAX_CONSTANT_BYTES of tensor constants?"""
    return sum(np.asarray(a).nbytes for g in graphs for a in g.constants.values()) > MAX_CONSTANT_BYTES


def _describe(graph: Graph, examples: list) -> list:
    """What autodiff reads of its examples: each input's shape and dtype, and for the module (a first
    input of the module's type) every attribute the graph reads, a tensor's shape and dtype or a
    value's repr."""
    out = []
    for v, a in zip(graph.inputs, examples):
        if isinstance(a, np.ndarray):
            out.append([list(a.shape), a.dtype.str])
        elif str(v.type).startswith("__module__"):
            out.append(_attributes(graph, v, a))
        else:
            out.append(repr(a))
    return out


def _attributes(graph: Graph, module_value, view) -> list:
    """[name, description] of each value the graph's prim::GetAttr chains read from the module `view`."""
    objects, read = {module_value: view}, []
    for node in graph.all_nodes():
        if node.kind == "prim::GetAttr" and node.inputs[0] in objects:
            value = objects[node.inputs[0]][node.attrs["name"]]
            objects[node.output] = value
            described = [list(value.shape), value.dtype.str] if isinstance(value, np.ndarray) else \
                "module" if isinstance(value, ModuleView) else repr(value)
            read.append([node.output.name, described])
    return read


# -- entries ---------------------------------------------------------------------------------------

def _write(key: str, graphs: list, extra: dict) -> None:
    if _too_big(graphs):
        return  # (constants folded into big ones: not kept either)
    constants = {f"{i}/{name}": a for i, g in enumerate(graphs) for name, a in g.constants.items()}
    buffer = io.BytesIO()
    np.savez(buffer, **constants)
    header = json.dumps({"graphs": [graph_to_json(g) for g in graphs], "extra": extra}).encode()
    write_checked(os.path.join(cache_dir(), "stages", key), MAGIC, header + b"\n" + buffer.getvalue())


def _read(key: str | None):
    """(graphs, extra) of an intact entry for `key`, or None."""
    payload = None if key is None else read_checked(os.path.join(cache_dir(), "stages", key), MAGIC)
    if payload is None:
        return None
    header, _, blob = payload.partition(b"\n")
    try:
        doc = json.loads(header)
        with np.load(io.BytesIO(blob), allow_pickle=False) as arrays:
            constants = {name: arrays[name] for name in arrays.files}
        graphs = [graph_from_json(g) for g in doc["graphs"]]
    except Exception:  # noqa: BLE001 - a damaged entry is computed again
        return None
    for i, g in enumerate(graphs):
        g.constants = {name.split("/", 1)[1]: a for name, a in constants.items() if name.split("/", 1)[0] == str(i)}
    return graphs, doc["extra"]
