"""The deprecated per-device spellings `torch.cpu.amp.*` and `torch.cuda.amp.*`: the same classes
with the device fixed, warning as PyTorch does (FutureWarning) when constructed."""
from __future__ import annotations

import warnings

from .autocast_mode import autocast
from .grad_scaler import GradScaler


def _deprecated(name: str, device: str) -> None:
    warnings.warn(f"`torch.{device}.amp.{name}(args...)` is deprecated. Please use `torch.amp.{name}('{device}', "
                  f"args...)` instead.", FutureWarning, stacklevel=3)


def device_autocast(device: str, default_dtype: str) -> type:
    """`torch.<device>.amp.autocast(enabled=True, dtype=<default>, cache_enabled=True)`."""
    class DeviceAutocast(autocast):
        __doc__ = f"`autocast('{device}', ...)` under its deprecated name `torch.{device}.amp.autocast`."

        def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
            _deprecated("autocast", device)
            if dtype is None:
                from .. import _dtype
                dtype = getattr(_dtype, default_dtype, default_dtype)
            super().__init__(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
    DeviceAutocast.__name__ = DeviceAutocast.__qualname__ = "autocast"
    return DeviceAutocast


def device_grad_scaler(device: str) -> type:
    """`torch.<device>.amp.GradScaler(init_scale=2.**16, ...)`."""
    class DeviceGradScaler(GradScaler):
        __doc__ = f"`GradScaler('{device}', ...)` under its deprecated name `torch.{device}.amp.GradScaler`."

        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                     growth_interval: int = 2000, enabled: bool = True):
            _deprecated("GradScaler", device)
            super().__init__(device, init_scale, growth_factor, backoff_factor, growth_interval, enabled)
    DeviceGradScaler.__name__ = DeviceGradScaler.__qualname__ = "GradScaler"
    return DeviceGradScaler
