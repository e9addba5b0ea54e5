"""The native layer the runtime loads saved code with: launch specs (the manifest form of a kernel),
the launcher (dtype, rank and broadcast checks, one plan per layout, safe from several threads),
the undefined symbols of object code, and whether object code fits this host."""
import threading

import numpy as np
import pytest

import tscript as ts
from tscript_runtime import ModelError, dtypes as dt, native
from tscript_runtime.errors import OpRuntimeError
from tscript_runtime.kernels import MAX_RANK, LaunchSpec

from tests.conftest import assert_close, run_in_threads


def gelu_tanh(x, y):
    return 0.5 * x * (1 + ts.tanh(0.7978845608 * (x + 0.044715 * x ** 3))) + y


def row_sum(x):
    return (x * 2).sum(-1, keepdim=True) + 1


@pytest.fixture(scope="module")
def compiled():
    return ts.jit.compile(gelu_tanh, (ts.randn(4, 6), ts.randn(6)))


def rows(seed, *shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# -- launch specs -----------------------------------------------------------------------------------

def test_launch_specs_describe_every_kernel(compiled):
    (spec,) = compiled.native.launch_specs()
    assert spec == LaunchSpec("k_fusion_0", 2, ("tensor", "tensor"), (dt.float32, dt.float32), (dt.float32,), False)
    assert spec.to_json() == {"name": "k_fusion_0", "rank": 2, "inputs": ["tensor", "tensor"],
                              "input_dtypes": ["float32", "float32"], "output_dtypes": ["float32"], "out_row": False,
                              "row": False}
    assert LaunchSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize("fn, shape", [
    (lambda x: (x * 0.5).tanh() + 1, (1 << 19,)),                     # elementwise, rank 1: split
    (lambda x: x.softmax(-1) * 2, (600, 1024)),                        # row kernel, rank 2: rows split
    (lambda x: (x - x.mean(-1, keepdim=True)).exp(), (1 << 19,)),      # row kernel, rank 1: never split
    (lambda x: x.sum(-1, keepdim=True) + 1, (1023, 513)),             # one value per row, odd row count
])
def test_large_kernels_split_over_two_threads_give_the_same_result(fn, shape):
    from tscript_runtime import kernels
    x = ts.tensor(rows(5, *shape))
    cm = ts.jit.compile(fn, x)
    assert int(np.prod(shape)) >= kernels.SPLIT_MIN
    assert_close(cm(x), fn(x), rtol=1e-5, atol=1e-5)


def test_row_kernels_record_one_value_per_row():
    cm = ts.jit.compile(row_sum, ts.randn(3, 5))
    specs = cm.native.launch_specs()
    assert [s.out_row for s in specs] == [True, False]
    x = rows(0, 7, 5)
    assert_close(specs[0].launcher(cm.native.library.address(specs[0].name))(x), (x * 2).sum(-1, keepdims=True))


GOOD = {"name": "k", "rank": 1, "inputs": ["tensor", "scalar"], "input_dtypes": ["float64"],
        "output_dtypes": ["bool"], "out_row": False}


@pytest.mark.parametrize("change, message", [
    ({"name": "sys tem"}, "kernel name 'sys tem' is not a symbol name"),
    ({"name": 3}, "kernel name 3 is not a symbol name"),
    ({"rank": -1}, f"kernel 'k': rank -1 is not an int in 0..{MAX_RANK}"),
    ({"rank": True}, "kernel 'k': rank True is not an int"),
    ({"rank": MAX_RANK + 1}, "is not an int in"),
    ({"inputs": ["tensor", "list"]}, "kernel 'k': inputs must be a list of tensor or scalar"),
    ({"input_dtypes": ["float16"]}, "kernel 'k': input_dtypes must be a list of dtype names"),
    ({"input_dtypes": []}, "needs one input dtype per tensor input"),
    ({"output_dtypes": []}, "and at least one output"),
    ({"out_row": 1}, "kernel 'k': out_row must be true or false, got 1"),
])
def test_malformed_launch_specs_are_model_errors(change, message):
    assert LaunchSpec.from_json(GOOD).input_dtypes == (dt.float64,)
    with pytest.raises(ModelError, match=message.replace("(", r"\(").replace(")", r"\)")):
        LaunchSpec.from_json({**GOOD, **change})


def test_a_launch_spec_must_be_an_object():
    with pytest.raises(ModelError, match="malformed kernel description"):
        LaunchSpec.from_json(["k", 1])


# -- the launcher -----------------------------------------------------------------------------------

def test_linking_keeps_the_object_code(compiled):
    assert compiled.native.object[:4] == b"\x7fELF"
    assert compiled.native.object == native.compile_cached(compiled.llvm_ir)


def test_the_launcher_broadcasts_and_reads_strided_inputs(compiled):
    kernel = compiled.native.launchers["k_fusion_0"]
    x, y = rows(1, 9, 12)[:, ::2], rows(2, 1)
    assert_close(kernel(x, y), gelu_tanh(ts.tensor(x), ts.tensor(y)).numpy())
    assert kernel(rows(3, 0, 6), rows(4, 6)).shape == (0, 6)


def test_the_launcher_refuses_inputs_it_was_not_compiled_for(compiled):
    kernel = compiled.native.launchers["k_fusion_0"]
    with pytest.raises(OpRuntimeError, match=r"k_fusion_0: compiled for inputs of dtypes \['float32', 'float32'\], "
                                             r"got \['float64', 'float32'\]"):
        kernel(rows(0, 4, 6, dtype=np.float64), rows(1, 6))
    with pytest.raises(OpRuntimeError, match=r"k_fusion_0 was compiled for rank 2, got inputs of shapes "
                                             r"\[\[2, 4, 6\], \[6\]\]"):
        kernel(rows(0, 2, 4, 6), rows(1, 6))
    with pytest.raises(OpRuntimeError, match=r"k_fusion_0: input shapes \[\[4, 6\], \[5\]\] do not broadcast"):
        kernel(rows(0, 4, 6), rows(1, 5))


def test_one_plan_per_layout_and_a_bounded_cache(compiled, monkeypatch):
    from tscript_runtime import kernels
    kernel = compiled.native.launchers["k_fusion_0"]
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
    assert not compiled.native.launchers["k_fusion_0"].fn._flags_ & ctypes._FUNCFLAG_PYTHONAPI


def test_one_kernel_from_several_threads_at_once(compiled):
    kernel = compiled.native.launchers["k_fusion_0"]
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


# -- object code ------------------------------------------------------------------------------------

def test_generated_object_code_needs_only_allowed_functions(compiled):
    def pw(x):
        return (ts.exp(x) / (x.abs() + 1)) ** 2.5
    obj = ts.jit.compile(pw, ts.randn(5)).native.object
    assert native.object_externals(obj) <= native.ALLOWED_EXTERNALS
    assert native.check_object(compiled.native.object) is True


def test_undefined_symbols_of_object_code():
    obj = native.optimize_and_emit("declare i32 @system(i8*)\ndeclare double @exp(double)\n"
                                   "define i32 @f(i8* %p, double %x, double* %out) {\n"
                                   "  %e = call double @exp(double %x)\n  store double %e, double* %out\n"
                                   "  %r = call i32 @system(i8* %p)\n  ret i32 %r\n}\n")
    assert native.object_externals(obj) == {"system", "exp"}
    with pytest.raises(ModelError, match=r"f.o references external function\(s\) not on the allow-list: system"):
        native.check_object(obj, "f.o")


def test_objects_of_other_formats_cannot_be_inspected():
    assert native.object_externals(b"\xcf\xfa\xed\xfe Mach-O") is None
    assert native.check_object(b"MZ\x90\x00 PE") is False
    with pytest.raises(ModelError, match="x.o: not a valid ELF object file"):
        native.check_object(b"\x7fELF\x02\x01" + bytes(10), "x.o")


def test_object_code_fits_only_this_exact_host():
    host = native.host()
    target = {"target_triple": host["triple"], "cpu": host["cpu"], "cpu_features": host["features"]}
    assert native.fits_host(target)
    assert not native.fits_host({**target, "cpu": "x86-64"})
    assert not native.fits_host({**target, "cpu_features": host["features"].replace("+", "-", 1)})
    assert not native.fits_host({**target, "target_triple": "aarch64-unknown-linux-gnu"})
