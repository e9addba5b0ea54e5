"""`tscript.jit.trace`: run a function or module on example inputs while recording every dispatched op.

The recorder keeps one *frame* per module call being traced: a graph, the module, and the map from
tensors and traced scalars (by identity) to the IR values that hold them. Parameters and buffers
appear as `prim::GetAttr` chains on `%self`; each submodule call becomes
`prim::CallMethod[name="forward"]` with the submodule's own graph (`.inlined_graph` flattens them);
sizes read from shapes and int/float arguments are traced scalars (traced_int.py), so arithmetic on
them is recorded instead of frozen. A tensor a frame did not produce (a parameter of an enclosing
module, a value captured by a closure) is passed in as an extra input of the call when an enclosing
frame knows it; only tensors no frame knows become constants (`graph.constants`).
"""
from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass, field

import numpy as np

from tscript_runtime.graph_json import TensorRef

from .. import _tracing
from .._tensor import Tensor
from ..ir.graph import Graph, Node, Value
from ..ir.types import (FLOAT, INT, STR, TENSOR, DictType, ListType, ModuleType, TupleType, Type, tensor_type,
                        type_of_value)
from .traced_int import TracedFloat, TracedInt, traced

TRACED = (Tensor, TracedInt, TracedFloat)


@dataclass
class Frame:
    """One module call (or the traced function) being recorded."""
    graph: Graph
    module: object = None
    self_value: Value | None = None
    scope: str = ""
    values: dict = field(default_factory=dict)     # id(tensor or traced scalar) -> (object, Value)
    attrs: dict = field(default_factory=dict)      # id(module or tensor) -> Value of its GetAttr
    captures: list = field(default_factory=list)   # objects of enclosing frames passed in as extra inputs
    _paths: dict | None = None                     # id(parameter or buffer) -> attribute path

    def lookup(self, x) -> Value | None:
        hit = self.values.get(id(x))
        return hit[1] if hit is not None and hit[0] is x else None

    def bind(self, x, value: Value) -> None:
        self.values[id(x)] = (x, value)

    def attr_path(self, t: Tensor) -> list | None:
        """The attribute path of a parameter or buffer of this frame's module."""
        if self.module is None:
            return None
        if self._paths is None:
            named = [*self.module.named_parameters(), *self.module.named_buffers()]
            self._paths = {id(p): (p, name.split(".")) for name, p in reversed(named)}
        hit = self._paths.get(id(t))
        return hit[1] if hit is not None and hit[0] is t else None


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

    def __init__(self):
        self.frames: list[Frame] = []
        self.method_graphs: dict[int, Graph] = {}  # id(module) -> graph of its first traced call
        self.n_constants = 0

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    # -- values ---------------------------------------------------------------------------------------
    def bind(self, x, value: Value) -> None:
        """Map the tensors and traced scalars inside `x` to IR values, extracting from containers."""
        if isinstance(x, TRACED):
            self.frame.bind(x, value)
            return
        items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, (list, tuple)) else ()
        for key, item in items:
            if _has_traced(item):
                self.bind(item, self._insert("aten::__getitem__", [value, self.const(key)], type_of(item)))

    def const(self, v) -> Value:
        if isinstance(v, np.dtype) or hasattr(v, "np"):
            v = np.dtype(getattr(v, "np", v))
        return self.frame.graph.constant(v)

    def value_of(self, x) -> Value:
        """The IR value standing for a Python object in the current frame (recording constants,
        GetAttr chains, list constructions and size reads as needed)."""
        if isinstance(x, TRACED):
            found = self.frame.lookup(x)
            return found if found is not None else self._from_outside(x)
        if isinstance(x, (list, tuple)) and any(isinstance(i, TRACED) for i in x):
            return self._construct(x)
        if x is not None and not isinstance(x, (bool, int, float, str, list, tuple, np.dtype)) and not hasattr(x, "np"):
            return self.const(None)  # e.g. a Generator: not recorded
        return self.const(list(x) if isinstance(x, tuple) else x)

    def _construct(self, x) -> Value:
        items = [self.value_of(i) for i in x]
        if isinstance(x, tuple) and not _is_number_list(x):
            return self._insert("prim::TupleConstruct", items, TupleType(tuple(i.type for i in items)))
        elem = TENSOR if any(i is None for i in x) or not items else items[0].type
        return self._insert("prim::ListConstruct", items, ListType(elem))

    def _insert(self, kind: str, inputs, out_type: Type, attrs=None) -> Value:
        node = self.frame.graph.insert(kind, inputs, 1, attrs, [out_type])
        self._annotate(node)
        return node.output

    def _annotate(self, node: Node) -> None:
        node.scope = self.frame.scope
        node.source = _tracing.source_of_caller()

    def _from_outside(self, x) -> Value:
        """A tensor or traced scalar this frame neither received nor computed."""
        f = self.frame
        path = f.attr_path(x) if isinstance(x, Tensor) else None
        if path is not None:
            v = self._getattr_chain(path, type_of(x))
        elif any(_knows(outer, x) for outer in self.frames[:-1]):
            v = f.graph.add_input(type_of(x), "captured")
            f.captures.append(x)
        elif isinstance(x, Tensor):
            v = self._tensor_constant(x)
        else:
            v = self._recipe(x)
        f.bind(x, v)
        return v

    def _tensor_constant(self, t: Tensor) -> Value:
        name = f"c{self.n_constants}"  # unique across frames, so inlining never clashes
        self.n_constants += 1
        self.frame.graph.constants[name] = t._data.copy()
        return self._insert("prim::Constant", [], type_of(t), {"value": TensorRef(name)})

    def _recipe(self, x) -> Value:
        """A traced scalar rebuilt from its recipe: `aten::size` of a tensor, or the op that made it."""
        kind, *rest = x.source
        if kind == "size":
            tensor, dim = rest
            return self._insert("aten::size", [self.value_of(tensor), self.const(dim)], INT)
        if kind == "op":
            name, operands = rest
            return self._insert(name, [self.value_of(o) for o in operands], INT if isinstance(x, int) else FLOAT)
        return self.const(int(x) if isinstance(x, int) else float(x))  # an op result no frame knows: frozen

    def _getattr_chain(self, path: list, leaf_type: Type) -> Value:
        f = self.frame
        value, obj = f.self_value, f.module
        for i, name in enumerate(path):
            obj = getattr(obj, name)
            key = id(obj)
            if key not in f.attrs:
                t = leaf_type if i == len(path) - 1 else ModuleType(type(obj).__name__)
                hint = f"_{name}" if name[:1].isdigit() else name  # `%_0`, not a number-like `%0`
                node = f.graph.insert("prim::GetAttr", [value], 1, {"name": name}, [t], [hint])
                f.attrs[key] = node.output
            value = f.attrs[key]
        return value

    # -- recording ops --------------------------------------------------------------------------------
    def record(self, op, args, result):
        """Append a node for `op(args) -> result`; returns the result (numbers become traced scalars)."""
        inputs = [self.value_of(a) for a in args]
        returns = op.schema.returns
        if len(returns) == 1 and returns[0].type.endswith("[]") and isinstance(result, (list, tuple)):
            return self._record_list(op, inputs, result)
        outs = list(result) if isinstance(result, tuple) else [result]
        node = self.frame.graph.insert(op.name, inputs, len(outs), None, [type_of(o) for o in outs])
        self._annotate(node)
        wrapped = [traced(o, ("value",)) if isinstance(o, (int, float)) else o for o in outs]
        for o, v in zip(wrapped, node.outputs):
            if isinstance(o, TRACED):
                self.frame.bind(o, v)
        if isinstance(result, tuple):
            return type(result)(*wrapped) if hasattr(result, "_fields") else tuple(wrapped)
        return wrapped[0]

    def _record_list(self, op, inputs: list, result):
        """An op returning Tensor[] (split, unbind...): the list, then prim::ListUnpack of its items."""
        lst = self._insert(op.name, inputs, ListType(TENSOR))
        node = self.frame.graph.insert("prim::ListUnpack", [lst], len(result), None, [type_of(r) for r in result])
        self._annotate(node)
        for r, v in zip(result, node.outputs):
            self.bind(r, v)
        return result

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
        frame = self._enter(module, path, args, kwargs)
        try:
            result = module.forward(*args, **kwargs)
            flat_out = _flat_traced(result)
            for x in flat_out:
                frame.graph.add_output(self.value_of(x))
        finally:
            self.frames.pop()
        inputs = [module_value] + [self.value_of(x) for x in _flat_traced((args, kwargs)) + frame.captures]
        node = parent.graph.insert("prim::CallMethod", inputs, len(flat_out), {"name": "forward"},
                                   [type_of(x) for x in flat_out])
        self._annotate(node)
        node.callee = frame.graph
        self.method_graphs.setdefault(id(module), frame.graph)
        for x, v in zip(flat_out, node.outputs):
            parent.bind(x, v)
        return result

    # -- autograd.Function calls -----------------------------------------------------------------------
    def call_function(self, fn_cls, args: tuple, kwargs: dict):
        """Record `fn_cls.apply(*args, **kwargs)` as one prim::PythonOp node: its forward's ops in the
        node's `callee` (inlining or executing runs them), the tensors it saves for backward as extra
        outputs, and a `TracedCall` (the callee's `traced_call`) from which autodiff records its backward."""
        from ..autograd.function import TracedCall, apply_function
        parent = self.frame
        frame = Frame(Graph(), scope=parent.scope)
        named = _named_leaves(fn_cls.forward, (None, *args), kwargs)  # (None: forward's ctx)
        for x, name in named:
            frame.bind(x, frame.graph.add_input(type_of(x), name))
        self.frames.append(frame)
        try:
            result, ctx = apply_function(fn_cls, args, kwargs)
            outs = _flat_traced(result)
            saved = getattr(ctx, "_traced_saved", ())
            for x in outs + [t for t in saved if t is not None]:
                frame.graph.add_output(self.value_of(x))
        finally:
            self.frames.pop()
        leaves = [x for x, _ in named]
        node = parent.graph.insert("prim::PythonOp", [self.value_of(x) for x in leaves + frame.captures],
                                   len(frame.graph.outputs), {"name": fn_cls.__name__},
                                   [v.type for v in frame.graph.outputs])
        self._annotate(node)
        node.callee = frame.graph
        for x, v in zip(outs, node.outputs):
            parent.bind(x, v)
        frame.graph.traced_call = TracedCall(
            fn_cls, _detached_ctx(ctx), len(outs), tuple(None if t is None else True for t in saved),
            tuple(next((k for k, x in enumerate(leaves) if x is a), None) if isinstance(a, Tensor) else None
                  for a in args),
            frozenset(k for k, o in enumerate(outs) if id(o) in ctx.non_differentiable))
        return result

    def _enter(self, module, path: list, args: tuple, kwargs: dict) -> Frame:
        """Push the frame of a submodule call: `%self`, then one input per tensor/traced scalar."""
        sub = Graph()
        self_value = sub.add_input(ModuleType(type(module).__name__), "self")
        frame = Frame(sub, module, self_value, ".".join(filter(None, [self.frame.scope, *path])))
        for x, name in _named_leaves(module.forward, args, kwargs):
            frame.bind(x, sub.add_input(type_of(x), name))
        self.frames.append(frame)
        return frame


