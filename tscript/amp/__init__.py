"""tscript.amp: mixed precision, as `torch.amp` (`autocast` regions keep the ops' dtypes on the CPU;
`GradScaler` scales for real on the CPU and disables itself for CUDA)."""
from .autocast_mode import (autocast, custom_bwd, custom_fwd, get_autocast_cpu_dtype, get_autocast_dtype,
                            get_autocast_gpu_dtype, is_autocast_available, is_autocast_cpu_enabled,
                            is_autocast_enabled)
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "get_autocast_cpu_dtype", "get_autocast_dtype",
           "get_autocast_gpu_dtype", "is_autocast_available", "is_autocast_cpu_enabled", "is_autocast_enabled"]
