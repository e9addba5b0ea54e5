"""What an import row works with: the IR graph being built and what each ONNX value became.

An ONNX value is one of
  - an `np.ndarray`: known at import (initializers, Constant nodes, and whatever folds from them);
  - `Dims`: a 1-D (or 0-d) int64 tensor known item by item, each an int or an IR int value read at
    run time (`aten::size`). This is what `Shape`, `Gather`, `Concat`, `Unsqueeze`... on shapes make,
    so the shape arithmetic exporters write folds into ints and sizes instead of tensor code;
  - an IR `Value` (a tensor computed at run time).

`emit(kind, *args)` adds one tscript op: arguments in schema order (omitted trailing ones take the
schema's defaults), Python values become constants, lists holding values become
`prim::ListConstruct`s, arrays become tensor constants. Output types come from the op table's shape
and dtype rules (symbolic dims included); an op whose tensor arguments are all known arrays is folded
at import with the op's reference kernel when its result is small.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tscript_runtime import dtypes as dt
from tscript_runtime.errors import ModelError
from tscript_runtime.graph_json import TensorRef
from tscript_runtime.ops import OPS, TensorMeta
from tscript_runtime.ops.schema import NO_DEFAULT

from ..ir.graph import Graph, Value
from ..ir.types import BOOL, FLOAT, INT, TENSOR, ListType, ScalarType, TensorType, tensor_type

FOLD_LIMIT = 1 << 16  # elements: larger results stay ops (the pass pipeline folds what it wants)
MAX_CONSTANT_ELEMENTS = 1 << 24  # elements an op on constants may make beyond its largest input
SUPPORTED_DTYPES = set(dt.ALL)
_NAME = re.compile(r"[^A-Za-z0-9_]")
_RETURN_TYPES = {"int": INT, "float": FLOAT, "bool": BOOL}


@dataclass(frozen=True)
class Dims:
    """A 1-D int64 tensor (0-d when `scalar`) whose items are ints or IR int values."""
    items: tuple
    scalar: bool = False

    def static(self) -> np.ndarray | None:
        if all(isinstance(i, int) for i in self.items):
            a = np.array(self.items, dtype=np.int64)
            return a.reshape(()) if self.scalar else a
        return None


def optional_input(node, i: int) -> str | None:
    """The ONNX name of a node's input `i`, or None when it is omitted."""
    return node.input[i] if i < len(node.input) and node.input[i] else None


def require_inputs(ctx: "ImportContext", node, n: int) -> None:
    """An error naming the node unless its first `n` inputs are given."""
    if len(node.input) < n or any(not x for x in node.input[:n]):
        raise ctx.error(f"needs {n} inputs, got {len(node.input)}")


