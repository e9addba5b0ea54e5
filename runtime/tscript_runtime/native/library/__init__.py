"""The kernel library: native functions any compiled model may call (GEMMs for few rows, a packed GEMM
for many (packed_gemm.py) and its implicit-im2col convolution (implicit_gemm.py), im2col,
max-pooling, depthwise convolution, running a kernel's two halves at once on a native worker thread).
They are the same for every model, so they are built once — in parts (parts.py), each compiled for
this CPU through the on-disk object cache the first time a model needs one of its functions, linked
once per process — and models' code imports them by name, like the BLAS. The names carry the ABI, so
a changed signature must get a new name.

Importing this package needs no llvmlite; building or declaring a function does.
"""
from __future__ import annotations

import ctypes
import os
import threading

# name -> (builder module, builder function, argument types as text: "f32*" etc., "i64", "i1")
FUNCTIONS = {
    "tscript_gemm_nt_f32": ("gemm", "define_gemm_nt", ["f32*", "f32*", "f32*"] + ["i64"] * 6 + ["i1"]),
    "tscript_gemm_nn_f32": ("gemm", "define_gemm_nn", ["f32*", "f32*", "f32*"] + ["i64"] * 6 + ["i1"]),
    "tscript_im2col_f32": ("conv", "define_im2col", ["i64*", "f32*", "f32*"]),
    "tscript_im2col_f64": ("conv", "define_im2col", ["i64*", "f64*", "f64*"]),
    "tscript_im2col_ld_f32": ("conv", "define_im2col_ld", ["i64*", "f32*", "f32*", "i64"]),
    "tscript_im2col_ld_f64": ("conv", "define_im2col_ld", ["i64*", "f64*", "f64*", "i64"]),
    "tscript_im2col_part_f32": ("im2col_parts", "define_im2col_part", ["i64*", "i8*", "i64*", "f64*"]),
    "tscript_im2col_part_f64": ("im2col_parts", "define_im2col_part", ["i64*", "i8*", "i64*", "f64*"]),
    "tscript_depthwise2d_f32": ("depthwise", "define_depthwise", ["i64*", "i8*", "i64*", "f64*"]),
    "tscript_depthwise2d_f64": ("depthwise", "define_depthwise", ["i64*", "i8*", "i64*", "f64*"]),
    "tscript_depthwise2d_scratch_f32": ("depthwise", "define_depthwise", ["i64*", "i8*", "i64*", "f64*"]),
    "tscript_depthwise2d_scratch_f64": ("depthwise", "define_depthwise", ["i64*", "i8*", "i64*", "f64*"]),
    "tscript_conv_transpose_add_f32": ("transposed", "define_overlap_add", ["i64*", "i8*", "i64*", "f64*"]),
    "tscript_conv_transpose_add_f64": ("transposed", "define_overlap_add", ["i64*", "i8*", "i64*", "f64*"]),
    "tscript_max_pool2d_f32": ("conv", "define_max_pool2d", ["i64*", "f32*", "f32*"]),
    "tscript_max_pool2d_f64": ("conv", "define_max_pool2d", ["i64*", "f64*", "f64*"]),
    "tscript_erf_f32": ("unary", "define_erf", ["f32*", "f32*", "i64"]),
    "tscript_rgemm_f32": ("recurrent_gemm", "define_rgemm", ["i64", "i64", "i64", "f32*", "i64", "f32*", "f32*", "i64"]),
    "tscript_rgemm_pack_f32": ("recurrent_gemm", "define_rgemm", ["f32*", "i64", "i64", "i64", "f32*"]),
    "tscript_parallel2": ("parallel", "define_pool", ["i8*", "i64*", "i8*", "i64*", "i8*", "i64*", "f64*"]),
    "tscript_sgemm_f32": ("packed_gemm", "define_sgemm", ["i32", "i32", "i64", "i64", "i64", "f32*", "i64", "f32*",
                                                          "i64", "f32", "f32*", "i64", "f32*"]),
    "tscript_sgemm_epilogue_f32": ("packed_gemm", "define_sgemm", ["i32", "i32", "i64", "i64", "i64", "f32*", "i64",
                                                                   "f32*", "i64", "f32", "f32*", "i64", "f32*", "i8*",
                                                                   "i8*"]),
    **{name: ("packed_rows", "define_rows", ["i64", "i64", "f32*", "i64", "f32*", "i64", "i64", "f32*", "f32*", "i64",
                                             "i1", "f32"]) for name in ("tscript_sgemm_f32_rows6", "tscript_sgemm_f32_rows4",
                                                                     "tscript_sgemm_f32_rows2", "tscript_sgemm_f32_rows1")},
    "tscript_conv_stride1_f32": ("direct_conv", "define_direct_conv", ["i64*", "f32*", "f32*", "f32*", "f32*", "i8*", "i8*",
                                                                      "i8*"]),
    "tscript_sgemm_conv_f32": ("implicit_gemm", "define_sgemm_conv", ["i64", "i64", "i64", "f32*", "i64", "i64*", "f32*",
                                                                     "i64", "f32", "f32*", "i64", "f32*", "i8*", "i8*"]),
}
NAMES = frozenset(FUNCTIONS)
_POOL = ("tscript_pool_worker", "tscript_pool_reset", "tscript_pool_hold")  # for this package, not models' code
_PARALLEL2 = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 7)
_lock = threading.RLock()  # re-entered: linking a part resolves its imports through addresses()
_state: dict = {}


