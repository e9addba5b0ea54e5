"""Derivative rows for the conv and pooling ops (same table and conventions as derivatives.py).

Every formula is written with ops that are themselves differentiable (im2col, col2im, matmul,
scatter_add, the pooling adjoints), so double backward works. A convolution's gradients are the
two GEMMs of its im2col form; inputs that do not require grad get no gradient computed (the first
layer's image gradient, a frozen weight's gradient), and a convolution keeps its input only when
the weight needs a gradient.
"""
import math

from tscript_runtime.ops.conv import conv_out_size, conv_param

from .derivatives import call, derivative


def _zeros(shape, like):
    return call("aten::zeros", tuple(shape), dtype=like.dtype)


# -- im2col / col2im: each other's adjoint ---------------------------------------------------------

@derivative("aten::im2col")
def _im2col(grad, self_shape, kernel_size, dilation, padding, stride):
    return call("aten::col2im", grad, tuple(self_shape[-2:]), kernel_size, dilation, padding, stride)


@derivative("aten::_im2col_rows")
def _im2col_rows(grad, self_shape, kernel_size, dilation, padding, stride):
    return call("aten::col2im", grad.transpose(0, 1), tuple(self_shape[-2:]), kernel_size, dilation, padding, stride)


@derivative("aten::col2im")
def _col2im(grad, kernel_size, dilation, padding, stride):
    return call("aten::im2col", grad, kernel_size, dilation, padding, stride)


# -- convolutions ---------------------------------------------------------------------------------

