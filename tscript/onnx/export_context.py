"""What an export row works with: the IR graph being translated and the ONNX graph being built.

`env` maps an IR value to its ONNX name (a tensor; an int such as `aten::size`'s result is a 0-d
int64 tensor), or to a list of names (a `List[Tensor]`, e.g. the pieces of `aten::split`). Constants
are made on first use: a tensor constant becomes an initializer (named after the parameter it was
frozen from), a number becomes a 0-d initializer of the dtype its reader computes in, and a list of
ints read as a shape becomes a 1-D int64 initializer, or a Concat of its pieces when some are sizes
read at run time. Helpers cover what changed between opsets (reduction axes as attribute or input).
"""
from __future__ import annotations

import re

import numpy as np

from tscript_runtime.graph_json import TensorRef

from ..ir.graph import Graph, Node, Value
from ..ir.passes.constant_propagation import constant_value
from ..ir.types import ListType, ScalarType, TensorType
from .errors import UnsupportedOperatorError

INT64 = np.dtype(np.int64)
FLOAT32 = np.dtype(np.float32)
# Reductions whose axes became an input (instead of an attribute) in opset 18; ReduceSum's did in 13.
_AXES_INPUT_SINCE = {"ReduceSum": 13}
_NAME = re.compile(r"[^A-Za-z0-9_.:/-]")


