"""Training step benchmarks (issue 9): one step = forward + cross-entropy + backward + SGD update, for
the MLP 784-512-512-10 at batch 64 and the small CNN at batch 8 (3x32x32).

"tscript" compiles the model and its loss together with `tscript.jit.compile(..., backward=True)`;
"model only" compiles the model and computes the loss eagerly; "eager" is eager tscript; "torch"
PyTorch eager; "torch.compile" PyTorch's compiler of the model when it works here (the column is
left out otherwise). The optimizer (SGD) is each library's own. Target: the compiled MLP step
faster than PyTorch eager's. The notes give the bytes the compiled forward keeps for the backward.
"""
import numpy as np

import tscript as ts
from tscript import nn

from .harness import Case, torch

LR = 0.01


def _mlp():
    ts.manual_seed(0)
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def _cnn():
    ts.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(32 * 8 * 8, 10))


def _torch_twin(model):
    """The same network in torch.nn with the same parameters."""
    tnn = torch.nn
    build = {nn.Linear: lambda m: tnn.Linear(m.in_features, m.out_features), nn.ReLU: lambda m: tnn.ReLU(),
             nn.Flatten: lambda m: tnn.Flatten(), nn.MaxPool2d: lambda m: tnn.MaxPool2d(m.kernel_size),
             nn.Conv2d: lambda m: tnn.Conv2d(m.in_channels, m.out_channels, m.kernel_size, padding=m.padding)}
    twin = tnn.Sequential(*(build[type(m)](m) for m in model))
    twin.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in model.state_dict().items()})
    return twin


class _WithLoss(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, target):
        return nn.functional.cross_entropy(self.model(x), target)


def _step(forward, loss_fn, optimizer, x, y):
    def run():
        optimizer.zero_grad()
        loss_fn(forward(x), y).backward()
        optimizer.step()
    return run


def _fused_step(compiled, optimizer, x, y):
    def run():
        optimizer.zero_grad()
        compiled(x, y).backward()
        optimizer.step()
    return run


def _torch_variants(model, xn, yn) -> dict:
    if torch is None:
        return {}
    x, y = torch.from_numpy(xn.copy()), torch.from_numpy(yn.copy())
    twin = _torch_twin(model)
    loss = torch.nn.functional.cross_entropy
    variants = {"torch": _step(twin, loss, torch.optim.SGD(twin.parameters(), lr=LR), x, y)}
    try:
        twin2 = _torch_twin(model)
        step = _step(torch.compile(twin2), loss, torch.optim.SGD(twin2.parameters(), lr=LR), x, y)
        step()  # compiles (tens of seconds) or fails here
        variants["torch.compile"] = step
    except Exception:  # noqa: BLE001 - no working compiler toolchain: leave the column out
        pass
    return variants


def _case(name: str, make_model, shape: tuple) -> Case:
    rng = np.random.default_rng(0)
    xn = rng.standard_normal(shape, dtype=np.float32)
    yn = rng.integers(0, 10, shape[0])
    x, y = ts.from_numpy(xn), ts.from_numpy(yn)
    loss = nn.functional.cross_entropy
    fused_model, compiled_model, eager_model = make_model(), make_model(), make_model()
    fused = ts.jit.compile(_WithLoss(fused_model), (x, y), backward=True)
    compiled = ts.jit.compile(compiled_model, x, backward=True)
    variants = {"tscript": _fused_step(fused, ts.optim.SGD(fused_model.parameters(), lr=LR), x, y),
                "model only": _step(compiled, loss, ts.optim.SGD(compiled_model.parameters(), lr=LR), x, y),
                "eager": _step(eager_model, loss, ts.optim.SGD(eager_model.parameters(), lr=LR), x, y),
                **_torch_variants(make_model(), xn, yn)}
    saved = compiled.saved_bytes(x)
    note = f"{saved['activations'] / shape[0]:.0f} B of activations per sample (+ {saved['inputs']} B of " \
           f"inputs and parameters referenced)"
    return Case(name, variants, notes={"saved for backward": lambda res: note})


def cases() -> list[Case]:
    return [_case("MLP 784-512-512-10 training step, batch 64", _mlp, (64, 784)),
            _case("small CNN training step, batch 8 of 3x32x32", _cnn, (8, 3, 32, 32))]
