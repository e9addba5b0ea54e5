"""Removal of mutation: an in-place op `y = x.op_(...)` becomes its functional form `y = op(x, ...)`
when no alias can observe the difference, and every later reader of `x` reads `y` instead.

It fires only when all of these hold (checked with the op table's alias facts, see effects.py):
- `x` is a fresh result of an op in the same block (not a graph input or block parameter, not a
  constant, not a `prim::GetAttr`'d parameter or buffer, not a view, not an element of a list);
- every reader of `x` before the op only consumes its value (an op that neither returns a view nor
  writes), so no view or container holding `x` is live when it changes;
- the functional op's dtype (by the op's dtype rule) is `x`'s dtype, so no cast is lost.
The functional forms come from the op table (`extra["functional"]` of every `name_` variant) plus
`FUNCTIONAL_FORMS` for in-place ops without one. Guarantee: same values for every input; fewer
side-effecting nodes, so CSE, DCE, folding and fusion see more. Linear in the graph size.
"""
from __future__ import annotations

from typing import Callable

from tscript_runtime.ops import OPS, TensorMeta

from ..graph import Block, Graph, Node, Use, Value
from ..types import TensorType
from .constant_propagation import constant_value
from .effects import fresh_result


def _zero(graph: Graph, node: Node):
    return "aten::zeros_like", [node.inputs[0], graph.constant(None)]


def _fill(graph: Graph, node: Node):
    x, value = node.inputs
    if isinstance(value.type, TensorType):
        return None
    return "aten::full_like", [x, value, graph.constant(None)]


def _copy(graph: Graph, node: Node):
    """x.copy_(src) with src of x's (static) shape: a copy of src cast to x's dtype."""
    x, src = node.inputs
    if not (_static(x) and _static(src) and x.type.shape == src.type.shape):
        return None
    return "aten::to", [src, graph.constant(x.type.dtype), graph.constant(True)]


# In-place ops whose functional form is not `name` without the underscore: builder(graph, node)
# -> (kind, inputs) or None; inputs are created right before the node.
FUNCTIONAL_FORMS: dict[str, Callable] = {
    "aten::zero_": _zero,
    "aten::fill_": _fill,
    "aten::copy_": _copy,
}


def _static(v: Value) -> bool:
    t = v.type
    return isinstance(t, TensorType) and t.dtype is not None and t.shape is not None and \
        all(isinstance(d, int) for d in t.shape)


def remove_mutation(graph: Graph) -> bool:
    """Rewrite in-place ops to functional ones where safe (in place); True if any was rewritten."""
    return _block(graph, graph.block)


def _block(graph: Graph, block: Block) -> bool:
    position = {node: i for i, node in enumerate(block.nodes)}
    changed = False
    for node in list(block.nodes):
        for b in node.blocks:
            changed |= _block(graph, b)
        op = OPS.get(node.kind)
        if op is None or op.mutates is None:
            continue
        later = _later_uses(node, op.mutates, position)
        if later is None or not _keeps_dtype(node, op.mutates):
            continue
        new = _functional(graph, node)
        if new is None:
            continue
        position[new] = position[node]
        node.output.replace_all_uses_with(new.output)
        for use in later:
            use.node.set_input(use.index, new.output)
        node.destroy()
        changed = True
    return changed


def _later_uses(node: Node, index: int, position: dict) -> list[Use] | None:
    """The uses of the written value after `node` (to be rewired), or None when the rewrite is not
    safe: the value is not a fresh local result, or an earlier reader may keep an alias to it."""
    x = node.inputs[index]
    producer = x.node
    if producer is None or producer.owner is not node.owner or not fresh_result(producer) or \
            len(producer.outputs) != 1:
        return None
    later = []
    for use in x.uses:
        if use.node is node:
            continue
        anchor = _anchor(use.node, node.owner)
        if anchor is node.owner.return_node or position[anchor] > position[node]:
            later.append(use)
        elif not fresh_result(use.node):  # an earlier reader that may keep a view or the value itself
            return None
    return later


def _anchor(node: Node, block: Block) -> Node:
    """The node of `block` that contains `node` (itself, or the If/Loop it is nested in)."""
    while node.owner is not block:
        node = node.owner.owner
    return node


def _keeps_dtype(node: Node, index: int) -> bool:
    """Does the functional op give the written tensor's dtype (so the in-place cast is a no-op)?"""
    op = OPS[node.kind]
    functional = OPS.get(op.extra.get("functional", ""))
    x = node.inputs[index]
    if functional is None:  # the FUNCTIONAL_FORMS builders keep x's dtype by construction
        return True
    args = []
    for v in node.inputs:
        if isinstance(v.type, TensorType):
            if v.type.dtype is None or v.type.shape is None:
                return False
            args.append(TensorMeta(v.type.shape, v.type.dtype))
        else:
            args.append(_scalar(v))
    try:
        return functional.dtype(*args) == x.type.dtype
    except Exception:  # the rule cannot judge these inputs: keep the in-place op
        return False


def _scalar(v: Value):
    """A constant's value, or a stand-in of the value's type (dtype rules only look at the kind)."""
    ok, value = constant_value(v.graph, v)
    if ok:
        return value
    return {"int": 1, "float": 1.0, "bool": True}.get(str(v.type))


def _functional(graph: Graph, node: Node) -> Node | None:
    """The functional node computing what `node` writes, inserted right before it."""
    name = OPS[node.kind].extra.get("functional")
    with graph.inserting_before(node):
        if name is not None:
            kind, inputs = name, list(node.inputs)
        else:
            builder = FUNCTIONAL_FORMS.get(node.kind)
            form = builder(graph, node) if builder is not None else None
            if form is None:
                return None
            kind, inputs = form
        return graph.insert(kind, inputs, 1, types=[node.output.type])
