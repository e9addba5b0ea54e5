"""The native layer of the runtime: kernel specs (read off the subgraphs), the launcher (dtype, rank,
static-size and broadcast checks, one plan per layout, safe from several threads), what emitted code
imports, and the object cache (hits, checksums)."""
import threading

import numpy as np
import pytest

import tscript as ts
from tscript_runtime import dtypes as dt
from tscript_runtime.errors import OpRuntimeError
from tscript_runtime.kernel_specs import KernelSpec
from tscript_runtime.native import target
from tscript_runtime.native.emit import emit_module
from tscript_runtime.native.link import MODEL_IMPORTS, declared_functions
from tscript.codegen.plan import KERNEL_SPLIT_MIN

from tests.conftest import assert_close, run_in_threads


def gelu_tanh(x, y):
    return 0.5 * x * (1 + ts.tanh(0.7978845608 * (x + 0.044715 * x ** 3))) + y


def row_sum(x):
    return (x * 2).sum(-1, keepdim=True) + 1


@pytest.fixture(scope="module")
def compiled():
    return ts.jit.compile(gelu_tanh, (ts.randn(4, 6), ts.randn(6)))


@pytest.fixture(scope="module")
def dynamic():
    """gelu_tanh compiled for any number of rows."""
    return ts.jit.compile(gelu_tanh, (ts.randn(4, 6), ts.randn(6)), dynamic={0: [0]})


