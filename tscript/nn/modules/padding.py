"""Padding layers: Reflection-, Replication-, Circular-, Constant- and ZeroPad{1,2,3}d, thin wrappers
over F.pad with PyTorch's arguments (an int pads every side alike) and reprs."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]


def _normalized(padding, n: int) -> tuple:
    """`padding` as a tuple of n sizes: an int is repeated, a sequence is taken as it is (as PyTorch)."""
    if isinstance(padding, (list, tuple)):
        return tuple(padding)
    return (padding,) * n


class _PadNd(Module):
    """F.pad(input, self.padding, mode) with `padding` normalised to 2 sizes per padded dim."""
    mode = "constant"
    _sides = 2

    def __init__(self, padding):
        super().__init__()
        self.padding = _normalized(padding, self._sides)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    """Pad the last dim by reflecting the input at its edges (the edge itself is not repeated)."""


class ReflectionPad2d(_ReflectionPadNd):
    """Reflection padding of the last 2 dims: padding = (left, right, top, bottom)."""
    _sides = 4


class ReflectionPad3d(_ReflectionPadNd):
    """Reflection padding of the last 3 dims: padding = (left, right, top, bottom, front, back)."""
    _sides = 6


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    """Pad the last dim by repeating its edge values."""


class ReplicationPad2d(_ReplicationPadNd):
    """Replication padding of the last 2 dims: padding = (left, right, top, bottom)."""
    _sides = 4


class ReplicationPad3d(_ReplicationPadNd):
    """Replication padding of the last 3 dims: padding = (left, right, top, bottom, front, back)."""
    _sides = 6


class _CircularPadNd(_PadNd):
    mode = "circular"

    def forward(self, input):
        rank = self._sides // 2
        if input.dim() != rank + 1 and input.dim() != rank + 2:
            raise ValueError(f"expected {rank + 1}D or {rank + 2}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pad the last dim by wrapping around: the left pad comes from the end, the right from the start."""


class CircularPad2d(_CircularPadNd):
    """Circular padding of the last 2 dims: padding = (left, right, top, bottom)."""
    _sides = 4


class CircularPad3d(_CircularPadNd):
    """Circular padding of the last 3 dims: padding = (left, right, top, bottom, front, back)."""
    _sides = 6


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with `value` (negative sizes crop)."""


class ConstantPad2d(_ConstantPadNd):
    """Constant padding of the last 2 dims: padding = (left, right, top, bottom)."""
    _sides = 4


class ConstantPad3d(_ConstantPadNd):
    """Constant padding of the last 3 dims: padding = (left, right, top, bottom, front, back)."""
    _sides = 6


class _Zeros:
    """ConstantPad with value 0, shown by its padding only."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_Zeros, ConstantPad1d):
    """Pad the last dim with zeros."""


class ZeroPad2d(_Zeros, ConstantPad2d):
    """Zero padding of the last 2 dims: padding = (left, right, top, bottom)."""


class ZeroPad3d(_Zeros, ConstantPad3d):
    """Zero padding of the last 3 dims: padding = (left, right, top, bottom, front, back)."""
