"""`set_num_threads(n)` / `get_num_threads()`: how many threads native code may use, as
`torch.set_num_threads` says for PyTorch (for a process that shares its machine with other worker
processes, say).

- tscript's kernels run a large launch in two halves at once, the second on the kernel library's
  native worker thread: n == 1 turns that off (the worker is not started, or is held off and
  sleeps; every kernel then runs on its caller's thread), n >= 2 turns it on (the default);
- the BLAS numpy bundles (OpenBLAS, which runs the larger GEMMs; numpy's own matmul too) gets n
  threads.

Set it before running models (OpenBLAS may not be reconfigured while a product runs on another thread).
"""
from __future__ import annotations

import ctypes

from .errors import OpRuntimeError, OpTypeError

_state = {"threads": 2}


def set_num_threads(n: int) -> None:
    """Use `n` threads for native code: tscript's kernels min(n, 2) (1 turns the second native worker
    off), the BLAS numpy bundles n."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise OpTypeError(f"set_num_threads(): argument must be int, not {type(n).__name__}")
    if n < 1:
        raise OpRuntimeError(f"set_num_threads(): the number of threads must be positive, got {n}")
    from .native import library
    library.set_threads(n)
    _set_blas_threads(n)
    _state["threads"] = n


def get_num_threads() -> int:
    """The number last given to `set_num_threads` (2 until then: the kernels' two threads)."""
    return _state["threads"]


def _set_blas_threads(n: int) -> None:
    try:
        from .native.link import blas_library
        path = blas_library()
    except ImportError:  # no llvmlite: no native code either
        return
    if path is not None:
        setter = getattr(ctypes.CDLL(path), "scipy_openblas_set_num_threads64_", None)
        if setter is not None:
            setter(ctypes.c_int(n))
