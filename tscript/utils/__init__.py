"""tscript.utils: data loading (`tscript.utils.data`), activation checkpointing (`checkpoint`) and DLPack
interchange (`dlpack`), as `torch.utils`."""
from . import checkpoint, data, dlpack

__all__ = ["checkpoint", "data", "dlpack"]
