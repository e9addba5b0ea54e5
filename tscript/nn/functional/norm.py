"""Normalization functions of nn.functional: batch_norm, layer_norm, group_norm, rms_norm,
composed of differentiable reductions (mean, biased var) and elementwise ops."""
from __future__ import annotations

from ..._tensor import Tensor
from tscript_runtime.errors import fmt_shape
from ...autograd.grad_mode import no_grad
from .activation import _check_float

__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm"]


def _moments(input: Tensor, dims: tuple) -> tuple:
    """The mean and the biased variance over `dims`, kept as size-1 dims."""
    return input.mean(dims, keepdim=True), input.var(dims, correction=0, keepdim=True)


def _normalize(input: Tensor, dims: tuple, eps: float) -> Tensor:
    """(x - mean) / sqrt(var + eps) over `dims`, with the biased variance."""
    mean, var = _moments(input, dims)
    return (input - mean) * (var + eps).rsqrt()


def _affine(out: Tensor, weight: Tensor | None, bias: Tensor | None, shape) -> Tensor:
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


# -- batch norm --------------------------------------------------------------------------------------

def _verify_batch_size(size) -> None:
    values = size[0]
    for s in size[2:]:
        values *= s
    if values == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def _check_channels(channels: int, **tensors) -> None:
    for name, t in tensors.items():
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")


def _with_running(input: Tensor, running_mean: Tensor, running_var: Tensor, weight: Tensor | None,
                  bias: Tensor | None, shape, eps: float) -> Tensor:
    """`input` normalized by the running statistics (per channel, broadcast to `shape`), then the affine map,
    as PyTorch's CPU inference kernel computes it: one scale and one shift per channel, so two passes over
    the input (and a frozen model folds both into the convolution before it). The shift is added in place
    to the fresh product: on a large activation a second fresh array makes the pass read and write main
    memory instead of the cache (eager ResNet-18 at batch 8: ~4% of its time); a compiled graph's
    remove_mutation makes the add functional again before the fold."""
    scale = (running_var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -running_mean * scale
    if bias is not None:
        shift = shift + bias
    return (input * scale.reshape(shape)).add_(shift.reshape(shape))


def _update_running(running: Tensor, batch_value: Tensor, momentum: float) -> None:
    """running = (1 - momentum) * running + momentum * batch_value (no gradient)."""
    with no_grad():
        running.copy_(running * (1 - momentum) + batch_value.detach().reshape(-1).to(running.dtype) * momentum)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) over the batch and spatial dims. Training uses the batch
    statistics and updates the running ones in place (with the unbiased variance); evaluation uses
    the running statistics."""
    if input.dim() < 2:
        n = max(input.dim(), 1)
        raise IndexError(f"batch_norm: Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got 1)")
    if training:
        _verify_batch_size(input.shape)
    _check_float("batch_norm", input)
    channels = input.shape[1]
    _check_channels(channels, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias)
    shape = (1, channels) + (1,) * (input.dim() - 2)
    if not training:
        if running_mean is None or running_var is None:
            raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be defined in "
                               f"evaluation mode")
        return _with_running(input, running_mean, running_var, weight, bias, shape, eps)
    dims = (0,) + tuple(range(2, input.dim()))
    mean, var = _moments(input, dims)
    if running_mean is not None:
        _update_running(running_mean, mean, momentum)
    if running_var is not None:
        n = input.numel() // channels
        _update_running(running_var, var * (n / (n - 1)), momentum)
    return _affine((input - mean) * (var + eps).rsqrt(), weight, bias, shape)


# -- instance norm -----------------------------------------------------------------------------------

def _verify_spatial_size(size) -> None:
    values = 1
    for s in size[2:]:
        values *= s
    if values == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel of each sample (N, C, *spatial) over its spatial dims. With
    `use_input_stats` the running statistics (if given) move towards the batch average of the
    per-sample ones (unbiased variance); without, the running statistics normalize."""
    if input.dim() < 2:
        raise RuntimeError(f"instance_norm: expected an input with a batch and a channel dim, got a "
                           f"{input.dim()}-D input")
    if use_input_stats:
        _verify_spatial_size(input.shape)
    _check_float("instance_norm", input)
    channels = input.shape[1]
    _check_channels(channels, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias)
    shape = (1, channels) + (1,) * (input.dim() - 2)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        return _with_running(input, running_mean, running_var, weight, bias, shape, eps)
    dims = tuple(range(2, input.dim()))
    mean, var = _moments(input, dims)
    if running_mean is not None:
        _update_running(running_mean, mean.mean(0), momentum)
    if running_var is not None:
        n = 1
        for size in input.shape[2:]:
            n *= size
        _update_running(running_var, var.mean(0) * (n / (n - 1)), momentum)
    return _affine((input - mean) * (var + eps).rsqrt(), weight, bias, shape)


# -- layer, group and RMS norm -----------------------------------------------------------------------

def _normalized_dims(input: Tensor, normalized_shape, weight, bias) -> tuple:
    """The trailing dims that `normalized_shape` names, after PyTorch's shape checks."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input.dim() < k or tuple(input.shape[input.dim() - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={fmt_shape(shape)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in shape)}], but got input of size{fmt_shape(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                               f"shape {fmt_shape(t.shape)} and normalized_shape = {fmt_shape(shape)}")
    return tuple(range(input.dim() - k, input.dim()))


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing `normalized_shape` dims, then scale and shift elementwise."""
    dims = _normalized_dims(input, normalized_shape, weight, bias)
    _check_float("layer_norm", input)
    shape = tuple(input.shape[dims[0]:])
    return _affine(_normalize(input, dims, eps), weight, bias, shape)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the trailing dims (eps defaults to the dtype's machine epsilon)."""
    dims = _normalized_dims(input, normalized_shape, weight, None)
    _check_float("rms_norm", input)
    if eps is None:
        eps = 2.220446049250313e-16 if input.dtype.itemsize == 8 else 1.1920928955078125e-07
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return _affine(out, weight, None, tuple(input.shape[dims[0]:]))


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize the channels (dim 1) in `num_groups` groups, then scale and shift per channel."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    n, channels = input.shape[0], input.shape[1]
    if channels % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input "
                           f"of shape {fmt_shape(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != channels):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in "
                               f"input, but got {name} of shape {fmt_shape(t.shape)} and input of shape "
                               f"{fmt_shape(input.shape)}")
    _check_float("group_norm", input)
    grouped = input.reshape(n, num_groups, -1)
    out = _normalize(grouped, (2,), eps).reshape(input.shape)
    return _affine(out, weight, bias, (1, channels) + (1,) * (input.dim() - 2))
