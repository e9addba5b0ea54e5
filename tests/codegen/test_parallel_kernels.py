"""Kernels big enough to split run their halves on two threads through the kernel library's native
worker (tscript_runtime/library/parallel.py). Split results equal unsplit ones exactly (both halves
run the same code on disjoint parts), whether the worker is spinning, asleep (the caller takes the
half back when it has not started), shared by several calling threads at once, or missing in a
forked child."""
import multiprocessing
import time

import numpy as np
import pytest

import tscript as ts
import tscript.nn.functional as F
from tscript.codegen.plan import KERNEL_SPLIT_MIN

from tests.codegen.helpers import compile_native
from tests.conftest import run_in_threads

RNG = np.random.default_rng(7)


def _launcher(cm):
    (launcher,) = cm.executable.launchers.values()
    return launcher


@pytest.fixture(scope="module")
def elementwise():
    x = ts.randn(300, 1031)
    return compile_native(lambda x, y: (x * y + 1.5).tanh() - y, (x, x), dynamic={0: [0, 1], 1: [0, 1]})


@pytest.fixture(scope="module")
def softmax_rows():
    x = ts.randn(513, 1024)
    return compile_native(lambda x: F.softmax(x * 2.0, -1), (x,), dynamic={0: [0]})


def _split_and_whole(launcher, *args):
    """The launcher's output with its plan split over two threads, and with the work in one call."""
    split = launcher(*args).copy()
    plan = next(p for p in launcher._plans.values() if p.halves is not None)
    plan.halves, saved = None, plan.halves
    try:
        whole = launcher(*args).copy()
    finally:
        plan.halves = saved
    return split, whole


@pytest.mark.parametrize("shape", [(300, 1031), (257, 1024), (3, 100_003), (1031, 300)])
def test_elementwise_halves_equal_one_call(elementwise, shape):
    launcher = _launcher(elementwise)
    x, y = RNG.standard_normal(shape).astype(np.float32), RNG.standard_normal(shape).astype(np.float32)
    launcher._plans.clear()
    split, whole = _split_and_whole(launcher, x, y)
    np.testing.assert_array_equal(split, whole)
    out = elementwise(ts.tensor(x), ts.tensor(y)).numpy()
    np.testing.assert_allclose(out, np.tanh(x * y + 1.5) - y, rtol=1e-5, atol=1e-6)


def test_transposed_input_splits_and_matches(elementwise):
    x = RNG.standard_normal((1031, 300)).astype(np.float32)
    y = np.ascontiguousarray(RNG.standard_normal((300, 1031)).astype(np.float32).T).T
    out = elementwise(ts.tensor(x.T), ts.tensor(y)).numpy()
    np.testing.assert_allclose(out, np.tanh(x.T * y + 1.5) - y, rtol=1e-5, atol=1e-6)


