"""tscript.cpu.amp: `autocast` and `GradScaler` for the CPU under their deprecated names."""
from ..amp.device_amp import device_autocast, device_grad_scaler

__all__ = ["GradScaler", "autocast"]

autocast = device_autocast("cpu", "bfloat16")
GradScaler = device_grad_scaler("cpu")
