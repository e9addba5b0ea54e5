"""The convolution and pooling ops beyond conv.py's 1-D and 2-D ones: `conv3d`, `conv_transpose1d`,
`conv_transpose3d`, `max_pool3d` (with indices), `avg_pool3d` and its adjoint: rows of the table
whose kernels and rules are conv.py's N-d functions, so messages are PyTorch's and those of the 2-D ops.
"""
from __future__ import annotations

from .conv import (_float_dtype, _pool_dtype, avg_backward_shape, avg_pool, avg_pool_backward, avg_shape, max_pool,
                   pool_shape, register_conv, register_transposed, with_indices_dtype, with_indices_shape)
from .registry import register

conv3d = register_conv(3)
conv_transpose1d = register_transposed(1)
conv_transpose3d = register_transposed(3)


@register("aten::max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
          "int[3] dilation=1, bool ceil_mode=False) -> Tensor",
          shape=pool_shape("max_pool3d", 3), dtype=_pool_dtype("max_pool3d"))
def max_pool3d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The maximum over each 3-D window (stride [] means kernel_size; padding counts as -inf)."""
    return max_pool(self, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d", False, 3)


@register("aten::max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
          "int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
          shape=with_indices_shape(3), dtype=with_indices_dtype(3))
def max_pool3d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """max_pool3d and, per output, the flat index (into its D*H*W input volume) of the maximum."""
    return max_pool(self, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d_with_indices", True, 3)


@register("aten::avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
          "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
          shape=avg_shape(3), dtype=_pool_dtype("avg_pool3d"))
def avg_pool3d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean over each 3-D window (zero padding; see conv._avg_divisors for what it divides by)."""
    return avg_pool(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3)


@register("aten::_avg_pool3d_backward(Tensor grad_output, int[] input_size, int[3] kernel_size, int[3] stride, "
          "int[3] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor",
          shape=avg_backward_shape(3), dtype=_float_dtype("avg_pool3d_backward"))
def _avg_pool3d_backward(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override):
    """The adjoint of avg_pool3d: each output's gradient spread evenly over its window."""
    return avg_pool_backward(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                             divisor_override, 3)
