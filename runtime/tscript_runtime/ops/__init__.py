"""THE op library: importing this package registers every op in `OPS`."""
from . import (conv, creation, elementwise, indexing, joining, linalg, movement,  # noqa: F401 (registering)
               nn, reductions, scalar, sorting)
from .registry import OPS, OpDef, TensorMeta, get, register

__all__ = ["OPS", "OpDef", "TensorMeta", "get", "register"]
