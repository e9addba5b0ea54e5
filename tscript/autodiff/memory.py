"""Keeping what the forward saves for the backward small.

A saved tensor computed by a cheap elementwise op is recomputed in the backward instead of saved
when everything it reads is available there anyway: saved for another reason, a graph input
(parameters are held by the model), a constant, a scalar, a small tensor (a static shape of at most
`SMALL` elements, e.g. BatchNorm's per-channel statistics), or itself recomputable that way (up to
`MAX_DEPTH` ops back). The recomputed ops then fuse into the backward's kernels: one pass over
memory that was going to be read anyway, instead of a tensor kept alive between the passes.
"""
from __future__ import annotations

import math

from ..ir.graph import Graph, Value
from ..ir.passes.constant_propagation import constant_value
from ..ir.passes.effects import is_random, mutated_values
from ..ir.types import TensorType

SMALL = 4096
MAX_DEPTH = 8


def recomputable(forward: Graph, saved: list) -> frozenset:
    """The forward values to recompute in the backward instead of saving them: the cheap ones among
    `saved` (the keys of `Backward.saved`) and the intermediate values they are recomputed from."""
    chooser = _Chooser(forward, {k for k in saved if not isinstance(k, tuple)})
    for v in chooser.saved:
        chooser.cheap(v, 0)
    return frozenset(v for v, cheap in chooser.memo.items() if cheap)


class _Chooser:
    def __init__(self, forward: Graph, saved: set):
        from ..codegen.elementwise import LOWERINGS  # what codegen fuses is what is cheap
        self.forward, self.saved, self.elementwise = forward, saved, LOWERINGS
        self.mutated = mutated_values(forward)
        self.memo: dict[Value, bool] = {}

    def cheap(self, v: Value, depth: int) -> bool:
        """Is `v` an elementwise result of values available in the backward?"""
        if v not in self.memo:
            node = v.node
            self.memo[v] = (node is not None and node.owner is self.forward.block and node.kind in self.elementwise
                            and len(node.outputs) == 1 and v not in self.mutated and not is_random(node)
                            and depth <= MAX_DEPTH and all(self.available(u, depth + 1) for u in node.inputs))
        return self.memo[v]

    def available(self, u: Value, depth: int) -> bool:
        if u in self.saved or constant_value(self.forward, u)[0]:
            return True
        if u.node is None:
            return u.block is self.forward.block
        if u.node.owner is not self.forward.block or u in self.mutated:
            return False
        return not isinstance(u.type, TensorType) or _small(u) or self.cheap(u, depth)


def _small(v: Value) -> bool:
    shape = v.type.shape
    return shape is not None and all(isinstance(d, int) for d in shape) and math.prod(shape) <= SMALL
