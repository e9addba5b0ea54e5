"""THE op library: importing this package registers every op in `OPS` and attaches its facts
(facts.py) as `op.facts`."""
from . import (conv, creation, elementwise, indexing, joining, linalg, movement,  # noqa: F401 (registering)
               nn, reductions, scalar, sorting)
from . import padding, windows  # noqa: F401 (registering)
from . import adaptive_pool, conv_nd, sampling  # noqa: F401 (registering)
from . import complex, recurrent  # noqa: F401 (registering)
from . import extra_math, extra_movement, extra_random, extra_sorting  # noqa: F401 (registering)
from .facts import FACTS, NO_FACTS, OpFacts, Pointwise
from .registry import OPS, OpDef, TensorMeta, get, register

for _op in OPS.values():
    _op.facts = FACTS.get(_op.name, NO_FACTS)

__all__ = ["OPS", "OpDef", "OpFacts", "Pointwise", "TensorMeta", "get", "register"]
