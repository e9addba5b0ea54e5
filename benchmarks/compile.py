"""Native code benchmarks (issue 7 targets): models compiled with `tscript.jit.compile` against eager
tscript, numpy written by hand and PyTorch eager. "tscript" is the compiled model; every figure of a
compiled call includes getting its output arrays (the kernel launcher reuses a previous output buffer
that nothing holds any more, as here where results are dropped, so large outputs cost no page faults).

Targets: MLP 784-512-512-10 batch 1 <= 0.5x torch and faster than numpy; batch 256 <= 1.1x torch;
GELU (tanh form) on 4,194,304 floats >= 70% of the copy bandwidth; LayerNorm + softmax (512, 1024)
<= 0.7x torch; small CNN <= 1.0x torch; 100 dependent adds < 0.2 us per add; MLP compile < 1 s cold,
< 0.05 s from the cache.
"""
import math
import os
import shutil
import tempfile

import numpy as np

import tscript as ts
import tscript.nn.functional as F
from tscript import nn

from .harness import Case, torch

MLP_SIZES = (784, 512, 512, 10)
GELU_N = 4_194_304
C = math.sqrt(2 / math.pi)


def _rng():
    return np.random.default_rng(0)


def _mlp():
    ts.manual_seed(0)
    layers = []
    for fan_in, fan_out in zip(MLP_SIZES, MLP_SIZES[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1]).eval()


def _torch_copy(model):
    """The PyTorch twin of a tscript module (same parameters), or None without PyTorch."""
    if torch is None:
        return None
    twin = _torch_module(model)
    twin.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in model.state_dict().items()})
    return twin.eval()


def _torch_module(model):
    """Rebuild a tscript nn.Sequential of the layers used here with torch.nn."""
    tnn = torch.nn
    build = {nn.Linear: lambda m: tnn.Linear(m.in_features, m.out_features), nn.ReLU: lambda m: tnn.ReLU(),
             nn.Flatten: lambda m: tnn.Flatten(), nn.MaxPool2d: lambda m: tnn.MaxPool2d(m.kernel_size),
             nn.Conv2d: lambda m: tnn.Conv2d(m.in_channels, m.out_channels, m.kernel_size, padding=m.padding)}
    return tnn.Sequential(*(build[type(m)](m) for m in model))


def _numpy_mlp(model):
    w = [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy()) for m in model if isinstance(m, nn.Linear)]

    def run(x):
        h = np.maximum(x @ w[0][0] + w[0][1], 0)
        h = np.maximum(h @ w[1][0] + w[1][1], 0)
        return h @ w[2][0] + w[2][1]
    return run


def _no_grad(fn):
    def run():
        with ts.no_grad():
            return fn()
    return run


def _torch_no_grad(fn):
    def run():
        with torch.no_grad():
            return fn()
    return run


def mlp_inference(batch: int) -> Case:
    model = _mlp()
    x = ts.from_numpy(_rng().standard_normal((batch, MLP_SIZES[0]), dtype=np.float32))
    cm = ts.jit.compile(model, (x,))
    xn = x.numpy()
    numpy_mlp = _numpy_mlp(model)
    variants = {"tscript": lambda: cm(x), "eager": _no_grad(lambda: model(x)), "numpy": lambda: numpy_mlp(xn)}
    twin = _torch_copy(model)
    if twin is not None:
        xt = torch.from_numpy(xn.copy())
        variants["torch"] = _torch_no_grad(lambda: twin(xt))
    return Case(f"MLP 784-512-512-10 inference, batch {batch}", variants)


def _gelu(x):
    return 0.5 * x * (1 + (C * (x + 0.044715 * x * x * x)).tanh())


def _gelu_numpy(x):
    return 0.5 * x * (1 + np.tanh(C * (x + 0.044715 * x * x * x)))


def gelu() -> Case:
    xn = _rng().standard_normal(GELU_N, dtype=np.float32)
    x = ts.from_numpy(xn)
    cm = ts.jit.compile(_gelu, (x,))
    out = np.empty_like(xn)
    variants = {"tscript": lambda: cm(x), "copy": lambda: np.copyto(out, xn), "eager": lambda: _gelu(x),
                "numpy": lambda: _gelu_numpy(xn)}
    if torch is not None:
        xt = torch.from_numpy(xn.copy())
        variants["torch"] = lambda: _gelu(xt)
    notes = {"share of copy bandwidth (same bytes in and out; compiled includes getting its output array)":
             lambda r: f"{100 * r['copy'] / r['tscript']:.0f}%"}
    return Case("GELU (tanh form) on 4,194,304 float32", variants, notes=notes)


def _ln_softmax(lib_f, x, w, b):
    return lib_f.softmax(lib_f.layer_norm(x, (x.shape[-1],), w, b), -1)


