"""Floating-point operations of the GEMM and convolution ops, from the shapes of one call's inputs and
output (a multiply-add counts 2): what the profile (profile.py) divides by time for GFLOP/s.

FLOPS: op name -> (inputs, output) -> FLOPs. Only ops whose time is dominated by multiply-adds are
rated; everything else is bandwidth-bound and has no row here.
"""
from __future__ import annotations

import math


def _contracted(inputs: list, output) -> float:
    """Products whose inner dim is the first operand's last one: 2 * output elements * K."""
    a = inputs[0]
    return 2.0 * output.size * a.shape[-1] if a.ndim else 0.0


def _addmm(inputs: list, output) -> float:
    return 2.0 * output.size * inputs[1].shape[-1]


def _conv(inputs: list, output) -> float:
    """Each output element sums (input channels / groups) * kernel size products."""
    return 2.0 * output.size * math.prod(inputs[1].shape[1:])


def _conv_transpose(inputs: list, output) -> float:
    """Each input element scatters (output channels / groups) * kernel size products."""
    return 2.0 * inputs[0].size * math.prod(inputs[1].shape[1:])


FLOPS = {
    "aten::linear": _contracted, "aten::matmul": _contracted, "aten::mm": _contracted, "aten::bmm": _contracted,
    "aten::addmm": _addmm,
    "aten::conv1d": _conv, "aten::conv2d": _conv, "aten::conv3d": _conv,
    "aten::conv_transpose2d": _conv_transpose,
    "tscript::ConvGroup": _conv,  # (a conv2d and its epilogue: conv2d's inputs first)
}


def flops(kind: str, inputs: list, output) -> float:
    """FLOPs of one call of op `kind` (0 when it has no rule or the values are not arrays)."""
    rule = FLOPS.get(kind)
    if rule is None or not hasattr(output, "size") or not all(hasattr(x, "shape") for x in inputs[:2]):
        return 0.0
    return rule(inputs, output)
