"""Loss functions of nn.functional, with PyTorch's reductions, legacy `size_average`/`reduce`
arguments, shape warnings and errors. All are compositions of differentiable ops except
binary_cross_entropy, whose PyTorch gradient needs the `aten::binary_cross_entropy` primitive."""
from __future__ import annotations

import warnings

from ..._dispatch import dispatch
from ..._tensor import Tensor
from tscript_runtime.ops import OPS
from .activation import _check_float, _where, logsigmoid

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"]

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


# -- reductions --------------------------------------------------------------------------------------

def _legacy_reduction(size_average, reduce) -> str:
    """The reduction that the deprecated `size_average`/`reduce` flags stand for (with PyTorch's warning)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                  f"instead.", stacklevel=3)
    return reduction


def _reduction(reduction: str, size_average=None, reduce=None) -> str:
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _weighted(loss: Tensor, weight: Tensor, input: Tensor, reduction: str, mean_over_weight: bool) -> Tensor:
    """PyTorch's per-element `weight` of mse/l1/huber: 'mean' divides by sum(weight) for mse and l1."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    loss = loss * weight
    if reduction == "mean" and mean_over_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def _warn_target_size(input: Tensor, target: Tensor) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      f"This will likely lead to incorrect results due to broadcasting. Please ensure they have "
                      f"the same size.", stacklevel=3)


def _difference(name: str, input: Tensor, target: Tensor) -> Tensor:
    """input - target (broadcast), for losses defined only on floating values."""
    diff = input - target
    _check_float(name, diff)
    return diff


# -- regression --------------------------------------------------------------------------------------

def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """(input - target)^2, reduced."""
    _warn_target_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    diff = _difference("mse_loss", input, target)
    if weight is not None:
        return _weighted(diff * diff, weight, input, reduction, True)
    return _reduce(diff * diff, _reduction(reduction))


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """|input - target|, reduced."""
    _warn_target_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    diff = _difference("l1_loss", input, target)
    if weight is not None:
        return _weighted(diff.abs(), weight, input, reduction, True)
    return _reduce(diff.abs(), _reduction(reduction))


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target), reduced."""
    _warn_target_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    z = _difference("smooth_l1_loss", input, target).abs()
    if beta == 0:
        return _reduce(z, reduction)
    return _reduce(_where(z < beta, z * z * 0.5 / beta, z - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), reduced."""
    _warn_target_size(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    z = _difference("huber_loss", input, target).abs()
    loss = _where(z < delta, z * z * 0.5, (z - 0.5 * delta) * delta)
    if weight is not None:
        return _weighted(loss, weight, input, reduction, False)
    return _reduce(loss, _reduction(reduction))


# -- classification by class index ---------------------------------------------------------------

def _torch_name(t: Tensor) -> str:
    return t.type().split(".")[-1].replace("Tensor", "")


def _check_class_target(input: Tensor, target: Tensor, weight: Tensor | None) -> tuple:
    """PyTorch's checks of class-index targets; returns the target (a (1,) target of an unbatched
    input taken as a scalar, as PyTorch does) and the class dim."""
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() != 1 and (target.dim() == 0 or input.shape[0] != target.shape[0]):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if target.dim() else 0}).")
    if target.dtype.np.name != "int64":
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_torch_name(target)}")
    if input.dim() <= 2 and target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.dim() == 1 and target.dim() == 1 and target.shape[0] != 1:
        raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
    expected = (input.shape[0],) + tuple(input.shape[2:])
    if input.dim() > 2 and tuple(target.shape) != expected:
        raise RuntimeError(f"Expected target size {list(expected)}, got {list(target.shape)}")
    _check_class_weight(input, weight, 0 if input.dim() == 1 else 1)
    if input.dim() == 1:
        return target.reshape(()), 0
    return target, 1


def _check_class_weight(input: Tensor, weight: Tensor | None, class_dim: int, prefix: str = "") -> None:
    if weight is None:
        return
    classes = input.shape[class_dim]
    if weight.dim() != 1 or weight.numel() != classes:
        raise RuntimeError(f"{prefix}weight tensor should be defined either for all {classes} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    if weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {_torch_name(input)} but found {_torch_name(weight)}")


def _pick(logp: Tensor, target: Tensor, valid: Tensor, class_dim: int) -> Tensor:
    """logp at the (non-ignored) target classes. An out-of-range target fails in gather; only then
    are the targets inspected (so valid calls convert no tensor to a Python value, e.g. when traced)."""
    safe = _where(valid, target, 0).unsqueeze(class_dim)
    try:
        return logp.gather(class_dim, safe).squeeze(class_dim)
    except (IndexError, RuntimeError):
        bad = valid & ((target < 0) | (target >= logp.shape[class_dim]))
        if bad.any().item():
            raise IndexError(f"Target {target[bad].reshape(-1)[0].item()} is out of bounds.") from None
        raise