def test_row_kernel_halves_equal_one_call(softmax_rows):
    launcher = _launcher(softmax_rows)
    x = RNG.standard_normal((513, 1024)).astype(np.float32)
    split, whole = _split_and_whole(launcher, x)
    np.testing.assert_array_equal(split, whole)
    e = np.exp(2 * x - (2 * x).max(-1, keepdims=True))
    np.testing.assert_allclose(split, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_sleeping_worker_still_gives_the_right_values(softmax_rows):
    """After an idle spell the worker sleeps; the call wakes it or runs both halves itself."""
    x = RNG.standard_normal((600, 1024)).astype(np.float32)
    want = softmax_rows(ts.tensor(x)).numpy().copy()
    for _ in range(3):
        time.sleep(0.02)
        np.testing.assert_array_equal(softmax_rows(ts.tensor(x)).numpy(), want)


def test_callers_on_several_threads_share_the_worker(elementwise):
    inputs = [RNG.standard_normal((400, 1024)).astype(np.float32) for _ in range(4)]
    want = [elementwise(ts.tensor(a), ts.tensor(a)).numpy().copy() for a in inputs]
    bad = []

    def work(k):
        for _ in range(30):
            got = elementwise(ts.tensor(inputs[k]), ts.tensor(inputs[k])).numpy()
            if not np.array_equal(got, want[k]):
                bad.append(k)
    run_in_threads(work)
    assert not bad


def _child(queue):
    x = np.full((400, 1024), 0.5, np.float32)
    queue.put(float(_launcher(_FORKED)(x, x).sum()))


def test_forked_child_runs_split_kernels(elementwise):
    """The worker thread does not survive fork(); the child must not wait for it."""
    global _FORKED
    _FORKED = elementwise
    x = np.full((400, 1024), 0.5, np.float32)
    want = float(_launcher(elementwise)(x, x).sum())  # the parent's worker is running
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0, "the forked child hung or failed"
    assert queue.get(timeout=5) == pytest.approx(want)


def test_small_work_is_not_split(elementwise):
    launcher = _launcher(elementwise)
    x = np.ones((8, 1024), np.float32)
    launcher(x, x)
    plan = launcher._plans[tuple((a.shape, a.strides, a.dtype.num) for a in (x, x))]
    assert plan.halves is None and 8 * 1024 < launcher.split_min == KERNEL_SPLIT_MIN


def test_whole_graph_entry_splits_big_kernels():
    """A graph with big kernels around a GEMM still runs as one native call; the plan splits them."""
    ts.manual_seed(3)
    model = ts.nn.Sequential(ts.nn.Linear(64, 512), ts.nn.GELU(approximate="tanh"), ts.nn.Linear(512, 256),
                             ts.nn.Softmax(-1)).eval()
    cm = ts.jit.compile(model, (ts.randn(300, 64),), dynamic={0: [0]})
    for batch in (300, 2, 513):
        x = RNG.standard_normal((batch, 64)).astype(np.float32)
        with ts.no_grad():
            want = model(ts.tensor(x)).numpy()
        np.testing.assert_allclose(cm(ts.tensor(x)).numpy(), want, rtol=2e-5, atol=1e-6)
    plans = [p for p in cm.executable.entry._plans.values() if p is not None]
    assert len(plans) == 3, "the entry did not run every batch"
    layout = cm.executable.entry.layout
    split_flags = [[int(p.ints[s.split]) for s in layout.steps if hasattr(s, "split")] for p in plans]
    assert [1, 1] in split_flags and [0, 0] in split_flags


def test_entry_with_split_kernels_from_several_threads():
    model = ts.nn.Sequential(ts.nn.Linear(32, 1024), ts.nn.Tanh(), ts.nn.Linear(1024, 8)).eval()
    cm = ts.jit.compile(model, (ts.randn(200, 32),))
    inputs = [RNG.standard_normal((200, 32)).astype(np.float32) for _ in range(4)]
    want = [cm(ts.tensor(a)).numpy().copy() for a in inputs]
    bad = []

    def work(k):
        for _ in range(20):
            if not np.array_equal(cm(ts.tensor(inputs[k])).numpy(), want[k]):
                bad.append(k)
    run_in_threads(work)
    assert not bad
    with ts.no_grad():
        np.testing.assert_allclose(want[0], model(ts.tensor(inputs[0])).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout", ["linear (A @ W^T)", "matmul (A @ B)"])
@pytest.mark.parametrize("rows, cols", [(3, 64), (16, 100), (64, 513), (7, 1000), (1, 1000), (2, 513), (1, 40),
                                        (64, 288)])
def test_library_gemms_split_by_columns(layout, rows, cols):
    """Float32 products of up to 64 rows with enough work run as two column halves at once (and
    3..64 rows with less work in one call; one row with little work is BLAS's GEMV)."""
    k = 300
    rng = np.random.default_rng(rows * cols)
    w = rng.standard_normal((cols, k) if layout.startswith("linear") else (k, cols)).astype(np.float32)
    bias = rng.standard_normal(cols).astype(np.float32)
    if layout.startswith("linear"):
        fn, want = (lambda x, w, b: F.linear(x, w, b).tanh()), (lambda x: np.tanh(x @ w.T + bias))
    else:
        fn, want = (lambda x, w, b: (x @ w).tanh() - b), (lambda x: np.tanh(x @ w) - bias)
    args = (ts.randn(rows, k), ts.from_numpy(w), ts.from_numpy(bias))
    cm = ts.jit.compile(fn, args, dynamic={0: [0]})
    for m in (rows, 1, 2, 65):  # 65 rows are BLAS's, for comparison
        x = rng.standard_normal((m, k)).astype(np.float32)
        got = cm(ts.from_numpy(x), *args[1:]).numpy()
        np.testing.assert_allclose(got, want(x), rtol=1e-4, atol=1e-5)
    assert all(p is not None for p in cm.executable.entry._plans.values())


def test_split_gemms_from_several_threads():
    model = ts.nn.Sequential(ts.nn.Linear(256, 512), ts.nn.ReLU(), ts.nn.Linear(512, 384)).eval()
    cm = ts.jit.compile(model, (ts.randn(16, 256),))
    inputs = [RNG.standard_normal((16, 256)).astype(np.float32) for _ in range(4)]
    with ts.no_grad():
        want = [model(ts.tensor(a)).numpy() for a in inputs]
    bad = []

    def work(k):
        for _ in range(50):
            if not np.allclose(cm(ts.tensor(inputs[k])).numpy(), want[k], rtol=1e-5, atol=1e-5):
                bad.append(k)
    run_in_threads(work)
    assert not bad
