"""`Executable`: one graph ready to run in this process. `tscript.jit.compile` and
`tscript_runtime.load` build theirs through this one class, so native execution has one path: the
whole-graph entry when the native plan has one and the call's signature can be planned, else the
graph executor calling the native kernels of the fusion groups (and interpreting the rest).

Building one checks the native plan against the graph (native_plan.py), then emits, compiles (or
finds in the object cache) and links the code. Where native code cannot run here (no llvmlite, no
BLAS, an LLVM error), the executor runs the graph on the reference kernels, with a warning.
"""
from __future__ import annotations

import warnings

from .executor import ArrayDomain, Program, check_constants
from .graph_entry import GraphEntry
from .graph_json import check_graph
from .native_plan import NativePlan
from .typed_graph import typed_graph


def compile_ahead(jobs: list) -> None:
    """Compile the native code the Executables of several graphs, [(graph document, plan), ...], will
    link before they are built: one in a child process, the others here, whichever finishes sooner
    (native/emit.py's compile_ahead). Speculative work: a problem here is not reported (each
    Executable reports it when it is built)."""
    try:
        natives = []
        for graph, plan in jobs:
            check_graph(graph)
            natives.append((graph, NativePlan.from_json(plan, typed_graph(graph), graph)))
        from .native.emit import compile_ahead as compile_natives
        compile_natives(natives)
    except Exception:  # noqa: BLE001 - anything the Executable would raise, it raises itself later
        pass


class Executable:
    """A graph document with its tensor constants and native plan (None: no native code), ready to
    `run`; `reader` reads the parameters from the module argument (graph_entry.TreeReader: nested
    mappings). Several threads may run it at once. The document is checked here (check_graph, and
    check_constants: every tensor constant it names is in `constants`), unless `checked` says its
    reader did; `text` is the JSON text it was parsed from, if it was (what the object cache keys its
    code by, instead of the document serialized again)."""

    def __init__(self, graph: dict, constants: dict, plan: dict | None, reader=None, where: str = "graph",
                 checked: bool = False, text: bytes | None = None):
        self.graph, self.constants, self.text = graph, constants, text
        if not checked:  # (a saved model's graphs were checked as they were read)
            check_graph(graph)
            check_constants(graph, constants)
        self.plan = NativePlan.from_json(plan, typed_graph(graph), graph) if plan is not None else None
        self.mode, self.reason = "interpreted", ""  #: "native", "interpreted" (no plan) or "reference"
        self.code = None
        self.entry: GraphEntry | None = None
        if self.plan is not None:
            self._link(reader, where)
        # with an entry running the graph, the executor's program waits until a call needs it (`program`)
        self._program = Program(graph, ArrayDomain(constants, self.launchers)) if self.entry is None else None

    def _link(self, reader, where: str) -> None:
        from .native.emit import link_native
        try:
            self.code = link_native(self.graph, self.plan, self.text)
        except Exception as e:  # no llvmlite, no BLAS, an LLVM error: the reference kernels still give the answer
            self.mode, self.reason = "reference", _reason(e)
            warnings.warn(f"{where}: native code cannot be used here ({self.reason}); its fusion groups run on the "
                          f"reference kernels instead", RuntimeWarning, stacklevel=4)
            return
        self.mode = "native"
        from .native import library
        library.parallel2()  # the worker big launches hand their second halves to: started now, not in a first run
        if self.code.entry is not None:
            self.entry = GraphEntry(self.plan.layout, self.code.entry, self.code.launchers, self.constants, reader,
                                    self.code.library)

    @property
    def program(self) -> Program:
        """The graph compiled for the executor: built here the first time it is needed when the
        whole-graph entry runs the graph (a call the entry cannot plan, a profile). What building it
        checks of the graph, that the constants it names are stored, was checked with the graph."""
        if self._program is None:
            self._program = Program(self.graph, ArrayDomain(self.constants, self.launchers))
        return self._program

    @property
    def launchers(self) -> dict:
        """Kernel name -> launcher (kernels.FusedKernel) of the linked kernels."""
        return self.code.launchers if self.code is not None else {}

    def run(self, args: list) -> list:
        """The graph's outputs for `args` (one per graph input, the module's attribute tree first
        when the graph reads one)."""
        if self.entry is not None:
            outs = self.entry.run(args)
            if outs is not None:
                return outs
        return self.program.run(args)

    def prepare(self, args: list) -> bool:
        """Plan the whole-graph entry for the signature of `args` now, so that a first call with
        that signature costs what later ones do; False when it runs in the executor."""
        return self.entry is not None and self.entry.prepare(args)

    def describe(self) -> str:
        """One line for people: what runs natively here and how."""
        n = len(self.plan.kernels) if self.plan is not None else 0
        kernels = f"{n} kernel{'s' * (n != 1)}"
        if self.mode == "interpreted":
            return "no native code: the executor runs the graph on the reference kernels"
        if self.mode == "reference":
            return f"{kernels}, not usable here ({self.reason}): fusion groups run on the reference kernels"
        from .native.target import host
        if self.entry is not None:
            return f"{kernels} emitted for this CPU ({host()['cpu']}); whole graph in one native call" + \
                _epilogues(self.plan.layout.steps)
        why = f" (no whole-graph call: {self.plan.why_no_entry})" if self.plan.why_no_entry else ""
        return f"{kernels} emitted for this CPU ({host()['cpu']}); the executor calls them{why}"


def _epilogues(steps: list) -> str:
    """How many convolutions of the entry run their pointwise ops as their epilogue (ConvGroups)."""
    n = sum(getattr(s, "epilogue", None) is not None for s in steps)
    return f"; {n} convolutions with fused epilogues" if n > 1 else "; 1 convolution with a fused epilogue" if n else ""


def _reason(e: Exception) -> str:
    if isinstance(e, ImportError) and (e.name or "").startswith("llvmlite"):
        return "llvmlite is not installed"
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200] if text else ''}"
