"""Modules and functions for test_modules.py (scripting reads their source from this file)."""
from __future__ import annotations

from typing import List

import tscript as ts
import tscript.nn.functional as F
from tscript import Tensor, nn

CALLS: List[str] = []


def double(x: Tensor) -> Tensor:
    return x * 2


@ts.jit.script
def add_one(x: Tensor) -> Tensor:
    return x + 1


def uses_helpers(x: Tensor) -> Tensor:
    return add_one(double(x)) + double(x)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.decode(self.encode(x))

    @ts.jit.export
    def encode(self, x: Tensor) -> Tensor:
        return F.relu(self.fc1(x))

    @ts.jit.export
    def decode(self, h: Tensor) -> Tensor:
        return self.fc2(h)

    def unused_helper(self, x):
        return x.numpy()  # never compiled: forward does not call it


class WithIgnored(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        y = self.fc(x)
        self.log(y)
        return y * 2

    @ts.jit.ignore
    def log(self, y: Tensor) -> None:
        CALLS.append(f"logged {tuple(y.shape)}")  # plain Python: not scriptable, left to Python


class WithUnused(nn.Module):
    def __init__(self, use_debug: bool):
        super().__init__()
        self.use_debug = use_debug
        self.fc = nn.Linear(3, 3)

    def forward(self, x: Tensor, debug: bool = False) -> Tensor:
        if debug:
            return self.debug(x)
        return self.fc(x)

    @ts.jit.unused
    def debug(self, x: Tensor) -> Tensor:
        import pdb  # not scriptable: never compiled
        pdb.set_trace()
        return x


class DropoutNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.fc(x))


class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x):
        return self.bn(x) * 2


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 1)

    def forward(self, x: Tensor, scale: float = 1.0) -> Tensor:
        return self.fc2(ts.tanh(self.fc1(x))) * scale