def _detached_ctx(ctx):
    """A copy of a traced call's ctx without its saved tensors (autodiff binds its own), so the
    example run's autograd graph is not kept alive."""
    kept = copy.copy(ctx)
    kept._saved, kept._node = (), None
    kept.__dict__.pop("_traced_saved", None)
    return kept


def _knows(frame: Frame, x) -> bool:
    return frame.lookup(x) is not None or (isinstance(x, Tensor) and frame.attr_path(x) is not None)


def _child_path(parent, module):
    if parent is None:
        return None
    for name, m in parent.named_modules():
        if m is module and name:
            return name.split(".")
    return None


def _has_traced(x) -> bool:
    return bool(_flat_traced(x))


def _flat_traced(x) -> list:
    """Tensors and traced scalars inside nested lists/tuples/dicts, in order, each once."""
    out, seen = [], set()

    def walk(v):
        if isinstance(v, TRACED):
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


def _is_number_list(x) -> bool:
    return all(isinstance(i, (int, float)) for i in x)


def _named_leaves(fn, args: tuple, kwargs: dict) -> list:
    """(tensor or traced scalar, parameter name) for each leaf of a call, in `_flat_traced` order."""
    names = _arg_names(fn, len(args))
    seen, out = set(), []
    for name, a in [*zip(names, args), *kwargs.items()]:
        for x in _flat_traced(a):
            if id(x) not in seen:
                seen.add(id(x))
                out.append((x, name))
    return out


