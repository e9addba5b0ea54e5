"""Derivative rows of the N-d convolution and pooling ops (conv_nd.py, adaptive_pool.py), same table
and conventions as derivatives.py.

A convolution's gradients are convolutions again, for any number of spatial dims: the input's is
the transposed convolution of the output gradient, and the weight's is one grouped convolution
in which the batch plays the channels and the output gradient the kernel (stride and dilation
trade places). A transposed convolution's are the mirror image. So every formula is made of
differentiable ops and gradients of any order work; as in derivatives_conv.py, a formula computes
only the gradients asked for, and keeps the input only when the weight needs a gradient.
"""
from math import prod

from tscript_runtime.ops.conv import conv_param

from .derivatives import call, derivative
from .derivatives_conv import _SAVE_IF, _averaging_matrix, _batch, _unbatch, _zeros


# -- convolutions ---------------------------------------------------------------------------------

def _params(op: str, nd: int, **values) -> list:
    return [conv_param(op, name, v, nd) for name, v in values.items()]


def _groups_as_batch(t, groups: int):
    """(N, G*c, *S) -> (c, G*N, *S): within each group the channels become the batch and the batch
    the channels, so a weight gradient is one convolution with `groups` groups."""
    n, channels, rest = t.shape[0], t.shape[1], tuple(t.shape[2:])
    return (t.reshape((n, groups, channels // groups) + rest).permute(2, 1, 0, *range(3, 3 + len(rest)))
            .reshape((channels // groups, groups * n) + rest))


def _narrow_to(t, sizes):
    """`t` cut to `sizes` along its spatial dims (from 2 on)."""
    for i, size in enumerate(sizes):
        if t.shape[2 + i] != size:
            t = t.narrow(2 + i, 0, size)
    return t


def _weight_grad(nd: int, image, kernel_source, kernel_shape, stride, padding, dilation, groups):
    """sum over batch and positions of image windows times kernel_source: a convolution of the image
    (groups as batch) with kernel_source (N as channels), stride and dilation swapped."""
    taps = call(f"aten::conv{nd}d", _groups_as_batch(image, groups), kernel_source.transpose(0, 1), None,
                dilation, padding, stride, groups)
    return _narrow_to(taps, kernel_shape).transpose(0, 1)


def _bias_grad(grad, nd: int):
    return grad.sum(dim=(0,) + tuple(range(2, nd + 2)))


def _conv_grads(nd, grad, input, input_shape, weight, weight_shape, stride, padding, dilation, groups, needs):
    batched = len(input_shape) == nd + 2
    grad, input, shape = _batch(grad, input, input_shape, batched)
    stride, padding, dilation = _params(f"conv{nd}d", nd, stride=stride, padding=padding, dilation=dilation)
    size, kernel, out = shape[2:], tuple(weight_shape[2:]), tuple(grad.shape[2:])
    g_input = g_weight = g_bias = None
    if needs[0]:  # the rows no window reached come back as output_padding
        missed = [n - ((o - 1) * s - 2 * p + d * (k - 1) + 1)
                  for n, o, s, p, d, k in zip(size, out, stride, padding, dilation, kernel)]
        g_input = call(f"aten::conv_transpose{nd}d", grad, weight, None, stride, padding, missed, groups, dilation)
    if needs[1]:
        g_weight = _weight_grad(nd, input, grad, kernel, stride, padding, dilation, groups)
    if needs[2]:
        g_bias = _bias_grad(grad, nd)
    return _unbatch((g_input, g_weight, g_bias), batched)


def _transposed_grads(nd, grad, input, input_shape, weight, weight_shape, stride, padding, dilation, groups, needs):
    batched = len(input_shape) == nd + 2
    grad, input, shape = _batch(grad, input, input_shape, batched)
    stride, padding, dilation = _params(f"conv_transpose{nd}d", nd, stride=stride, padding=padding,
                                        dilation=dilation)
    g_input = g_weight = g_bias = None
    if needs[0]:  # output_padding >= stride adds windows past the input's last position
        g_input = _narrow_to(call(f"aten::conv{nd}d", grad, weight, None, stride, padding, dilation, groups),
                             shape[2:])
    if needs[1]:
        g_weight = _weight_grad(nd, grad, input, tuple(weight_shape[2:]), stride, padding, dilation, groups)
    if needs[2]:
        g_bias = _bias_grad(grad, nd)
    return _unbatch((g_input, g_weight, g_bias), batched)


@derivative("aten::conv3d", save_if=_SAVE_IF)
def _conv3d(grad, input, input_shape, weight, weight_shape, stride, padding, dilation, groups, needs_input_grad):
    return _conv_grads(3, grad, input, input_shape, weight, weight_shape, stride, padding, dilation, groups,
                       needs_input_grad)


@derivative("aten::conv_transpose1d", save_if=_SAVE_IF)
def _conv_transpose1d(grad, input, input_shape, weight, weight_shape, stride, padding, groups, dilation,
                      needs_input_grad):
    return _transposed_grads(1, grad, input, input_shape, weight, weight_shape, stride, padding, dilation, groups,
                             needs_input_grad)


@derivative("aten::conv_transpose3d", save_if=_SAVE_IF)
def _conv_transpose3d(grad, input, input_shape, weight, weight_shape, stride, padding, groups, dilation,
                      needs_input_grad):
    return _transposed_grads(3, grad, input, input_shape, weight, weight_shape, stride, padding, dilation, groups,
                             needs_input_grad)


# -- pooling --------------------------------------------------------------------------------------

def _unpool(grad, indices, shape, nd: int):
    """Each output's gradient added at the input position (flat over the last nd dims) its maximum
    came from."""
    volume = tuple(shape[:-nd]) + (prod(shape[-nd:]),)
    return call("aten::scatter_add", _zeros(volume, grad), -1, indices.flatten(-nd),
                grad.flatten(-nd)).reshape(tuple(shape))


@derivative("aten::max_pool3d_with_indices")
def _max_pool3d_with_indices(grad, self_shape, result):
    return _unpool(grad[0], result[1], self_shape, 3)


@derivative("aten::max_pool3d")
def _max_pool3d(grad, self, kernel_size, stride, padding, dilation, ceil_mode):
    """Finds the maxima again (cheaper to recompute than to keep the indices of every pooling)."""
    indices = call("aten::max_pool3d_with_indices", self.detach(), kernel_size, stride, padding, dilation,
                   ceil_mode)[1]
    return _unpool(grad, indices, tuple(self.shape), 3)


@derivative("aten::avg_pool3d")
def _avg_pool3d(grad, self_shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return call("aten::_avg_pool3d_backward", grad, self_shape, kernel_size, stride, padding, ceil_mode,
                count_include_pad, divisor_override)


@derivative("aten::_avg_pool3d_backward")
def _avg_pool3d_backward(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return call("aten::avg_pool3d", grad, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override)


@derivative("aten::adaptive_max_pool2d")
def _adaptive_max_pool2d(grad, self_shape, result):
    return _unpool(grad[0], result[1], self_shape, 2)


@derivative("aten::adaptive_max_pool3d")
def _adaptive_max_pool3d(grad, self_shape, result):
    return _unpool(grad[0], result[1], self_shape, 3)


@derivative("aten::adaptive_avg_pool3d")
def _adaptive_avg_pool3d(grad, self_shape):
    """The averaging matrices' transposes applied along W, H and D (H and W as one axis for D)."""
    (d, h, w), (od, oh, ow) = self_shape[-3:], grad.shape[-3:]
    if 0 in (od, oh, ow):
        return _zeros(self_shape, grad)
    g = _averaging_matrix(h, oh, grad).t() @ (grad @ _averaging_matrix(w, ow, grad))
    lead = tuple(g.shape[:-3])
    g = _averaging_matrix(d, od, grad).t() @ g.reshape(lead + (od, h * w))
    return g.reshape(tuple(self_shape))
