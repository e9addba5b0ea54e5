"""A compiled model's native code is released when the model is dropped, and making code does not
leak: a process that keeps compiling models stays flat (benchmarks/soak.py measures 1000 compiles)."""
import gc
import os
import weakref

import numpy as np
import pytest

import tscript as ts
from tscript_runtime.native import link
from tscript_runtime.native.emit import emit_module, symbols
from tscript_runtime.native.link import NativeLibrary, imports_of
from tscript_runtime.native.target import optimize_and_emit

needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS is read from /proc")


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def growth_mib(step, warm: int, n: int) -> float:
    """RSS growth over `n` calls of `step` after `warm` untimed ones (the allocator's steady state)."""
    for _ in range(warm):
        step()
    gc.collect()
    before = rss_mib()
    for _ in range(n):
        step()
    gc.collect()
    return rss_mib() - before


def compiled(c: float = 1.5):
    x = ts.randn(4, 8)
    return ts.jit.compile(lambda x: (x * c).relu() + c, x), x


@pytest.fixture(params=["here", "llvm"])
def linker(request, monkeypatch):
    """Each test runs with the runtime's own object loader and with LLVM's (TSCRIPT_LINKER=llvm)."""
    monkeypatch.setenv("TSCRIPT_LINKER", "" if request.param == "here" else "llvm")
    return request.param


def code_holder(library):
    """What owns a library's code: the loader's mapping, or the ORC tracker."""
    return library._loaded if library._loaded is not None else library._tracker


def test_dropping_a_model_unloads_its_code(linker):
    model, x = compiled(1.5 if linker == "here" else 1.25)
    model(x)
    library = weakref.ref(model.executable.code.library)
    holder = code_holder(model.executable.code.library)
    assert (linker == "here") == (holder is library()._loaded)
    unmapped = holder._unmap if linker == "here" else None
    holder = weakref.ref(holder)
    del model
    gc.collect()
    assert library() is None and holder() is None
    assert unmapped is None or not unmapped.alive


def test_a_kernel_launcher_keeps_its_code():
    model, x = compiled(2.5)
    kernel = next(iter(model.executable.launchers.values()))
    library = weakref.ref(model.executable.code.library)
    expected = kernel(x.numpy()).copy()
    del model
    gc.collect()
    assert library() is not None  # the launcher still holds it: calling it stays safe
    assert np.array_equal(kernel(x.numpy()), expected)
    del kernel
    gc.collect()
    assert library() is None


@needs_proc
def test_linking_and_dropping_libraries_stays_flat(linker):
    """Dropped libraries leave empty JITDylibs in their LLJIT (~9 KB each): LLJITs are replaced and
    freed, so 1000 links cost no memory."""
    model, _ = compiled(3.5)
    plan = model.executable.plan
    module = emit_module(plan)
    obj = optimize_and_emit(str(module))
    imports, exports = imports_of(module, obj), list(symbols(plan).values())
    assert growth_mib(lambda: NativeLibrary(obj, exports, imports), 2 * link.LIBRARIES_PER_JIT, 1000) < 3


@needs_proc
def test_emitting_code_does_not_leak():
    """Optimizing a module must free its pass manager (llvmlite's never frees itself: ~55 KB each here)."""
    text = "define double @f(double %x) {\n  %y = fadd double %x, 1.0\n  ret double %y\n}\n"
    assert growth_mib(lambda: optimize_and_emit(text), 50, 400) < 4
