"""Nn ops: the few losses that are primitives because their PyTorch gradients are not those of
any composition (binary_cross_entropy clamps its logs in the forward and its denominator in the
backward). Everything else in nn.functional is composed of core ops."""
import numpy as np

from .. import dtypes as dt
from ..errors import OpRuntimeError
from ._cast import as_array
from .registry import register
from .rules import check_float, shape_of

REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}  # PyTorch's at::Reduction enum


def _check_reduction(op: str, reduction) -> None:
    if reduction not in REDUCTIONS:
        raise OpRuntimeError(f"{op}: reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction!r}")


def _reduce(loss: np.ndarray, reduction: int) -> np.ndarray:
    if reduction == 1:
        with np.errstate(invalid="ignore"):  # the mean of nothing is nan, as in PyTorch
            return as_array(np.mean(loss), loss.dtype)
    if reduction == 2:
        return as_array(np.sum(loss), loss.dtype)
    return loss


def _broadcasts_to(small: tuple, shape: tuple) -> bool:
    return len(small) <= len(shape) and all(s in (1, t) for s, t in zip(reversed(small), reversed(shape)))


def _bce_shape(input, target, weight=None, reduction=1):
    _check_reduction("binary_cross_entropy", reduction)
    shape = shape_of(input)
    if shape_of(target) != shape:
        raise OpRuntimeError(f"binary_cross_entropy: target size {list(shape_of(target))} must be the same as "
                             f"input size {list(shape)}")
    if weight is not None and not _broadcasts_to(shape_of(weight), shape):
        raise OpRuntimeError(f"binary_cross_entropy: weight of shape {list(shape_of(weight))} does not "
                             f"broadcast to the input shape {list(shape)}")
    return shape if reduction == 0 else ()


def _bce_dtype(input, target, weight=None, reduction=1):
    check_float("binary_cross_entropy", input.dtype)
    for other in (target, weight):
        if other is not None and other.dtype != input.dtype:
            raise OpRuntimeError(f"Found dtype {dt.TORCH_NAMES[other.dtype]} but expected "
                                 f"{dt.TORCH_NAMES[input.dtype]}")
    return input.dtype


@register("aten::binary_cross_entropy(Tensor input, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor",
          shape=_bce_shape, dtype=_bce_dtype, method_only=True)
def binary_cross_entropy(input, target, weight=None, reduction=1):
    """-w (t log(x) + (1 - t) log(1 - x)), each log clamped to >= -100 (PyTorch's BCELoss)."""
    _bce_shape(input, target, weight, reduction)
    _bce_dtype(input, target, weight, reduction)
    if np.any((input < 0) | (input > 1)):
        raise OpRuntimeError("all elements of input should be between 0 and 1")
    if np.any((target < 0) | (target > 1)):
        raise OpRuntimeError("all elements of target should be between 0 and 1")
    low = input.dtype.type(-100)
    with np.errstate(divide="ignore"):
        loss = (target - 1) * np.maximum(np.log1p(-input), low) - target * np.maximum(np.log(input), low)
    if weight is not None:
        loss = loss * weight
    return _reduce(as_array(loss, input.dtype), reduction)
