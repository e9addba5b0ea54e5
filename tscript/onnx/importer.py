"""`tscript.onnx.load`: an ONNX model as a tscript graph. The stages, top-down:

    read the bytes (bounded) -> parse the ModelProto -> every op must have an import row (all missing
      ones named at once) -> external data -> onnx.checker -> the default-domain opset
      -> each node through its row (import_rows.ROWS, import_context.ImportContext)
      -> constant folding, canonicalization, batch norm folded into convolutions, CSE, DCE, shapes
      -> verified, returned as an `OnnxFunction` (a ScriptFunction: call it, tscript.jit.compile /
         optimize / save it like a traced function)

The file is untrusted: anything wrong with it (not protobuf, fails the checker, external data,
unsupported dtypes or ops, a node the rows cannot make sense of) is a `ModelError` naming what.
Nothing in the file is run; external data is read only from files inside the model's directory
(external_data.py).
"""
from __future__ import annotations

import os

import numpy as np

from tscript_runtime.errors import ModelError

from ..frontend.modules import ScriptFunction
from ..ir.graph import Graph
from ..ir.passes.freeze import prune_constants
from ..ir.passes.pipeline import FREEZE_PIPELINE, run_stages
from ..ir.passes.shape_propagation import propagate_shapes
from ..ir.types import TensorType, tensor_type
from ..ir.verify import verify
from ._require import require_onnx
from .errors import UnsupportedOnnxOpsError
from .external_data import load_external_data
from .import_context import SUPPORTED_DTYPES, Dims, ImportContext, identifier
from .import_rows import DTYPE_NAMES, DTYPES, HAVE, ROWS

MAX_ONNX_BYTES = 2 << 30   # protobuf's own limit for one message
MIN_OPSET = 7
_DOMAINS = ("", "ai.onnx")
CLEANUP = [*FREEZE_PIPELINE, ("shape_propagation", propagate_shapes, 0)]


class OnnxFunction(ScriptFunction):
    """An imported ONNX model: a ScriptFunction over the ONNX graph's inputs (tensors, in order),
    returning its outputs; `onnx_input_names` / `onnx_output_names` are the names in the file."""

    def __init__(self, graph: Graph, name: str, input_names: list[str], output_names: list[str], opset: int):
        super().__init__(graph, name)
        self.onnx_input_names = input_names
        self.onnx_output_names = output_names
        self.opset = opset

    def __repr__(self) -> str:
        return f"<tscript.onnx.OnnxFunction {self.name}: opset {self.opset}, inputs {self.onnx_input_names}>"


def load(f) -> OnnxFunction:
    """Read the ONNX model `f` (a path, bytes, a binary file object or an onnx.ModelProto) into a
    tscript graph."""
    onnx = require_onnx()
    model = _parse(onnx, _read(f))
    try:
        _refuse_unsupported(model.graph)
        load_external_data(onnx, model, _directory(f))
        _check(onnx, model)
        opset = _opset(model)
        graph = _build(onnx, model, opset)
    except ModelError:
        raise
    except Exception as e:  # a malformed field no stage expected: still the file's fault, named
        raise ModelError(f"ONNX model: cannot be imported: {type(e).__name__}: {e}") from None
    names_in = [i.name for i in _graph_inputs(model.graph)]
    return OnnxFunction(graph, identifier(model.graph.name or "onnx_model", "onnx_model"), names_in,
                        [o.name for o in model.graph.output], opset)


def _read(f) -> bytes:
    if hasattr(f, "SerializeToString"):  # a ModelProto already in memory: checked like a file
        data = f.SerializeToString()
    elif isinstance(f, (bytes, bytearray, memoryview)):
        data = bytes(f)
    elif hasattr(f, "read"):
        data = f.read(MAX_ONNX_BYTES + 1)
    else:
        path = os.fspath(f)
        try:
            if os.path.getsize(path) > MAX_ONNX_BYTES:
                raise ModelError(f"ONNX model {path}: larger than {MAX_ONNX_BYTES} bytes")
            with open(path, "rb") as fh:
                data = fh.read(MAX_ONNX_BYTES + 1)
        except OSError as e:
            raise ModelError(f"ONNX model {path}: cannot be read: {e}") from None
    if len(data) > MAX_ONNX_BYTES:
        raise ModelError(f"ONNX model: larger than {MAX_ONNX_BYTES} bytes")
    return data


