"""End to end: models train with DataLoader + CrossEntropyLoss + Adam to a stated loss and accuracy
(seeded, a few seconds), and a checkpoint saved with `tscript.save` resumes exactly."""
import numpy as np

import tscript as ts
from tscript import nn
from tscript.optim import Adam
from tscript.optim.lr_scheduler import StepLR
from tscript.utils.data import DataLoader, TensorDataset


def points(n: int, seed: int):
    """2-D points in [-1, 1]^2: class 0 inside radius 0.5, else class 1 (x*y > 0) or 2 (x*y < 0)."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    labels = np.where(np.hypot(xy[:, 0], xy[:, 1]) < 0.5, 0, np.where(xy[:, 0] * xy[:, 1] > 0, 1, 2))
    return ts.tensor(xy), ts.tensor(labels)


def patterns(n: int, seed: int):
    """Noisy 1x12x12 images of a horizontal bar (class 0), a vertical bar (1) or a diagonal (2) at a
    random offset."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    images = rng.normal(0, 0.3, (n, 1, 12, 12)).astype(np.float32)
    offsets = rng.integers(2, 10, n)
    for image, label, k in zip(images, labels, offsets):
        if label == 0:
            image[0, k, 1:11] += 1.0
        elif label == 1:
            image[0, 1:11, k] += 1.0
        else:
            image[0] += np.eye(12, k=k - 6, dtype=np.float32)
    return ts.tensor(images), ts.tensor(labels)


def mlp():
    return nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 3))


def fit(model, loader, optimizer, epochs: int, scheduler=None) -> float:
    """Train; returns the mean loss of the last epoch."""
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for _ in range(epochs):
        total, count = 0.0, 0
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            total, count = total + loss.item() * len(targets), count + len(targets)
        if scheduler is not None:
            scheduler.step()
    return total / count


def accuracy(model, inputs, targets) -> float:
    model.eval()
    with ts.no_grad():
        return (model(inputs).argmax(1) == targets).float().mean().item()


def test_mlp_learns_a_nonlinear_classification():
    ts.manual_seed(0)
    x, y = points(512, seed=0)
    model = mlp()
    optimizer = Adam(model.parameters(), lr=0.02)
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    first = fit(model, loader, optimizer, epochs=1)
    last = fit(model, loader, optimizer, epochs=24, scheduler=StepLR(optimizer, step_size=10, gamma=0.5))
    assert first > 0.7
    assert last < 0.15
    assert accuracy(model, *points(1000, seed=1)) > 0.93


def test_cnn_learns_image_patterns():
    ts.manual_seed(0)
    x, y = patterns(240, seed=0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16 * 3 * 3, 3))
    optimizer = Adam(model.parameters(), lr=0.01)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    first = fit(model, loader, optimizer, epochs=1)
    last = fit(model, loader, optimizer, epochs=9)
    assert first > 0.8
    assert last < 0.05
    assert accuracy(model, *patterns(150, seed=1)) > 0.95


def test_saved_state_dict_reloads_into_a_fresh_model(tmp_path):
    ts.manual_seed(1)
    x, y = points(128, seed=2)
    model = mlp()
    fit(model, DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True), Adam(model.parameters()), epochs=2)
    ts.save(model.state_dict(), tmp_path / "mlp.pt")
    fresh = mlp()
    assert not np.array_equal(fresh(x).detach().numpy(), model(x).detach().numpy())
    fresh.load_state_dict(ts.load(tmp_path / "mlp.pt"))
    np.testing.assert_array_equal(fresh(x).detach().numpy(), model(x).detach().numpy())


def test_checkpoint_resumes_training_exactly(tmp_path):
    ts.manual_seed(2)
    x, y = points(128, seed=3)
    dataset = TensorDataset(x, y)
    model = mlp()
    optimizer = Adam(model.parameters(), lr=0.01, amsgrad=True)
    fit(model, DataLoader(dataset, batch_size=32, shuffle=True), optimizer, epochs=2)
    ts.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, tmp_path / "ckpt.pt")

    def resume_loader():
        return DataLoader(dataset, batch_size=32, shuffle=True, generator=ts.Generator().manual_seed(7))

    fit(model, resume_loader(), optimizer, epochs=2)
    checkpoint = ts.load(tmp_path / "ckpt.pt")
    resumed = mlp()
    resumed.load_state_dict(checkpoint["model"])
    resumed_optimizer = Adam(resumed.parameters())
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    fit(resumed, resume_loader(), resumed_optimizer, epochs=2)
    for (name, p), q in zip(model.named_parameters(), resumed.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)
