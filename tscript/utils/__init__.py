"""tscript.utils: data loading (`tscript.utils.data`), as `torch.utils`."""
from . import data

__all__ = ["data"]
