"""Training with a compiled backward follows eager training step by step: same initial parameters,
same batches, SGD with momentum; the loss curves agree to 1e-4 (and BatchNorm's running statistics
and the final parameters too)."""
import copy

import numpy as np

import tscript as ts
from tscript import nn
from tscript.optim import SGD
from tests.conftest import assert_close


def batches(n_steps: int, batch: int, shape: tuple, classes: int, seed: int) -> list:
    """Random inputs labelled by a fixed random linear teacher (so there is something to learn)."""
    teacher = np.random.default_rng(0).standard_normal((int(np.prod(shape)), classes))
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal((batch, *shape)).astype(np.float32) for _ in range(n_steps)]
    return [(ts.tensor(x), ts.tensor((x.reshape(batch, -1) @ teacher).argmax(1))) for x in xs]


def train(model, forward, data, lr: float) -> list[float]:
    optimizer = SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for x, y in data:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(forward(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def eager_and_compiled(model, data, lr: float, **kwargs):
    """Loss curves of eager training and of training through compile(..., backward=True)."""
    eager, twin = copy.deepcopy(model), copy.deepcopy(model)
    compiled = ts.jit.compile(twin, data[0][0], backward=True, **kwargs)
    twin.load_state_dict(eager.state_dict())  # compiling traced (a forward pass): start equal
    return train(eager, eager, data, lr), train(twin, compiled, data, lr), eager, twin


def test_mlp_trains_like_eager_for_50_steps():
    ts.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))
    data = batches(50, 16, (10,), 4, seed=0)
    eager_losses, compiled_losses, eager, twin = eager_and_compiled(model, data, lr=0.05)
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-4, atol=1e-6)
    assert compiled_losses[-1] < 0.8 * compiled_losses[0]  # it learned something
    for p, q in zip(twin.parameters(), eager.parameters()):
        assert_close(p.detach(), q.detach(), rtol=1e-4, atol=1e-5)


def test_cnn_with_batchnorm_trains_like_eager_at_varying_batch_sizes():
    ts.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 3 * 3, 3))
    data = batches(10, 6, (1, 6, 6), 3, seed=1) + batches(10, 4, (1, 6, 6), 3, seed=2)
    eager_losses, compiled_losses, eager, twin = eager_and_compiled(model, data, lr=0.05, dynamic={0: [0]})
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-4, atol=1e-6)
    for (name, a), (_, b) in zip(twin.state_dict().items(), eager.state_dict().items()):
        assert_close(a, b, rtol=1e-4, atol=1e-5), name
