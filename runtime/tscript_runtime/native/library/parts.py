"""The kernel library in parts, each its own object in the cache, built only when a model (or an eager
op) first needs one of its functions, and built on the other core where it can.

A part is the functions of one builder module (and one dtype for the typed ones; a module whose code
calls another's defines it in the same part: PART_OF). A part's LLVM module declares every library
function of the other parts, so a call across parts is an import its object resolves when linked.
Building the library took 4.5-5 s on one core, most of it compiling functions a model never calls
(float64 im2col, depthwise and transposed convolutions for a ResNet); a missing part is now compiled
by a child process (child_builds.py: it imports only this runtime and writes into the same checksummed
cache) while this process compiles its share (prefetch balances the two by COST) or the model's own code.
"""
from __future__ import annotations

import os
import threading

from ...gc_paused import gc_paused

UNTYPED = ("gemm", "parallel", "packed_gemm", "packed_rows", "implicit_gemm", "recurrent_gemm", "direct_conv")  # builders taking no dtype
# builder (or one function) -> the part its code lives in: the packed GEMM's full-height row block is
# a part of its own, for its micro-kernels take as long to compile as all the shorter blocks'
PART_OF = {"implicit_gemm": "packed_gemm", "im2col_parts": "conv", "tscript_sgemm_f32_rows6": "packed_rows6"}
NEEDS = {"packed_gemm": ("packed_rows6", "packed_rows", "parallel"), "direct_conv": ("parallel",)}  # part -> the parts its code calls
# seconds of IR building + LLVM per part, measured on a Zen 4 core (2026-11-24), and a child's start
COST = {"packed_rows6": 0.4, "packed_rows": 0.65, "packed_gemm": 0.6, "recurrent_gemm": 0.6, "conv_f32": 0.4, "conv_f64": 0.4, "depthwise_f32": 0.45,
        "depthwise_f64": 0.45, "gemm": 0.35, "transposed_f32": 0.2, "transposed_f64": 0.2, "parallel": 0.03,
        "unary_f32": 0.03, "direct_conv": 0.4}
CHILD_START = 0.3
MODEL_IR_SECONDS_PER_BYTE = 0.45 / 242e3  # a model's LLVM time by its IR's size (ResNet-18: 242 KB, 0.45 s)
_lock = threading.Lock()


def part_of(name: str) -> str:
    """The part defining library function `name`."""
    from . import FUNCTIONS
    builder = FUNCTIONS[name][0]
    group = PART_OF.get(name, PART_OF.get(builder, builder))
    return group if builder in UNTYPED else f"{group}_{name[-3:]}"


def names_of(part: str) -> list[str]:
    """The library functions `part` defines."""
    from . import FUNCTIONS
    return [n for n in FUNCTIONS if part_of(n) == part]


def module(part: str):
    """The llvmlite module defining the part's functions (declaring every other library function)."""
    import importlib

    import numpy as np
    from llvmlite import ir

    from ..target import host
    from . import FUNCTIONS, declare
    mine = names_of(part)
    mod = ir.Module(f"tscript_library_{part}")
    mod.triple = host()["triple"]
    for name in FUNCTIONS:
        if name not in mine:
            declare(mod, name)  # a builder finding it declared calls it instead of defining it
    for name in mine:
        builder, function, _ = FUNCTIONS[name]
        define = getattr(importlib.import_module(f"{__package__}.{builder}"), function)
        if builder in UNTYPED:
            define(mod)
        else:
            define(mod, np.float32 if name.endswith("f32") else np.float64)
    return mod


def key(part: str) -> str:
    """The part's object-cache key."""
    from ..cache import cache_key
    return cache_key("library", part)


@gc_paused
def emit(part: str) -> tuple[bytes, set[str]]:
    """(object code, imported symbols) of the part, compiled here (the collector paused: building the
    packed GEMM's IR makes ~10^6 objects)."""
    from ..link import imports_of
    from ..target import optimize_and_emit
    mod = module(part)
    obj = optimize_and_emit(str(mod))
    return obj, imports_of(mod, obj)


def object_of(part: str) -> tuple[bytes, set[str]]:
    """The part's object and imports: from the cache (after any child building it is done), else
    compiled here and cached."""
    from ..cache import cached_object
    from ..child_builds import wait_for
    wait_for(key(part))
    return cached_object(key(part), lambda: emit(part))


def build(parts: list[str]) -> None:
    """Compile each part not in the cache into it (what a child process runs)."""
    from ..cache import cached_object
    for part in parts:
        cached_object(key(part), lambda part=part: emit(part))


def prefetch(parts, here: float = 0.0) -> None:
    """Start compiling the parts not in the cache in one child process, the others left to the caller,
    who is about to compile `here` seconds of LLVM work itself (its model, or one part: `cost`): the
    parts go largest first to whichever of the two is done sooner, so the two cores finish together
    (a second child would only share a core with the caller). Returns at once."""
    from ..cache import lookup
    from ..child_builds import build_library, building, busy, enabled
    if not enabled() or busy():  # (the other core is taken: the caller compiles the rest itself)
        return
    with _lock:
        missing = sorted((p for p in with_needs(parts) if not building(key(p)) and lookup(key(p)) is None),
                         key=lambda p: (-cost(p), p))
        caller, child, theirs = here, CHILD_START, []
        for p in missing:
            if child < caller:
                child += cost(p)
                theirs.append(p)
            else:
                caller += cost(p)
        if theirs:
            build_library([key(p) for p in theirs], theirs)


def with_needs(parts) -> set[str]:
    """`parts` and every part their code calls, transitively (NEEDS)."""
    found, todo = set(), list(parts)
    while todo:
        part = todo.pop()
        if part not in found:
            found.add(part)
            todo += NEEDS.get(part, ())
    return found


def cost(part: str) -> float:
    """Seconds of LLVM work compiling `part` takes on these machines (COST; 0.3 for one not listed)."""
    return COST.get(part, 0.3)


def _after_fork() -> None:
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)
