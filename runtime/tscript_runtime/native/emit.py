"""From a checked graph and its native plan to code running in this process: one LLVM module holding
every kernel (native/pointwise.py, native/row.py) and the whole-graph entry (native/entry.py),
compiled for this CPU or read back from the object cache, linked, and wrapped in launchers.

Function names are the emitter's own (`kernel_<i>`, `entry`): no name from a file reaches the LLVM IR.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..entry_steps import KernelStep
from ..kernels import FusedKernel
from ..native_plan import NativePlan
from . import child_builds
from . import library as kernel_library
from .cache import cache_key, cached_object, lookup
from .library.parts import MODEL_IR_SECONDS_PER_BYTE
from .link import MODEL_IMPORTS, NativeLibrary, declared_functions, imports_of_declared

ENTRY = "entry"
# LLVM IR from which compiling in a child pays for starting it (~0.25 s): ~0.3 s of LLVM here; a small
# MLP's backward is 70 KB, a CNN's 330 KB, the GPT's 630 KB
PREFETCH_IR_BYTES = 1 << 17
MAX_EMITTED = 4  # smaller modules prefetch_native emitted, kept for link_native (the newest)
_EMITTED: dict = {}  # cache key -> (LLVM IR text, declared functions)


@dataclass
class NativeCode:
    """A graph's linked native code: a launcher per kernel (by the plan's kernel names), the
    whole-graph entry's address (None without one), and the library to keep alive while it runs."""
    launchers: dict
    entry: int | None
    library: NativeLibrary


def symbols(plan: NativePlan) -> dict:
    """Kernel name -> the name of its function in the emitted module: kernels that would emit the same
    code (an unrolled loop's steps, a transformer's layers) share one function."""
    first, names = {}, {}
    for i, (name, k) in enumerate(plan.kernels.items()):
        names[name] = first.setdefault(_code_key(k), f"kernel_{i}")
    return names


def _code_key(kernel) -> tuple:
    """What a kernel's code depends on: its template, schedule, and subgraph up to value names."""
    sub = kernel.node.attrs["subgraph"]
    number: dict = {}

    def values(vs) -> tuple:
        return tuple((number.setdefault(v.name, len(number)), str(v.type)) for v in vs)
    nodes = tuple((n.kind, values(n.inputs), values(n.outputs), repr(sorted(n.attrs.items()))) for n in sub.nodes)
    return kernel.template, kernel.tile, kernel.split_min, values(sub.inputs), nodes, values(sub.outputs)


def emit_module(plan: NativePlan):
    """The llvmlite module of every kernel of `plan` and its whole-graph entry."""
    from llvmlite import ir

    from .entry import build_entry
    from .pointwise import build_kernel
    from .row import build_row_kernel
    from .target import host
    module = ir.Module("tscript_model")
    module.triple = host()["triple"]
    names = symbols(plan)
    emitted = set()
    for name, k in plan.kernels.items():
        if names[name] in emitted:
            continue
        emitted.add(names[name])
        sub = k.node.attrs["subgraph"]
        if k.template == "pointwise":
            build_kernel(sub, names[name], module, k.tile)
        else:
            build_row_kernel(sub, names[name], module)
    if plan.layout is not None:
        kernels = {s.node: module.get_global(names[s.kernel]) for s in plan.layout.steps if isinstance(s, KernelStep)}
        build_entry(module, plan.layout, ENTRY, kernels)
    return module


def prefetch_native(graph: dict, plan: NativePlan) -> None:
    """Start compiling the native code `link_native` will want for `graph` under `plan` in a child
    process (child_builds.py), unless it is cached or small (PREFETCH_IR_BYTES): its LLVM IR is emitted
    here, LLVM runs on the other core while this process goes on, and a later `link_native` finds the
    object in the cache."""
    key = _key(graph, plan)
    if not child_builds.enabled() or child_builds.building(key) or lookup(key) is not None:
        return
    module = emit_module(plan)
    declared, text = declared_functions(module), str(module)
    if len(text) >= PREFETCH_IR_BYTES:
        child_builds.build_object(key, text, declared)
    else:  # compiled here when linked: without emitting it again
        _EMITTED[key] = text, declared
        while len(_EMITTED) > MAX_EMITTED:
            _EMITTED.pop(next(iter(_EMITTED)), None)


def _key(graph: dict, plan: NativePlan) -> str:
    return cache_key("model", json.dumps(graph, sort_keys=True), plan.fingerprint())


def link_native(graph: dict, plan: NativePlan) -> NativeCode:
    """The native code of `graph` (its document) under `plan`, emitted now or found in the cache. Its
    library is unloaded when the model's code and launchers are dropped."""
    from .target import optimize_and_emit

    key = _key(graph, plan)

    def emit():
        found = _EMITTED.pop(key, None)
        if found is None:
            module = emit_module(plan)
            found = str(module), declared_functions(module)
        text, declared = found
        # the library parts it calls that are missing: some compile on the other core meanwhile
        kernel_library.prefetch(declared, len(text) * MODEL_IR_SECONDS_PER_BYTE)
        obj = optimize_and_emit(text)
        return obj, imports_of_declared(declared, obj)
    child_builds.wait_for(key)  # (prefetch_native's child)
    obj, imports = cached_object(key, emit)
    assert imports <= MODEL_IMPORTS, f"emitted code imports {sorted(imports - MODEL_IMPORTS)}"
    names = symbols(plan)
    exports = list(dict.fromkeys(names.values())) + ([ENTRY] if plan.layout is not None else [])
    library = NativeLibrary(obj, exports, imports)
    launchers = {name: FusedKernel(library.address(names[name]), k.spec, k.split_min, name, owner=library)
                 for name, k in plan.kernels.items()}
    entry = library.address(ENTRY) if plan.layout is not None else None
    return NativeCode(launchers, entry, library)