def rows(seed, *shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# -- kernel specs -----------------------------------------------------------------------------------

def test_kernel_specs_are_read_off_the_subgraph(compiled):
    (kernel,) = compiled.executable.plan.kernels.values()
    assert kernel.spec == KernelSpec(2, ("tensor", "tensor"), (dt.float32, dt.float32), ((4, 6), (6,)), (dt.float32,),
                                     (4, 6))
    assert compiled.plan["kernels"] == {"k0": {"template": "pointwise", "tile": 16, "split_min": KERNEL_SPLIT_MIN}}


@pytest.mark.parametrize("fn, shape", [
    (lambda x: (x * 0.5).tanh() + 1, (1 << 19,)),                     # elementwise, rank 1: split
    (lambda x: x.softmax(-1) * 2, (600, 1024)),                        # row kernel, rank 2: rows split
    (lambda x: (x - x.mean(-1, keepdim=True)).exp(), (1 << 19,)),      # row kernel, rank 1: never split
    (lambda x: x.sum(-1, keepdim=True) + 1, (1023, 513)),             # one value per row, odd row count
])
def test_large_kernels_split_over_two_threads_give_the_same_result(fn, shape):
    x = ts.tensor(rows(5, *shape))
    cm = ts.jit.compile(fn, x)
    assert int(np.prod(shape)) >= KERNEL_SPLIT_MIN
    assert_close(cm(x), fn(x), rtol=1e-5, atol=1e-5)


def test_row_kernels_record_one_value_per_row():
    cm = ts.jit.compile(row_sum, ts.randn(3, 5))
    kernels = cm.executable.plan.kernels
    assert [k.spec.out_row for k in kernels.values()] == [True, False]
    x = rows(0, 3, 5)
    assert_close(cm.executable.launchers["k0"](x), (x * 2).sum(-1, keepdims=True))


# -- the launcher -----------------------------------------------------------------------------------

def test_the_launcher_broadcasts_and_reads_strided_inputs(dynamic):
    kernel = dynamic.executable.launchers["k0"]
    x, y = rows(1, 9, 12)[:, ::2], rows(2, 6)
    assert_close(kernel(x, y), gelu_tanh(ts.tensor(x), ts.tensor(y)).numpy())
    assert kernel(rows(3, 0, 6), rows(4, 6)).shape == (0, 6)


def test_the_launcher_refuses_inputs_it_was_not_compiled_for(compiled):
    kernel = compiled.executable.launchers["k0"]
    with pytest.raises(OpRuntimeError, match=r"k0: compiled for inputs of dtypes \['float32', 'float32'\], "
                                             r"got \['float64', 'float32'\]"):
        kernel(rows(0, 4, 6, dtype=np.float64), rows(1, 6))
    with pytest.raises(OpRuntimeError, match=r"k0: compiled for an input of shape \[4, 6\], got \[2, 4, 6\]"):
        kernel(rows(0, 2, 4, 6), rows(1, 6))
    with pytest.raises(OpRuntimeError, match=r"k0: input shapes \[\[4, 6\], \[5\]\] do not broadcast"):
        kernel(rows(0, 4, 6), rows(1, 5))


def test_the_launcher_refuses_a_size_the_code_reads_as_broadcast():
    """Code generated for an input with a dim of size 1 reads that dim with stride 0: another size is
    an error, not a silently wrong result."""
    kernel = ts.jit.compile(lambda x, y: x * y + 1, (ts.randn(4, 6), ts.randn(1, 6))).executable.launchers["k0"]
    with pytest.raises(OpRuntimeError, match=r"k0: compiled for an input of shape \[1, 6\], got \[4, 6\]"):
        kernel(rows(0, 4, 6), rows(1, 4, 6))


def test_one_plan_per_layout_and_a_bounded_cache(dynamic, monkeypatch):
    from tscript_runtime import kernels
    kernel = dynamic.executable.launchers["k0"]
    kernel._plans.clear()
    for n in range(1, 4):
        kernel(rows(n, n, 6), rows(0, 6))
        kernel(rows(n, n, 6), rows(0, 6))
    assert len(kernel._plans) == 3
    monkeypatch.setattr(kernels, "_MAX_PLANS", 2)
    kernel(rows(9, 9, 6), rows(0, 6))
    assert len(kernel._plans) == 1


def test_launches_release_the_gil(compiled):
    """A ctypes foreign function releases the GIL unless it is a PYFUNCTYPE; launchers must not be."""
    import ctypes
    assert not compiled.executable.launchers["k0"].fn._flags_ & ctypes._FUNCFLAG_PYTHONAPI


def test_one_kernel_from_several_threads_at_once(dynamic):
    kernel = dynamic.executable.launchers["k0"]
    cases = [(rows(i, 64 + i, 256), rows(10 + i, 256)) for i in range(4)]
    expected = [gelu_tanh(ts.tensor(x), ts.tensor(y)).numpy() for x, y in cases]
    failures, start = [], threading.Barrier(4)

    def work(i):
        start.wait()
        for _ in range(300):
            if not np.allclose(kernel(*cases[i]), expected[i], rtol=1e-5, atol=1e-6):
                failures.append(i)

    run_in_threads(work)
    assert failures == []


# -- emitted code and the object cache -------------------------------------------------------------

def test_emitted_code_imports_only_the_math_library_blas_and_the_kernel_library():
    def pw(x):
        return (ts.exp(x) / (x.abs() + 1)) ** 2.5 + ts.sin(x.double()).float()
    cm = ts.jit.compile(pw, ts.randn(5))
    assert declared_functions(emit_module(cm.executable.plan)) <= MODEL_IMPORTS


def test_code_comes_from_the_cache_once_emitted(tmp_path, monkeypatch):
    monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path))
    x = ts.randn(4, 6)
    ts.jit.compile(gelu_tanh, (x, ts.randn(6)))
    assert list(tmp_path.glob("*.o"))  # (the kernel library is cached too when first built in a process)
    monkeypatch.setattr(target, "optimize_and_emit", _no_emitting)
    y = ts.zeros(6)
    assert_close(ts.jit.compile(gelu_tanh, (x, y))(x, y), gelu_tanh(x, y))


def test_a_corrupt_cache_entry_is_emitted_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path))
    x, y = ts.randn(4, 6), ts.randn(6)
    ts.jit.compile(gelu_tanh, (x, y))
    for path in tmp_path.glob("*.o"):
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    emitted = []
    monkeypatch.setattr(target, "optimize_and_emit", lambda ll, real=target.optimize_and_emit: emitted.append(1)
                        or real(ll))
    assert_close(ts.jit.compile(gelu_tanh, (x, y))(x, y), gelu_tanh(x, y))
    assert emitted, "a corrupt entry was linked instead of emitted again"


def _no_emitting(ll):
    raise AssertionError("the cache should have had this code")
