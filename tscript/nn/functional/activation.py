"""Activation functions of nn.functional, composed of differentiable tensor ops.

Compositions are chosen so that autograd gives PyTorch's gradient everywhere, including at the
kinks (`where` sends the gradient of a boundary point to the branch PyTorch's backward uses) and
where a branch that is not taken would overflow (its input is clamped first, so no `0 * inf`
reaches the gradient).
"""
from __future__ import annotations

import math
import warnings

from ..._dispatch import dispatch
from ..._tensor import Tensor
from tscript_runtime.ops import OPS

__all__ = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "hardtanh", "hardtanh_", "elu", "elu_",
           "selu", "celu", "gelu", "silu", "mish", "softplus", "sigmoid", "tanh", "logsigmoid",
           "hardsigmoid", "hardswish", "softsign", "tanhshrink", "threshold", "threshold_", "prelu", "glu",
           "softmax", "log_softmax", "softmin"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT1_2 = 1 / math.sqrt(2)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def _check_float(name: str, input: Tensor) -> None:
    """Functions defined only for floating tensors raise as PyTorch does for integer ones."""
    if not input.is_floating_point():
        kind = input.type().split(".")[-1].replace("Tensor", "")
        raise NotImplementedError(f"\"{name}\" not implemented for '{kind}'")


def _apply(input: Tensor, fn, inplace: bool) -> Tensor:
    """`fn(input)`, written back into `input` when `inplace` (fn then reads a copy, so the values
    autograd saved stay unmodified)."""
    if not inplace:
        return fn(input)
    return input.copy_(fn(input.clone() if input.requires_grad else input))


def _where(cond, a, b) -> Tensor:
    return dispatch(OPS["aten::where"], (cond, a, b))


# -- rectifiers -------------------------------------------------------------------------------------

def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(input, 0)."""
    return input.relu_() if inplace else input.relu()


def relu_(input: Tensor) -> Tensor:
    """In-place relu."""
    return input.relu_()


def _hardtanh(x: Tensor, min_val: float, max_val: float) -> Tensor:
    # gradient 0 at both boundaries, as PyTorch's hardtanh_backward
    out = _where(x <= min_val, min_val, _where(x >= max_val, max_val, x))
    return out if x.is_floating_point() else out.to(x.dtype)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """input clamped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _apply(input, lambda x: _hardtanh(x, min_val, max_val), inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place hardtanh."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(input, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """input where positive, negative_slope * input elsewhere."""
    _check_float("leaky_relu", input)
    return _apply(input, lambda x: _where(x > 0, x, x * negative_slope), inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place leaky_relu."""
    return leaky_relu(input, negative_slope, inplace=True)


def _threshold(input: Tensor, threshold: float, value: float, inplace: bool) -> Tensor:
    return _apply(input, lambda x: _where(x > threshold, x, value).to(x.dtype), inplace)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """input where input > threshold, else value."""
    return _threshold(input, threshold, value, inplace)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place threshold."""
    return _threshold(input, threshold, value, True)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """leaky_relu with a learnt slope (one, or one per channel along dim 1)."""
    _check_float("prelu", input)
    channels = input.shape[1] if input.dim() >= 2 else 1
    if weight.numel() != 1 and weight.numel() != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                           f"{weight.numel()} and channel size = {channels}.")
    if weight.numel() != 1:
        weight = weight.reshape((channels,) + (1,) * (input.dim() - 2))
    return _where(input > 0, input, weight * input)


# -- exponential family ------------------------------------------------------------------------------

def _elu(x: Tensor, alpha: float, scale: float = 1.0, input_scale: float = 1.0) -> Tensor:
    below = x.clamp(max=0.0)  # the unused branch never overflows
    negative = (below * input_scale if input_scale != 1.0 else below).expm1() * alpha
    out = _where(x > 0, x, negative)
    return out * scale if scale != 1.0 else out


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """input where positive, alpha * (exp(input) - 1) elsewhere."""
    _check_float("elu", input)
    return _apply(input, lambda x: _elu(x, alpha), inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place elu."""
    return elu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(input, alpha) with the self-normalising constants."""
    _check_float("elu", input)
    return _apply(input, lambda x: _elu(x, _SELU_ALPHA, _SELU_SCALE), inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    _check_float("elu", input)
    return _apply(input, lambda x: _elu(x, alpha, input_scale=1.0 / alpha), inplace)


def _softplus(x: Tensor, beta: float, threshold: float) -> Tensor:
    scaled = x * beta if beta != 1 else x
    smooth = scaled.clamp(max=threshold).exp().log1p()
    return _where(scaled > threshold, x, smooth / beta if beta != 1 else smooth)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, linear where beta * x > threshold."""
    _check_float("softplus", input)
    return _softplus(input, beta, threshold)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(input)), computed stably as -softplus(-input)."""
    _check_float("log_sigmoid", input)
    return -_softplus(-input, 1.0, 20.0)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x) (approximate="none") or its tanh approximation (approximate="tanh")."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _check_float("gelu", input)
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * _SQRT_2_OVER_PI
        return input * 0.5 * (inner.tanh() + 1.0)
    return input * 0.5 * ((input * _SQRT1_2).erf() + 1.0)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x)."""
    _check_float("silu", input)
    return _apply(input, lambda x: x * x.sigmoid(), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    _check_float("mish", input)
    return _apply(input, lambda x: x * _softplus(x, 1.0, 20.0).tanh(), inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    _check_float("hardsigmoid", input)
    return _apply(input, lambda x: _where(x <= -3.0, 0.0, _where(x >= 3.0, 1.0, (x + 3.0) / 6.0)), inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    _check_float("hardswish", input)
    return _apply(input, lambda x: _where(x <= -3.0, 0.0, _where(x >= 3.0, x, x * (x + 3.0) / 6.0)), inplace)


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x))."""
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return input.tanh()


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - input.tanh()


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), where a and b are the two halves of `input` along `dim`."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} is size {size}")
    a, b = input.split(size // 2, dim)
    return a * b.sigmoid()


# -- softmax family ----------------------------------------------------------------------------------

def _softmax_dim(name: str, ndim: int, dim: int | None) -> int:
    """PyTorch's legacy implicit dim (0 for 0-, 1- and 3-dim inputs, else 1), with its warning."""
    if dim is not None:
        return dim
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
                  f"dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim` (computed in `dtype` when given)."""
    return input.softmax(_softmax_dim("softmax", input.dim(), dim), dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """log(softmax(x)) along `dim`, computed stably."""
    return input.log_softmax(_softmax_dim("log_softmax", input.dim(), dim), dtype=dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """softmax(-x) along `dim`."""
    return (-input).softmax(_softmax_dim("softmin", input.dim(), dim), dtype=dtype)

