"""Derivative rows for `Tensor.unfold` and its adjoint (same table and conventions as derivatives.py):
each is the other's gradient, so double backward works."""
from .derivatives import call, derivative


@derivative("aten::unfold")
def _unfold(grad, self_shape, dimension, size, step):
    return call("aten::unfold_backward", grad, tuple(self_shape), dimension, size, step)


@derivative("aten::unfold_backward")
def _unfold_backward(grad, dim, size, step):
    return call("aten::unfold", grad, dim, size, step)
