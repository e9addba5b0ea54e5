"""tscript.cuda.amp: the deprecated `torch.cuda.amp` names. Without CUDA, `autocast` and `GradScaler`
warn and disable themselves, as PyTorch's do on such a machine."""
import functools
import warnings

from ..amp.device_amp import device_autocast, device_grad_scaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]

autocast = device_autocast("cuda", "float16")
GradScaler = device_grad_scaler("cuda")


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Deprecated decorator for a custom Function's forward: runs it as it is."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use `torch.amp.custom_fwd(args..., "
                  "device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return fwd


def custom_bwd(bwd):
    """Deprecated decorator for a custom Function's backward: runs it as it is."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use `torch.amp.custom_bwd(args..., "
                  "device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return bwd
