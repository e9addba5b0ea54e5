"""The kernel library in parts, each its own object in the cache, built only when a model (or an eager
op) first needs one of its functions, and built on the other core where it can.

A part is the functions of one builder module (and one dtype for the typed ones; a module whose code
calls another's defines it in the same part: PART_OF). A part's LLVM module declares every library
function of the other parts, so a call across parts is an import its object resolves when linked.
Building the library took 4.5-5 s on one core, most of it compiling functions a model never calls
(float64 im2col, depthwise and transposed convolutions for a ResNet); a missing part is now compiled
by a child process (child_builds.py: it imports only this runtime and writes into the same checksummed
cache) while this process compiles another part or the model's own code.
"""
from __future__ import annotations

import os
import threading

UNTYPED = ("gemm", "parallel", "packed_gemm", "implicit_gemm", "recurrent_gemm")  # builders taking no dtype
PART_OF = {"implicit_gemm": "packed_gemm", "im2col_parts": "conv"}  # builder -> the part its code lives in
COST = {"packed_gemm": 5, "conv_f32": 2, "conv_f64": 2, "depthwise_f32": 2, "depthwise_f64": 2, "gemm": 1}
_lock = threading.Lock()


def part_of(name: str) -> str:
    """The part defining library function `name`."""
    from . import FUNCTIONS
    builder = FUNCTIONS[name][0]
    group = PART_OF.get(builder, builder)
    return group if builder in UNTYPED else f"{group}_{name[-3:]}"


def names_of(part: str) -> list[str]:
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
    from ..cache import cache_key
    return cache_key("library", part)


def emit(part: str) -> tuple[bytes, set[str]]:
    """(object code, imported symbols) of the part, compiled here."""
    from ..link import declared_functions
    from ..elf import is_elf64
    from ..link import undefined_symbols
    from ..target import optimize_and_emit
    mod = module(part)
    obj = optimize_and_emit(str(mod))
    return obj, (undefined_symbols(obj) if is_elf64(obj) else declared_functions(mod))


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


def prefetch(parts, here: str | None = None) -> None:
    """Start compiling the parts not in the cache in child processes (at most two, their work balanced
    by COST), but `here`, which the caller compiles itself; returns at once."""
    from ..cache import lookup
    from ..child_builds import build_library, building, enabled
    if not enabled():
        return
    with _lock:
        missing = sorted((p for p in set(parts) - {here} if not building(key(p)) and lookup(key(p)) is None),
                         key=lambda p: (-COST.get(p, 1), p))
        bins: list[list[str]] = [[], []]
        for p in missing:
            min(bins, key=lambda b: sum(COST.get(q, 1) for q in b)).append(p)
        for ps in bins:
            if ps:
                build_library([key(p) for p in ps], ps)


def _after_fork() -> None:
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)
