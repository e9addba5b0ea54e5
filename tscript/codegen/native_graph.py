"""From an optimized graph to native code: one kernel per fusion group, all in one LLVM module
(the `<entry>.ll` of a saved model), compiled for the host (cached on disk) and linked."""
from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from tscript_runtime import native
from tscript_runtime.graph_entry import EntryLayout, GraphEntry, try_layout
from tscript_runtime.kernels import LaunchSpec

from ..ir.graph import Graph
from ..ir.passes.fuse import GROUP, ROW_GROUP
from ..ir.serialize import graph_to_json
from ..ir.types import TensorType
from .graph_entry import build_entry
from .kernel import KernelSpec, build_kernel
from .row_kernel import build_row_kernel, is_row_scalar


@dataclass
class NativeCode:
    """The LLVM IR of a graph's kernels, their launch specs, and (once linked) the object code it
    was linked from and the launchers."""
    ll: str
    specs: dict[str, KernelSpec]
    input_dtypes: dict = field(default_factory=dict)  # kernel name -> dtypes of its tensor inputs
    launchers: dict = field(default_factory=dict)
    library: object = None
    object: bytes | None = None
    layout: EntryLayout | None = None   # the whole-graph entry's layout, when every node lowers
    entry: str | None = None            # ... and its function's name

    def graph_entry(self, constants: dict, reader=None) -> GraphEntry | None:
        """The runner of the linked whole-graph entry (None without one); `reader` reads the
        parameters (see GraphEntry)."""
        if self.entry is None or self.library is None:
            return None
        return GraphEntry(self.layout, self.library.address(self.entry), self.launchers, constants, reader)

    def launch_specs(self) -> list[LaunchSpec]:
        """What a saved model stores about each kernel (see tscript_runtime.kernels)."""
        return [LaunchSpec(name, s.rank, tuple(s.inputs), tuple(self.input_dtypes[name]), tuple(s.out_dtypes),
                           s.out_row, s.row) for name, s in self.specs.items()]

    def link(self, obj: bytes | None = None) -> "NativeCode":
        """Load object code (compiled now, or from the cache, unless given) and make launchers."""
        if not self.specs and not self.entry:
            return self
        obj = obj if obj is not None else native.compile_cached(self.ll)
        exports = list(self.specs) + ([self.entry] if self.entry else [])
        self.library = native.NativeLibrary(obj, exports, native.declared_externals(self.ll))
        self.launchers = {s.name: s.launcher(self.library.address(s.name)) for s in self.launch_specs()}
        self.object = obj
        return self


def generate(graph: Graph, prefix: str = "k") -> NativeCode:
    """Kernels for every fusion group of `graph`; each group gets a `kernel` attribute naming its function."""
    module = ir.Module(prefix)
    h = native.host()
    module.triple = h["triple"]
    specs, input_dtypes = {}, {}
    for node in graph.all_nodes():
        if node.kind in (GROUP, ROW_GROUP):
            name = f"{prefix}_fusion_{len(specs)}"
            sub = node.attrs["subgraph"]
            if node.kind == GROUP:
                specs[name] = build_kernel(sub, name, module)
            else:
                specs[name] = build_row_kernel(sub, name, module)
                specs[name].out_row = is_row_scalar(sub.outputs[0], specs[name].rank)
                specs[name].row = True
            input_dtypes[name] = [v.type.dtype for v in sub.inputs if isinstance(v.type, TensorType)]
            node.attrs["kernel"] = name
    code = NativeCode("", specs, input_dtypes)
    if native.blas_library() is not None:
        code.layout = try_layout(graph_to_json(graph), {s.name: s for s in code.launch_specs()})
    if code.layout is not None:
        code.entry = code.layout.symbol(prefix)
        build_entry(module, code.layout, code.entry)
    code.ll = str(module)
    return code
