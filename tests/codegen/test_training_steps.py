"""The whole-graph entry's training steps against the reference kernels: batch statistics (sum, mean, var
over non-adjacent dims), in-place writes into module buffers (add_, copy_), max-pooling with indices and
its adjoint, im2col / col2im on random shapes in float32 and float64; and a CNN with train-mode BatchNorm whose
training step runs as one native call forward and one backward, with eager's loss, gradients and
running statistics. Each case must really run through the entry."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
import tscript.nn as nn
import tscript.nn.functional as F

from tests.conftest import assert_close
from tscript.autograd.derivatives import call


def entry_ran(executable) -> bool:
    return executable.entry is not None and any(p is not None for p in executable.entry._plans.values())


def check(fn, *arrays, dtype=np.float32, rtol=1e-5, atol=1e-5):
    tensors = [ts.from_numpy(np.ascontiguousarray(a.astype(dtype))) for a in arrays]
    cm = ts.jit.compile(fn, tuple(tensors))
    got = cm(*tensors)
    assert entry_ran(cm.executable), cm.explain()
    want = fn(*tensors)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert_close(g, w, rtol=rtol, atol=atol)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.data(), st.sampled_from([np.float32, np.float64]),
       st.sampled_from(["sum", "mean", "var0", "var1"]), st.booleans())
def test_statistics_over_any_two_runs_of_dims(shape, data, dtype, how, keepdim):
    dims = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    x = np.random.default_rng(len(shape)).standard_normal(shape) * 3 + 1
    if how == "sum":
        fn = lambda t: ts.sum(t * 1, dims, keepdim)  # noqa: E731
    elif how == "mean":
        fn = lambda t: ts.mean(t * 1, dims, keepdim)  # noqa: E731
    else:
        fn = lambda t: ts.var(t * 1, dims, correction=int(how[-1]), keepdim=keepdim)  # noqa: E731
    marks = "".join("r" if d in dims else "k" for d in range(len(shape)) if shape[d] != 1)
    import re
    if re.fullmatch(r"k*r*k*r*", marks) is None:  # three runs of reduced dims: the executor's
        return
    check(fn, x, dtype=dtype, rtol=1e-4, atol=1e-5)


def test_batch_statistics_of_nchw():
    x = np.random.default_rng(0).standard_normal((8, 5, 9, 7)) * 2 + 3
    check(lambda t: (ts.mean(t, [0, 2, 3], keepdim=True), ts.var(t, [0, 2, 3], correction=0, keepdim=True),
                     ts.sum(t * 2, [0, 2, 3])), x, rtol=1e-4)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(5, 11), st.integers(5, 11), st.integers(1, 3),
       st.integers(1, 3), st.integers(0, 1), st.integers(1, 2), st.booleans(), st.sampled_from([np.float32, np.float64]))
def test_max_pool2d_with_indices(n, c, h, w, k, s, p, dil, ceil_mode, dtype):
    if p > k // 2:
        p = 0
    x = np.random.default_rng(h * w).standard_normal((n, c, h, w))
    x[0, 0, :2, :2] = 1.0  # ties: the first maximum's index
    check(lambda t: tuple(o * 1 if o.dtype != ts.int64 else o + 0 for o in
                          F.max_pool2d(t, k, s, p, dil, ceil_mode, return_indices=True)), x, dtype=dtype)


@pytest.mark.parametrize("stride, padding, dilation, ceil_mode", [(2, 0, 1, False), (2, 1, 1, True), (1, 1, 2, False),
                                                               (3, 0, 1, True)])
def test_max_pool2d_with_indices_two_by_two(stride, padding, dilation, ceil_mode):
    """2x2 windows have their own straight-line code."""
    x = np.random.default_rng(stride).standard_normal((2, 3, 7, 8))
    x[0, 0, :2, :2] = 0.5
    x[1, 2, 3, 3] = np.nan
    check(lambda t: tuple(o + 0 for o in F.max_pool2d(t, 2, stride, padding, dilation, ceil_mode,
                                                       return_indices=True)), x)


def test_max_pool2d_with_indices_nan_and_all_minus_inf():
    x = np.random.default_rng(1).standard_normal((1, 2, 6, 6))
    x[0, 0, 1, 1] = x[0, 0, 0, 1] = np.nan
    x[0, 1] = -np.inf
    check(lambda t: tuple(o + 0 for o in F.max_pool2d(t, 3, 2, 1, return_indices=True)), x)


def pool_backward(grad, x, *window):
    return call("aten::_max_pool2d_backward", grad, x, *window)


def unpool(grad: np.ndarray, x: np.ndarray, *window) -> np.ndarray:
    """Each gradient added at its maximum's index, the indices from max_pool2d_with_indices."""
    _, indices = F.max_pool2d(ts.from_numpy(x), *window, return_indices=True)
    out = np.zeros(x.shape[:-2] + (x.shape[-2] * x.shape[-1],), grad.dtype)
    flat = indices.numpy().reshape(out.shape[:-1] + (-1,))
    for plane in np.ndindex(out.shape[:-1]):
        np.add.at(out[plane], flat[plane], grad[plane].ravel())
    return out.reshape(x.shape)


