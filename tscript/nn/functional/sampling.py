"""Resampling functions of nn.functional: `interpolate` and the deprecated `upsample`,
`upsample_nearest`, `upsample_bilinear`. Each call is one op of the table (`aten::upsample_*`,
or adaptive average pooling for mode="area"); this file only turns PyTorch's Python-level
arguments (size or scale_factor, scalar or per dim, recompute_scale_factor) into the op's output
size and scales, with PyTorch's checks and messages, in PyTorch's order."""
from __future__ import annotations

import warnings

import numpy as np

from ..._dispatch import dispatch
from ..._tensor import Tensor
from tscript_runtime.ops import OPS
from .conv import adaptive_avg_pool1d, adaptive_avg_pool2d
from .conv_nd import adaptive_avg_pool3d

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_INTERPOLATING = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}  # mode -> its spatial dims
_ALL_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def _supported(mode: str, dim: int) -> bool:
    """Is there an op resampling `dim` spatial dims in `mode`?"""
    if dim not in (1, 2, 3):
        return False
    return mode in ("nearest", "nearest-exact", "area") or (mode in _INTERPOLATING and _INTERPOLATING[mode] == dim)


def _is_integer(x) -> bool:
    """An int, a numpy integer or an integer tensor (PyTorch accepts each as a size)."""
    if isinstance(x, (int, np.integer)):
        return True
    return isinstance(x, Tensor) and not x.is_floating_point()


def _output_size(input: Tensor, dim: int, size) -> list:
    if not isinstance(size, (list, tuple)):
        return [size] * dim
    if len(size) != dim:
        raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                         f"spatial dimensions of {list(input.shape[2:])} and output size of {size}. Please provide "
                         f"input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
    if not all(_is_integer(x) for x in size):
        raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, int], "
                        f"but got size with types {[type(x) for x in size]}")
    return [int(x) for x in size]


def _scale_factors(input: Tensor, dim: int, scale_factor) -> list:
    if not isinstance(scale_factor, (list, tuple)):
        return [scale_factor] * dim
    if len(scale_factor) != dim:
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                         f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                         f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                         f"scale_factor in (s1, s2, ...,sK) format.")
    return list(scale_factor)


def _target(input: Tensor, dim: int, size, scale_factor, recompute: bool) -> tuple:
    """(output size, scales passed to the op): the scales only when a scale_factor is given and not
    recomputed from the (integer) output size."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return _output_size(input, dim, size), (None,) * dim
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    factors = [float(s) for s in _scale_factors(input, dim, scale_factor)]
    output_size = [int(input.shape[i + 2] * s) for i, s in enumerate(factors)]  # truncated, as PyTorch does
    return output_size, (None,) * dim if recompute else tuple(factors)


def _check_mode(input: Tensor, mode: str, align_corners, antialias: bool) -> None:
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if mode == "lanczos" and input.dim() == 4:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if antialias:
        raise NotImplementedError(f"interpolate: antialias=True (mode '{mode}') is not supported by tscript; only "
                                  f"antialias=False is")
    linear = mode in ("linear", "bilinear", "trilinear")
    if input.dim() in (3, 4, 5) and linear and _INTERPOLATING[mode] != input.dim() - 2:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {_INTERPOLATING[mode] + 2}D input")
    if not _supported(mode, input.dim() - 2):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: {_ALL_MODES} (got {mode})")


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False) -> Tensor:
    """Resample (N, C, *spatial) to `size` or by `scale_factor` with PyTorch's modes: nearest,
    nearest-exact, linear, bilinear, bicubic, trilinear (align_corners or not) and area."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    recompute = (recompute_scale_factor is not None and recompute_scale_factor) or (mode == "area" and size is None)
    output_size, scales = _target(input, dim, size, scale_factor, recompute)
    _check_mode(input, mode, align_corners, antialias)
    if input.dim() == 3:
        return _resample1d(input, mode, output_size, align_corners, scales)
    if input.dim() == 4:
        return _resample2d(input, mode, output_size, align_corners, scales)
    return _resample3d(input, mode, output_size, align_corners, scales)


# One op call per mode, each naming its op literally (scripted code can only call ops by constant names).

def _resample1d(input: Tensor, mode: str, output_size, align_corners, scales) -> Tensor:
    if mode == "area":
        return adaptive_avg_pool1d(input, output_size)
    if mode == "nearest":
        return dispatch(OPS["aten::upsample_nearest1d"], (input, output_size, scales[0]))
    if mode == "nearest-exact":
        return dispatch(OPS["aten::_upsample_nearest_exact1d"], (input, output_size, scales[0]))
    return dispatch(OPS["aten::upsample_linear1d"], (input, output_size, align_corners, scales[0]))


def _resample2d(input: Tensor, mode: str, output_size, align_corners, scales) -> Tensor:
    if mode == "area":
        return adaptive_avg_pool2d(input, output_size)
    if mode == "nearest":
        return dispatch(OPS["aten::upsample_nearest2d"], (input, output_size, scales[0], scales[1]))
    if mode == "nearest-exact":
        return dispatch(OPS["aten::_upsample_nearest_exact2d"], (input, output_size, scales[0], scales[1]))
    if mode == "bicubic":
        return dispatch(OPS["aten::upsample_bicubic2d"], (input, output_size, align_corners, scales[0], scales[1]))
    return dispatch(OPS["aten::upsample_bilinear2d"], (input, output_size, align_corners, scales[0], scales[1]))


def _resample3d(input: Tensor, mode: str, output_size, align_corners, scales) -> Tensor:
    if mode == "area":
        return adaptive_avg_pool3d(input, output_size)
    if mode == "nearest":
        return dispatch(OPS["aten::upsample_nearest3d"], (input, output_size, scales[0], scales[1], scales[2]))
    if mode == "nearest-exact":
        return dispatch(OPS["aten::_upsample_nearest_exact3d"], (input, output_size, scales[0], scales[1], scales[2]))
    return dispatch(OPS["aten::upsample_trilinear3d"],
                    (input, output_size, align_corners, scales[0], scales[1], scales[2]))


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None) -> Tensor:
    """Deprecated alias of interpolate (warns, as PyTorch does)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: interpolate(mode="nearest") (warns, as PyTorch does)."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: interpolate(mode="bilinear", align_corners=True) (warns, as PyTorch does)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