def _ln_softmax_numpy(x, w, b):
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + 1e-5) * w + b
    e = np.exp(y - y.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def layer_norm_softmax() -> Case:
    rng = _rng()
    xn = rng.standard_normal((512, 1024), dtype=np.float32)
    wn, bn = rng.standard_normal(1024, dtype=np.float32), rng.standard_normal(1024, dtype=np.float32)
    x, w, b = (ts.from_numpy(a) for a in (xn, wn, bn))
    cm = ts.jit.compile(lambda x, w, b: _ln_softmax(F, x, w, b), (x, w, b))
    variants = {"tscript": lambda: cm(x, w, b), "eager": lambda: _ln_softmax(F, x, w, b),
                "numpy": lambda: _ln_softmax_numpy(xn, wn, bn)}
    if torch is not None:
        args = [torch.from_numpy(a.copy()) for a in (xn, wn, bn)]
        variants["torch"] = lambda: _ln_softmax(torch.nn.functional, *args)
    return Case("LayerNorm + softmax (512, 1024)", variants)


def _cnn():
    ts.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(32 * 8 * 8, 10)).eval()


def small_cnn() -> Case:
    model = _cnn()
    xn = _rng().standard_normal((8, 3, 32, 32), dtype=np.float32)
    x = ts.from_numpy(xn)
    cm = ts.jit.compile(model, (x,))
    variants = {"tscript": lambda: cm(x), "eager": _no_grad(lambda: model(x))}
    twin = _torch_copy(model)
    if twin is not None:
        xt = torch.from_numpy(xn.copy())
        variants["torch"] = _torch_no_grad(lambda: twin(xt))
    return Case("small CNN, batch 8 of 3x32x32", variants)


def _chain(x, n: int = 100):
    t = x
    for _ in range(n):
        t = t + x
    return t


def add_chain() -> Case:
    x = ts.ones(4)
    cm = ts.jit.compile(_chain, (x,))
    xn = np.ones(4, np.float32)
    variants = {"tscript": lambda: cm(x), "eager": lambda: _chain(x), "numpy": lambda: _chain(xn)}
    if torch is not None:
        xt = torch.ones(4)
        variants["torch"] = lambda: _chain(xt)
    return Case("100 dependent adds on (4,) (per add)", variants, inner=10, per=100)


def _compile_mlp_cold(model, x):
    """Compile with an empty object cache (a fresh TSCRIPT_CACHE_DIR)."""
    path = tempfile.mkdtemp(prefix="tscript-bench-")
    old = os.environ.get("TSCRIPT_CACHE_DIR")
    os.environ["TSCRIPT_CACHE_DIR"] = path
    try:
        ts.jit.compile(model, (x,))
    finally:
        if old is None:
            del os.environ["TSCRIPT_CACHE_DIR"]
        else:
            os.environ["TSCRIPT_CACHE_DIR"] = old
        shutil.rmtree(path, ignore_errors=True)


def compile_time() -> list[Case]:
    model = _mlp()
    x = ts.randn(1, MLP_SIZES[0])
    ts.jit.compile(model, (x,))  # fills the default cache
    cold = Case("compile MLP: module -> callable, cold cache", {"tscript": lambda: _compile_mlp_cold(model, x)})
    warm = Case("compile MLP: module -> callable, from cache", {"tscript": lambda: ts.jit.compile(model, (x,))})
    return [cold, warm]


class _MLPLoss(nn.Module):
    def __init__(self, mlp):
        super().__init__()
        self.mlp = mlp

    def forward(self, x, target):
        return F.cross_entropy(self.mlp(x), target)


def _step(loss_fn, params):
    def run():
        for p in params:
            p.grad = None
        loss_fn().backward()
    return run


def training_step() -> Case:
    mlp = _mlp().train()
    rng = _rng()
    xn = rng.standard_normal((64, MLP_SIZES[0]), dtype=np.float32)
    tn = rng.integers(0, MLP_SIZES[-1], 64)
    x, target = ts.from_numpy(xn), ts.from_numpy(tn)
    model = _MLPLoss(mlp)
    cm = ts.jit.compile(model, (x, target), backward=True)
    params = list(model.parameters())
    variants = {"tscript": _step(lambda: cm(x, target), params), "eager": _step(lambda: model(x, target), params)}
    twin = _torch_copy(mlp)
    if twin is not None:
        twin.train()
        xt, tt = torch.from_numpy(xn.copy()), torch.from_numpy(tn.copy())
        variants["torch"] = _step(lambda: torch.nn.functional.cross_entropy(twin(xt), tt), list(twin.parameters()))
    return Case("MLP training step (fwd+bwd), batch 64", variants)


def cases() -> list[Case]:
    return [mlp_inference(1), mlp_inference(16), mlp_inference(256), gelu(), layer_norm_softmax(), small_cnn(), add_chain(),
            *compile_time(), training_step()]
