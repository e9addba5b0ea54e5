"""The batch normalization family under PyTorch's module path `torch.nn.modules.batchnorm` (library
code checks `isinstance(m, batchnorm._BatchNorm)`): BatchNorm1d/2d/3d live in normalization.py; this
file adds `SyncBatchNorm`, batch normalization whose statistics would be reduced over a process group.
With no process group (tscript runs in one process) it normalizes exactly as BatchNorm does, which is
what PyTorch's does when `torch.distributed` is not initialized."""
from __future__ import annotations

from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm  # noqa: F401  (this module's names)

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over dim 1 of an input of any rank >= 2 (`process_group` is kept, never used)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """`module` with every BatchNorm*D replaced by a SyncBatchNorm sharing its parameters and buffers
        (recursively; the module itself when it is one)."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, cls):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group)
            if module.affine:
                converted.weight, converted.bias = module.weight, module.bias
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                setattr(converted, name, getattr(module, name))
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
