"""tscript.jit.compile runs with the cyclic garbage collector paused (tscript_runtime/gc_paused.py) and leaves
it as it found it: running after a compile, after a failing one, and off when it was off."""
import gc

import pytest

import tscript as ts
from tscript_runtime.gc_paused import gc_paused


def test_paused_inside_and_restored_after():
    seen = []

    def fn(x):
        seen.append(gc.isenabled())
        return x * 2 + 1
    assert gc.isenabled()
    compiled = ts.jit.compile(fn, (ts.randn(3),))
    assert seen == [False] and gc.isenabled()
    x = ts.randn(3)
    assert (compiled(x) - (x * 2 + 1)).abs().max().item() < 1e-6


def test_restored_when_compiling_fails():
    def fn(x):
        raise RuntimeError("no")
    with pytest.raises(RuntimeError, match="no"):
        ts.jit.compile(fn, (ts.randn(3),))
    assert gc.isenabled()


def test_left_off_when_it_was_off():
    gc.disable()
    try:
        assert gc_paused(lambda: gc.isenabled())() is False
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_backward_variants_compile_paused():
    lin = ts.nn.Linear(4, 2)
    compiled = ts.jit.compile(lin, (ts.randn(5, 4),), backward=True)
    compiled(ts.randn(5, 4)).sum().backward()
    assert gc.isenabled() and lin.weight.grad is not None


def test_runtime_load_paused_and_restored(tmp_path, monkeypatch):
    """tscript_runtime.load runs paused too (a ResNet-18 file: ~28 collections, ~9 ms, skipped)."""
    import tscript_runtime
    from tscript_runtime import executable
    ts.jit.save(ts.jit.compile(ts.nn.Linear(4, 2), (ts.randn(5, 4),)), tmp_path / "m.tsm")
    seen = []
    original = executable.Executable.__init__

    def spy(self, *args, **kwargs):
        seen.append(gc.isenabled())
        original(self, *args, **kwargs)
    monkeypatch.setattr(executable.Executable, "__init__", spy)
    model = tscript_runtime.load(tmp_path / "m.tsm")
    assert seen == [False] and gc.isenabled()
    assert model.run(ts.randn(5, 4).numpy()).shape == (5, 2)
