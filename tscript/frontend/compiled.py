"""`tscript.jit.compile`: optimization passes + LLVM native code, returning a `CompiledModel`
(SPEC §5). The optimized graph runs in the one executor with native kernels for its fusion groups."""
from __future__ import annotations

import numpy as np

from tscript_runtime.errors import InputError
from tscript_runtime.executor import ArrayDomain, Program

from .._tensor import Tensor
from ..autograd.graph import FREED_MESSAGE, Node, edge
from ..ir.graph import Graph
from ..ir.passes.dce import eliminate_dead_code
from ..ir.passes.pipeline import run_pipeline
from ..ir.passes.shape_propagation import mark_dynamic, propagate_shapes
from ..ir.serialize import graph_to_json
from ..ir.types import TensorType
from .modules import ScriptFunction, ScriptModule, _attr_tree, to_arrays, to_tensors


def optimize_for_codegen(graph: Graph, dynamic: dict | None) -> Graph:
    """The pass pipeline, symbolic dims, then fusion (what the code generator consumes)."""
    if dynamic:
        mark_dynamic(graph, dynamic)
    run_pipeline(graph, level=2)  # ends with fusion: what the code generator consumes
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
                _check_shape(i, v.name, t.shape, a._data.shape)

    def __call__(self, *args):
        self._check(args)
        inputs = ((_attr_tree(self.module),) if self.module is not None else ()) + tuple(to_arrays(a) for a in args)
        outs = to_tensors(self._program.run(list(inputs)))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self) -> str:
        return f"<tscript.jit.CompiledModel {self.name}: {len(self.native.specs)} native kernels>"


def _check_shape(i: int, name: str, expected: tuple, got: tuple) -> None:
    """Only dims named in `dynamic` (symbolic in the graph) may vary: the optimizer may have folded
    the other sizes into the code."""
    if len(expected) != len(got):
        raise InputError(f"input {i} ('{name}') must have {len(expected)} dimensions, got shape {list(got)}")
    for d, (e, g) in enumerate(zip(expected, got)):
        if isinstance(e, int) and e != g:
            raise InputError(f"input {i} ('{name}'): dimension {d} must be {e} (not declared dynamic), got "
                             f"shape {list(got)}")


def compile(obj, example_inputs=None, backward: bool = False, dynamic: dict | None = None) -> CompiledModel:
    """Trace (or take the scripted graph of) `obj`, optimize, fuse and generate native code."""
    from ..jit import trace
    if not isinstance(obj, ScriptModule | ScriptFunction):
        if example_inputs is None:
            raise ValueError("compile() needs example_inputs to trace a function or module")
        obj = trace(obj, example_inputs, check_trace=False)
    module = obj._module if isinstance(obj, ScriptModule) else None
    if backward:
        return _compile_training(obj, module, example_inputs, dynamic)
    graph = optimize_for_codegen(obj.inlined_graph.copy(), dynamic)
    return CompiledModel(graph, module, dynamic)


def _compile_training(obj, module, example_inputs, dynamic) -> CompiledTrainingModel:
    """Forward and backward graphs (symbolic autodiff), each optimized, fused and compiled."""
    from ..autodiff import differentiate
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    graph = obj.inlined_graph.copy()
    lifted = lift_parameters(graph, module) if module is not None else []
    if dynamic:
        mark_dynamic(graph, dynamic)
    run_pipeline(graph, level=1)
    propagate_shapes(graph)
    tensor_inputs = [v for v in graph.inputs if isinstance(v.type, TensorType)]
    user_inputs = [v for v in tensor_inputs if v not in {lv for _, _, lv in lifted}]
    wrt = [lv for _, _, lv in lifted] + [v for v in user_inputs if v.type.dtype is not None and v.type.dtype.kind == "f"]
    examples = ([_attr_tree(module)] if module is not None else []) + [to_arrays(a) for a in args] + \
        [p._data for _, p, _ in lifted]
    forward, backward, saved = differentiate(graph, wrt, examples)
    for g in (forward, backward):
        optimize_for_codegen(g, None)
    return CompiledTrainingModel(forward, backward, module, lifted, len(saved), dynamic)


