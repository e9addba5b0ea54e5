"""Autograd benchmarks: forward+backward of a chain of small elementwise ops (engine overhead per op)
and of an MLP 784-512-512-10 at batch 64 written with plain tensor ops (numpy: hand-written backward)."""
import numpy as np

import tscript as ts

from .harness import Case, torch

CHAIN_SHAPE = (16,)
CHAIN_OPS = 20
MLP_SIZES = (784, 512, 512, 10)
BATCH = 64


def _chain(lib, x):
    """20 elementwise ops (a mix of unary and binary, with and without saved values), then a sum."""
    t = x
    for _ in range(CHAIN_OPS // 5):
        t = (t * 1.01 + 0.1).sin() * x - 0.2
    return t.sum()


def chain_case() -> Case:
    def make(lib):
        x = lib.randn(CHAIN_SHAPE).requires_grad_()

        def run():
            x.grad = None
            _chain(lib, x).backward()
        return run
    variants = {"tscript": make(ts)}
    if torch is not None:
        variants["torch"] = make(torch)
    return Case(f"fwd+bwd chain of {CHAIN_OPS} ops on {CHAIN_SHAPE} (per op)", variants, inner=10,
                per=CHAIN_OPS)


def _mlp_params(rng) -> list[np.ndarray]:
    params = []
    for fan_in, fan_out in zip(MLP_SIZES, MLP_SIZES[1:]):
        bound = 1 / np.sqrt(fan_in)
        params += [rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32),
                   rng.uniform(-bound, bound, fan_out).astype(np.float32)]
    return params


def _mlp_loss(lib, x, target, w1, b1, w2, b2, w3, b3):
    h = lib.relu(x @ w1 + b1)
    h = lib.relu(h @ w2 + b2)
    logp = lib.log_softmax(h @ w3 + b3, dim=1)
    return -logp.gather(1, target.unsqueeze(1)).mean()


def _tensor_step(lib, data: list[np.ndarray], x: np.ndarray, target: np.ndarray):
    params = [lib.tensor(p, requires_grad=True) for p in data]
    xt, tt = lib.tensor(x), lib.tensor(target)

    def run():
        for p in params:
            p.grad = None
        _mlp_loss(lib, xt, tt, *params).backward()
    return run


def _numpy_step(data: list[np.ndarray], x: np.ndarray, target: np.ndarray):
    """The same forward and a hand-derived backward in numpy: the floor for eager code."""
    w1, b1, w2, b2, w3, b3 = data
    rows = np.arange(len(target))

    def run():
        a1 = x @ w1 + b1
        h1 = np.maximum(a1, 0)
        a2 = h1 @ w2 + b2
        h2 = np.maximum(a2, 0)
        z = h2 @ w3 + b3
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        dz = p
        dz[rows, target] -= 1
        dz /= len(target)
        grads = [h2.T @ dz, dz.sum(0)]
        dh = (dz @ w3.T) * (a2 > 0)
        grads = [h1.T @ dh, dh.sum(0)] + grads
        dh = (dh @ w2.T) * (a1 > 0)
        return [x.T @ dh, dh.sum(0)] + grads
    return run


def mlp_case() -> Case:
    rng = np.random.default_rng(0)
    data = _mlp_params(rng)
    x = rng.standard_normal((BATCH, MLP_SIZES[0])).astype(np.float32)
    target = rng.integers(0, MLP_SIZES[-1], BATCH)
    variants = {"tscript": _tensor_step(ts, data, x, target), "numpy": _numpy_step(data, x, target)}
    if torch is not None:
        variants["torch"] = _tensor_step(torch, data, x, target)
    sizes = "-".join(map(str, MLP_SIZES))
    return Case(f"fwd+bwd MLP {sizes}, batch {BATCH}", variants)


def cases() -> list[Case]:
    return [chain_case(), mlp_case()]
