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
from .cache import cache_key, cached_objects
from .link import MODEL_IMPORTS, NativeLibrary, imports_of

ENTRY = "entry"
PARALLEL_KERNELS = 8  # distinct kernels from which a model's code is compiled in two parts at once


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
    return emit_parts(plan, 1)[0]


def emit_parts(plan: NativePlan, parts: int):
    """The kernels of `plan` in `parts` llvmlite modules (dealt in turn), the whole-graph entry in the
    first, declaring those of the others it calls (they link into one library)."""
    from llvmlite import ir

    from .entry import build_entry
    from .pointwise import build_kernel
    from .row import build_row_kernel
    from .target import host
    modules = [ir.Module("tscript_model") for _ in range(max(parts, 1))]
    for module in modules:
        module.triple = host()["triple"]
    names = symbols(plan)
    home: dict = {}
    for name, k in plan.kernels.items():
        if names[name] in home:
            continue
        module = home[names[name]] = modules[len(home) % len(modules)]
        sub = k.node.attrs["subgraph"]
        if k.template == "pointwise":
            build_kernel(sub, names[name], module, k.tile)
        else:
            build_row_kernel(sub, names[name], module)
    if plan.layout is not None:
        first = modules[0]
        kernels = {s.node: _in(first, home[names[s.kernel]].get_global(names[s.kernel]))
                   for s in plan.layout.steps if isinstance(s, KernelStep)}
        build_entry(first, plan.layout, ENTRY, kernels)
    return modules


def _in(module, fn):
    """`fn` (a kernel defined in some module), as `module` calls it: itself, or a declaration."""
    from llvmlite import ir
    if fn.module is module:
        return fn
    try:
        return module.get_global(fn.name)
    except KeyError:
        return ir.Function(module, fn.function_type, fn.name)


def link_native(graph: dict, plan: NativePlan) -> NativeCode:
    """The native code of `graph` (its document) under `plan`, emitted now or found in the cache. Its
    library is unloaded when the model's code and launchers are dropped. A model of many kernels is
    emitted in two parts compiled at once (one per core)."""
    from .target import optimize_and_emit_all
    parts = 2 if len(set(symbols(plan).values())) >= PARALLEL_KERNELS else 1
    key = cache_key("model", json.dumps(graph, sort_keys=True), plan.fingerprint())
    keys = [key] if parts == 1 else [f"{key}-{i}of{parts}" for i in range(parts)]

    def emit(missing: list) -> list:
        modules = emit_parts(plan, parts)
        objects = optimize_and_emit_all([str(modules[i]) for i in missing])
        return [(obj, imports_of(modules[i], obj)) for i, obj in zip(missing, objects)]
    found = cached_objects(keys, emit)
    names = symbols(plan)
    exports = list(dict.fromkeys(names.values())) + ([ENTRY] if plan.layout is not None else [])
    imports = set().union(*(imports for _, imports in found)) - set(exports)  # (one part calls another's kernels)
    assert imports <= MODEL_IMPORTS, f"emitted code imports {sorted(imports - MODEL_IMPORTS)}"
    library = NativeLibrary([obj for obj, _ in found], exports, imports)
    launchers = {name: FusedKernel(library.address(names[name]), k.spec, k.split_min, name, owner=library)
                 for name, k in plan.kernels.items()}
    entry = library.address(ENTRY) if plan.layout is not None else None
    return NativeCode(launchers, entry, library)
