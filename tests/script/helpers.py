"""Comparing scripted results with eager ones."""
import math

import numpy as np

import tscript as ts
from tests.conftest import assert_close


def clone(x):
    """Inputs copied, so programs that mutate their arguments see the same values in both runs."""
    if isinstance(x, ts.Tensor):
        return x.detach().clone()
    if isinstance(x, (list, tuple)):
        return type(x)(clone(v) for v in x)
    if isinstance(x, dict):
        return {k: clone(v) for k, v in x.items()}
    return x


def assert_same(got, expected, where: str = "result") -> None:
    """Equal values of equal types, recursively (tensors: shape, dtype and values)."""
    if isinstance(expected, ts.Tensor):
        assert isinstance(got, ts.Tensor), f"{where}: expected a Tensor, got {type(got).__name__}"
        assert_close(got.detach(), expected.detach())
    elif isinstance(expected, (list, tuple)):
        assert type(got) is type(expected), f"{where}: expected {type(expected).__name__}, got {type(got).__name__}"
        assert len(got) == len(expected), f"{where}: length {len(got)} != {len(expected)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"{where}[{i}]")
    elif isinstance(expected, dict):
        assert isinstance(got, dict) and list(got) == list(expected), f"{where}: keys {list(got)} != {list(expected)}"
        for k in expected:
            assert_same(got[k], expected[k], f"{where}[{k!r}]")
    elif isinstance(expected, float):
        assert isinstance(got, float), f"{where}: expected a float, got {type(got).__name__} {got!r}"
        assert math.isclose(got, expected, rel_tol=1e-6, abs_tol=1e-9) or (math.isnan(got) and math.isnan(expected))
    else:
        assert type(got) is type(expected) and got == expected, f"{where}: {got!r} != {expected!r}"


def as_numpy(x):
    """Tensors inside a result as numpy arrays (what the standalone runtime returns)."""
    if isinstance(x, ts.Tensor):
        return x.detach().numpy()
    if isinstance(x, (list, tuple)):
        return type(x)(as_numpy(v) for v in x)
    return x


def assert_runtime_same(got, expected) -> None:
    """A runtime result (numpy) equal to an eager one (tscript)."""
    if isinstance(expected, (list, tuple)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_runtime_same(g, e)
    else:
        np.testing.assert_allclose(np.asarray(got), as_numpy(expected), rtol=1e-5, atol=1e-6)
