"""A ModuleDict/ModuleList subclass that defines its own forward is callable in scripted code (a
feature-concatenating block written as a dict of layers); a plain container is still not."""
import numpy as np
import pytest

import tscript as ts
from tscript import nn


class ConcatBlock(nn.ModuleDict):
    """Each layer sees the running feature list's concatenation; the block returns all of it."""

    def __init__(self, width: int, layers: int):
        super().__init__()
        for i in range(layers):
            self[f"layer{i}"] = nn.Linear(width * (i + 1), width)

    def forward(self, x):
        features = [x]
        for _, layer in self.items():
            features.append(layer(ts.cat(features, 1)).relu())
        return ts.cat(features, 1)


class StackBlock(nn.ModuleList):
    def forward(self, x):
        for layer in self:
            x = layer(x) + x
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = ConcatBlock(3, 2)
        self.stack = StackBlock([nn.Linear(9, 9), nn.Linear(9, 9)])

    def forward(self, x):
        return self.stack(self.block(x))


def test_container_subclass_with_forward_is_callable():
    ts.manual_seed(0)
    net = Net()
    x = ts.randn(4, 3)
    scripted = ts.jit.script(net)
    with ts.no_grad():
        np.testing.assert_allclose(scripted(x).numpy(), net(x).numpy(), rtol=1e-6, atol=1e-6)


class CallsPlainList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(2, 2)])

    def forward(self, x):
        return self.layers(x)


def test_plain_container_is_still_not_callable():
    with pytest.raises(Exception, match="not callable"):
        ts.jit.script(CallsPlainList())