def declare(module, name: str):
    """Declare library function `name` in an llvmlite module (once), for code that calls it."""
    from llvmlite import ir
    try:
        return module.get_global(name)
    except KeyError:
        pass
    types = {"f32": ir.FloatType(), "f64": ir.DoubleType(), "i64": ir.IntType(64), "i32": ir.IntType(32),
             "i8": ir.IntType(8), "i1": ir.IntType(1)}
    args = [types[t.rstrip("*")].as_pointer() if t.endswith("*") else types[t] for t in FUNCTIONS[name][2]]
    return ir.Function(module, ir.FunctionType(ir.VoidType(), args), name)


def addresses(names=None) -> dict[str, int]:
    """name -> address of library functions linked into this process, `names` among them (all when
    None): their parts (parts.py) are linked the first time, compiled or from the object cache."""
    from .. import child_builds
    from . import parts
    wanted = parts.with_needs({parts.part_of(n) for n in (FUNCTIONS if names is None else names)})
    with _lock:
        linked = _state.setdefault("parts", {})
        missing = wanted - set(linked)
        # parts no child is compiling first (compiled here, largest first, some of the rest handed to a
        # child meanwhile), then those a child compiles (by then maybe done): all compiled before any
        # is linked, for linking one waits for the parts it calls
        order = sorted(missing, key=lambda p: (child_builds.building(parts.key(p)), -parts.cost(p), p))
        if len(order) > 1 and not child_builds.building(parts.key(order[0])):
            parts.prefetch(set(order[1:]), here=parts.cost(order[0]))
        for part in order:
            if not child_builds.building(parts.key(part)):
                parts.object_of(part)
        for part in order:
            _link(part, linked)
        return _state.setdefault("addresses", {})


def prefetch(names, here: float = 0.0) -> None:
    """Start compiling, in a child process, missing parts of library functions among `names` (a model's
    code, `here` seconds of LLVM work, is about to be compiled here and calls them); returns at once."""
    from . import parts
    with _lock:
        missing = {parts.part_of(n) for n in names if n in NAMES} - set(_state.get("parts", {}))
    if missing:
        parts.prefetch(missing, here)


def _link(part: str, linked: dict) -> None:
    """Link `part` (first the parts its code calls), under _lock."""
    from ..link import NativeLibrary
    from . import parts
    if part in linked:
        return
    obj, imports = parts.object_of(part)
    for dep in sorted({parts.part_of(n) for n in imports & NAMES} - {part}):
        _link(dep, linked)
    exports = parts.names_of(part) + (list(_POOL) if part == "parallel" else [])
    library = NativeLibrary(obj, exports, imports)  # kept alive for the process
    linked[part] = library
    _state.setdefault("addresses", {}).update((name, library.address(name)) for name in exports)


def parallel2():
    """`tscript_parallel2` as a ctypes function (see parallel.py), its worker thread started the first
    time (once per process) unless `set_threads(1)` said otherwise."""
    run = _state.get("parallel2")
    if run is None:
        found = addresses(["tscript_parallel2"])
        with _lock:
            run = _state.get("parallel2")
            if run is None:
                if _state.get("threads", 2) > 1:
                    _start_worker(found)
                run = _state["parallel2"] = _PARALLEL2(found["tscript_parallel2"])
    return run


def set_threads(n: int) -> None:
    """1: every launch runs both halves on its caller's thread (the worker is not started, or is held
    off and sleeps); 2 or more: the second half goes to the worker (the default)."""
    with _lock:
        _state["threads"] = n
        if "parallel2" not in _state:
            return  # nothing started yet: parallel2() reads the setting
        if n > 1 and not _state.get("worker"):
            _start_worker(_state["addresses"])
        elif _state.get("worker"):
            ctypes.CFUNCTYPE(None, ctypes.c_int32)(_state["addresses"]["tscript_pool_hold"])(int(n == 1))


def _start_worker(found: dict) -> None:
    worker = ctypes.CFUNCTYPE(None)(found["tscript_pool_worker"])
    threading.Thread(target=worker, name="tscript-kernels", daemon=True).start()
    _state["worker"] = True


def _after_fork() -> None:
    """In a forked child the worker thread does not exist: forget it (the next split starts one)."""
    global _lock
    _lock = threading.RLock()
    _state.pop("worker", None)
    if _state.pop("parallel2", None) is not None:
        ctypes.CFUNCTYPE(None)(_state["addresses"]["tscript_pool_reset"])()


os.register_at_fork(after_in_child=_after_fork)
