"""Convolution and pooling functions of nn.functional. Each is one op of the table
(`aten::conv2d`, `aten::max_pool2d`, ...); this file only parses PyTorch's Python-level arguments:
string paddings, `stride=None`, `return_indices`, `None` entries of adaptive output sizes, and the
1-D pooling forms, which run the 2-D ops over height-1 images."""
from __future__ import annotations

from ..._dispatch import dispatch
from ..._tensor import Tensor
from tscript_runtime.errors import OpRuntimeError
from tscript_runtime.ops import OPS
from tscript_runtime.ops.conv import conv_param

__all__ = ["conv1d", "conv2d", "conv_transpose2d", "unfold", "fold", "max_pool1d", "max_pool2d",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "avg_pool1d", "avg_pool2d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d"]


# -- convolutions ---------------------------------------------------------------------------------

def _string_padding(op: str, nd: int, weight: Tensor, stride, padding: str, dilation):
    """Symmetric padding for padding="valid"/"same", and per spatial dim whether the first output
    must be dropped: "same" with an odd total pads one more at the end (as PyTorch does), which
    equals padding the larger amount on both sides and dropping the first output."""
    if padding not in ("valid", "same"):
        raise OpRuntimeError(f"{op}: Invalid padding string: '{padding}'")
    if padding == "valid" or weight.dim() != nd + 2:
        return 0, (False,) * nd
    if any(s != 1 for s in conv_param(op, "stride", stride, nd)):
        raise OpRuntimeError(f"{op}: padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for d, k in zip(conv_param(op, "dilation", dilation, nd), weight.shape[2:])]
    return tuple(t - t // 2 for t in totals), tuple(t % 2 == 1 for t in totals)


def _conv(op: str, nd: int, input, weight, bias, stride, padding, dilation, groups) -> Tensor:
    drop = (False,) * nd
    if isinstance(padding, str):
        padding, drop = _string_padding(op, nd, weight, stride, padding, dilation)
    out = dispatch(OPS[f"aten::{op}"], (input, weight, bias, stride, padding, dilation, groups))
    for i, cut in enumerate(drop):
        if cut:
            d = out.dim() - nd + i
            out = out.narrow(d, 1, out.shape[d] - 1)
    return out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """1-D convolution over (N, C, L) or (C, L); padding may be an int, a tuple, "valid" or "same"."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """2-D convolution over (N, C, H, W) or (C, H, W); padding may be an int, a pair, "valid" or "same"."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """2-D transposed convolution; weight is (in_channels, out_channels / groups, kH, kW)."""
    return dispatch(OPS["aten::conv_transpose2d"],
                    (input, weight, bias, stride, padding, output_padding, groups, dilation))


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sliding blocks of (N, C, H, W) as columns (N, C*kH*kW, L) (im2col)."""
    return dispatch(OPS["aten::im2col"], (input, kernel_size, dilation, padding, stride))


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sum columns (N, C*kH*kW, L) back into (N, C, H, W) (col2im, unfold's adjoint)."""
    return dispatch(OPS["aten::col2im"], (input, output_size, kernel_size, dilation, padding, stride))


# -- pooling --------------------------------------------------------------------------------------

def _max_pool(op: str, input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool):
    """The max pooling op `op` (stride=None means the ops' [], i.e. kernel_size)."""
    return dispatch(OPS[f"aten::{op}"],
                    (input, kernel_size, [] if stride is None else stride, padding, dilation, ceil_mode))


def _avg_pool(op: str, input: Tensor, kernel_size, stride, padding, ceil_mode: bool, count_include_pad: bool,
              divisor_override: int | None) -> Tensor:
    """The average pooling op `op` (stride=None means the ops' [], i.e. kernel_size)."""
    return dispatch(OPS[f"aten::{op}"], (input, kernel_size, [] if stride is None else stride, padding,
                                         ceil_mode, count_include_pad, divisor_override))


def _with_defaults(output_size, input: Tensor):
    """An adaptive output size whose None entries keep the input's size (PyTorch's _list_with_default)."""
    if isinstance(output_size, int) or output_size is None:
        return output_size
    sizes = list(output_size)
    if input.dim() <= len(sizes):
        raise ValueError(f"Input dimension should be at least {len(sizes) + 1}")
    return [s if s is not None else d for s, d in zip(sizes, input.shape[-len(sizes):])]


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """max_pool2d and the flat index (into each H*W input plane) of every maximum."""
    return _max_pool("max_pool2d_with_indices", input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The maximum over each window (stride defaults to kernel_size); `(values, indices)` with
    return_indices=True."""
    op = "max_pool2d_with_indices" if return_indices else "max_pool2d"
    return _max_pool(op, input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean over each window (stride defaults to kernel_size)."""
    return _avg_pool("avg_pool2d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a fixed output size; a None entry keeps that input size."""
    return dispatch(OPS["aten::adaptive_avg_pool2d"], (input, _with_defaults(output_size, input)))


# -- 1-D pooling: the 2-D ops over height-1 images ------------------------------------------------

def _single(op: str, name: str, value) -> int:
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise OpRuntimeError(f"{op}: {name} must be an int or a tuple of one int, but got {tuple(value)}")
        value = value[0]
    return value


def _check_1d(op: str, input: Tensor) -> None:
    if input.dim() not in (2, 3):
        raise OpRuntimeError(f"{op}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                             f"input, but got:{list(input.shape)}")


def _as_2d(op: str, kernel_size, stride, padding, dilation=1) -> tuple:
    """1-D pooling arguments as the 2-D ones of a height-1 window."""
    stride = [] if stride is None or (isinstance(stride, (list, tuple)) and not stride) else \
        [1, _single(op, "stride", stride)]
    return ([1, _single(op, "kernel_size", kernel_size)], stride, [0, _single(op, "padding", padding)],
            [1, _single(op, "dilation", dilation)])


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """max_pool1d and the index (along L) of every maximum."""
    _check_1d("max_pool1d", input)
    values, indices = max_pool2d_with_indices(input.unsqueeze(-2), *_as_2d("max_pool1d", kernel_size, stride,
                                                                            padding, dilation), ceil_mode)
    return values.squeeze(-2), indices.squeeze(-2)


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The maximum over each window of (N, C, L) or (C, L)."""
    if return_indices:
        return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    _check_1d("max_pool1d", input)
    return max_pool2d(input.unsqueeze(-2), *_as_2d("max_pool1d", kernel_size, stride, padding, dilation),
                      ceil_mode).squeeze(-2)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """The mean over each window of (N, C, L) or (C, L)."""
    if input.dim() not in (2, 3):
        raise OpRuntimeError(f"avg_pool1d: Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor "
                             f"for argument #1 'self'")
    kernel, stride, padding, _ = _as_2d("avg_pool1d", kernel_size, stride, padding)
    return avg_pool2d(input.unsqueeze(-2), kernel, stride, padding, ceil_mode, count_include_pad).squeeze(-2)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average pooling of (N, C, L) or (C, L) to a fixed output length."""
    if input.dim() not in (2, 3):
        raise OpRuntimeError(f"adaptive_avg_pool1d: Expected 2 to 3 dimensions, but got {input.dim()}-dimensional "
                             f"tensor for argument #1 'self'")
    return adaptive_avg_pool2d(input.unsqueeze(-2), [1, _single("adaptive_avg_pool1d", "output_size",
                                                                output_size)]).squeeze(-2)