def _directory(f) -> str | None:
    """The directory of a model read from a path (where its external data files are)."""
    if isinstance(f, (bytes, bytearray, memoryview)) or hasattr(f, "read") or hasattr(f, "SerializeToString"):
        return None
    return os.path.dirname(os.path.abspath(os.fspath(f)))


def _parse(onnx, data: bytes):
    if not data:
        raise ModelError("ONNX model: the file is empty")
    try:
        model = onnx.ModelProto.FromString(data)
    except Exception as e:  # protobuf's DecodeError, RecursionError on hostile nesting, ...
        raise ModelError(f"ONNX model: not a valid ONNX (protobuf) file: {type(e).__name__}: {e}") from None
    if not model.HasField("graph"):
        raise ModelError("ONNX model: the file holds no graph (not an ONNX model?)")
    return model


def _check(onnx, model) -> None:
    try:
        onnx.checker.check_model(model)
    except Exception as e:
        raise ModelError(f"ONNX model: fails onnx.checker: {' '.join(str(e).split())[:500]}") from None


def _opset(model) -> int:
    versions = [o.version for o in model.opset_import if o.domain in _DOMAINS]
    if not versions:
        raise ModelError("ONNX model: no opset of the default (ai.onnx) domain is imported")
    if versions[0] < MIN_OPSET:
        raise ModelError(f"ONNX model: opset {versions[0]} is older than the oldest supported ({MIN_OPSET})")
    return versions[0]


def _refuse_unsupported(graph) -> None:
    missing: dict[str, int] = {}
    for node in graph.node:
        name = node.op_type if node.domain in _DOMAINS else f"{node.domain}::{node.op_type}"
        if name not in ROWS:
            missing[name] = missing.get(name, 0) + 1
    if missing:
        listed = ", ".join(f"{k} (x{n})" if n > 1 else k for k, n in sorted(missing.items()))
        raise UnsupportedOnnxOpsError(f"ONNX model: tscript cannot import these ops: {listed}")


def _graph_inputs(graph) -> list:
    """The inputs the caller gives (older files list the initializers among the inputs too)."""
    initialized = {t.name for t in graph.initializer}
    return [i for i in graph.input if i.name not in initialized]


def _build(onnx, model, opset: int) -> Graph:
    graph = Graph()
    ctx = ImportContext(graph, opset, _inferred_types(onnx, model))
    for t in model.graph.initializer:
        ctx.initializer(t.name, _array(onnx, t))
    for info in _graph_inputs(model.graph):
        ctx.env[info.name] = graph.add_input(_input_type(onnx, info), identifier(info.name))
    for index, node in enumerate(model.graph.node):
        ctx.node, ctx.index = node, index
        _bind(ctx, node, _translate(onnx, ctx, node))
    ctx.node = None
    for out in model.graph.output:
        graph.add_output(ctx.value(ctx.tensor(out.name)))
    run_stages(graph, CLEANUP, level=0)
    prune_constants(graph)
    try:
        verify(graph)
    except Exception as e:
        raise ModelError(f"ONNX model: the imported graph is not valid: {e}") from None
    return graph


def _translate(onnx, ctx: ImportContext, node):
    try:
        return ROWS[node.op_type](ctx, node, _attributes(onnx, node))
    except ModelError:
        raise
    except Exception as e:  # a hostile node the row cannot make sense of: its error, named
        raise ctx.error(f"{type(e).__name__}: {e}") from None


def _attributes(onnx, node) -> dict:
    """Attribute name -> Python value (strings decoded, tensors as arrays); subgraphs refused."""
    out = {}
    for a in node.attribute:
        value = onnx.helper.get_attribute_value(a)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, onnx.TensorProto):
            value = _array(onnx, value)
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode("utf-8", "replace") for v in value]
        elif not isinstance(value, (int, float, list)):
            raise ModelError(f"ONNX model: node '{node.name}' ({node.op_type}): attribute '{a.name}' of kind "
                             f"{type(value).__name__} is not supported")
        out[a.name] = value
    return out