def test_max_pool2d_backward_is_the_scatter_at_the_maxima():
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 9)).astype(np.float32)
    x[0, 0, :2, :2] = 1.0
    for window in ((2,), (3, 2, 1), (2, 1, 0, 2, True)):
        pooled = F.max_pool2d(ts.from_numpy(x), *window).shape
        grad = np.random.default_rng(1).standard_normal(pooled).astype(np.float32)
        got = pool_backward(ts.from_numpy(grad), ts.from_numpy(x), *window).numpy()
        np.testing.assert_allclose(got, unpool(grad, x, *window), rtol=1e-6, atol=1e-6)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 2), st.integers(1, 3), st.integers(4, 11), st.integers(2, 40), st.integers(1, 3),
       st.integers(1, 3), st.integers(0, 1), st.integers(1, 2), st.booleans(),
       st.sampled_from([np.float32, np.float64]))
def test_max_pool2d_backward_natively(n, c, h, w, k, s, p, dil, ceil_mode, dtype):
    """Any window (the general walk), and 2x2 windows side by side (MaxPool2d(2): CHUNK windows at a time,
    then the rest one by one) on widths of 1..20 windows, with ties and NaN."""
    if p > k // 2:
        p = 0
    if (h + 2 * p - dil * (k - 1) - 1) < 0 or (w + 2 * p - dil * (k - 1) - 1) < 0:
        return
    x = np.random.default_rng(h * w).standard_normal((n, c, h, w))
    x[0, 0, :2, :2] = 1.0
    x[-1, -1, -1, -1] = np.nan
    for window in ((k, s, p, dil, ceil_mode), (2,)):
        pooled = F.max_pool2d(ts.from_numpy(x), *window).shape
        grad = np.random.default_rng(k).standard_normal(pooled)
        check(lambda g, t: pool_backward(g * 1, t * 1, *window), grad, x, dtype=dtype)


