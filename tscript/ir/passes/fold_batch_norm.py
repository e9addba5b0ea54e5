"""Folding of per-channel affine ops into the convolution or linear layer before them: batch norm
in eval mode (with frozen statistics) is `((y - mean) * rsqrt(var + eps)) * weight + bias`, i.e. a
chain of `sub`/`mul`/`add` of per-channel constants after `y = conv2d(...)` or `y = linear(...)`,
and each link folds into the layer's weight and bias:

    conv2d(x, W, b) * s   ->  conv2d(x, W * s[:, None, None, None], b * s)
    conv2d(x, W, b) + t   ->  conv2d(x, W, b + t)

Rules are data: `LAYERS` says where a layer's weight, bias and output channels are; `AFFINE` maps an
elementwise op to the per-channel (scale, shift) it applies, given the layer output's position.
A link folds only when the layer's output has no other reader, the weight (and bias) are tensor
constants, and the other operand is a constant of the weight's dtype that varies at most along
the output-channel dim (so the op changes neither the result's shape nor its dtype).
Guarantee: the same values up to float rounding (the folded weights are rounded once).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph import Graph, Node, Value
from ..types import TensorType
from .constant_propagation import constant_value, tensor_constant


@dataclass(frozen=True)
class Layer:
    """Input positions of the weight and bias; `channel`: the output-channel dim counted from the
    end of the output (so it holds for batched and unbatched inputs alike)."""
    weight: int
    bias: int
    channel: int


LAYERS = {
    "aten::conv1d": Layer(weight=1, bias=2, channel=-2),
    "aten::conv2d": Layer(weight=1, bias=2, channel=-3),
    "aten::linear": Layer(weight=1, bias=2, channel=-1),
}


class _Link:
    """The layer output `y` read by one elementwise node; `channels(v)` is a constant operand as a
    per-channel vector (None if it is not one)."""

    def __init__(self, graph: Graph, layer: Layer, y: Value, weight: np.ndarray):
        self.graph, self.layer, self.y, self.weight = graph, layer, y, weight

    def channels(self, v: Value) -> np.ndarray | None:
        ok, value = constant_value(self.graph, v)
        if not ok:
            return None
        count = self.weight.shape[0]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return np.full(count, value, self.weight.dtype)
        if not isinstance(value, np.ndarray) or value.dtype != self.weight.dtype or value.ndim > self._rank():
            return None
        shape = (1,) * (-self.layer.channel - value.ndim) + value.shape  # right-aligned, padded with 1s
        at = len(shape) + self.layer.channel
        if shape[at] not in (1, count) or any(d != 1 for d in shape[:at] + shape[at + 1:]):
            return None
        return np.broadcast_to(value.reshape(-1), (count,)).copy()

    def _rank(self) -> int:
        """The rank the operand may have without growing the result: the output's, if known."""
        t = self.y.type
        return t.rank if isinstance(t, TensorType) and t.rank is not None else -self.layer.channel

    def number(self, v: Value):
        ok, value = constant_value(self.graph, v)
        return value if ok and isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _add(link: _Link, node: Node):
    a, b, alpha = node.inputs
    alpha = link.number(alpha)
    if alpha is None:
        return None
    if a is link.y and b is not link.y:
        shift = link.channels(b)
        return None if shift is None else (None, shift * alpha)
    if b is link.y and a is not link.y and alpha == 1:
        shift = link.channels(a)
        return None if shift is None else (None, shift)
    return None


def _sub(link: _Link, node: Node):
    a, b, alpha = node.inputs
    alpha = link.number(alpha)
    if alpha is None or a is not link.y or b is link.y:
        return None
    shift = link.channels(b)
    return None if shift is None else (None, -shift * alpha)


def _mul(link: _Link, node: Node):
    a, b = node.inputs
    other = b if a is link.y else a
    if other is link.y:
        return None
    scale = link.channels(other)
    return None if scale is None else (scale, None)


def _div(link: _Link, node: Node):
    a, b, mode = node.inputs
    ok, rounding = constant_value(link.graph, mode)
    if not ok or rounding is not None or a is not link.y or b is link.y:
        return None
    scale = link.channels(b)
    return None if scale is None or not scale.all() else (1 / scale, None)


# elementwise op -> rule(link, node) -> (per-channel scale or None, per-channel shift or None) or None
AFFINE = {"aten::add": _add, "aten::sub": _sub, "aten::mul": _mul, "aten::div": _div}


def fold_batch_norm(graph: Graph) -> bool:
    """Fold affine chains into the conv/linear before them (in place); True if anything folded."""
    changed = False
    for node in list(graph.all_nodes()):
        if node.kind in LAYERS and node.owner is not None:
            while _fold_next(graph, node):
                changed = True
    return changed


def _fold_next(graph: Graph, node: Node) -> bool:
    """Fold the single reader of the layer's output into the layer, if it is a foldable link."""
    layer, y = LAYERS[node.kind], node.output
    if len(y.uses) != 1 or y.uses[0].node.kind not in AFFINE:
        return False
    user = y.uses[0].node
    (ok_w, weight), (ok_b, bias) = (constant_value(graph, node.inputs[i]) for i in (layer.weight, layer.bias))
    if not (ok_w and ok_b and isinstance(weight, np.ndarray) and weight.dtype.kind == "f"):
        return False
    if bias is not None and not (isinstance(bias, np.ndarray) and bias.shape == weight.shape[:1]
                                 and bias.dtype == weight.dtype):
        return False
    affine = AFFINE[user.kind](_Link(graph, layer, y, weight), user)
    if affine is None:
        return False
    scale, shift = affine
    bias = np.zeros(weight.shape[:1], weight.dtype) if bias is None else bias
    if scale is not None:
        weight = weight * scale.reshape((-1,) + (1,) * (weight.ndim - 1))
        bias = bias * scale
    if shift is not None:
        bias = bias + shift
    with graph.inserting_before(node):
        node.set_input(layer.weight, tensor_constant(graph, weight))
        node.set_input(layer.bias, tensor_constant(graph, bias))
    user.output.replace_all_uses_with(y)
    user.destroy()
    return True
