"""Keeping what the forward saves for the backward small.

A saved tensor computed by a cheap elementwise op is recomputed in the backward instead of saved
when everything it reads is available there anyway: saved for another reason, a graph input
(parameters are held by the model), a constant, a scalar, a tensor broadcast into the op's result
and at least `SMALL_RATIO` times smaller (e.g. BatchNorm's per-channel statistics: saving them
costs little), or itself recomputable that way (up to `MAX_DEPTH` ops back). The recomputed ops then fuse into the backward's kernels: one pass over
memory that was going to be read anyway, instead of a tensor kept alive between the passes.
"""
from __future__ import annotations

import numpy as np

from tscript_runtime.ops import OPS

from ..ir.graph import Graph, Value
from ..ir.passes.constant_propagation import constant_value
from ..ir.passes.effects import is_random
from ..ir.types import TensorType
from .examples import stale_values

SMALL_RATIO = 8
MAX_DEPTH = 8


def recomputable(forward: Graph, saved: list, env: dict) -> frozenset:
    """The forward values to recompute in the backward instead of saving them: the cheap ones among
    `saved` (the keys of `Backward.saved`) and the intermediate values they are recomputed from
    (`env`: example values, for sizes)."""
    chooser = _Chooser(forward, {k for k in saved if not isinstance(k, tuple)}, env)
    for v in chooser.saved:
        chooser.cheap(v, 0)
    return frozenset(v for v, cheap in chooser.memo.items() if cheap)


class _Chooser:
    def __init__(self, forward: Graph, saved: set, env: dict):
        self.forward, self.saved, self.env = forward, saved, env
        self.stale = stale_values(forward)
        self.memo: dict[Value, bool] = {}

    def cheap(self, v: Value, depth: int) -> bool:
        """Is `v` an elementwise result of values available in the backward?"""
        if v not in self.memo:
            node = v.node
            self.memo[v] = (node is not None and node.owner is self.forward.block and _cheap(node.kind)
                            and len(node.outputs) == 1 and v not in self.stale and not is_random(node)
                            and depth <= MAX_DEPTH and all(self.available(u, v, depth + 1) for u in node.inputs))
        return self.memo[v]

    def available(self, u: Value, reader: Value, depth: int) -> bool:
        """Can the backward have `u` (read by `reader`) without saving anything large?"""
        if u in self.saved or constant_value(self.forward, u)[0]:
            return True
        if u.node is None:
            return u.block is self.forward.block
        if u.node.owner is not self.forward.block or u in self.stale:
            return False
        return not isinstance(u.type, TensorType) or self._small(u, reader) or self.cheap(u, depth)

    def _small(self, u: Value, reader: Value) -> bool:
        x, y = self.env.get(u), self.env.get(reader)
        return isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.size * SMALL_RATIO <= y.size


def _cheap(kind: str) -> bool:
    op = OPS.get(kind)
    return op is not None and op.facts.cheap