@pytest.mark.parametrize("shape", [(2, 3, 16, 48), (1, 2, 8, 34), (3, 1, 7, 17)])
def test_max_pool2d_backward_natively_two_by_two(shape):
    """MaxPool2d(2) as CNNs use it: ties, NaN and -inf windows, plain rows and odd edges."""
    x = np.random.default_rng(shape[-1]).standard_normal(shape)
    x[0, 0, :2, :4] = 0.5
    x[-1, -1, 2:4, 2:4] = -np.inf
    x[0, -1, 4, 5] = np.nan
    x[0, -1, 5, 4] = np.nan
    grad = np.random.default_rng(1).standard_normal(shape[:2] + (shape[2] // 2, shape[3] // 2))
    check(lambda g, t: pool_backward(g * 1, t * 1, 2), grad, x)
    check(lambda g, t: pool_backward(g * 1, t * 1, 2), grad, x, dtype=np.float64)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(4, 9), st.integers(4, 9), st.integers(1, 3),
       st.integers(1, 3), st.integers(0, 1), st.integers(1, 2), st.sampled_from([np.float32, np.float64]))
def test_im2col_and_col2im(n, c, h, w, k, s, p, dil, dtype):
    if (h + 2 * p - dil * (k - 1) - 1) < 0 or (w + 2 * p - dil * (k - 1) - 1) < 0:
        return
    x = np.random.default_rng(h + w).standard_normal((n, c, h, w))
    check(lambda t: F.unfold(t * 1, k, dil, p, s), x, dtype=dtype)
    # the batch inside each row (what a convolution's weight gradient reads)
    check(lambda t: call("aten::_im2col_rows", t * 1, (k, k), dil, p, s), x, dtype=dtype)
    cols = F.unfold(ts.from_numpy(x), k, dil, p, s).numpy()
    check(lambda t: F.fold(t * 1, (h, w), k, dil, p, s), cols, dtype=dtype)
    # columns read through strides (a transposed view, as the conv derivative makes them)
    swapped = np.ascontiguousarray(cols.transpose(1, 0, 2))
    check(lambda t: F.fold(t.transpose(0, 1), (h, w), k, dil, p, s), swapped, dtype=dtype)


class Counter(nn.Module):
    """Buffers written in place, and read after the write."""

    def __init__(self):
        super().__init__()
        self.register_buffer("steps", ts.tensor(0, dtype=ts.int64))
        self.register_buffer("total", ts.zeros(3))
        self.register_buffer("scale", ts.ones(3, dtype=ts.float64))

    def forward(self, x):
        self.steps.add_(1)
        self.scale.add_(0.5, alpha=2)
        before = self.total * 0.5
        self.total.copy_(before + x.mean(0))
        return self.total * 2 + self.steps, self.scale * 1


def test_in_place_writes_land_in_the_module_buffers():
    ts.manual_seed(0)
    compiled, eager = Counter(), Counter()
    x = ts.randn(4, 3)
    cm = ts.jit.compile(compiled, (x,))
    eager(x)  # (compiling ran the module once, as tracing does)
    for _ in range(3):
        got, want = cm(x), eager(x)
        assert entry_ran(cm.executable), cm.explain()
        for g, w in zip(got, want):
            assert_close(g, w)
        for name in ("steps", "total", "scale"):
            assert_close(getattr(compiled, name), getattr(eager, name))
    assert int(compiled.steps) == 4


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()

        def stage(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True), nn.MaxPool2d(2)]
        self.features = nn.Sequential(*stage(3, 6), *stage(6, 8))
        self.classifier = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        return self.classifier(ts.flatten(self.features(x), 1))


def test_cnn_with_train_mode_batch_norm_trains_natively():
    ts.manual_seed(3)
    model, twin = SmallCNN(), SmallCNN()
    twin.load_state_dict(model.state_dict())
    x, target = ts.randn(4, 3, 16, 16), ts.tensor([0, 3, 1, 4])
    cm = ts.jit.compile(model, (x,), backward=True)
    with ts.no_grad():
        twin(x)  # (compiling ran the model once, updating its running statistics)
    for _ in range(2):
        loss = F.cross_entropy(cm(x), target)
        loss.backward()
        want = F.cross_entropy(twin(x), target)
        want.backward()
        assert_close(loss, want, rtol=1e-5)
        assert entry_ran(cm.executable), cm.explain()
        assert any(entry_ran(v.executable) for v in cm._variants.values()), \
            [v.executable.describe() for v in cm._variants.values()]
        for (name, p), q in zip(model.named_parameters(), twin.parameters()):
            assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5), name
            p.grad = q.grad = None
        for (name, b), c in zip(model.named_buffers(), twin.buffers()):
            assert_close(b, c, rtol=1e-5), name
