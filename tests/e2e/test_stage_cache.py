"""The compiler's stages kept on disk (tscript/jit/stage_cache.py): a model compiled again reads its
optimized graphs, native plans and autodiff's graphs instead of computing them, and runs as the first
compile did; a damaged entry, another input shape or another graph is computed (and stored) afresh."""
import os

import numpy as np
import pytest

import tscript as ts
from tscript.jit import stage_cache, stages


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache directory for the stages (and the model code: a pointwise model's is small)."""
    monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path))
    return tmp_path / "stages"


def _pointwise(x, y):
    return ((x * y + 1.5).relu() - y).sigmoid() * x


def _refuse(*args, **kwargs):
    raise AssertionError("computed again: the cache was not read")


def test_a_second_compile_reads_the_optimized_graph_and_plan(cache, monkeypatch):
    x, y = ts.randn(4, 33), ts.randn(4, 33)
    first = ts.jit.compile(_pointwise, (x, y))
    assert len(os.listdir(cache)) == 1
    monkeypatch.setattr(stages, "optimize_for_codegen", _refuse)
    monkeypatch.setattr(stages, "plan_native", _refuse)
    again = ts.jit.compile(_pointwise, (x, y))
    np.testing.assert_array_equal(again(x, y).numpy(), first(x, y).numpy())
    np.testing.assert_allclose(again(x, y).numpy(), _pointwise(x, y).numpy(), rtol=1e-6)
    assert again.plan == first.plan and str(again.graph) == str(first.graph)


def test_another_shape_or_graph_is_its_own_entry(cache):
    x, y = ts.randn(4, 33), ts.randn(4, 33)
    ts.jit.compile(_pointwise, (x, y))
    ts.jit.compile(_pointwise, (ts.randn(5, 33), ts.randn(5, 33)))
    ts.jit.compile(lambda a, b: (a * b + 1.5).relu() - b, (x, y))
    assert len(os.listdir(cache)) == 3


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_a_damaged_entry_is_computed_again(cache, damage):
    x, y = ts.randn(4, 33), ts.randn(4, 33)
    first = ts.jit.compile(_pointwise, (x, y))
    (entry,) = cache.iterdir()
    data = bytearray(entry.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x40
    entry.write_bytes(bytes(data[:len(data) // 2]) if damage == "truncate" else b"" if damage == "empty" else bytes(data))
    again = ts.jit.compile(_pointwise, (x, y))
    np.testing.assert_array_equal(again(x, y).numpy(), first(x, y).numpy())
    assert stage_cache._read(entry.name) is not None  # written again, intact


class _Net(ts.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = ts.nn.Parameter(ts.randn(33))
        self.shift = ts.nn.Parameter(ts.randn(33))

    def forward(self, x):
        return ((x * self.scale + self.shift).tanh() * x).sum(dim=1)


def test_a_training_compile_reads_autodiff_s_graphs(cache, monkeypatch):
    import tscript.autodiff as autodiff
    ts.manual_seed(0)
    net, x = _Net(), ts.randn(4, 33)
    first = ts.jit.compile(net, (x,), backward=True)
    grads_first = _grads(first, net, x)
    monkeypatch.setattr(autodiff, "differentiate_telling", _refuse)
    monkeypatch.setattr(stages, "optimize_for_codegen", _refuse)
    again = ts.jit.compile(net, (x,), backward=True)
    grads_again = _grads(again, net, x)
    eager = _grads(net, net, x)
    for a, b, e in zip(grads_first, grads_again, eager):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5 * np.abs(e).max())  # (float32 sums in another order)


def _grads(forward, net, x) -> list:
    for p in net.parameters():
        p.grad = None
    (forward(x) ** 2).sum().backward()
    return [p.grad.numpy().copy() for p in net.parameters()]


def test_a_changed_parameter_shape_is_another_entry(cache):
    ts.manual_seed(0)
    net, x = _Net(), ts.randn(4, 33)
    ts.jit.compile(net, (x,), backward=True)
    before = set(os.listdir(cache))
    wider = _Net()
    wider.scale = ts.nn.Parameter(ts.randn(1))  # broadcast: the same traced ops, another parameter shape
    ts.jit.compile(wider, (x,), backward=True)
    assert set(os.listdir(cache)) - before


def _function(factor: float):
    """An autograd.Function named Scaled whatever it computes (a document names the class only)."""
    class Scaled(ts.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * factor

        @staticmethod
        def backward(ctx, grad):
            return grad * factor
    return Scaled


def test_graphs_calling_autograd_functions_are_not_kept(cache):
    x = ts.randn(4, 33)
    for factor in (2.0, -3.0):
        fn = _function(factor)
        compiled = ts.jit.compile(lambda a, fn=fn: fn.apply(a).sum(), (x,), backward=True)
        leaf = x.detach().requires_grad_()
        compiled(leaf).backward()
        np.testing.assert_allclose(leaf.grad.numpy(), np.full((4, 33), factor, np.float32))


def test_logged_passes_run_every_time(cache, monkeypatch, capsys):
    x, y = ts.randn(4, 33), ts.randn(4, 33)
    ts.jit.compile(_pointwise, (x, y))  # kept
    monkeypatch.setenv("TSCRIPT_LOG", "passes:dce")
    ts.jit.compile(_pointwise, (x, y))
    assert "dce" in capsys.readouterr().err  # the pipeline ran (and logged), the cache was not read
