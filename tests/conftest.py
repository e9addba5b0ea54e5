"""Shared test helpers: tolerances of SPEC.md and the optional PyTorch oracle."""
import os

# One BLAS thread: on 2 cores a spinning OpenBLAS pool next to the test process makes timings erratic.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

try:
    import torch
except ImportError:  # PyTorch is an oracle, never a dependency
    torch = None


@pytest.fixture
def oracle():
    """The `torch` module, or skip the test when PyTorch is not installed."""
    if torch is None:
        pytest.skip("PyTorch not installed (oracle comparisons skipped)")
    return torch


def to_numpy(x):
    """A tscript tensor, torch tensor, array or number as an ndarray."""
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        x = x.detach()
    if hasattr(x, "numpy"):
        return np.asarray(x.numpy())
    return np.asarray(x)


def assert_close(actual, expected, rtol=1e-5, atol=1e-6, check_dtype=True):
    """Values (and, by default, numpy dtypes) equal to float32 tolerance."""
    a, e = to_numpy(actual), to_numpy(expected)
    assert a.shape == e.shape, f"shape {a.shape} != {e.shape}"
    if check_dtype:
        assert a.dtype == e.dtype, f"dtype {a.dtype} != {e.dtype}"
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True)


def run_in_threads(work, n: int = 4) -> None:
    """Run `work(k)` for k in range(n), each on its own thread, and wait for all of them."""
    import threading
    threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
