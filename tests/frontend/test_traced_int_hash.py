"""Traced sizes hash by identity (as PyTorch's traced sizes do), so a cache keyed on a shape tuple
(an lru_cache in the user's helper library) never returns sizes recorded by an earlier trace or
plain ints from an eager call: the traced graph keeps following the input's batch size."""
import functools
import warnings

import numpy as np

import tscript as ts
from tscript import nn
from tscript.jit import TracerWarning


@functools.lru_cache(maxsize=None)
def split_heads_shape(shape: tuple, heads: int) -> tuple:
    """(batch, tokens, heads*width) -> (batch, tokens, heads, width), memoised like a recipe cache."""
    batch, tokens, channels = shape
    return (batch, tokens, heads, channels // heads)


class Heads(nn.Module):
    def forward(self, x):
        return x.reshape(split_heads_shape(tuple(x.shape), 2)).sum(-1)


def test_shape_cache_does_not_freeze_batch_size():
    model = Heads()
    model(ts.ones(2, 3, 4))  # an eager call fills the cache with plain ints first
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = ts.jit.trace(model, (ts.ones(2, 3, 4),))  # check_trace traces twice
    assert not [w for w in caught if issubclass(w.category, TracerWarning)]
    x = ts.tensor(np.arange(60, dtype=np.float32).reshape(5, 3, 4))
    expected = np.arange(60, dtype=np.float32).reshape(5, 3, 2, 2).sum(-1)
    np.testing.assert_allclose(traced(x).numpy(), expected)


def test_traced_size_still_compares_as_its_int():
    seen = []

    def fn(x):
        n = x.shape[0]
        seen.append((n == 2, n + 1, len({n, n})))
        return x * n

    ts.jit.trace(fn, (ts.ones(2),), check_trace=False)
    assert seen == [(True, 3, 1)]
