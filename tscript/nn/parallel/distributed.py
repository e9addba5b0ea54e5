"""`DistributedDataParallel`: importable (library code names it in `isinstance` checks); constructing one
raises PyTorch's error for a process without a process group, which tscript never has."""
from __future__ import annotations

from ...distributed import _NOT_INITIALIZED
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Needs an initialized process group: raises ValueError (see `tscript.distributed`)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0, broadcast_buffers=True,
                 process_group=None, **kwargs):
        raise ValueError(_NOT_INITIALIZED)
