"""Runtime models travel and share the machine: a loaded `tscript_runtime.Model` pickles as its file's
bytes and loads again in the receiving process (a spawned multiprocessing pool gets the same
outputs), in-place parameter changes travel with it; `set_num_threads(1)` keeps the kernel
library's worker thread off; `.tsm` parameters are read from a memory map of the file."""
import io
import mmap
import multiprocessing
import operator
import os
import pickle
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tscript as ts
import tscript_runtime as rt
from tscript import nn


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    ts.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.GELU(), nn.Linear(16, 3)).eval()
    path = tmp_path_factory.mktemp("travel") / "mlp.tsm"
    ts.jit.save(ts.jit.compile(model, ts.randn(2, 4), dynamic={0: [0]}), path)
    return path


X = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)


def test_a_model_loaded_from_a_path_pickles_and_gives_the_same_outputs(saved):
    model = rt.load(saved)
    copy = pickle.loads(pickle.dumps(model))
    assert copy is not model and copy.source == str(saved)
    np.testing.assert_array_equal(copy.run(X), model.run(X))
    again = pickle.loads(pickle.dumps(copy))  # loaded from bytes: pickles again
    np.testing.assert_array_equal(again.run(X), model.run(X))


def test_a_model_loaded_from_a_file_object_pickles(saved):
    model = rt.load(io.BytesIO(saved.read_bytes()))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).run(X), model.run(X))


def test_parameters_changed_in_place_travel_with_the_model(saved):
    model = rt.load(saved)
    model.params["0.weight"][...] *= 2.0
    model.params["2.bias"][0] = 100.0
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(copy.run(X), model.run(X))
    assert copy.params["2.bias"][0] == 100.0
    assert rt.load(saved).params["2.bias"][0] != 100.0  # the file is unchanged


def test_a_file_changed_since_loading_is_refused(saved, tmp_path):
    path = tmp_path / "m.tsm"
    path.write_bytes(saved.read_bytes())
    model = rt.load(path)
    ts.jit.save(ts.jit.trace(nn.Linear(4, 3).eval(), ts.randn(2, 4)), path)
    with pytest.raises(pickle.PicklingError, match="changed since the model was loaded"):
        pickle.dumps(model)
    path.unlink()
    with pytest.raises(pickle.PicklingError, match="cannot read the model's file again"):
        pickle.dumps(model)


def test_a_spawned_multiprocessing_pool_runs_the_model(saved):
    model = rt.load(saved)
    expected = model.run(X)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        outputs = pool.map(operator.methodcaller("run", X), [model, model])
    for out in outputs:
        np.testing.assert_array_equal(out, expected)


# -- threads ----------------------------------------------------------------------------------------

def _task_cpu_ticks() -> dict:
    ticks = {}
    for tid in os.listdir("/proc/self/task"):
        fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        ticks[int(tid)] = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks


def _worker_ticks_while(run) -> int:
    worker = next(t.native_id for t in threading.enumerate() if t.name == "tscript-kernels")
    before = _task_cpu_ticks().get(worker, 0)
    run()
    return _task_cpu_ticks().get(worker, 0) - before


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="per-thread CPU times are read from /proc")
def test_one_thread_keeps_the_kernel_librarys_worker_idle():
    x = ts.randn(2048, 2048)
    compiled = ts.jit.compile(lambda a: (a * 2 + 1).tanh(), x)  # a kernel big enough to run in halves
    expected = compiled(x).numpy()
    try:
        rt.set_num_threads(1)
        time.sleep(0.05)  # the worker stops spinning and sleeps
        assert _worker_ticks_while(lambda: [compiled(x) for _ in range(40)]) <= 1
        np.testing.assert_array_equal(compiled(x).numpy(), expected)
        rt.set_num_threads(1)  # twice: still held, no wait
        rt.set_num_threads(2)
        assert _worker_ticks_while(lambda: [compiled(x) for _ in range(40)]) >= 2
        np.testing.assert_array_equal(compiled(x).numpy(), expected)
    finally:
        rt.set_num_threads(2)


def test_one_thread_before_anything_runs_never_starts_the_worker():
    code = ("import threading, tscript_runtime as rt, tscript as ts\n"
            "rt.set_num_threads(1)\n"
            "x = ts.randn(512, 1024)\n"
            "out = ts.jit.compile(lambda a: (a * 2).exp(), x)(x)\n"
            "print(rt.get_num_threads(), sorted(t.name for t in threading.enumerate()))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "1 ['MainThread']"


def test_set_num_threads_checks_its_argument():
    with pytest.raises(RuntimeError, match="must be positive"):
        rt.set_num_threads(0)
    with pytest.raises(TypeError, match="must be int"):
        rt.set_num_threads(1.5)
    assert rt.get_num_threads() == 2


# -- memory map -------------------------------------------------------------------------------------

def _root(array: np.ndarray):
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return base.obj if isinstance(base, memoryview) else base


def test_tsm_parameters_are_read_in_place_from_a_memory_map(saved):
    model = rt.load(saved)
    weight = model.params["0.weight"]
    assert isinstance(_root(weight), mmap.mmap) and not weight.flags.owndata
    weight[...] = 0.0  # private pages: the file never changes
    np.testing.assert_array_equal(rt.load(saved).params["0.weight"] != 0, True)
    assert not isinstance(_root(rt.load(io.BytesIO(saved.read_bytes())).params["0.weight"]), mmap.mmap)
