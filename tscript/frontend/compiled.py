"""`tscript.jit.compile`: optimization passes + LLVM native code, returning a `CompiledModel`
(SPEC §5). The optimized graph runs in the one executor with native kernels for its fusion groups."""
from __future__ import annotations

from tscript_runtime.errors import InputError
from tscript_runtime.executor import ArrayDomain, Program

from .._tensor import Tensor
from ..ir.graph import Graph
from ..ir.passes.dce import eliminate_dead_code
from ..ir.passes.constant_propagation import propagate_constants
from ..ir.passes.fuse import fuse, fuse_rows
from ..ir.passes.pipeline import run_pipeline
from ..ir.passes.shape_propagation import fold_static_sizes, mark_dynamic, propagate_shapes
from ..ir.serialize import graph_to_json
from ..ir.types import TensorType
from .modules import ScriptFunction, ScriptModule, _attr_tree, to_arrays, to_tensors


def optimize_for_codegen(graph: Graph, dynamic: dict | None) -> Graph:
    """The pass pipeline, symbolic dims, then fusion (what the code generator consumes)."""
    if dynamic:
        mark_dynamic(graph, dynamic)
    run_pipeline(graph, level=2)
    propagate_shapes(graph)
    if fold_static_sizes(graph):
        propagate_constants(graph)
        propagate_shapes(graph)
    fuse_rows(graph)
    fuse(graph)
    eliminate_dead_code(graph)
    return graph


class CompiledModel:
    """A model compiled to native code; calling it returns tensors equal to eager."""

    def __init__(self, graph: Graph, module=None, dynamic: dict | None = None, name: str = "forward"):
        from ..codegen.native_graph import generate
        self.graph = graph
        self.module = module
        self.dynamic = dynamic
        self.name = name
        self.native = generate(graph).link()
        self._program = Program(graph_to_json(graph), ArrayDomain(graph.constants, self.native.launchers))
        self._inputs = [v for v in graph.inputs if not str(v.type).startswith("__module__")]

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR of the model's kernels (what a saved model stores)."""
        return self.native.ll

    def _check(self, args: tuple) -> None:
        if len(args) != len(self._inputs):
            raise InputError(f"compiled model expects {len(self._inputs)} inputs, got {len(args)}")
        for i, (a, v) in enumerate(zip(args, self._inputs)):
            t = v.type
            if not isinstance(t, TensorType):
                continue
            if not isinstance(a, Tensor):
                raise InputError(f"input {i} ('{v.name}') must be a Tensor, got {type(a).__name__}")
            if t.dtype is not None and a._data.dtype != t.dtype:
                raise InputError(f"input {i} ('{v.name}') must have dtype {t.dtype.name}, got {a._data.dtype.name}")
            if t.shape is not None:
                _check_shape(i, v.name, t.shape, a._data.shape, self.dynamic is not None)

    def __call__(self, *args):
        self._check(args)
        inputs = ((_attr_tree(self.module),) if self.module is not None else ()) + tuple(to_arrays(a) for a in args)
        outs = to_tensors(self._program.run(list(inputs)))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self) -> str:
        return f"<tscript.jit.CompiledModel {self.name}: {len(self.native.specs)} native kernels>"


def _check_shape(i: int, name: str, expected: tuple, got: tuple, fixed_dims: bool) -> None:
    if len(expected) != len(got):
        raise InputError(f"input {i} ('{name}') must have {len(expected)} dimensions, got shape {list(got)}")
    if not fixed_dims:
        return
    for d, (e, g) in enumerate(zip(expected, got)):
        if isinstance(e, int) and e != g:
            raise InputError(f"input {i} ('{name}'): dimension {d} must be {e} (not declared dynamic), got "
                             f"shape {list(got)}")


def compile(obj, example_inputs=None, backward: bool = False, dynamic: dict | None = None) -> CompiledModel:
    """Trace (or take the scripted graph of) `obj`, optimize, fuse and generate native code."""
    from ..jit import trace
    if backward:
        raise NotImplementedError("compile(backward=True) is not available yet")
    if not isinstance(obj, ScriptModule | ScriptFunction):
        if example_inputs is None:
            raise ValueError("compile() needs example_inputs to trace a function or module")
        obj = trace(obj, example_inputs, check_trace=False)
    module = obj._module if isinstance(obj, ScriptModule) else None
    graph = optimize_for_codegen(obj.inlined_graph.copy(), dynamic)
    return CompiledModel(graph, module, dynamic)
