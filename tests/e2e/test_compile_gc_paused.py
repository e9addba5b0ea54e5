"""tscript.jit.compile runs with the cyclic garbage collector paused (tscript/jit/gc_paused.py) and leaves
it as it found it: running after a compile, after a failing one, and off when it was off."""
import gc

import pytest

import tscript as ts
from tscript.jit.gc_paused import gc_paused


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
