"""From an optimized graph to native code: one kernel per fusion group, all in one LLVM module
(the `<entry>.ll` of a saved model), compiled for the host (cached on disk) and linked."""
from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from tscript_runtime import native
from tscript_runtime.kernels import LaunchSpec

from ..ir.graph import Graph
from ..ir.passes.fuse import GROUP, ROW_GROUP
from ..ir.types import TensorType
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

    def launch_specs(self) -> list[LaunchSpec]:
        """What a saved model stores about each kernel (see tscript_runtime.kernels)."""
        return [LaunchSpec(name, s.rank, tuple(s.inputs), tuple(self.input_dtypes[name]), tuple(s.out_dtypes),
                           s.out_row, s.row) for name, s in self.specs.items()]

    def link(self, obj: bytes | None = None) -> "NativeCode":
        """Load object code (compiled now, or from the cache, unless given) and make launchers."""
        if not self.specs:
            return self
        obj = obj if obj is not None else native.compile_cached(self.ll)
        self.library = native.NativeLibrary(obj, list(self.specs), native.declared_externals(self.ll))
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
    return NativeCode(str(module), specs, input_dtypes)
