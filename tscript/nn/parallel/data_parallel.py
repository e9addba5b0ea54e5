"""`DataParallel` without accelerators: a pass-through to the wrapped module (PyTorch's behaviour when
no GPU is available), so `model = nn.DataParallel(model)` and its `module.`-prefixed state dict work."""
from __future__ import annotations

from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Wraps `module`; calling it calls `module` (no device to scatter to). `device_ids` is empty."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids: list = []

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs, device_ids=None, output_device=None, dim: int = 0, module_kwargs=None):
    """`module(*inputs, **module_kwargs)`, the functional DataParallel without accelerators."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