def _nll(logp: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str,
         class_dim: int) -> tuple:
    """The per-element losses -w[t] * logp[t] (zero where ignored), reduced, and the per-element
    weights w[t] (zero where ignored; 'mean' divides by their sum)."""
    valid = target != ignore_index
    picked = -_pick(logp, target, valid, class_dim)
    if weight is None:
        w = valid.to(logp.dtype)
    else:
        safe = _where(valid, target, 0)
        w = _where(valid, weight.index_select(0, safe.reshape(-1)).reshape(tuple(safe.shape)), 0.0)
    loss = _where(valid, picked * w if weight is not None else picked, 0.0)
    if reduction == "mean":
        return loss.sum() / w.sum(), w
    return _reduce(loss, reduction), w


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """-input[target] (log-probabilities picked by class index, weighted), reduced; targets equal to
    ignore_index contribute nothing ('mean' divides by the total weight of the others)."""
    reduction = _reduction(reduction, size_average, reduce)
    target, class_dim = _check_class_target(input, target, weight)
    return _nll(input, target, weight, ignore_index, reduction, class_dim)[0]


def _smoothing_term(logp: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str,
                    class_dim: int, weights: Tensor) -> Tensor:
    """The label-smoothing part of cross_entropy: -sum over classes of (weighted) log-probabilities."""
    if weight is not None:
        logp = logp * weight.reshape((-1,) + (1,) * (logp.dim() - 1 - class_dim))
    smooth = -logp.sum(class_dim)
    valid = target != ignore_index
    smooth = _where(valid, smooth, 0.0)
    if reduction == "mean":
        return smooth.sum() / (weights.sum() if weight is not None else valid.sum())
    return _reduce(smooth, reduction)


def _cross_entropy_probs(input: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int,
                         reduction: str, label_smoothing: float) -> Tensor:
    """cross_entropy with class probabilities as targets (same shape as input)."""
    if not target.is_floating_point():
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{_torch_name(target)}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    class_dim = 0 if input.dim() == 1 else 1
    _check_class_weight(input, weight, class_dim, "cross_entropy: ")
    classes = input.shape[class_dim]
    logp = input.log_softmax(class_dim)
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    product = logp * target
    if weight is not None:
        product = product * weight.reshape((-1,) + (1,) * (input.dim() - 1 - class_dim))
    if reduction == "none":
        return -product.sum(class_dim)
    if reduction == "sum":
        return -product.sum()
    return -product.sum() / (input.numel() / classes if input.numel() else float("nan"))


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over the class dim (1, or 0 for an unbatched input) followed by nll_loss;
    targets are class indices, or class probabilities of the input's shape. `label_smoothing`
    mixes the target with the uniform distribution."""
    reduction = _reduction(reduction, size_average, reduce)
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if tuple(input.shape) == tuple(target.shape):
        return _cross_entropy_probs(input, target, weight, ignore_index, reduction, label_smoothing)
    target, class_dim = _check_class_target(input, target, weight)
    logp = input.log_softmax(class_dim)
    loss, weights = _nll(logp, target, weight, ignore_index, reduction, class_dim)
    if label_smoothing <= 0:
        return loss
    smooth = _smoothing_term(logp, target, weight, ignore_index, reduction, class_dim, weights)
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / input.shape[class_dim])


# -- binary classification ------------------------------------------------------------------------

def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """-w (t log(x) + (1 - t) log(1 - x)) for probabilities x, each log clamped to >= -100, reduced."""
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    if weight is not None:
        weight = weight.expand(tuple(target.shape))
    return dispatch(OPS["aten::binary_cross_entropy"], (input, target, weight, _REDUCTIONS[reduction]))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average=None, reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """binary_cross_entropy(sigmoid(input), target), computed stably from the logits; `pos_weight`
    weighs the positive term per class."""
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    if not target.is_floating_point():
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_torch_name(target)}")
    log_sigmoid = logsigmoid(input)
    if pos_weight is not None:
        log_sigmoid = log_sigmoid * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - log_sigmoid
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.to(target.dtype), reduction)


# -- distributions -------------------------------------------------------------------------------------

def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Pointwise KL divergence target * (log(target) - input) (input and, with log_target, target given
    as log-probabilities); reduction 'batchmean' divides the sum by the batch size."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if reduction != "batchmean":
        _reduction(reduction)
    if not (input.is_floating_point() and target.is_floating_point()):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:  # xlogy(t, t) - t * input, with 0 log 0 = 0 (and a finite gradient there)
        loss = target * _where(target == 0, 1.0, target).log() - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)

