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
from .cache import cache_key, cached_object
from .link import MODEL_IMPORTS, NativeLibrary, imports_of

ENTRY = "entry"


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


def link_native(graph: dict, plan: NativePlan) -> NativeCode:
    """The native code of `graph` (its document) under `plan`, emitted now or found in the cache. Its
    library is unloaded when the model's code and launchers are dropped."""
    from .target import optimize_and_emit

    def emit():
        module = emit_module(plan)
        obj = optimize_and_emit(str(module))
        return obj, imports_of(module, obj)
    obj, imports = cached_object(cache_key("model", json.dumps(graph, sort_keys=True), plan.fingerprint()), emit)
    assert imports <= MODEL_IMPORTS, f"emitted code imports {sorted(imports - MODEL_IMPORTS)}"
    names = symbols(plan)
    exports = list(dict.fromkeys(names.values())) + ([ENTRY] if plan.layout is not None else [])
    library = NativeLibrary(obj, exports, imports)
    launchers = {name: FusedKernel(library.address(names[name]), k.spec, k.split_min, name, owner=library)
                 for name, k in plan.kernels.items()}
    entry = library.address(ENTRY) if plan.layout is not None else None
    return NativeCode(launchers, entry, library)
