"""Recycled output arrays of the eager native kernels (native/recycled.py): a large array comes back
once nothing holds it (not while a tensor, a view or any other reference does), small ones are always
fresh, each thread keeps its own, and what is kept stays within its bounds. The eager ops that take
their outputs from it never write over a result the caller still holds."""
import threading

import numpy as np
import pytest

import tscript as ts
import tscript.nn.functional as F
from tscript_runtime.native import recycled

BIG = (4, 64, 32, 32)  # 1 MiB of float32


@pytest.fixture(autouse=True)
def fresh_pool(monkeypatch):
    """Each test starts from an empty pool on this thread, which keeps arrays from 1 MiB (BIG's size)."""
    monkeypatch.setattr(recycled, "MIN_BYTES", 1 << 20)
    recycled._local.__dict__.pop("pool", None)
    yield
    recycled._local.__dict__.pop("pool", None)


def _address(a):
    return a.__array_interface__["data"][0]


def test_an_array_no_one_holds_comes_back():
    a = recycled.empty(BIG, np.float32)
    assert a.shape == BIG and a.dtype == np.float32
    at = _address(a)
    del a
    assert _address(recycled.empty(BIG, np.float32)) == at


@pytest.mark.parametrize("hold", [lambda a: a, lambda a: a[1:], lambda a: ts.from_numpy(a), lambda a: memoryview(a)])
def test_a_held_array_is_not_handed_out(hold):
    a = recycled.empty(BIG, np.float32)
    holder = hold(a)
    at = _address(a)
    del a
    b = recycled.empty(BIG, np.float32)
    assert _address(b) != at and holder is not None


def test_small_arrays_dtypes_and_shapes_are_apart(monkeypatch):
    recycled.empty((4, 4), np.float32)
    monkeypatch.setattr(recycled, "MIN_BYTES", 1 << 23)  # the default: arrays under 8 MiB come from malloc
    recycled.empty(BIG, np.float32)
    assert not recycled._pool()  # nothing kept for arrays under MIN_BYTES
    monkeypatch.setattr(recycled, "MIN_BYTES", 1 << 20)
    a = recycled.empty(BIG, np.float32)
    at = _address(a)
    del a
    assert _address(recycled.empty(BIG, np.float64)) != at
    assert _address(recycled.empty(BIG[::-1], np.float32)) != at


def test_bounds():
    held = [recycled.empty(BIG, np.float32) for _ in range(recycled.PER_SHAPE + 2)]
    assert len(recycled._pool()[(BIG, np.dtype(np.float32))]) == recycled.PER_SHAPE
    assert len({_address(a) for a in held}) == len(held)
    saved = recycled.KEPT_BYTES
    recycled.KEPT_BYTES = 4 * (1 << 20)
    try:
        for k in range(6):
            recycled.empty((1 << 18, k + 1), np.float32)
        assert sum(a.nbytes for arrays in recycled._pool().values() for a in arrays) <= recycled.KEPT_BYTES
        assert recycled._pool()  # the shape asked for last is kept
        huge = recycled.empty((1 << 20, 2), np.float32)  # too big for PER_SHAPE of it to fit: not kept
        assert all(huge is not a for arrays in recycled._pool().values() for a in arrays)
    finally:
        recycled.KEPT_BYTES = saved


def test_threads_keep_their_own():
    a = recycled.empty(BIG, np.float32)
    at = _address(a)
    del a
    seen = []
    thread = threading.Thread(target=lambda: seen.append(_address(recycled.empty(BIG, np.float32))))
    thread.start()
    thread.join()
    assert seen[0] != at


def test_eager_results_held_are_never_written_over():
    rng = np.random.default_rng(0)
    w = ts.from_numpy(rng.standard_normal((64, 16, 3, 3)).astype(np.float32))
    xs = [ts.from_numpy(rng.standard_normal((4, 16, 34, 34)).astype(np.float32)) for _ in range(3)]
    s = ts.from_numpy(rng.standard_normal((1, 64, 1, 1)).astype(np.float32))
    firsts = [F.conv2d(x, w) for x in xs]
    expected = [y.numpy().copy() for y in firsts]
    view = firsts[0][1:]  # only a view of the first result is left
    del firsts[0]
    for x in xs:
        y = F.relu(F.max_pool2d((F.conv2d(x, w) * s).add_(s), 2), inplace=True)
        y.relu_()
    assert np.array_equal(view.numpy(), expected[0][1:])
    for y, want in zip(firsts, expected[1:]):
        assert np.array_equal(y.numpy(), want)