def _arg_names(fn, n: int) -> list[str]:
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:n]]
    return names + [f"input_{i}" for i in range(len(names), n)]


def _lift_scalars(x):
    """An example input with its int/float leaves made traced scalars (bound to the input later)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return traced(x, ("value",))
    if isinstance(x, list):
        return [_lift_scalars(v) for v in x]
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(_lift_scalars(v) for v in x)
    if isinstance(x, dict):
        return {k: _lift_scalars(v) for k, v in x.items()}
    return x


def _output_value(rec: Recorder, x) -> Value:
    """The graph output for a returned Python structure (tuples/lists/dicts are constructed)."""
    if isinstance(x, (tuple, list)) and not _is_number_list(x):
        items = [_output_value(rec, i) for i in x]
        if isinstance(x, tuple):
            return rec._insert("prim::TupleConstruct", items, TupleType(tuple(i.type for i in items)))
        return rec._insert("prim::ListConstruct", items, ListType(items[0].type if items else TENSOR))
    if isinstance(x, dict):
        items = [v for k, val in x.items() for v in (rec.const(k), _output_value(rec, val))]
        return rec._insert("prim::DictConstruct", items, type_of(x))
    return rec.value_of(x)


def _distinct(args: tuple) -> tuple:
    """`args` with a tensor passed twice replaced, the second time, by another tensor on the same data:
    each argument is its own graph input (f(x, x) traced must not become f(x, _) for all inputs)."""
    seen, out = set(), []
    for a in args:
        if isinstance(a, Tensor) and id(a) in seen:
            a = a.detach().requires_grad_(a.requires_grad)
        seen.add(id(a))
        out.append(a)
    return tuple(out)


def record_trace(fn, args: tuple, module=None) -> tuple[Graph, Recorder, object]:
    """Run `fn(*args)` (a module's forward when `module` is given) recording a graph."""
    rec = Recorder()
    g = Graph()
    self_value = g.add_input(ModuleType(type(module).__name__), "self") if module is not None else None
    rec.frames.append(Frame(g, module, self_value))
    args = _distinct(tuple(_lift_scalars(a) for a in args))
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
