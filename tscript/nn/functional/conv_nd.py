"""The convolution and pooling functions beyond conv.py's 1-D and 2-D ones: conv3d,
conv_transpose1d/3d, max_pool3d, avg_pool3d, adaptive max pooling in 1-D, 2-D and 3-D and
adaptive average pooling in 3-D. Each is one op of the table; this file only parses PyTorch's
Python-level arguments (string paddings, `stride=None`, `return_indices`, `None` entries of
adaptive output sizes), and runs the 1-D adaptive max pool as the 2-D op over height-1 images."""
from __future__ import annotations

from ..._dispatch import dispatch
from ..._tensor import Tensor
from tscript_runtime.errors import OpRuntimeError
from tscript_runtime.ops import OPS
from .conv import _avg_pool, _conv, _max_pool, _with_defaults

__all__ = ["conv3d", "conv_transpose1d", "conv_transpose3d", "max_pool3d", "max_pool3d_with_indices", "avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices", "adaptive_avg_pool3d"]


# -- convolutions ---------------------------------------------------------------------------------

def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """3-D convolution over (N, C, D, H, W) or (C, D, H, W); padding may be an int, a triple, "valid" or "same"."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """1-D transposed convolution; weight is (in_channels, out_channels / groups, kW)."""
    return dispatch(OPS["aten::conv_transpose1d"],
                    (input, weight, bias, stride, padding, output_padding, groups, dilation))


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """3-D transposed convolution; weight is (in_channels, out_channels / groups, kD, kH, kW)."""
    return dispatch(OPS["aten::conv_transpose3d"],
                    (input, weight, bias, stride, padding, output_padding, groups, dilation))


# -- 3-D pooling ----------------------------------------------------------------------------------

def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """max_pool3d and the flat index (into each D*H*W input volume) of every maximum."""
    return _max_pool("max_pool3d_with_indices", input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The maximum over each 3-D window (stride defaults to kernel_size); `(values, indices)` with
    return_indices=True."""
    op = "max_pool3d_with_indices" if return_indices else "max_pool3d"
    return _max_pool(op, input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean over each 3-D window (stride defaults to kernel_size)."""
    return _avg_pool("avg_pool3d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


# -- adaptive pooling -----------------------------------------------------------------------------


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """Adaptive max pooling of (N, C, H, W) or (C, H, W) and the flat index (into H*W) of every maximum."""
    return dispatch(OPS["aten::adaptive_max_pool2d"], (input, _with_defaults(output_size, input)))


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """Adaptive max pooling of (N, C, D, H, W) or (C, D, H, W) and the flat index of every maximum."""
    return dispatch(OPS["aten::adaptive_max_pool3d"], (input, _with_defaults(output_size, input)))


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """Adaptive max pooling of (N, C, L) or (C, L) and the index (along L) of every maximum."""
    if input.dim() not in (2, 3):
        raise OpRuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                             f"'self' (while checking arguments for adaptive_max_pool1d)")
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != 1:
            raise OpRuntimeError(f"adaptive_max_pool1d() argument 'output_size' should contain one int "
                                 f"(got {len(output_size)})")
        output_size = output_size[0]
    values, indices = adaptive_max_pool2d_with_indices(input.unsqueeze(-2), [1, output_size])
    return values.squeeze(-2), indices.squeeze(-2)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Adaptive max pooling of (N, C, L) or (C, L); `(values, indices)` with return_indices=True."""
    result = adaptive_max_pool1d_with_indices(input, output_size)
    return result if return_indices else result[0]


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Adaptive max pooling of (N, C, H, W) or (C, H, W) (None keeps an input size); `(values, indices)`
    with return_indices=True."""
    result = adaptive_max_pool2d_with_indices(input, output_size)
    return result if return_indices else result[0]


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Adaptive max pooling of (N, C, D, H, W) or (C, D, H, W) (None keeps an input size)."""
    result = adaptive_max_pool3d_with_indices(input, output_size)
    return result if return_indices else result[0]


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to a fixed size; a None entry keeps that input size."""
    return dispatch(OPS["aten::adaptive_avg_pool3d"], (input, _with_defaults(output_size, input)))
