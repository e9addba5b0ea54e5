"""Freezing: the parameters and buffers a module's graph reads become tensor constants.

`freeze_attributes(graph, module)` resolves every `prim::GetAttr` chain starting at the graph's
`%self` on the actual module: a tensor attribute becomes a `prim::Constant` holding a copy of its
data (in `graph.constants`, named after the attribute path), a Python number/bool/None a plain
constant; submodule values are left to dead-code elimination. A tensor that the graph writes in
place (e.g. running statistics updated in training mode) stays an attribute read, as in TorchScript.

`freeze_graph(graph, module)` is the whole of `tscript.jit.freeze` on a graph: inline, freeze the
attributes, then the `FREEZE_PIPELINE` stages (constant folding, canonicalization, folding of
batch norm into conv/linear, CSE, DCE), and finally drops tensor constants nothing refers to.
Guarantee: for a module in eval mode, the frozen graph computes what the module computes with
the parameter values it had when frozen (later changes to the module do not reach it).
"""
from __future__ import annotations

import numpy as np

from tscript_runtime.graph_json import TensorRef

from ..._tensor import Tensor
from ..graph import Graph, Value
from ..types import ModuleType, tensor_type
from .effects import mutated_values
from .inline import inline_calls
from .pipeline import FREEZE_PIPELINE, run_stages


def freeze_attributes(graph: Graph, module) -> bool:
    """Turn GetAttr chains on `%self` into constants (in place); True if any was turned."""
    self_value = next((v for v in graph.inputs if isinstance(v.type, ModuleType)), None)
    if self_value is None:
        return False
    objects, paths = {self_value: module}, {self_value: ""}
    mutated = mutated_values(graph)
    changed = False
    for node in list(graph.all_nodes()):
        if node.kind != "prim::GetAttr" or node.inputs[0] not in objects:
            continue
        out, name = node.output, node.attrs["name"]
        obj, path = getattr(objects[node.inputs[0]], name), paths[node.inputs[0]] + name
        if isinstance(obj, Tensor):
            if out in mutated:
                continue
            with graph.inserting_before(node):
                new = _tensor_attribute(graph, np.array(obj._data, copy=True), path, out)
        elif obj is None or isinstance(obj, (bool, int, float)):
            with graph.inserting_before(node):
                new = graph.constant(obj)
        else:
            objects[out], paths[out] = obj, path + "."
            continue
        out.replace_all_uses_with(new)
        node.destroy()
        changed = True
    return changed


def _tensor_attribute(graph: Graph, data: np.ndarray, path: str, old: Value) -> Value:
    """A tensor constant named after the attribute path (`0.weight`), keeping the value's name."""
    key = path
    while key in graph.constants:
        key += "_"
    graph.constants[key] = data
    name = old.name
    graph.release_name(name)
    old.name = graph.unique_name(None)  # `old` is about to go: its readable name moves to the constant
    return graph.insert("prim::Constant", (), 1, {"value": TensorRef(key)},
                        [tensor_type(data.dtype, data.shape)], [name]).output


def prune_constants(graph: Graph) -> bool:
    """Drop tensor constants that no node refers to any more; True if any was dropped."""
    used = {n.attrs["value"].name for n in graph.all_nodes()
            if n.kind == "prim::Constant" and isinstance(n.attrs.get("value"), TensorRef)}
    unused = [k for k in graph.constants if k not in used]
    for k in unused:
        del graph.constants[k]
    return bool(unused)


def freeze_stages(module) -> list:
    """The named stages of freezing a graph of `module`: inline, attributes to constants, then
    `FREEZE_PIPELINE`, then dropping unused tensor constants."""
    return [("inline", inline_calls, 0),
            ("freeze_attributes", lambda g: freeze_attributes(g, module), 0),
            *FREEZE_PIPELINE,
            ("prune_constants", prune_constants, 0)]


def freeze_graph(graph: Graph, module, log=None, stream=None) -> Graph:
    """Freeze `graph` (a method graph of `module`) in place and return it. `log`/`stream` as for
    `run_stages` (default: TSCRIPT_LOG)."""
    return run_stages(graph, freeze_stages(module), 0, log, stream)
