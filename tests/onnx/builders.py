"""ONNX models built in the tests with onnx.helper: one node (or a few) over given inputs, so each
import row can be run against ONNX Runtime on its own."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper, shape_inference

ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
        np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32,
        np.dtype(np.bool_): TensorProto.BOOL, np.dtype(np.float16): TensorProto.FLOAT16}


def model(nodes, inputs: dict, initializers: dict | None = None, outputs=("y",), opset: int = 17,
          dims: dict | None = None, out_types: dict | None = None, infer: bool = True):
    """A ModelProto: `inputs` name -> example array (its dtype and shape; `dims` may name some dims
    instead, name -> [dim value or symbol]), `initializers` name -> array, `nodes` NodeProtos;
    outputs are float32 unless `out_types` (name -> dtype) says otherwise; their shapes are inferred
    (with `infer`), and left empty where inference cannot say (models of the error tests)."""
    out_types = out_types or {}
    dims = dims or {}
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, ELEM[a.dtype], dims.get(n, list(a.shape))) for n, a in inputs.items()],
        [helper.make_tensor_value_info(o, ELEM[np.dtype(out_types.get(o, np.float32))], None) for o in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = helper.find_min_ir_version_for(list(m.opset_import))
    if infer:  # the output shapes the checker asks for
        m = shape_inference.infer_shapes(m)
    for out in m.graph.output:
        out.type.tensor_type.shape.SetInParent()
    return m


def node(op: str, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
