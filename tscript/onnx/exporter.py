"""`tscript.onnx.export`: a model as an ONNX file, from its optimized IR. The stages, top-down:

    source graph (trace / scripted / compiled)       export_graph.source_graph
      -> names, dynamic axes as symbolic dims        here
      -> freeze + pass pipeline (no fusion)          export_graph.optimize_for_export
      -> each node through its export row            export_rows.ROWS (export_context.ExportContext)
      -> ModelProto, onnx.checker, written to `f`    here
"""
from __future__ import annotations

import os
import re
import tempfile

import numpy as np

from ..ir.graph import Graph, Value
from ..ir.types import TensorType
from ._require import require_onnx
from .errors import UnsupportedOperatorError
from .export_context import ExportContext
from .export_graph import optimize_for_export, source_graph, user_inputs
from .export_rows import ROWS

DEFAULT_OPSET = 17
MIN_OPSET = 13
_SYMBOL = re.compile(r"[^A-Za-z0-9_]")


def export(model, args, f, input_names=None, output_names=None, dynamic_axes=None,
           opset_version: int | None = None) -> None:
    """Export `model` (an nn.Module, a function, a ScriptModule/ScriptFunction or a CompiledModel),
    run on the example inputs `args` (a tensor or a tuple of tensors), to the ONNX file `f` (a path
    or a binary file object), as torch.onnx.export does. `input_names`/`output_names` name the graph's
    inputs and (flattened) outputs; `dynamic_axes` maps such a name to the dims that may vary (a list
    of dims, or a dict dim -> symbolic name); other dims are fixed to the example's sizes. Parameters
    and buffers become initializers; the file passes onnx.checker."""
    onnx = require_onnx()
    args = args if isinstance(args, tuple) else (args,)
    opset = _opset(onnx, opset_version)
    graph, module = source_graph(model, args)
    names_in = _input_names(user_inputs(graph), input_names)
    dynamic, symbols = _dynamic_inputs(names_in, dynamic_axes or {}, args)
    optimize_for_export(graph, module, args, dynamic)
    proto = to_model_proto(onnx, graph, opset, names_in, output_names, dynamic_axes or {}, symbols)
    onnx.checker.check_model(proto, full_check=True)
    _write(proto.SerializeToString(), f)


def _opset(onnx, opset_version) -> int:
    newest = onnx.defs.onnx_opset_version()
    opset = DEFAULT_OPSET if opset_version is None else opset_version
    if not isinstance(opset, int) or isinstance(opset, bool) or not MIN_OPSET <= opset <= newest:
        raise ValueError(f"tscript.onnx.export: opset_version must be an int from {MIN_OPSET} to {newest}, "
                         f"got {opset_version!r}")
    return opset


def _input_names(inputs: list[Value], names) -> list[str]:
    """The user's names for the first inputs (as torch.onnx), the traced argument names for the rest."""
    names = list(names or [])
    if len(names) > len(inputs):
        raise ValueError(f"tscript.onnx.export: {len(names)} input_names for a model of {len(inputs)} inputs")
    if len(set(names)) != len(names):
        raise ValueError(f"tscript.onnx.export: input_names {names} repeat a name")
    taken = set(names)
    for v in inputs[len(names):]:
        name = v.name
        while name in taken:
            name += "_"
        names.append(name)
        taken.add(name)
    return names


def _dynamic_inputs(names: list[str], dynamic_axes: dict, args: tuple) -> tuple[dict, dict]:
    """({input index: {dim: IR symbol}}, {IR symbol: ONNX dim name}) from `dynamic_axes`."""
    if not isinstance(dynamic_axes, dict):
        raise TypeError(f"tscript.onnx.export: dynamic_axes must be a dict, got {type(dynamic_axes).__name__}")
    dynamic, symbols = {}, {}
    for name, axes in dynamic_axes.items():
        if name not in names:
            continue  # an output's axes (checked when the outputs are named)
        index = names.index(name)
        axes = _axes(name, axes, args[index].dim())
        dynamic[index] = {}
        for d, label in axes.items():
            symbol = _SYMBOL.sub("_", label)
            symbol = symbol if symbol and not symbol[0].isdigit() else f"s_{symbol}"
            dynamic[index][d] = symbol
            symbols[symbol] = label
    return dynamic, symbols


def _axes(name: str, axes, rank: int | None) -> dict[int, str]:
    """{dim: label} of one dynamic_axes entry (list form: labels as torch.onnx makes them)."""
    if isinstance(axes, dict):
        items = list(axes.items())
    elif isinstance(axes, (list, tuple)):
        items = [(d, f"{name}_dynamic_axes_{k + 1}") for k, d in enumerate(axes)]
    else:
        raise TypeError(f"tscript.onnx.export: dynamic_axes['{name}'] must be a list of dims or a dict "
                        f"dim -> name, got {type(axes).__name__}")
    out = {}
    for d, label in items:
        if not isinstance(d, int) or isinstance(d, bool) or (rank is not None and not -rank <= d < rank):
            raise ValueError(f"tscript.onnx.export: dynamic_axes['{name}'] names dim {d!r}, but '{name}' has "
                             f"{rank} dims")
        out[d % rank if rank else d] = str(label)
    return out


