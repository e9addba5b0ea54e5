"""THE op library: importing this package registers every op in `OPS`."""
from . import creation, elementwise, movement  # noqa: F401  (registering ops)
from .registry import OPS, OpDef, TensorMeta, get, register

__all__ = ["OPS", "OpDef", "TensorMeta", "get", "register"]