# -- training: compile(..., backward=True) ---------------------------------------------------------------

def lift_parameters(graph: Graph, module) -> list[tuple[str, object, object]]:
    """Replace prim::GetAttr reads of parameters that require grad by new graph inputs (so autodiff can
    differentiate with respect to them); returns (state_dict name, Parameter, input Value) triples."""
    params = {id(p): (name, p) for name, p in module.named_parameters() if p.requires_grad}
    lifted, seen = [], {}
    objects = {graph.inputs[0]: module}
    for node in list(graph.nodes):
        if node.kind != "prim::GetAttr" or node.inputs[0] not in objects:
            continue
        obj = getattr(objects[node.inputs[0]], node.attrs["name"])
        objects[node.output] = obj
        if id(obj) not in params:
            continue
        name, p = params[id(obj)]
        if id(obj) not in seen:
            seen[id(obj)] = graph.add_input(node.output.type, name.replace(".", "_"))
            lifted.append((name, p, seen[id(obj)]))
        node.output.replace_all_uses_with(seen[id(obj)])
        node.destroy()
    return lifted


class CompiledTrainingModel(CompiledModel):
    """A compiled model with a compiled backward: outputs get a `grad_fn` that runs it."""

    def __init__(self, forward: Graph, backward: Graph, module, lifted: list, n_saved: int, dynamic):
        super().__init__(forward, module, dynamic)
        from ..codegen.native_graph import generate
        self.backward_graph = backward
        self.lifted = lifted
        self.n_saved = n_saved
        self.backward_native = generate(backward, "kb").link()
        self._backward = Program(graph_to_json(backward), ArrayDomain(backward.constants, self.backward_native.launchers))
        self._inputs = self._inputs[:len(self._inputs) - len(lifted)]

    def __call__(self, *args):
        from ..autograd.grad_mode import state as grad_state
        self._check(args)
        params = [p for _, p, _ in self.lifted]
        arrays = ((_attr_tree(self.module),) if self.module is not None else ()) + \
            tuple(to_arrays(a) for a in args) + tuple(p._data for p in params)
        outs = self._program.run(list(arrays))
        n_out = len(outs) - self.n_saved
        results, saved = outs[:n_out], outs[n_out:]
        tensors = to_tensors(results)
        wrt = params + [a for a in args if isinstance(a, Tensor)]
        if grad_state.enabled and any(t.requires_grad for t in wrt):
            _attach(tensors, _CompiledBackward(self, saved, wrt, [r.shape for r in results],
                                               [r.dtype for r in results]))
        return tensors[0] if len(tensors) == 1 else tuple(tensors)


def _attach(outputs: list, node) -> None:
    for nr, o in enumerate(outputs):
        if isinstance(o, Tensor) and o._data.dtype.kind == "f":
            o._requires_grad, o.grad_fn, o._output_nr = True, node, nr


class _CompiledBackward(Node):
    """The autograd node of one compiled forward call: runs the compiled backward graph."""

    def __init__(self, model: CompiledTrainingModel, saved: list, wrt: list, shapes: list, dtypes: list):
        super().__init__([edge(t) for t in wrt], len(shapes))
        self.model, self.saved, self.shapes, self.dtypes = model, saved, shapes, dtypes

    def name(self) -> str:
        return "CompiledBackward"

    def apply(self, grads: list) -> list:
        """Gradients for the parameters, then the tensor inputs (the order of `wrt`)."""
        if self.saved is None:
            raise RuntimeError(FREED_MESSAGE)
        arrays = [g._data if g is not None else np.zeros(s, d) for g, s, d in zip(grads, self.shapes, self.dtypes)]
        return to_tensors(self.model._backward.run(arrays + list(self.saved)))

    def release(self) -> None:
        self.saved = None
