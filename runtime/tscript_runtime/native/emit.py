"""From a checked graph and its native plan to code running in this process: one LLVM module holding
every kernel (native/pointwise.py, native/row.py) and the whole-graph entry (native/entry.py),
compiled for this CPU or read back from the object cache, linked, and wrapped in launchers.

Function names are the emitter's own (`kernel_<i>`, `entry`): no name from a file reaches the LLVM IR.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..entry_steps import KernelStep
from ..graph_json import document_text
from ..kernels import FusedKernel
from ..native_plan import NativePlan
from . import child_builds
from . import library as kernel_library
from .cache import cache_key, cached_object, lookup
from .library.parts import CHILD_START, MODEL_IR_SECONDS_PER_BYTE
from .link import MODEL_IMPORTS, NativeLibrary, declared_functions, imports_of_declared

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
    code (equal KernelPlan.code: an unrolled loop's steps, a transformer's layers) share one function."""
    first, names = {}, {}
    for i, (name, k) in enumerate(plan.kernels.items()):
        names[name] = first.setdefault(k.code, f"kernel_{i}")
    return names


def emit_module(plan: NativePlan, timed: bool = False):
    """The llvmlite module of every kernel of `plan` and its whole-graph entry (`timed`: one that
    counts the cycles of each step, entry.build_entry)."""
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
        build_entry(module, plan.layout, ENTRY, kernels, timed)
    return module


def compile_ahead(jobs: list) -> None:
    """Compile the native code of several graphs, [(graph document, plan), ...] (a training step's
    forward and backward), into the object cache before they are linked: one may go to a child process
    (child_builds.py) while the others compile here, whichever finishes first overall (LLVM time follows
    the IR's size, and a child starts CHILD_START later); what is cached or being built is skipped."""
    todo = []
    for graph, plan in jobs:
        key = _key(graph, plan)
        if not child_builds.building(key) and lookup(key) is None:
            module = emit_module(plan)
            todo.append((key, str(module), declared_functions(module)))
    seconds = [len(text) * MODEL_IR_SECONDS_PER_BYTE for _, text, _ in todo]
    total = sum(seconds)
    finish = {i: max(CHILD_START + s, total - s) for i, s in enumerate(seconds)} if child_builds.enabled() else {}
    child = min(finish, key=finish.get, default=None)  # (the first of equals)
    if child is not None and finish[child] >= total:
        child = None  # all here: a child would not finish sooner
    for i, (key, text, declared) in enumerate(todo):
        if i == child:
            child_builds.build_object(key, text, declared)
    for i, (key, text, declared) in enumerate(todo):
        if i != child:
            cached_object(key, lambda text=text, declared=declared: _compile(text, declared))


def _compile(text: str, declared: set) -> tuple[bytes, set[str]]:
    """(object code, imports) of a model's module here; the library parts it calls that are missing
    start compiling on the other core meanwhile."""
    from .target import optimize_and_emit
    kernel_library.prefetch(declared, len(text) * MODEL_IR_SECONDS_PER_BYTE)
    obj = optimize_and_emit(text)
    return obj, imports_of_declared(declared, obj)


def _key(graph: dict, plan: NativePlan, text: bytes | None = None, timed: bool = False) -> str:
    """The object cache key of `graph`'s code under `plan`; `text`: the JSON text the document was
    read from (a saved model's member), hashed as it is instead of serializing the document again;
    `timed`: the build whose entry counts each step's cycles (a cache entry of its own)."""
    return cache_key("model-timed" if timed else "model", document_text(graph).encode() if text is None else text,
                     plan.fingerprint())


def native_object(graph: dict, plan: NativePlan, text: bytes | None = None, timed: bool = False) -> tuple:
    """(object code, imports) of `graph`'s code under `plan` (`timed`: with the timed entry), from the
    cache or emitted and compiled now (after compile_ahead's child, if it is building it)."""
    key = _key(graph, plan, text, timed)

    def emit():
        module = emit_module(plan, timed)
        return _compile(str(module), declared_functions(module))
    child_builds.wait_for(key)
    return cached_object(key, emit)


def link_native(graph: dict, plan: NativePlan, text: bytes | None = None) -> NativeCode:
    """The native code of `graph` (its document, read from the JSON `text` if given) under `plan`,
    emitted now or found in the cache. Its library is unloaded when the model's code and launchers are
    dropped."""
    obj, imports = native_object(graph, plan, text)
    assert imports <= MODEL_IMPORTS, f"emitted code imports {sorted(imports - MODEL_IMPORTS)}"
    names = symbols(plan)
    exports = list(dict.fromkeys(names.values())) + ([ENTRY] if plan.layout is not None else [])
    library = NativeLibrary(obj, exports, imports)
    launchers = {name: FusedKernel(library.address(names[name]), k.spec, k.split_min, name, owner=library)
                 for name, k in plan.kernels.items()}
    entry = library.address(ENTRY) if plan.layout is not None else None
    return NativeCode(launchers, entry, library)
