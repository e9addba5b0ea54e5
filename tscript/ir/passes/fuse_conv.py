"""Convolution epilogues: an `aten::conv2d` whose result only feeds a pointwise `tscript::FusionGroup` of
the same shape (bias-free or not, then ReLU, ReLU6, a residual add + ReLU, ...) becomes ONE
`tscript::ConvGroup` node, so the native code applies the group's ops to each block of the
convolution's output while it is still in cache instead of reading and writing the activation again.

The ConvGroup takes the conv's seven inputs, then the group's other tensors; its `subgraph` is the
conv2d followed by the group's nodes (tscript_runtime/conv_epilogue.py states what the entry requires,
and this pass makes only such groups): each other tensor has the convolution's shape, one value per
channel, or one value. Guarantee: the executor gives the same results before and after (the group
can always be run by interpreting its subgraph: the same conv, then the same ops).
"""
from __future__ import annotations

import math

from tscript_runtime.conv_epilogue import CONV_ARITY
from tscript_runtime.prims import CONV_GROUP

from ..graph import Graph, Node, Value, clone_node
from ..types import TensorType
from .effects import mutated_values
from .fuse import GROUP, _blocks

FLOATS = ("float32", "float64")


def fuse_conv_epilogues(graph: Graph) -> bool:
    """Fold each convolution and the fusion group reading it into a ConvGroup; True if any was made."""
    mutable = mutated_values(graph, initial_fills=False)
    changed = False
    for block in _blocks(graph.block):
        for node in list(block.nodes):
            conv = _conv_of(node, mutable) if node.kind == GROUP else None
            if conv is not None:
                _make_conv_group(graph, conv, node)
                changed = True
    return changed


def _conv_of(group: Node, mutable: set) -> Node | None:
    """The conv2d whose result only `group` reads, when the pair can be one ConvGroup: of several (a
    residual block's and its shortcut's), the one with the most weights (the other's result is then
    read as a residual)."""
    convs = [v.node for v in group.inputs if v.node is not None and v.node.kind == "aten::conv2d"
             and v.node.owner is group.owner and len(v.uses) == 1]
    for conv in sorted(convs, key=_weights, reverse=True):
        shape = _float_shape(conv.output)
        if shape is None or len(conv.inputs) != CONV_ARITY or any(v in mutable for v in conv.inputs):
            continue
        if _float_shape(group.output) != shape or group.output.type.dtype != conv.output.type.dtype:
            continue
        if all(v is conv.output or _epilogue_tensor(v, shape) for v in group.inputs):
            return conv
    return None


def _weights(conv: Node) -> int:
    shape = getattr(conv.inputs[1].type, "shape", None) or ()
    return math.prod(d if isinstance(d, int) else 1 for d in shape)


def _float_shape(v: Value):
    """The static shape of a float32/float64 tensor of rank 3 or 4 (a conv2d's result), else None."""
    t = v.type
    ok = isinstance(t, TensorType) and t.dtype is not None and t.dtype.name in FLOATS and t.shape is not None
    return tuple(t.shape) if ok and len(t.shape) in (3, 4) else None


def _epilogue_tensor(v: Value, shape: tuple) -> bool:
    """Can the epilogue read `v` beside a result of `shape`: the same shape, one value per channel,
    or one value?"""
    t = v.type
    if not isinstance(t, TensorType) or t.shape is None or t.dtype is None:
        return False
    s = tuple(t.shape)
    channel_only = len(s) >= 3 and all(d == 1 for i, d in enumerate(s) if i != len(s) - 3) and \
        s[-3] == shape[len(shape) - 3]
    return s == shape or all(d == 1 for d in s) or channel_only


def _make_conv_group(graph: Graph, conv: Node, group: Node) -> Node:
    """Replace `conv` and `group` by one ConvGroup (at the group's place)."""
    sub = Graph()
    inputs = list(conv.inputs)
    params = [sub.add_input(v.type, v.name) for v in conv.inputs]  # (one each: an input may repeat)
    with sub.inserting_at_end(sub.block):
        inner_conv = sub.insert(conv.kind, params, 1, types=[conv.output.type])
        inner_conv.source, inner_conv.scope = conv.source, conv.scope
        inner_conv.output.rename(conv.output.name)
        value_map = {conv.output: inner_conv.output}
        inner = group.attrs["subgraph"]
        for outer, param in zip(group.inputs, inner.inputs):
            if outer is conv.output:
                value_map[param] = value_map[conv.output]
            else:
                value_map[param] = sub.add_input(outer.type, outer.name)
                inputs.append(outer)
        for n in inner.nodes:
            clone_node(n, sub.block, value_map)
    sub.add_output(value_map[inner.outputs[0]])
    with graph.inserting_before(group):
        fused = graph.insert(CONV_GROUP, inputs, 1, {"subgraph": sub}, [group.output.type])
    fused.source, fused.scope = conv.source, conv.scope
    group.output.replace_all_uses_with(fused.output)
    group.destroy()
    conv.destroy()
    return fused
