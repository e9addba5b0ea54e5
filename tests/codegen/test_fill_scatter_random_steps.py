"""Whole-graph entry steps that make tensors: tensors of one value whose sizes come from a dynamic dim
(zeros, ones, full, *_like; every dtype width, zero and non-zero patterns), select_scatter/slice_scatter,
and random tensors drawn before the call (equal to eager's from the same seed), against eager."""
import numpy as np
import pytest

import tscript as ts

from tests.conftest import assert_close


def entry_ran(cm) -> bool:
    return cm.executable.entry is not None and any(p is not None for p in cm.executable.entry._plans.values())


@pytest.mark.parametrize("make", [
    lambda x: ts.zeros(x.shape[0], 3) + x[:, :1],
    lambda x: ts.ones(x.shape[0], 5, dtype=ts.float64) * 2,
    lambda x: ts.full((x.shape[0], 4), -1.5) + 0,
    lambda x: ts.full((x.shape[0], 2), 7, dtype=ts.int64) + 1,
    lambda x: ts.full((x.shape[0], 2), True, dtype=ts.bool) & (x[:, :2] > 0),
    lambda x: ts.zeros_like(x) - x,
    lambda x: ts.full_like(x, 3.25) * x,
    lambda x: ts.ones_like(x, dtype=ts.int32) + 2,
])
def test_fill_with_dynamic_sizes(make):
    x = ts.randn(6, 4)
    cm = ts.jit.compile(make, (x,), dynamic={0: [0]})
    for rows in (6, 3, 1):
        y = ts.randn(rows, 4)
        got = cm(y)
        assert entry_ran(cm), cm.explain()
        want = make(y)
        assert got.dtype == want.dtype
        assert_close(got, want)


@pytest.mark.parametrize("make", [
    lambda x, s: ts.select_scatter(x, s[0], 0, -1),
    lambda x, s: ts.select_scatter(x, s[:, 0].contiguous(), 1, 2),
    lambda x, s: ts.slice_scatter(x, s[:, :2].contiguous(), 1, 1, 3),
    lambda x, s: ts.slice_scatter(x, s[:, :2].contiguous(), 1, 0, None, 2),
    lambda x, s: ts.slice_scatter(x, s[:, 1:3].contiguous(), -1, -3, -1),
    lambda x, s: ts.slice_scatter(x.double(), s.double()[:2], 0, 3, 100),
])
def test_slice_and_select_scatter(make):
    """A copy of x with a slice replaced (what the gradients of select and slice are made of)."""
    x, s = ts.randn(5, 4), ts.randn(5, 4) * 10
    cm = ts.jit.compile(make, (x, s))
    got = cm(x, s)
    assert entry_ran(cm), cm.explain()
    assert_close(got, make(x, s))


def test_a_strided_slice_source_is_right_through_the_executor():
    make = lambda x, s: ts.select_scatter(x, s[:, 0], 1, 2)  # noqa: E731
    x, s = ts.randn(5, 4), ts.randn(5, 4)
    assert_close(ts.jit.compile(make, (x, s))(x, s), make(x, s))


@pytest.mark.parametrize("make", [
    lambda x: x * ts.rand(x.shape[0], 4),
    lambda x: x + ts.randn(x.shape[0], 4, dtype=ts.float64),
    lambda x: ts.randint(0, 7, (x.shape[0], 4)) + x,
    lambda x: ts.empty(x.shape[0], 4).uniform_(-2, 3) * x,
    lambda x: ts.empty(x.shape[0], 4).normal_(1, 0.5) + ts.empty(x.shape[0], 4).bernoulli_(0.3) * x,
    lambda x: ts.nn.functional.dropout(x, 0.4) + ts.nn.functional.dropout(x * 2, 0.2),
])
def test_random_tensors_are_drawn_as_eager_draws_them(make):
    """Random ops in the entry: drawn from the process's generator before the call, in graph order, so
    a compiled call and an eager one from the same seed agree; another seed differs."""
    x = ts.randn(6, 4)
    cm = ts.jit.compile(make, (x,), dynamic={0: [0]})
    for seed, rows in ((3, 6), (4, 2)):
        y = ts.randn(rows, 4)
        ts.manual_seed(seed)
        got = cm(y)
        assert entry_ran(cm), cm.explain()
        ts.manual_seed(seed)
        assert_close(got, make(y))
    ts.manual_seed(5)
    first = cm(x)
    assert not bool((cm(x) == first).all())


def test_dropout_training_step_is_native_and_follows_eager():
    """A model with dropout compiled with backward=True: forward and backward one native call each; from the
    same seed, the loss and every gradient equal eager autograd's."""
    import copy
    ts.manual_seed(0)
    model = ts.nn.Sequential(ts.nn.Linear(12, 32), ts.nn.GELU(), ts.nn.Dropout(0.25), ts.nn.Linear(32, 5))
    reference = copy.deepcopy(model)
    x, target = ts.randn(16, 12), ts.randint(0, 5, (16,))
    cm = ts.jit.compile(model, (x,), backward=True)
    for seed in (1, 2):
        grads = []
        for run, params in ((cm, model.parameters()), (reference, reference.parameters())):
            params = list(params)
            for p in params:
                p.grad = None
            ts.manual_seed(seed)
            ts.nn.functional.cross_entropy(run(x), target).backward()
            grads.append([p.grad for p in params])
        for g, w in zip(*grads):
            assert_close(g, w, rtol=1e-5, atol=1e-6)
    assert entry_ran(cm)
    ran = [v.executable.entry for v in cm._variants.values() if v.executable.entry is not None]
    assert any(p is not None for entry in ran for p in entry._plans.values())  # the backward ran natively