def _by_group(t, groups: int):
    """(N, C, ...) -> (G, C/G, N*...): the batch moved inside, so each group's product is one GEMM."""
    n, c = t.shape[:2]
    return t.transpose(0, 1).reshape(groups, c // groups, n * math.prod(t.shape[2:]))


def _conv4d_grads(grad, input, shape, weight, weight_shape, stride, padding, dilation, groups, needs):
    """Gradients of a batched 2-D convolution from its im2col form, one GEMM per group:
    input: col2im(W^T @ grad), weight: grad @ im2col(input)^T, bias: grad summed."""
    n, c, h, w = shape
    o, cg, kh, kw = weight_shape
    go = _by_group(grad, groups)                                          # (G, O/G, N*L)
    g_input = g_weight = g_bias = None
    if needs[0]:
        cols = weight.reshape(groups, o // groups, cg * kh * kw).transpose(1, 2) @ go
        cols = cols.reshape(c * kh * kw, n, -1).transpose(0, 1)          # (N, C*kh*kw, L), a view
        g_input = call("aten::col2im", cols, (h, w), (kh, kw), dilation, padding, stride)
    if needs[1]:  # the columns made with the batch inside each row: (G, C/G*kh*kw, N*L) is a view
        cols = call("aten::_im2col_rows", input, (kh, kw), dilation, padding, stride).reshape(groups, -1, go.shape[-1])
        g_weight = (go @ cols.transpose(1, 2)).reshape(weight_shape)
    if needs[2]:
        g_bias = grad.sum(dim=(0, 2, 3))
    return g_input, g_weight, g_bias


def _batch(grad, input, shape, batched: bool):
    """An unbatched call's tensors and input shape with a batch dim of 1."""
    if batched:
        return grad, input, tuple(shape)
    return grad.unsqueeze(0), None if input is None else input.unsqueeze(0), (1,) + tuple(shape)


def _unbatch(grads, batched: bool):
    g_input, g_weight, g_bias = grads
    if g_input is not None and not batched:
        g_input = g_input.squeeze(0)
    return g_input, g_weight, g_bias


# The input is read only for the weight's gradient and the weight only for the input's.
_SAVE_IF = {"input": ("weight",), "weight": ("input",)}


@derivative("aten::conv2d", save_if=_SAVE_IF)
def _conv2d(grad, input, input_shape, weight, weight_shape, stride, padding, dilation, groups, needs_input_grad):
    batched = len(input_shape) == 4
    grad, input, shape = _batch(grad, input, input_shape, batched)
    params = [conv_param("conv2d", name, v, 2) for name, v in
              (("stride", stride), ("padding", padding), ("dilation", dilation))]
    return _unbatch(_conv4d_grads(grad, input, shape, weight, weight_shape, *params, groups, needs_input_grad),
                    batched)


@derivative("aten::conv1d", save_if=_SAVE_IF)
def _conv1d(grad, input, input_shape, weight, weight_shape, stride, padding, dilation, groups, needs_input_grad):
    """A conv1d is a conv2d over height-1 images."""
    batched = len(input_shape) == 3
    grad, input, shape = _batch(grad, input, input_shape, batched)
    params = [(first,) + conv_param("conv1d", name, v, 1) for name, v, first in
              (("stride", stride, 1), ("padding", padding, 0), ("dilation", dilation, 1))]
    shape4, wshape4 = shape[:2] + (1,) + shape[2:], tuple(weight_shape[:2]) + (1,) + tuple(weight_shape[2:])
    g_input, g_weight, g_bias = _conv4d_grads(
        grad.unsqueeze(2), None if input is None else input.unsqueeze(2), shape4,
        None if weight is None else weight.unsqueeze(2), wshape4, *params, groups, needs_input_grad)
    g_input = g_input.squeeze(2) if g_input is not None else None
    g_weight = g_weight.squeeze(2) if g_weight is not None else None
    return _unbatch((g_input, g_weight, g_bias), batched)


@derivative("aten::conv_transpose2d", save_if=_SAVE_IF)
def _conv_transpose2d(grad, input, input_shape, weight, weight_shape, stride, padding, output_padding, groups,
                      dilation, needs_input_grad):
    """The transposed convolution's adjoint is a convolution: im2col of the output gradient, then
    one GEMM per group for each gradient."""
    batched = len(input_shape) == 4
    grad, input, (n, cin, h, w) = _batch(grad, input, input_shape, batched)
    stride, padding, dilation = (conv_param("conv_transpose2d", name, v, 2) for name, v in
                                 (("stride", stride), ("padding", padding), ("dilation", dilation)))
    cog, kh, kw = weight_shape[1:]
    g_input = g_weight = g_bias = None
    if needs_input_grad[0] or needs_input_grad[1]:
        cols = call("aten::im2col", grad, (kh, kw), dilation, padding, stride)
        grid = [conv_out_size(grad.shape[2 + i], (kh, kw)[i], stride[i], padding[i], dilation[i]) for i in range(2)]
        if grid != [h, w]:  # output_padding >= stride adds windows past the input's last position
            cols = cols.reshape(n, -1, *grid)[:, :, :h, :w].reshape(n, cols.shape[1], h * w)
        cols = _by_group(cols, groups)                                   # (G, Cout/G*kh*kw, N*L)
        if needs_input_grad[0]:
            g = weight.reshape(groups, cin // groups, cog * kh * kw) @ cols
            g_input = g.reshape(cin, n, h, w).transpose(0, 1)
        if needs_input_grad[1]:
            g_weight = (_by_group(input, groups) @ cols.transpose(1, 2)).reshape(weight_shape)
    if needs_input_grad[2]:
        g_bias = grad.sum(dim=(0, 2, 3))
    return _unbatch((g_input, g_weight, g_bias), batched)


# -- pooling --------------------------------------------------------------------------------------

def _unpool(grad, indices, shape):
    """Each output's gradient added at the input position its maximum came from."""
    plane = tuple(shape[:-2]) + (shape[-2] * shape[-1],)
    return call("aten::scatter_add", _zeros(plane, grad), -1, indices.flatten(-2), grad.flatten(-2)).reshape(shape)


@derivative("aten::max_pool2d_with_indices")
def _max_pool2d_with_indices(grad, self_shape, result):
    return _unpool(grad[0], result[1], self_shape)


@derivative("aten::max_pool2d")
def _max_pool2d(grad, self, kernel_size, stride, padding, dilation, ceil_mode):
    """Finds the maxima again (cheaper to recompute than to keep the indices of every pooling), in the
    same pass that adds each gradient there."""
    return call("aten::_max_pool2d_backward", grad, self.detach(), kernel_size, stride, padding, dilation, ceil_mode)


@derivative("aten::_max_pool2d_backward")
def _max_pool2d_backward(grad, self, kernel_size, stride, padding, dilation, ceil_mode):
    """Linear in grad_output, whose adjoint reads each window's maximum's place; `self` only picks the
    places (no gradient)."""
    indices = call("aten::max_pool2d_with_indices", self.detach(), kernel_size, stride, padding, dilation,
                   ceil_mode)[1]
    picked = call("aten::gather", grad.flatten(-2), -1, indices.flatten(-2))
    return picked.reshape(tuple(indices.shape)), None


@derivative("aten::avg_pool2d")
def _avg_pool2d(grad, self_shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return call("aten::_avg_pool2d_backward", grad, self_shape, kernel_size, stride, padding, ceil_mode,
                count_include_pad, divisor_override)


@derivative("aten::_avg_pool2d_backward")
def _avg_pool2d_backward(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return call("aten::avg_pool2d", grad, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override)


def _averaging_matrix(size: int, out: int, like):
    """(out, size) matrix whose row i averages adaptive window i, built from ops."""
    i = call("aten::arange", out).unsqueeze(1)
    start, end = i * size // out, ((i + 1) * size + out - 1) // out
    pos = call("aten::arange", size).unsqueeze(0)
    inside = ((pos >= start) & (pos < end)).to(like.dtype)
    return inside / (end - start).to(like.dtype)


@derivative("aten::adaptive_avg_pool2d")
def _adaptive_avg_pool2d(grad, self_shape):
    (h, w), (oh, ow) = self_shape[-2:], grad.shape[-2:]
    if oh == 0 or ow == 0:
        return _zeros(self_shape, grad)
    return _averaging_matrix(h, oh, grad).t() @ grad @ _averaging_matrix(w, ow, grad)
