"""`tscript.jit.compile`, the driver: the stages that turn a function or module into a CompiledModel,
top-down:

    trace (or take the scripted graph)
      -> pass pipeline, symbolic dims, fusion                       (tscript.ir.passes)
         [backward=True: lift the parameters to inputs -> pass pipeline -> differentiate (tscript.autodiff)
          -> forward and backward graphs, each through the pipeline and fusion]
      -> native plan: kernel templates, schedules, entry steps     (tscript.codegen)
      -> Executable: emits, links and runs the code                 (tscript_runtime)

The last two stages happen in CompiledModel (compiled.py), which saving reuses (model_file.py).
"""
from __future__ import annotations

from tscript_runtime.dtypes import is_float
from tscript_runtime.gc_paused import gc_paused

from .._tensor import Tensor
from ..frontend.modules import ScriptFunction, ScriptModule, _attr_tree, to_arrays
from ..ir.graph import Graph
from ..ir.passes.inline import inline_calls
from ..ir.passes.pipeline import PIPELINE, run_stages
from ..ir.passes.shape_propagation import mark_dynamic
from ..ir.types import TensorType, tensor_type
from . import stage_cache
from .binding import binder_of
from .compiled import CompiledModel, CompiledTrainingModel
from .stages import optimized_and_planned
from .tracing import trace


@gc_paused
def compile(obj, example_inputs=None, backward: bool = False, dynamic: dict | None = None) -> CompiledModel:
    """Trace (or take the scripted graph of) `obj`, optimize, fuse and generate native code."""
    if not isinstance(obj, ScriptModule | ScriptFunction):
        if example_inputs is None:
            raise ValueError("compile() needs example_inputs to trace a function or module")
        obj = trace(obj, example_inputs, check_trace=False)
    if example_inputs is not None and hasattr(obj, "prepare"):  # a scripted forward typed by its first call
        obj.prepare(example_inputs if isinstance(example_inputs, tuple) else (example_inputs,))
    binder = binder_of(obj)
    if binder is not None and example_inputs is not None:  # a scripted forward's defaults complete the examples
        example_inputs = binder.bind(example_inputs if isinstance(example_inputs, tuple) else (example_inputs,), {})
    module = obj._module if isinstance(obj, ScriptModule) else None
    if backward:
        compiled = _compile_training(obj, module, example_inputs, dynamic)
    else:
        graph = obj.inlined_graph.copy()
        if dynamic and example_inputs is not None:  # scripted graphs: symbolic dims need the examples' shapes
            args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
            _type_inputs(graph.inputs[1 if module is not None else 0:], args)
        optimized, plan = optimized_and_planned(graph, dynamic)
        compiled = CompiledModel(optimized, module, dynamic, plan=plan)
    compiled.example_shapes = _shapes(example_inputs)
    compiled.binder = binder
    return compiled


def _shapes(example_inputs) -> list | None:
    """The shapes of the example tensors (None for other arguments): what a saved model plans for first."""
    if example_inputs is None:
        return None
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    return [tuple(a.shape) if isinstance(a, Tensor) else None for a in args]


def _compile_training(obj, module, example_inputs, dynamic) -> CompiledTrainingModel:
    """Forward and backward graphs (symbolic autodiff), each optimized, fused and compiled."""
    from ..autodiff import differentiate_telling
    graph, wrt, examples, lifted, float_inputs = training_graph(obj, module, example_inputs, dynamic)
    d = stage_cache.differentiated(graph, wrt, examples, lambda: differentiate_telling(graph, wrt, examples))
    return CompiledTrainingModel(d, module, lifted, float_inputs, dynamic)


def training_graph(obj, module, example_inputs, dynamic) -> tuple:
    """What autodiff differentiates: (graph with the parameters that require grad lifted to inputs,
    wrt values, example inputs of the graph, lifted parameters, indices of the float inputs)."""
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    graph = obj.graph.copy()
    inline_calls(graph, keep=("prim::PythonOp",))  # autodiff records traced Functions' own backward
    lifted = lift_parameters(graph, module) if module is not None else []
    user = graph.inputs[1 if module is not None else 0:len(graph.inputs) - len(lifted)]
    _type_inputs(user, args)
    if dynamic:
        mark_dynamic(graph, dynamic)
        _forget_shapes(graph)  # sizes recorded while tracing may be the batch size: derive them again
    run_stages(graph, [s for s in PIPELINE if s[0] not in ("inline", "fuse_rows", "fuse")], level=2)
    floats = [v for v in user if _is_float(v)]
    examples = ([_attr_tree(module)] if module is not None else []) + [to_arrays(a) for a in args] + \
        [p._data for _, p, _ in lifted]
    return graph, [lv for _, _, lv in lifted] + floats, examples, lifted, [user.index(v) for v in floats]


def _type_inputs(inputs: list, args: tuple) -> None:
    """Tensor inputs of unknown type (scripted graphs) get the examples' dtypes and shapes."""
    for v, a in zip(inputs, args):
        if isinstance(v.type, TensorType) and (v.type.dtype is None or v.type.shape is None) and isinstance(a, Tensor):
            v.type = tensor_type(a._data.dtype, a._data.shape)


def _forget_shapes(graph: Graph) -> None:
    for node in graph.all_nodes():
        for v in node.outputs:
            if isinstance(v.type, TensorType) and v.type.shape is not None:
                v.type = tensor_type(v.type.dtype, (None,) * len(v.type.shape))


def _is_float(v) -> bool:
    return isinstance(v.type, TensorType) and v.type.dtype is not None and is_float(v.type.dtype)


def lift_parameters(graph: Graph, module) -> list[tuple[str, object, object]]:
    """Replace prim::GetAttr reads of parameters that require grad (in If branches too) by new graph
    inputs, so autodiff can differentiate with respect to them; returns (state_dict name, Parameter,
    input Value) triples."""
    params = {id(p): (name, p) for name, p in module.named_parameters() if p.requires_grad}
    lifted, seen = [], {}
    objects = {graph.inputs[0]: module}
    for node in list(graph.all_nodes()):
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
