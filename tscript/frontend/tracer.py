"""`tscript.jit.trace`: run a function or module on example inputs while recording every dispatched op.

The recorder keeps one *frame* per module call being traced: a graph, the module, and the map from
tensors (by identity) to the IR values that hold them. Parameters and buffers appear as
`prim::GetAttr` chains on `%self`; each submodule call becomes `prim::CallMethod[name="forward"]`
with the submodule's own graph (`.inlined_graph` flattens them); sizes read from shapes are
`TracedInt`s recorded as `aten::size`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tscript_runtime.graph_format import TensorRef

from .. import _tracing
from .._tensor import Tensor
from ..ir.graph import Graph, Node, Value
from ..ir.types import INT, STR, TENSOR, DictType, ListType, ModuleType, TupleType, Type, tensor_type, type_of_value
from .traced_int import TracedInt


@dataclass
class Frame:
    """One module call (or the traced function) being recorded."""
    graph: Graph
    module: object = None
    self_value: Value | None = None
    scope: str = ""
    values: dict = field(default_factory=dict)     # id(tensor) -> (tensor, Value)
    attrs: dict = field(default_factory=dict)      # id(module or tensor) -> Value of its GetAttr
    ints: dict = field(default_factory=dict)       # id(TracedInt) -> (TracedInt, Value)


def type_of(x) -> Type:
    """The IR type of a runtime value seen while tracing."""
    if isinstance(x, Tensor):
        return tensor_type(x._data.dtype, x._data.shape)
    if isinstance(x, dict):
        vals = list(x.values())
        return DictType(STR if all(isinstance(k, str) for k in x) else INT, type_of(vals[0]) if vals else TENSOR)
    if isinstance(x, tuple):
        return TupleType(tuple(type_of(v) for v in x))
    if isinstance(x, list):
        return ListType(type_of(x[0]) if x else TENSOR)
    return type_of_value(x)


class Recorder:
    """Records dispatched ops into graphs; installed in `_tracing.state` while tracing."""

    def __init__(self, root_module=None):
        self.frames: list[Frame] = []
        self.root_module = root_module
        self.method_graphs: dict[int, Graph] = {}  # id(module) -> graph of its first traced call
        self.n_constants = 0

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    # -- values ---------------------------------------------------------------------------------------
    def bind(self, x, value: Value) -> None:
        """Map the tensors (or TracedInts) inside `x` to IR values, extracting from containers."""
        f = self.frame
        if isinstance(x, Tensor):
            f.values[id(x)] = (x, value)
        elif isinstance(x, TracedInt):
            f.ints[id(x)] = (x, value)
        elif isinstance(x, (list, tuple)):
            for i, item in enumerate(x):
                if _has_tensors(item):
                    self.bind(item, self._insert("aten::__getitem__", [value, self.const(i)], type_of(item)))
        elif isinstance(x, dict):
            for k, item in x.items():
                if _has_tensors(item):
                    self.bind(item, self._insert("aten::__getitem__", [value, self.const(k)], type_of(item)))

    def const(self, v) -> Value:
        if isinstance(v, np.dtype) or hasattr(v, "np"):
            v = np.dtype(getattr(v, "np", v))
        return self.frame.graph.constant(v)

    def value_of(self, x) -> Value:
        """The IR value standing for a Python object in the current frame (recording constants,
        GetAttr chains, list constructions and size reads as needed)."""
        f = self.frame
        if isinstance(x, Tensor):
            hit = f.values.get(id(x))
            if hit is not None and hit[0] is x:
                return hit[1]
            return self._tensor_from_outside(x)
        if isinstance(x, TracedInt):
            return self._int_value(x)
        if isinstance(x, (list, tuple)) and any(isinstance(i, (Tensor, TracedInt)) for i in x):
            items = [self.value_of(i) for i in x]
            kind = "prim::TupleConstruct" if isinstance(x, tuple) and not _is_size_list(x) else "prim::ListConstruct"
            t = ListType(items[0].type if items else TENSOR) if kind == "prim::ListConstruct" \
                else TupleType(tuple(i.type for i in items))
            if kind == "prim::ListConstruct" and any(i is None for i in x):
                t = ListType(TENSOR)
            return self._insert(kind, items, t)
        if x is not None and not isinstance(x, (bool, int, float, str, list, tuple, np.dtype)) and not hasattr(x, "np"):
            return self.const(None)  # e.g. a Generator: not recorded
        return self.const(list(x) if isinstance(x, tuple) else x)

    def _insert(self, kind: str, inputs, out_type: Type, attrs=None) -> Value:
        node = self.frame.graph.insert(kind, inputs, 1, attrs, [out_type])
        self._annotate(node)
        return node.output

    def _annotate(self, node: Node) -> None:
        node.scope = self.frame.scope
        node.source = _tracing.source_of_caller()

    def _tensor_from_outside(self, t: Tensor) -> Value:
        """A tensor that is no input and no op result of this frame: a parameter or buffer of the
        frame's module (GetAttr), else a constant captured by the trace."""
        path = self._attr_path(t)
        if path is not None:
            v = self._getattr_chain(path, type_of(t))
        else:
            name = f"c{self.n_constants}"  # unique across frames, so inlining never clashes
            self.n_constants += 1
            self.frame.graph.constants[name] = t._data.copy()
            v = self._insert("prim::Constant", [], type_of(t), {"value": TensorRef(name)})
        self.frame.values[id(t)] = (t, v)
        return v

    def _attr_path(self, t: Tensor):
        module = self.frame.module
        if module is None:
            return None
        for name, p in module.named_parameters():
            if p is t:
                return name.split(".")
        for name, b in module.named_buffers():
            if b is t:
                return name.split(".")
        return None

    def _getattr_chain(self, path: list, leaf_type: Type) -> Value:
        f = self.frame
        value, obj = f.self_value, f.module
        for i, name in enumerate(path):
            obj = getattr(obj, name)
            key = id(obj)
            if key not in f.attrs:
                t = leaf_type if i == len(path) - 1 else ModuleType(type(obj).__name__)
                node = f.graph.insert("prim::GetAttr", [value], 1, {"name": name}, [t], [name])
                f.attrs[key] = node.output
            value = f.attrs[key]
        return value

    def _int_value(self, x: TracedInt) -> Value:
        f = self.frame
        hit = f.ints.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
        kind, *rest = x.source
        if kind == "size":
            tensor, dim = rest
            v = self._insert("aten::size", [self.value_of(tensor), self.const(dim)], INT)
        else:
            name, operands = rest
            v = self._insert(name, [self.value_of(o) if isinstance(o, TracedInt) else self.const(o)
                                    for o in operands], INT)
        f.ints[id(x)] = (x, v)
        return v

    # -- recording ops --------------------------------------------------------------------------------
    def record(self, op, args, result):
        """Append a node for `op(args) -> result`; returns the result (sizes become TracedInts)."""
        inputs = [self.value_of(a) for a in args]
        returns = op.schema.returns
        if len(returns) == 1 and returns[0].type.endswith("[]") and isinstance(result, (list, tuple)):
            lst = self._insert(op.name, inputs, ListType(TENSOR))
            node = self.frame.graph.insert("prim::ListUnpack", [lst], len(result), None,
                                           [type_of(r) for r in result])
            self._annotate(node)
            for r, v in zip(result, node.outputs):
                self.bind(r, v)
            return result
        outs = list(result) if isinstance(result, tuple) else [result]
        node = self.frame.graph.insert(op.name, inputs, len(outs), None, [type_of(o) for o in outs])
        self._annotate(node)
        wrapped = []
        for o, v in zip(outs, node.outputs):
            if isinstance(o, int) and not isinstance(o, bool):
                o = TracedInt(o, ("value",))
                self.frame.ints[id(o)] = (o, v)
            elif isinstance(o, Tensor):
                self.frame.values[id(o)] = (o, v)
            wrapped.append(o)
        if isinstance(result, tuple):
            return type(result)(*wrapped) if hasattr(result, "_fields") else tuple(wrapped)
        return wrapped[0]

    def traced_shape(self, t: Tensor) -> tuple:
        """`t.shape` as TracedInts, so sizes used by later ops are recorded, not frozen."""
        return tuple(TracedInt(s, ("size", t, i)) for i, s in enumerate(t._data.shape))

    # -- module calls -----------------------------------------------------------------------------------
    def call_module(self, module, args: tuple, kwargs: dict):
        """Record a submodule call as prim::CallMethod with the submodule's own graph."""
        parent = self.frame
        path = _child_path(parent.module, module)
        if path is None:  # not a submodule of the current one: trace straight through
            return module.forward(*args, **kwargs)
        module_value = self._getattr_chain(path, ModuleType(type(module).__name__))
        flat_in = _flat_tensors((args, kwargs))
        sub = Graph()
        self_value = sub.add_input(ModuleType(type(module).__name__), "self")
        frame = Frame(sub, module, self_value, ".".join(filter(None, [parent.scope, *path])))
        for t, name in zip(flat_in, _arg_names(module.forward, len(flat_in))):
            frame.values[id(t)] = (t, sub.add_input(type_of(t), name))
        self.frames.append(frame)
        try:
            result = module.forward(*args, **kwargs)
            flat_out = _flat_tensors(result)
            for t in flat_out:
                sub.add_output(self.value_of(t))
        finally:
            self.frames.pop()
        node = parent.graph.insert("prim::CallMethod", [module_value] + [self.value_of(t) for t in flat_in],
                                   len(flat_out), {"name": "forward"}, [type_of(t) for t in flat_out])
        self._annotate(node)
        node.scope = parent.scope
        node.callee = sub
        self.method_graphs.setdefault(id(module), sub)
        for t, v in zip(flat_out, node.outputs):
            parent.values[id(t)] = (t, v)
        return result


