"""glibc's heap kept from giving back, at every call, the memory the next call takes again.

Arrays of a few MiB (a GPT's 1024 x 1024 activations are 4 MiB) come from malloc's heap once its
dynamic mmap threshold has grown past them, and go back to the OS whenever more than twice that
threshold lies free at the heap's top (malloc_trim): the next call's arrays then take a page fault
for each 4 KiB page they first write. Eager GPT 4x256 at 8x128 tokens took ~21,000 faults per
forward this way, 100-112 ms a forward; with the heap's top kept, none, 61-66 ms (PyTorch eager:
46-65 ms). Run with tscript, a trace is an eager run, so its compile gains the same.

`tune()` (run when tscript_runtime is imported) sets what `MALLOC_MMAP_THRESHOLD_=33554432
MALLOC_TOP_PAD_=67108864` would: arrays under 32 MiB (glibc's largest threshold) from the heap, and
64 MiB kept at its top when it is trimmed (memory the process keeps beyond what it holds: at most
that). Larger arrays are still mapped and unmapped per allocation (the eager kernels keep theirs:
native/recycled.py). Nothing is changed where the C library is not glibc, when the process was
started with any MALLOC_*_ tuning of its own, or with TSCRIPT_HEAP=default.
"""
from __future__ import annotations

import ctypes
import os
import sys

M_TOP_PAD, M_MMAP_THRESHOLD = -2, -3  # glibc's mallopt parameters
MMAP_THRESHOLD = 32 << 20  # glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit)
TOP_PAD = 64 << 20
_OWN_TUNING = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_MAX_")
_state = {}


def tune() -> bool:
    """Set the heap's mmap threshold and top pad (see the module doc), once per process; returns
    whether they are set."""
    if "tuned" not in _state:
        _state["tuned"] = _wanted() and _mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and _mallopt(M_TOP_PAD, TOP_PAD)
    return _state["tuned"]


def _wanted() -> bool:
    return (sys.platform.startswith("linux") and os.environ.get("TSCRIPT_HEAP", "") != "default"
            and not any(name in os.environ for name in _OWN_TUNING))


def _mallopt(param: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc only: other C libraries' mallopt (if any) mean other things
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(param, value) == 1
