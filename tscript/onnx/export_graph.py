"""The graph an ONNX export translates: the optimized IR, made top-down by these stages:

    trace (or take the scripted / compiled graph) -> inline -> symbolic dims (dynamic_axes)
      -> freeze: parameters and buffers become constants (ONNX initializers), batch norm folds into
         the conv / linear before it
      -> the pass pipeline without fusion (fusion groups and copy kernels are code-generation
         decisions; an ONNX runtime makes its own), its shape propagation extended (export_shapes)
      -> with dynamic axes, the sizes the shape rules cannot follow found by probing (export_shapes),
         and the pipeline again for what they let fold

A compiled model's fusion groups are put back as the nodes they hold.
"""
from __future__ import annotations

from .._tensor import Tensor
from ..frontend.modules import ScriptFunction, ScriptModule
from ..ir.graph import Graph, clone_node
from ..ir.passes.freeze import freeze_graph, prune_constants
from ..ir.passes.fuse import GROUP, ROW_GROUP
from ..ir.passes.fuse_conv import CONV_GROUP
from ..ir.passes.pipeline import PIPELINE, run_stages
from ..ir.passes.shape_propagation import propagate_shapes
from ..ir.types import ModuleType, TensorType, tensor_type
from ..jit.compiled import CompiledModel, CompiledTrainingModel
from ..jit.tracing import trace
from .errors import OnnxExporterError
from .export_shapes import fill_from_probes, forget_shapes, settle_shapes

# Stages of the pipeline that make code-generation decisions, not a better graph for ONNX.
_CODEGEN_STAGES = {"make_copies_explicit", "fuse_rows", "fuse", "fuse_conv"}
_MAX_PROBES = 8
EXPORT_PIPELINE = [(name, settle_shapes if fn is propagate_shapes else fn, level)
                   for name, fn, level in PIPELINE if name not in _CODEGEN_STAGES]


def optimize_for_export(graph: Graph, module, args: tuple, dynamic: dict) -> Graph:
    """`graph` (from `source_graph`) frozen and optimized in place; `dynamic` maps an input index to
    {dim: symbol} (its dims that stay symbolic)."""
    _type_inputs(graph, args)
    if dynamic:
        _mark_symbolic(graph, dynamic)
        forget_shapes(graph)  # sizes recorded while tracing may be the dynamic ones: derive them again
    dynamic = _symbolic_dims(graph)  # with those a compiled model was compiled for
    if module is not None:
        freeze_graph(graph, module)
    run_stages(graph, EXPORT_PIPELINE, level=2)
    examples = [tuple(a._data.shape) for a in args]
    for _ in range(_MAX_PROBES if dynamic else 0):  # sizes the rules cannot follow symbolically
        if not fill_from_probes(graph, user_inputs(graph), examples, dynamic):
            break
        run_stages(graph, EXPORT_PIPELINE, level=2)
    prune_constants(graph)
    return graph


def source_graph(model, args: tuple) -> tuple[Graph, object]:
    """(a copy of the inlined graph of `model`, traced on `args` unless it is scripted or compiled;
    the module its %self stands for, or None)."""
    if isinstance(model, CompiledTrainingModel):
        raise OnnxExporterError("tscript.onnx.export: a model compiled with backward=True cannot be exported; "
                                "export the module (in eval mode) instead")
    if isinstance(model, CompiledModel):
        graph = model.graph.copy()
        _ungroup(graph)
        return graph, model.module
    if not isinstance(model, ScriptModule | ScriptFunction):
        model = _trace_for_inference(model, args)
    module = model._module if isinstance(model, ScriptModule) else None
    return model.inlined_graph.copy(), module


def _trace_for_inference(model, args: tuple):
    """Trace `model` in eval mode (as torch.onnx.export does by default), restoring its mode after."""
    from ..nn.modules.module import Module
    if not isinstance(model, Module):
        return trace(model, args, check_trace=False)
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        return trace(model, args, check_trace=False)
    finally:
        for m, training in modes:
            m.training = training


def user_inputs(graph: Graph) -> list:
    """The graph's inputs without %self."""
    return [v for v in graph.inputs if not isinstance(v.type, ModuleType)]


def _type_inputs(graph: Graph, args: tuple) -> None:
    """Every input must be a tensor; scripted graphs get the examples' dtypes and shapes."""
    inputs = user_inputs(graph)
    if len(inputs) != len(args):
        raise OnnxExporterError(f"tscript.onnx.export: the model takes {len(inputs)} inputs, "
                                f"{len(args)} example inputs were given")
    for i, (v, a) in enumerate(zip(inputs, args)):
        if not isinstance(a, Tensor) or not isinstance(v.type, TensorType):
            raise OnnxExporterError(f"tscript.onnx.export: input {i} ('{v.name}') must be a Tensor, got "
                                    f"{type(a).__name__}")
        if v.type.dtype is None or v.type.shape is None:
            v.type = tensor_type(a._data.dtype, a._data.shape)


def _mark_symbolic(graph: Graph, dynamic: dict) -> None:
    inputs = user_inputs(graph)
    for index, dims in dynamic.items():
        v = inputs[index]
        shape = list(v.type.shape)
        for d, symbol in dims.items():
            shape[d] = symbol
        v.type = tensor_type(v.type.dtype, shape)


def _symbolic_dims(graph: Graph) -> dict:
    """{input index: {dim: symbol}} of the inputs' symbolic dims."""
    found = {}
    for i, v in enumerate(user_inputs(graph)):
        dims = {d: s for d, s in enumerate(v.type.shape or ()) if isinstance(s, str)}
        if dims:
            found[i] = dims
    return found


def _ungroup(graph: Graph) -> None:
    """Replace every fusion / row / convolution group by the nodes of its subgraph."""
    for node in list(graph.all_nodes()):
        if node.kind not in (GROUP, ROW_GROUP, CONV_GROUP):
            continue
        sub = node.attrs["subgraph"]
        value_map = dict(zip(sub.inputs, node.inputs))
        for n in sub.nodes:
            clone_node(n, node.owner, value_map).move_before(node)
        node.output.replace_all_uses_with(value_map[sub.outputs[0]])
        node.destroy()