def identifier(text: str | bytes, fallback: str = "v") -> str:
    """`text` as an IR name / symbol: word characters only, not starting with a digit (protobuf gives
    bytes for a string field that is not UTF-8)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    name = _NAME.sub("_", text) or fallback
    return name if not name[0].isdigit() else f"{fallback}_{name}"


class ImportContext:
    """The graph under construction and the ONNX value -> entry map (see the module docstring)."""

    def __init__(self, graph: Graph, opset: int, inferred: dict):
        self.graph, self.opset = graph, opset
        self.env: dict = {}               #: ONNX name -> np.ndarray | Dims | Value
        self.inferred = inferred          #: ONNX name -> TensorType from onnx shape inference (fallback)
        self.node = None                  #: the ONNX node being translated (for messages)
        self.index = 0                    #: its position in the graph
        self._known: dict = {}            # IR int value -> its int or symbol, when known
        self._sizes: dict = {}            # (value, dim) -> size value (one aten::size per dim)
        self._arrays: dict = {}           # id(array) -> (array, constant value)
        self._pieces: dict = {}           # list value -> types of its items
        self._hints: dict = {}            # id(array) -> the initializer name its constant is named after

    # -- reading ONNX values --------------------------------------------------------------------------
    def error(self, why: str) -> ModelError:
        n = self.node
        where = f"node {self.index} ({n.op_type}{f' {n.name!r}' if n.name else ''})" if n is not None else "graph"
        return ModelError(f"ONNX model: {where}: {why}")

    def entry(self, name: str):
        if name not in self.env:
            raise self.error(f"input '{name}' is not defined before it is used")
        return self.env[name]

    def array(self, name: str) -> np.ndarray | None:
        """The value of `name` when it is known at import."""
        e = self.entry(name)
        return e if isinstance(e, np.ndarray) else e.static() if isinstance(e, Dims) else None

    def const(self, name: str, what: str) -> np.ndarray:
        a = self.array(name)
        if a is None:
            raise self.error(f"{what} ('{name}') must be known at import (a constant), not computed at run time")
        return a

    def dims(self, name: str) -> Dims | None:
        """`name` as Dims when it is an int tensor of rank <= 1 known item by item."""
        e = self.entry(name)
        if isinstance(e, Dims):
            return e
        if isinstance(e, np.ndarray) and e.ndim <= 1 and e.dtype.kind in "iu" and e.size <= FOLD_LIMIT:
            return Dims(tuple(int(x) for x in e.reshape(-1)), e.ndim == 0)
        return None

    def tensor(self, name: str):
        """`name` as a tensor operand: an array, or an IR value (Dims become int64 tensors)."""
        e = self.entry(name)
        if isinstance(e, Dims):
            return e.static() if e.static() is not None else self._dims_tensor(e)
        return e

    def value(self, x) -> Value:
        """An IR value for a tensor operand (arrays become tensor constants)."""
        if isinstance(x, Value):
            return x
        return self._array_value(x)

    def _dims_tensor(self, d: Dims) -> Value:
        pieces = [self.emit("aten::full", [] if d.scalar else [1], item, dtype=np.dtype(np.int64))
                  for item in d.items]
        return pieces[0] if d.scalar else self.emit("aten::cat", pieces, 0)

    def _array_value(self, a: np.ndarray, hint: str = "c") -> Value:
        if a.dtype not in SUPPORTED_DTYPES:
            raise self.error(f"a tensor of dtype {a.dtype} (tscript has {', '.join(dt.BY_NAME)})")
        cached = self._arrays.get(id(a))
        if cached is not None and cached[0] is a:
            return cached[1]
        key = identifier(hint, "c")
        while key in self.graph.constants:
            key += "_"
        self.graph.constants[key] = a
        v = self.graph.insert("prim::Constant", (), 1, {"value": TensorRef(key)},
                              [tensor_type(a.dtype, a.shape)]).output
        self._arrays[id(a)] = (a, v)
        return v

    def initializer(self, name: str, a: np.ndarray) -> None:
        """An ONNX initializer: known at import; a tensor constant named after it when used as one."""
        self.env[name] = a
        self._hints[id(a)] = (a, name)

    # -- shapes ----------------------------------------------------------------------------------------
    def shape(self, x) -> tuple | None:
        if isinstance(x, np.ndarray):
            return x.shape
        t = x.type
        return t.shape if isinstance(t, TensorType) else None

    def rank(self, x) -> int:
        shape = self.shape(x)
        if shape is None:
            raise self.error("the rank of an operand is not known at import")
        return len(shape)

    def dtype(self, x) -> np.dtype | None:
        if isinstance(x, np.ndarray):
            return x.dtype
        return x.type.dtype if isinstance(x.type, TensorType) else None

    def size(self, x, d: int):
        """Dim `d` of `x`: an int when static, else an IR int value (`aten::size`, made once)."""
        shape = self.shape(x)
        if shape is not None and isinstance(shape[d], int):
            return shape[d]
        key = (x, d % len(shape)) if shape is not None else (x, d)
        if key not in self._sizes:
            self._sizes[key] = self.emit("aten::size", x, d)
        return self._sizes[key]

    # -- building --------------------------------------------------------------------------------------
    def emit(self, kind: str, *args, **kwargs):
        """Add the tscript op `kind` (see the module docstring); its output value (a tuple of them for
        ops with several), or an array when folded."""
        op = OPS[kind]
        full = self._bind(op, args, kwargs)
        returns = op.schema.returns
        if len(returns) == 1 and returns[0].type == "Tensor" and _foldable(full):
            folded = self._fold(op, full)
            if folded is not None:
                return folded
        inputs = [self._input(a) for a in full]
        types, known, pieces = self._output_types(op, kind, full)
        node = self.graph.insert(kind, inputs, len(types), types=types)
        if known is not None:
            self._known[node.output] = known
        if pieces is not None:
            self._pieces[node.output] = pieces
        return node.outputs[0] if len(node.outputs) == 1 else tuple(node.outputs)

    def unpack(self, items: Value, n: int) -> list[Value]:
        """The `n` pieces of a `List[Tensor]` value (as `prim::ListUnpack`)."""
        types = self._pieces.get(items)
        types = types if types is not None and len(types) == n else [TENSOR] * n
        return list(self.graph.insert("prim::ListUnpack", [items], n, types=types).outputs)

    def _bind(self, op, args: tuple, kwargs: dict) -> list:
        schema = op.schema
        if len(args) > len(schema.args):
            raise TypeError(f"{schema.name}: {len(args)} arguments for {len(schema.args)}")
        full = list(args) + [NO_DEFAULT] * (len(schema.args) - len(args))
        for key, value in kwargs.items():
            full[schema.index[key]] = value
        for i, a in enumerate(schema.args):
            if full[i] is NO_DEFAULT:
                assert a.default is not NO_DEFAULT, f"{schema.name}: '{a.name}' has no default"
                full[i] = a.default
        return full

    def _input(self, a) -> Value:
        if isinstance(a, Value):
            return a
        if isinstance(a, np.ndarray):
            hint = self._hints.get(id(a))
            return self._array_value(a, hint[1] if hint is not None and hint[0] is a else "c")
        if isinstance(a, (list, tuple)) and any(isinstance(x, (Value, np.ndarray)) for x in a):
            items = [self._input(x) for x in a]
            elem = INT if all(isinstance(v.type, ScalarType) for v in items) else TENSOR
            return self.graph.insert("prim::ListConstruct", items, 1, types=[ListType(elem)]).output
        if isinstance(a, np.generic):
            a = a.item()
        if isinstance(a, tuple):
            a = list(a)
        return self.graph.constant(a)

    def _meta(self, a):
        """What the op's shape rule takes for argument `a` (None when unknown)."""
        if isinstance(a, np.ndarray):
            return TensorMeta(a.shape, a.dtype)
        if isinstance(a, Value):
            t = a.type
            if isinstance(t, TensorType):
                ok = t.dtype is not None and t.shape is not None and None not in t.shape
                return TensorMeta(t.shape, t.dtype) if ok else _UNKNOWN
            return self._known.get(a, _UNKNOWN)
        if isinstance(a, (list, tuple)):
            items = [self._meta(x) for x in a]
            return _UNKNOWN if any(i is _UNKNOWN for i in items) else list(items)
        return a

    def _output_types(self, op, kind: str, full: list) -> tuple[list, object, list | None]:
        """(output types, the known int result of a size op or None, the types of a list's items)."""
        returns = op.schema.returns
        metas = [self._meta(a) for a in full]
        unknown = any(m is _UNKNOWN for m in metas)
        if op.shape is None:  # ops on numbers (aten::size, int arithmetic)
            known = None
            if not unknown and kind == "aten::size":
                known = metas[0].shape[metas[1]]
            elif not unknown and all(isinstance(m, int) and not isinstance(m, bool) for m in metas):
                known = op.kernel(*metas)
            return [_RETURN_TYPES.get(r.type, TENSOR) for r in returns], known, None
        shapes = dtypes = None
        if unknown and kind in _TARGET_SHAPED:
            shapes, dtypes = _target_shape(full[0], metas[1])
        if not unknown:
            try:
                shapes, dtypes = op.shape(*metas), op.dtype(*metas)
            except Exception as e:  # a rule may not follow symbolic sizes: then the types stay unknown
                if not _symbolic(metas):
                    raise self.error(f"{kind}: {e}") from None
        if returns[0].type.endswith("[]"):
            pieces = [tensor_type(dtypes, s) for s in shapes] if shapes is not None else None
            return [ListType(TENSOR)], None, pieces
        if shapes is None:  # the dtypes at least (from the rule run on stand-in shapes of the right rank)
            dtypes = self._dtypes_only(op, full)
            if dtypes is None:
                return [TENSOR] * len(returns), None, None
            dtypes = dtypes if isinstance(dtypes, tuple) else (dtypes,)
            return [tensor_type(d, None) for d in dtypes], None, None
        if len(returns) == 1:
            return [tensor_type(dtypes, shapes)], None, None
        return [tensor_type(d, s) for s, d in zip(shapes, dtypes)], None, None

    def _dtypes_only(self, op, full: list):
        """The op's output dtype(s) when some shape is unknown, or None."""
        def stand_in(a):
            if isinstance(a, Value) and isinstance(a.type, TensorType):
                t = a.type
                return _UNKNOWN if t.dtype is None else TensorMeta((1,) * (len(t.shape) if t.shape else 1), t.dtype)
            if isinstance(a, Value):
                return self._known.get(a, 1)
            if isinstance(a, (list, tuple)):
                return [stand_in(x) for x in a]
            return self._meta(a)
        metas = [stand_in(a) for a in full]
        if any(m is _UNKNOWN for m in metas):
            return None
        try:
            return op.dtype(*metas)
        except Exception:  # a rule that needs real sizes: the dtype stays unknown
            return None

    def _fold(self, op, full: list):
        """The op's result on known arrays, when it is small (else None: emitted as an op). A result
        far larger than its inputs is refused: a file cannot make the passes build a huge constant."""
        metas = [self._meta(a) for a in full]
        try:
            shape = op.shape(*metas)
        except Exception as e:
            raise self.error(f"{op.schema.name}: {e}") from None
        if not isinstance(shape, tuple) or any(not isinstance(s, int) for s in shape):
            return None
        size = int(np.prod(shape, dtype=np.float64))
        biggest = max((a.size for a in full if isinstance(a, np.ndarray)), default=0)
        if size > max(MAX_CONSTANT_ELEMENTS, biggest):
            raise self.error(f"{op.schema.name} would make a constant of {size} elements (the limit is "
                             f"{MAX_CONSTANT_ELEMENTS}, or the size of its largest input)")
        if size > FOLD_LIMIT:
            return None
        try:
            result = op.kernel(*[a.copy() if isinstance(a, np.ndarray) else a for a in full])
        except Exception as e:
            raise self.error(f"{op.schema.name}: {e}") from None
        result = np.asarray(result)
        return result if result.dtype in SUPPORTED_DTYPES else None


_UNKNOWN = object()


_TARGET_SHAPED = {"aten::reshape", "aten::view"}


def _target_shape(x, target) -> tuple:
    """(shape, dtype) of a reshape whose input shape is unknown: its target, when that has no -1."""
    dtype = x.dtype if isinstance(x, np.ndarray) else x.type.dtype if isinstance(x.type, TensorType) else None
    if dtype is None or not isinstance(target, list) or any(isinstance(t, int) and t < 0 for t in target):
        return None, None
    return tuple(target), dtype


def _symbolic(metas) -> bool:
    """Does any argument hold a symbolic size?"""
    for m in metas:
        if isinstance(m, TensorMeta) and any(isinstance(d, str) for d in m.shape) or isinstance(m, str):
            return True
        if isinstance(m, list) and _symbolic(m):
            return True
    return False


def _foldable(full: list) -> bool:
    """No argument is computed at run time."""
    def known(a):
        if isinstance(a, Value):
            return False
        if isinstance(a, (list, tuple)):
            return all(known(x) for x in a)
        return True
    return all(known(a) for a in full)

