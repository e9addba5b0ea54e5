"""Conv1d, Conv2d, Conv3d, ConvTranspose1d/2d/3d, and Unfold/Fold: PyTorch's parameters (`weight`,
`bias`), argument checks, default initialisation and reprs."""
from __future__ import annotations

import math
from typing import List, Optional

from ..._creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Unfold", "Fold"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value, n: int) -> tuple:
    """An int or a sequence as an n-tuple (PyTorch's `_single`/`_pair`)."""
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * n


def _set_repr(values) -> str:
    return "{" + ", ".join(repr(v) for v in sorted(values)) + "}"


class _ConvNd(Module):
    """What every convolution layer shares: checks, parameters, initialisation, repr."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple, padding,
                 dilation: tuple, transposed: bool, output_padding: tuple, groups: int, bias: bool,
                 padding_mode: str, device=None, dtype=None):
        super().__init__()
        _check_channels(in_channels, out_channels, groups)
        _check_padding(padding, stride, padding_mode)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.transposed, self.output_padding, self.groups = transposed, output_padding, groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = _reversed_padding(padding, kernel_size, dilation)
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(empty(*shape, *kernel_size, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: weight kaiming_uniform(a=sqrt(5)), bias uniform(+-1/sqrt(fan_in))."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={_fmt_padding(self.padding)}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _conv_forward(self, conv, input, weight, bias):
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)


def _check_channels(in_channels: int, out_channels: int, groups: int) -> None:
    if groups <= 0:
        raise ValueError("groups must be a positive integer")
    if in_channels % groups != 0:
        raise ValueError("in_channels must be divisible by groups")
    if out_channels % groups != 0:
        raise ValueError("out_channels must be divisible by groups")


def _check_padding(padding, stride: tuple, padding_mode: str) -> None:
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of {_set_repr(('same', 'valid'))}")
        if padding == "same" and any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
    if padding_mode not in _PADDING_MODES:
        raise ValueError(f"padding_mode must be one of {_set_repr(_PADDING_MODES)}, but got "
                         f"padding_mode='{padding_mode}'")


def _reversed_padding(padding, kernel_size: tuple, dilation: tuple) -> list:
    """The F.pad argument (last dim first, before/after pairs) of a non-zeros padding mode."""
    if padding == "valid":
        return [0, 0] * len(kernel_size)
    if padding == "same":
        totals = [d * (k - 1) for d, k in zip(dilation, kernel_size)]
        return [x for t in reversed(totals) for x in (t // 2, t - t // 2)]
    return [p for p in reversed(padding) for _ in range(2)]


def _fmt_padding(padding) -> str:
    return padding if isinstance(padding, str) else str(padding)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L) or (C_in, L)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
        padding = padding if isinstance(padding, str) else _tuple(padding, 1)
        super().__init__(in_channels, out_channels, _tuple(kernel_size, 1), _tuple(stride, 1), padding,
                         _tuple(dilation, 1), False, (0,), groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return self._conv_forward(F.conv1d, input, self.weight, self.bias)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
        padding = padding if isinstance(padding, str) else _tuple(padding, 2)
        super().__init__(in_channels, out_channels, _tuple(kernel_size, 2), _tuple(stride, 2), padding,
                         _tuple(dilation, 2), False, (0, 0), groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return self._conv_forward(F.conv2d, input, self.weight, self.bias)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C_in, D, H, W) or (C_in, D, H, W)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
        padding = padding if isinstance(padding, str) else _tuple(padding, 3)
        super().__init__(in_channels, out_channels, _tuple(kernel_size, 3), _tuple(stride, 3), padding,
                         _tuple(dilation, 3), False, (0, 0, 0), groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return self._conv_forward(F.conv3d, input, self.weight, self.bias)


class _ConvTransposeNd(_ConvNd):
    """What the transposed convolutions share: only zero padding, and an output size that
    `forward(input, output_size)` may pick."""

    def __init__(self, nd: int, in_channels: int, out_channels: int, kernel_size, stride, padding, output_padding,
                 groups: int, bias: bool, dilation, padding_mode: str, device, dtype):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, _tuple(kernel_size, nd), _tuple(stride, nd), _tuple(padding, nd),
                         _tuple(dilation, nd), True, _tuple(output_padding, nd), groups, bias, padding_mode,
                         device, dtype)

    def _transposed_forward(self, conv, input, output_size):
        if output_size is None:
            return conv(input, self.weight, self.bias, self.stride, self.padding, self.output_padding, self.groups,
                        self.dilation)
        return conv(input, self.weight, self.bias, self.stride, self.padding, self._output_padding(input, output_size),
                    self.groups, self.dilation)

    def _output_padding(self, input, output_size) -> tuple:
        """The output_padding giving `output_size` (PyTorch's rule and message)."""
        spatial = len(self.kernel_size)
        leading = 2 if input.dim() == spatial + 2 else 1
        if len(output_size) == leading + spatial:
            output_size = output_size[leading:]
        if len(output_size) != spatial:
            raise ValueError(f"ConvTranspose{spatial}D: for {input.dim()}D input, output_size must have {spatial} "
                             f"or {leading + spatial} elements (got {len(output_size)})")
        smallest = [(n - 1) * s - 2 * p + d * (k - 1) + 1 for n, s, p, d, k in
                    zip(input.shape[leading:], self.stride, self.padding, self.dilation, self.kernel_size)]
        largest = [m + s - 1 for m, s in zip(smallest, self.stride)]
        if any(size < lo or size > hi for size, lo, hi in zip(output_size, smallest, largest)):
            raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {smallest} to "
                             f"{largest} (for an input of {input.shape[leading:]})")
        return tuple(size - lo for size, lo in zip(output_size, smallest))


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C_in, L) or (C_in, L)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None):
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                         dilation, padding_mode, device, dtype)

    def forward(self, input, output_size: Optional[List[int]] = None):
        return self._transposed_forward(F.conv_transpose1d, input, output_size)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution; `forward(input, output_size)` may pick the output size."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None):
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                         dilation, padding_mode, device, dtype)

    def forward(self, input, output_size: Optional[List[int]] = None):
        return self._transposed_forward(F.conv_transpose2d, input, output_size)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over (N, C_in, D, H, W) or (C_in, D, H, W)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None):
        super().__init__(3, in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                         dilation, padding_mode, device, dtype)

    def forward(self, input, output_size: Optional[List[int]] = None):
        return self._transposed_forward(F.conv_transpose3d, input, output_size)


class Unfold(Module):
    """Sliding blocks as columns (F.unfold)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """Columns summed back into images (F.fold)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