def to_model_proto(onnx, graph: Graph, opset: int, input_names: list[str], output_names, dynamic_axes: dict,
                   symbols: dict):
    """The ModelProto of an optimized graph: every node through its row, then inputs, outputs and
    initializers."""
    _refuse_unsupported(graph)
    ctx = ExportContext(onnx, graph, opset)
    inputs, leaves = user_inputs(graph), _leaves(graph.outputs)
    names_out = _output_names(leaves, output_names, input_names, dynamic_axes)
    ctx.reserve(input_names + names_out)  # the user's names, exactly; generated names avoid them
    ctx.env.update(zip(inputs, input_names))
    for node in graph.nodes:
        ctx.node = node
        _bind(ctx, node, ROWS[node.kind](ctx, node))
    ctx.node = None
    for v, name in zip(leaves, names_out):
        ctx.nodes.append(onnx.helper.make_node("Identity", [ctx.tensor(v)], [name], name=ctx.fresh(f"{name}_out")))
    info = lambda v, name: _value_info(onnx, ctx, v, name, dynamic_axes.get(name, {}), symbols)  # noqa: E731
    proto = onnx.helper.make_graph(ctx.nodes, "tscript_graph", [info(v, ctx.env[v]) for v in inputs],
                                   [info(v, n) for v, n in zip(leaves, names_out)], ctx.initializers)
    opsets = [onnx.helper.make_opsetid("", opset)]
    from .. import __version__  # (the package root imports this module before it sets its version)
    model = onnx.helper.make_model(proto, opset_imports=opsets, producer_name="tscript",
                                   producer_version=__version__)
    model.ir_version = onnx.helper.find_min_ir_version_for(opsets)
    return model


def _refuse_unsupported(graph: Graph) -> None:
    missing: dict[str, int] = {}
    for node in graph.all_nodes():
        if node.kind not in ROWS:
            missing[node.kind] = missing.get(node.kind, 0) + 1
    if missing:
        listed = ", ".join(f"{k} (x{n})" if n > 1 else k for k, n in sorted(missing.items()))
        raise UnsupportedOperatorError(f"tscript.onnx.export: no ONNX translation for {listed}")


def _bind(ctx: ExportContext, node, result) -> None:
    """Record where a row put the node's outputs (see export_rows for the forms of `result`)."""
    if result is None:
        return
    if isinstance(result, tuple):
        assert len(result) == len(node.outputs), (node.kind, len(result))
        ctx.env.update(zip(node.outputs, result))
    else:
        ctx.env[node.outputs[0]] = result


def _leaves(values: list[Value]) -> list[Value]:
    """The tensors of the graph's outputs, tuples and lists flattened (as torch.onnx does)."""
    out = []
    for v in values:
        n = v.node
        if n is not None and n.kind in ("prim::TupleConstruct", "prim::ListConstruct"):
            out += _leaves(n.inputs)
        else:
            out.append(v)
    return out


def _output_names(leaves: list[Value], names, input_names: list[str], dynamic_axes: dict) -> list[str]:
    names = list(names or [])
    if len(names) > len(leaves):
        raise ValueError(f"tscript.onnx.export: {len(names)} output_names for a model of {len(leaves)} outputs")
    default = ["output"] if len(leaves) == 1 else [f"output_{i}" for i in range(len(leaves))]
    names += default[len(names):]
    if len(set(names) | set(input_names)) != len(names) + len(input_names):
        raise ValueError(f"tscript.onnx.export: output names {names} must differ from each other and from the "
                         f"input names {input_names}")
    unknown = sorted(set(dynamic_axes) - set(names) - set(input_names))
    if unknown:
        raise ValueError(f"tscript.onnx.export: dynamic_axes names {unknown}, which are neither inputs "
                         f"{input_names} nor outputs {names}")
    return names


def _value_info(onnx, ctx: ExportContext, v: Value, name: str, axes, symbols: dict):
    """Name, dtype and shape of a graph input or output: dims of `axes` (dynamic_axes) by name, symbolic
    dims by their dynamic_axes name, static ones by size, unknown ones left open."""
    dtype = ctx.value_dtype(v)
    shape = v.type.shape if isinstance(v.type, TensorType) else ()
    labels = _axes(name, axes, len(shape) if shape is not None else None) if axes else {}
    dims = None
    if shape is not None:
        dims = [labels.get(d, symbols.get(s, s) if isinstance(s, str) else s) for d, s in enumerate(shape)]
    return onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), dims)


def _write(data: bytes, f) -> None:
    """To a path (atomically: a temp file renamed), or to a binary file object."""
    if hasattr(f, "write"):
        f.write(data)
        return
    path = os.fspath(f)
    fd, tmp = tempfile.mkstemp(prefix=".tscript-onnx-", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