def _array(onnx, t) -> np.ndarray:
    if t.data_type not in DTYPES:
        raise ModelError(f"ONNX model: tensor '{t.name}' has data type {DTYPE_NAMES.get(t.data_type, t.data_type)}, "
                         f"which tscript does not support ({HAVE})")
    try:
        return onnx.numpy_helper.to_array(t).astype(DTYPES[t.data_type], copy=False)
    except Exception as e:  # data that does not match its dims, ...
        raise ModelError(f"ONNX model: tensor '{t.name}' cannot be read: {e}") from None


def _input_type(onnx, info) -> TensorType:
    """The IR type of a graph input: its dtype, static sizes, and a symbol for every other dim."""
    t = info.type
    if t.WhichOneof("value") != "tensor_type":
        raise ModelError(f"ONNX model: input '{info.name}' is not a tensor (sequences and maps are not supported)")
    dtype = _dtype(t.tensor_type.elem_type, f"input '{info.name}'")
    if not t.tensor_type.HasField("shape"):
        return tensor_type(dtype, None)
    dims = []
    for d, dim in enumerate(t.tensor_type.shape.dim):
        if dim.HasField("dim_value") and dim.dim_value >= 0:
            dims.append(int(dim.dim_value))
        else:
            dims.append(identifier(dim.dim_param, "d") if dim.dim_param else f"{identifier(info.name)}_{d}")
    return tensor_type(dtype, dims)


def _dtype(code: int, what: str) -> np.dtype:
    if code not in DTYPES:
        raise ModelError(f"ONNX model: {what} has data type {DTYPE_NAMES.get(code, code)}, which tscript does not "
                         f"support ({HAVE})")
    return DTYPES[code]


def _inferred_types(onnx, model) -> dict:
    """ONNX shape inference's types (name -> TensorType), a fallback where the op rules cannot say."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception:  # inference is a help, not a requirement
        return {}
    out = {}
    for info in inferred.graph.value_info:
        t = info.type.tensor_type
        if info.type.WhichOneof("value") != "tensor_type" or t.elem_type not in DTYPES or not t.HasField("shape"):
            continue
        dims = [int(d.dim_value) if d.HasField("dim_value") else identifier(d.dim_param, "d")
                if d.dim_param and not d.dim_param.startswith("unk__") else None for d in t.shape.dim]
        out[info.name] = tensor_type(DTYPES[t.elem_type], dims)
    return out


def _bind(ctx: ImportContext, node, result) -> None:
    """Record the entries a row made for the node's outputs (IR values named after them)."""
    results = result if isinstance(result, list) else [result]
    names = [o for o in node.output]
    if len(results) < len([n for n in names if n]):
        raise ctx.error(f"{len(names)} outputs, of which tscript computes {len(results)}")
    for name, entry in zip(names, results):
        if not name:
            continue
        if isinstance(entry, np.ndarray) and entry.dtype not in SUPPORTED_DTYPES:
            raise ctx.error(f"output '{name}' has dtype {entry.dtype}")
        if not isinstance(entry, (np.ndarray, Dims)):
            _refine(ctx, entry, name)
        ctx.env[name] = entry


def _refine(ctx: ImportContext, v, name: str) -> None:
    """Name a value made by this node after its ONNX output; fill unknown dims from shape inference."""
    if v.node is not None and v.node.kind != "prim::Constant" and v.name[:1].isdigit():
        v.rename(identifier(name))
    t, hint = v.type, ctx.inferred.get(name)
    if not isinstance(t, TensorType) or hint is None or (t.dtype is not None and t.dtype != hint.dtype):
        return
    if t.shape is None or (len(t.shape) == len(hint.shape) and None in t.shape):
        shape = hint.shape if t.shape is None else tuple(s if s is not None else h for s, h in zip(t.shape, hint.shape))
        v.type = tensor_type(hint.dtype, shape)