class ExportContext:
    """The ONNX nodes and initializers made so far, and where each IR value went."""

    def __init__(self, onnx, graph: Graph, opset: int):
        self.helper, self.numpy_helper = onnx.helper, onnx.numpy_helper
        self.graph, self.opset = graph, opset
        self.nodes: list = []           #: NodeProtos, in order
        self.initializers: list = []    #: TensorProtos
        self.env: dict = {}             #: IR value -> ONNX name, or list of names for List[Tensor]
        self.node: Node | None = None   #: the IR node being translated (for error messages)
        self._taken: set[str] = set()
        self._scalars: dict = {}

    # -- names, nodes, initializers ------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        """An unused ONNX name made from `hint`."""
        base = _NAME.sub("_", hint) or "v"
        name, k = base, 1
        while name in self._taken:
            name, k = f"{base}_{k}", k + 1
        self._taken.add(name)
        return name

    def reserve(self, names: list[str]) -> None:
        """Names generated ones must avoid (the graph's inputs and outputs)."""
        self._taken.update(names)

    def emit(self, op_type: str, inputs: list, n_outputs: int = 1, **attrs):
        """Append an ONNX node; its output name, or a tuple of names when `n_outputs` != 1.
        A None input is an omitted optional input."""
        outputs = [self.fresh(f"{op_type}_{len(self.nodes)}" + (f"_{i}" if n_outputs > 1 else ""))
                   for i in range(n_outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.helper.make_node(op_type, ["" if i is None else i for i in inputs], outputs,
                                                name=self.fresh(f"{op_type}_node"), **attrs))
        return outputs[0] if n_outputs == 1 else tuple(outputs)

    def initializer(self, array: np.ndarray, hint: str = "const") -> str:
        name = self.fresh(hint)
        self.initializers.append(self.numpy_helper.from_array(np.array(array, order="C"), name))
        return name

    def scalar(self, value, dtype) -> str:
        """A 0-d initializer holding `value` as `dtype` (shared by every reader of the same one)."""
        dtype = np.dtype(dtype)
        key = (dtype.str, repr(value))
        if key not in self._scalars:
            self._scalars[key] = self.initializer(np.array(value, dtype=dtype), f"scalar_{dtype.name}")
        return self._scalars[key]

    def ints(self, values, hint: str = "ints") -> str:
        """A 1-D int64 initializer (shared by every reader of the same values)."""
        key = (hint, tuple(int(v) for v in values))
        if key not in self._scalars:
            self._scalars[key] = self.initializer(np.array(key[1], dtype=INT64).reshape(-1), hint)
        return self._scalars[key]

    # -- reading IR values ----------------------------------------------------------------------------
    def unsupported(self, why: str) -> UnsupportedOperatorError:
        """The error for the node being translated (its kind and source line named)."""
        n = self.node
        where = f" ({n.source})" if n is not None and n.source else ""
        return UnsupportedOperatorError(f"{n.kind if n is not None else 'graph'}{where}: {why}")

    def is_const(self, v: Value) -> bool:
        return constant_value(self.graph, v)[0]

    def const(self, v: Value):
        """The compile-time value of `v`; an error naming the node when it is only known at run time."""
        ok, value = constant_value(self.graph, v)
        if not ok:
            raise self.unsupported(f"argument %{v.name} must be a constant for ONNX export")
        return value

    def const_ints(self, v: Value, n: int | None = None) -> list[int]:
        """A constant int or int list (a single int repeated `n` times, as PyTorch's int[] args)."""
        value = self.const(v)
        if isinstance(value, int):
            return [value] * (n or 1)
        return [int(x) for x in value]

    def dtype(self, v: Value) -> np.dtype | None:
        return v.type.dtype if isinstance(v.type, TensorType) else None

    def shape(self, v: Value) -> tuple | None:
        return v.type.shape if isinstance(v.type, TensorType) else None

    def rank(self, v: Value) -> int:
        shape = self.shape(v)
        if shape is None:
            raise self.unsupported(f"the rank of %{v.name} is unknown")
        return len(shape)

    def dim(self, v: Value, d: int) -> int:
        """A static size of `v` (an error when the dim is dynamic or unknown)."""
        shape = self.shape(v)
        size = None if shape is None or not -len(shape) <= d < len(shape) else shape[d]
        if not isinstance(size, int):
            raise self.unsupported(f"dim {d} of %{v.name} must have a static size for ONNX export")
        return size

    def tensor(self, v: Value) -> str:
        """The ONNX name of a tensor (or int) value; constants become initializers on first use."""
        if v in self.env:
            return self.env[v]
        ok, value = constant_value(self.graph, v)
        if not ok:
            raise self.unsupported(f"%{v.name} has no ONNX value (made by an untranslated node)")
        if isinstance(value, np.ndarray):
            name = self.initializer(value, self.hint(v))
        elif isinstance(value, (bool, int, float)):
            name = self.scalar(value, _number_dtype(value))
        else:
            raise self.unsupported(f"constant %{v.name} = {value!r} is not a tensor")
        self.env[v] = name
        return name

    def hint(self, v: Value) -> str:
        """A name for `v` in ONNX: a tensor constant's key (the parameter it was frozen from), else its IR name."""
        ref = v.node.attrs.get("value") if v.node is not None and v.node.kind == "prim::Constant" else None
        return ref.name if isinstance(ref, TensorRef) else v.name

    def tensors(self, v: Value) -> list[str]:
        """The ONNX names of a List[Tensor] value."""
        if v in self.env and isinstance(self.env[v], list):
            return self.env[v]
        raise self.unsupported(f"the tensor list %{v.name} is not known to the exporter")

    def operand(self, v: Value, dtype) -> str:
        """`v` as a tensor of `dtype`: numbers become 0-d initializers, other tensors are cast."""
        ok, value = constant_value(self.graph, v)
        if ok and isinstance(value, (bool, int, float)):
            return self.scalar(value, dtype)
        name = self.tensor(v)
        return self.cast(name, self.value_dtype(v), dtype)

    def value_dtype(self, v: Value) -> np.dtype:
        """The dtype `v` has in ONNX (ints read from sizes are int64)."""
        if isinstance(v.type, TensorType) and v.type.dtype is not None:
            return v.type.dtype
        if isinstance(v.type, ScalarType):
            return {"int": INT64, "float": FLOAT32, "bool": np.dtype(bool)}.get(v.type.name, INT64)
        raise self.unsupported(f"the dtype of %{v.name} is unknown")

    def cast(self, name: str, src, dst) -> str:
        if src is not None and np.dtype(src) == np.dtype(dst):
            return name
        return self.emit("Cast", [name], to=self.helper.np_dtype_to_tensor_dtype(np.dtype(dst)))

    def promoted(self, values: list[Value]) -> np.dtype:
        """PyTorch's type promotion of the operands (numbers do not widen a tensor's kind-mate)."""
        tensors = [self.value_dtype(v) for v in values if isinstance(v.type, TensorType)]
        numbers = [v.type.name for v in values if isinstance(v.type, ScalarType)]
        dtype = np.result_type(*tensors) if tensors else (FLOAT32 if "float" in numbers else INT64)
        if dtype.kind in "biu" and "float" in numbers:
            return FLOAT32
        if dtype.kind == "b" and "int" in numbers:
            return INT64
        return dtype

    def shape_of(self, v: Value, items=None) -> str:
        """A 1-D int64 tensor: the shape list `v` (constant, a single int, or a ListConstruct of
        constants and sizes known at run time); `items` rewrites constant items (e.g. -1 -> 1)."""
        ok, value = constant_value(self.graph, v)
        if ok:
            values = [value] if isinstance(value, int) else list(value)
            return self.ints([items(x) if items else x for x in values], "shape")
        if isinstance(v.type, ScalarType):
            return self.unsqueeze(self.operand(v, INT64), [0])
        if v.node is None or v.node.kind != "prim::ListConstruct" or not isinstance(v.type, ListType):
            raise self.unsupported(f"the int list %{v.name} is not known to the exporter")
        parts, run = [], []
        for item in v.node.inputs:
            ok, x = constant_value(self.graph, item)
            if ok:
                run.append(items(x) if items else x)
                continue
            if run:
                parts.append(self.ints(run, "shape"))
                run = []
            parts.append(self.unsqueeze(self.operand(item, INT64), [0]))
        if run:
            parts.append(self.ints(run, "shape"))
        return parts[0] if len(parts) == 1 else self.emit("Concat", parts, axis=0)

    # -- ONNX ops whose form depends on the opset --------------------------------------------------------
    def reduce(self, op_type: str, x: str, axes: list | None, keepdims: bool) -> str:
        """`op_type` over `axes` (None: all), with the axes as an attribute or input as the opset wants."""
        if axes is None:
            return self.emit(op_type, [x], keepdims=int(keepdims))
        if self.opset >= _AXES_INPUT_SINCE.get(op_type, 18):
            return self.emit(op_type, [x, self.ints(axes, "axes")], keepdims=int(keepdims))
        return self.emit(op_type, [x], axes=list(axes), keepdims=int(keepdims))

    def unsqueeze(self, x: str, axes: list[int]) -> str:
        return self.emit("Unsqueeze", [x, self.ints(axes, "axes")])

    def squeeze(self, x: str, axes: list[int] | None) -> str:
        return self.emit("Squeeze", [x] + ([] if axes is None else [self.ints(axes, "axes")]))

    def split(self, x: str, sizes: list[int], axis: int) -> list[str]:
        """The pieces of `x` along `axis`."""
        if len(sizes) == 1:
            return [self.emit("Identity", [x])]
        return list(self.emit("Split", [x, self.ints(sizes, "split")], len(sizes), axis=axis))

    def require_opset(self, version: int, what: str) -> None:
        if self.opset < version:
            raise self.unsupported(f"{what} needs opset >= {version} (exporting opset {self.opset})")


def _number_dtype(value) -> np.dtype:
    if isinstance(value, bool):
        return np.dtype(bool)
    return INT64 if isinstance(value, int) else FLOAT32
