"""Eager tensor benchmarks: per-op overhead on tiny tensors, and large elementwise ops (4M float32)."""
import numpy as np

import tscript as ts

from .harness import Case, torch


def _with_torch(variants: dict, make_torch) -> dict:
    if torch is not None:
        variants["torch"] = make_torch()
    return variants


def tiny_add() -> Case:
    a, b = ts.ones(1), ts.ones(1)
    x, y = np.ones(1, np.float32), np.ones(1, np.float32)

    def torch_fn():
        p, q = torch.ones(1), torch.ones(1)
        return lambda: p + q
    return Case("a + b, 1-element tensors (per op)", _with_torch(
        {"tscript": lambda: a + b, "numpy": lambda: x + y}, torch_fn), inner=2000)


def chain_100_adds() -> Case:
    def chain(a):
        def run():
            t = a
            for _ in range(100):
                t = t + a
            return t
        return run
    return Case("chain of 100 adds on (4,) (per add)", _with_torch(
        {"tscript": chain(ts.ones(4)), "numpy": chain(np.ones(4, np.float32))},
        lambda: chain(torch.ones(4))), inner=20, per=100)


N = 4 * 1024 * 1024


def _large(name: str, ts_fn, np_fn, torch_fn) -> Case:
    rng = np.random.default_rng(0)
    xa, ya = rng.standard_normal(N, dtype=np.float32), rng.standard_normal(N, dtype=np.float32)
    xt, yt = ts.from_numpy(xa), ts.from_numpy(ya)
    variants = {"tscript": lambda: ts_fn(xt, yt), "numpy": lambda: np_fn(xa, ya)}
    if torch is not None:
        xp, yp = torch.from_numpy(xa.copy()), torch.from_numpy(ya.copy())
        variants["torch"] = lambda: torch_fn(xp, yp)
    return Case(f"{name} (4M float32)", variants)


def large_cases() -> list[Case]:
    return [
        _large("x + y", lambda x, y: x + y, lambda x, y: x + y, lambda x, y: x + y),
        _large("x * y + 1", lambda x, y: x * y + 1, lambda x, y: x * y + 1, lambda x, y: x * y + 1),
        _large("exp(x)", lambda x, y: x.exp(), lambda x, y: np.exp(x), lambda x, y: x.exp()),
        _large("relu(x)", lambda x, y: x.relu(), lambda x, y: np.maximum(x, np.float32(0)), lambda x, y: x.relu()),
        _large("sigmoid(x)", lambda x, y: x.sigmoid(), lambda x, y: 1 / (1 + np.exp(-x)), lambda x, y: x.sigmoid()),
        _large("x > y", lambda x, y: x > y, lambda x, y: x > y, lambda x, y: x > y),
    ]


def cases() -> list[Case]:
    return [tiny_add(), chain_100_adds(), *large_cases()]
