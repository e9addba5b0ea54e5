"""Constant propagation and folding: a pure, deterministic op whose inputs are all constants is run
once with the op library's kernel and replaced by its result (tensor results become tensor
constants in `graph.constants`); `prim::If` on a constant condition is replaced by the taken
block. Guarantee: results equal what the executor would compute; random and effectful ops stay,
and so do ops reading or defining a value that an in-place op writes (the executor shares
constants between runs, so a written constant would leak from one run into the next)."""
from __future__ import annotations

import numpy as np

from tscript_runtime.graph_json import TensorRef
from tscript_runtime.ops import OPS

from ..graph import Graph, Node, Value, clone_node
from ..types import tensor_type, type_of_value
from .effects import is_pure, is_random, mutated_values

MAX_FOLDED_ELEMENTS = 1 << 20  # do not bake huge tensors into the graph


def constant_value(graph: Graph, v: Value):
    """(True, value) if `v` is a constant (tensor constants as arrays), else (False, None)."""
    n = v.node
    if n is None or n.kind != "prim::Constant":
        return False, None
    value = n.attrs.get("value")
    if isinstance(value, TensorRef):
        return (value.name in graph.constants), graph.constants.get(value.name)
    return True, value


def propagate_constants(graph: Graph) -> bool:
    """Fold constants in place; True if anything changed."""
    changed = False
    mutated = mutated_values(graph)
    for node in list(graph.all_nodes()):
        if node.owner is None:  # removed together with a folded If
            continue
        if node.kind == "prim::If":
            changed |= _fold_if(graph, node)
        elif node.kind in OPS or node.kind == "prim::ListConstruct":
            changed |= _fold_op(graph, node, mutated)
    return changed


def _fold_op(graph: Graph, node: Node, mutated: set) -> bool:
    if not is_pure(node) or is_random(node) or len(node.outputs) != 1:
        return False
    if any(v in mutated for v in node.inputs + node.outputs):  # a written value is no constant
        return False
    values = []
    for v in node.inputs:
        ok, value = constant_value(graph, v)
        if not ok or isinstance(value, np.ndarray) and node.kind == "prim::ListConstruct":
            return False
        values.append(value.copy() if isinstance(value, np.ndarray) else value)
    if node.kind == "prim::ListConstruct":
        result = values
    else:
        try:
            result = OPS[node.kind].kernel(*values)
        except Exception:  # the op fails on these constants: leave it, it fails at run time as it should
            return False
    if isinstance(result, np.generic):
        result = np.asarray(result)
    if isinstance(result, np.ndarray) and result.size > MAX_FOLDED_ELEMENTS:
        return False
    if isinstance(result, (list, tuple)) and any(isinstance(r, np.ndarray) for r in result):
        return False
    with graph.inserting_before(node):
        new = _constant(graph, result, node.output)
    node.output.replace_all_uses_with(new)
    node.destroy()
    return True


def tensor_constant(graph: Graph, value: np.ndarray, name: str | None = None) -> Value:
    """A prim::Constant node (at the insertion point) for an array stored in `graph.constants`;
    `name` is the value's name hint."""
    key = _fresh_constant_name(graph)
    graph.constants[key] = value
    return graph.insert("prim::Constant", (), 1, {"value": TensorRef(key)},
                        [tensor_type(value.dtype, value.shape)], [name]).output


def _constant(graph: Graph, value, like: Value) -> Value:
    if isinstance(value, np.ndarray):
        return tensor_constant(graph, value)
    out = graph.constant(value)
    if isinstance(value, list) and not value:
        out.type = like.type
    elif out.type != type_of_value(value):
        out.type = like.type
    return out


def _fresh_constant_name(graph: Graph) -> str:
    k = len(graph.constants)
    while f"c{k}" in graph.constants:
        k += 1
    return f"c{k}"


def _fold_if(graph: Graph, node: Node) -> bool:
    ok, cond = constant_value(graph, node.inputs[0])
    if not ok or isinstance(cond, np.ndarray) and cond.size != 1:
        return False
    taken = node.blocks[0] if bool(cond) else node.blocks[1]
    value_map: dict = {}
    for n in list(taken.nodes):
        new = clone_node(n, node.owner, value_map)
        new.move_before(node)
    for out, ret in zip(node.outputs, taken.returns):
        out.replace_all_uses_with(value_map.get(ret, ret))
    node.destroy()
    return True
