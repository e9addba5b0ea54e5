"""nn layer benchmarks: conv2d and max_pool2d forward on a small CNN's shapes (batch 8, 32x32)."""
import numpy as np

import tscript as ts
import tscript.nn.functional as F

from .harness import Case, torch


def _case(name: str, ts_fn, torch_fn, *arrays) -> Case:
    tensors = [ts.from_numpy(a) for a in arrays]
    variants = {"tscript": lambda: ts_fn(*tensors)}
    if torch is not None:
        torch_tensors = [torch.from_numpy(a.copy()) for a in arrays]
        variants["torch"] = lambda: torch_fn(*torch_tensors)
    return Case(name, variants)


def _randn(*shape) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape, dtype=np.float32)


def conv_cases() -> list[Case]:
    tnn = torch.nn.functional if torch is not None else None
    return [
        _case("conv2d 8x3x32x32 -> 16, 3x3 pad 1", lambda x, w, b: F.conv2d(x, w, b, padding=1),
              lambda x, w, b: tnn.conv2d(x, w, b, padding=1), _randn(8, 3, 32, 32), _randn(16, 3, 3, 3), _randn(16)),
        _case("conv2d 8x16x32x32 -> 32, 3x3 pad 1", lambda x, w, b: F.conv2d(x, w, b, padding=1),
              lambda x, w, b: tnn.conv2d(x, w, b, padding=1), _randn(8, 16, 32, 32), _randn(32, 16, 3, 3),
              _randn(32)),
    ]


def pool_cases() -> list[Case]:
    tnn = torch.nn.functional if torch is not None else None
    return [
        _case("max_pool2d 8x32x32x32, 2x2", lambda x: F.max_pool2d(x, 2), lambda x: tnn.max_pool2d(x, 2),
              _randn(8, 32, 32, 32)),
        _case("max_pool2d 8x32x32x32, 3x3 stride 2 pad 1", lambda x: F.max_pool2d(x, 3, 2, 1),
              lambda x: tnn.max_pool2d(x, 3, 2, 1), _randn(8, 32, 32, 32)),
    ]


def cases() -> list[Case]:
    return [*conv_cases(), *pool_cases()]
