"""The heap tuning tscript_runtime sets when imported (tscript_runtime/heap.py): arrays of a few MiB
allocated and freed call after call come back without page faults; a process's own MALLOC_*_ tuning,
or TSCRIPT_HEAP=default, leaves glibc's defaults alone (under which the same arrays fault every time)."""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap")

# faults per round of six 4 MiB arrays allocated, written and freed (after three rounds of warm-up)
_PROGRAM = """
import resource, sys
import numpy as np
import tscript_runtime
from tscript_runtime import heap
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def round_():
    live = [np.ones(1 << 20, np.float32) for _ in range(6)]
    del live
for _ in range(3):
    round_()
before = faults()
for _ in range(20):
    round_()
print(heap.tune(), (faults() - before) // 20)
"""


def _run(**env) -> tuple[bool, int]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "TSCRIPT_HEAP"}
    out = subprocess.run([sys.executable, "-c", _PROGRAM], env={**clean, **env}, capture_output=True, text=True,
                         check=True).stdout.split()
    return out[0] == "True", int(out[1])


def _glibc() -> bool:
    import ctypes
    return hasattr(ctypes.CDLL(None), "gnu_get_libc_version")


@pytest.mark.skipif(not _glibc(), reason="glibc's heap")
def test_arrays_of_a_few_mib_come_back_without_faults():
    tuned, faults = _run()
    assert tuned
    assert faults < 100  # 6 x 1024 pages a round: none of them faulted again


@pytest.mark.skipif(not _glibc(), reason="glibc's heap")
@pytest.mark.parametrize("env", [{"TSCRIPT_HEAP": "default"}, {"MALLOC_TOP_PAD_": "0"}])
def test_the_process_own_choice_is_kept(env):
    tuned, faults = _run(**env)
    assert not tuned
    assert faults > 1000  # glibc's defaults: the heap's top given back, its pages faulted again each round