def _child_path(parent, module):
    if parent is None:
        return None
    for name, m in parent.named_modules():
        if m is module and name:
            return name.split(".")
    return None


def _has_tensors(x) -> bool:
    if isinstance(x, Tensor):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_tensors(i) for i in x)
    if isinstance(x, dict):
        return any(_has_tensors(i) for i in x.values())
    return False


def _flat_tensors(x) -> list:
    """Tensors inside nested lists/tuples/dicts, in order, each once."""
    out, seen = [], set()

    def walk(v):
        if isinstance(v, Tensor):
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        elif isinstance(v, (list, tuple)):
            for i in v:
                walk(i)
        elif isinstance(v, dict):
            for i in v.values():
                walk(i)
    walk(x)
    return out


def _is_size_list(x) -> bool:
    return all(isinstance(i, int) for i in x)



def _arg_names(fn, n: int) -> list[str]:
    import inspect
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:n]]
    return names + [f"input_{i}" for i in range(len(names), n)]


def _output_value(rec: Recorder, x) -> Value:
    """The graph output for a returned Python structure (tuples/lists/dicts are constructed)."""
    if isinstance(x, (tuple, list)) and not _is_size_list(x):
        items = [_output_value(rec, i) for i in x]
        if isinstance(x, tuple):
            return rec._insert("prim::TupleConstruct", items, TupleType(tuple(i.type for i in items)))
        return rec._insert("prim::ListConstruct", items, ListType(items[0].type if items else TENSOR))
    if isinstance(x, dict):
        items = [v for k, val in x.items() for v in (rec.const(k), _output_value(rec, val))]
        return rec._insert("prim::DictConstruct", items, type_of(x))
    return rec.value_of(x)


def record_trace(fn, args: tuple, module=None) -> tuple[Graph, Recorder, object]:
    """Run `fn(*args)` (a module's forward when `module` is given) recording a graph."""
    rec = Recorder(module)
    g = Graph()
    self_value = g.add_input(ModuleType(type(module).__name__), "self") if module is not None else None
    rec.frames.append(Frame(g, module, self_value))
    for name, a in zip(_arg_names(fn, len(args)), args):
        rec.bind(a, g.add_input(type_of(a), name))
    previous = _tracing.state.recorder
    _tracing.state.recorder = rec
    try:
        out = fn(*args)
        g.add_output(_output_value(rec, out))
    finally:
        _tracing.state.recorder = previous
    return g, rec, out
