"""Derivative rows for the nn ops (same table and conventions as derivatives.py)."""
from .derivatives import call, derivative  # noqa: F401

_BCE_EPSILON = 1e-12  # PyTorch clamps x (1 - x) to this in binary_cross_entropy_backward


@derivative("aten::binary_cross_entropy")
def _binary_cross_entropy(grad, input, target, weight, reduction):
    scale = grad / input.numel() if reduction == 1 else grad
    g_input = scale * (input - target) / (input * (1 - input)).clamp(min=_BCE_EPSILON)
    g_target = -scale * (input / (1 - input)).log()
    if weight is None:
        return g_input, g_target, None
    g_weight = scale * call("aten::binary_cross_entropy", input, target, None, 0)  # PyTorch has none
    return g_input * weight, g_target * weight, g_weight
