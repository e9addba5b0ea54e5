"""Canonicalization and peephole rewrites: algebraic identities and no-op movement/cast ops removed.

Rules are data: `RULES` maps an op name to small functions `rule(ctx, node) -> Value | None`, each
returning the value that replaces the node's output (an existing value, or a node it inserted right
before `node`), or None to leave the node alone. A rule may also rewrite the node's inputs and
return `node.output` ("changed in place").

Guarantees: every rewrite gives the same values for every input the original accepts (`x + 0`
turns a -0.0 into +0.0, which compares equal, as TorchScript's peephole accepts). Identities
that would turn a fresh result into an alias of an input (`x * 1`, `x + 0`, `cat([x])`) only fire
when neither value is ever written in place, and only when the op's dtype/shape rules say the
result has exactly `x`'s dtype and shape (`int_tensor / 1` is a float tensor: not removed).
A copy (`clone`, `to(copy=True)` to the same dtype) of a result the graph computed and never writes
is that result (what an in-place activation leaves once made functional); copies of inputs and
parameters stay. `x - x` becomes zeros only for integer and bool dtypes (for floats, inf - inf is nan). Removing a
reshape to "the same shape" trusts the static shape in `x`'s type. One walk in program order, so
chains (`t(t(t(t(x))))`) collapse in a single run.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from tscript_runtime.ops import OPS, TensorMeta

from ..graph import Graph, Node, Value
from ..types import ANY, TensorType
from ..verify import assignable
from .constant_propagation import constant_value
from .effects import fresh_result, mutated_values, view_source

MAX_CONSTANT_CHECK = 1 << 16  # elements of a tensor constant inspected for "all ones / all zeros"


class _Context:
    """What rules may ask about the graph: constants and which values are written in place."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.mutated = mutated_values(graph)

    def constant(self, v: Value):
        """(True, value) for a constant (tensor constants as arrays), else (False, None)."""
        return constant_value(self.graph, v)

    def is_number(self, v: Value, number) -> bool:
        """Is `v` a constant equal to `number` everywhere (a Python scalar or a small tensor)?"""
        ok, value = self.constant(v)
        if not ok or value is None or isinstance(value, (str, list, tuple, np.dtype)):
            return False
        if isinstance(value, np.ndarray):
            return value.size <= MAX_CONSTANT_CHECK and bool(np.all(value == number))
        return value == number

    def may_alias_fresh(self, *values: Value) -> bool:
        """May a fresh result be replaced by an alias of its input? Only if neither is written, nor
        what they are views of (a view made by an earlier rewrite is not in `mutated`: its source is)."""
        for v in values:
            while v is not None:
                if v in self.mutated:
                    return False
                v = view_source(v.node) if v.node is not None else None
        return True


# -- type facts -------------------------------------------------------------------------------------------
_UNKNOWN = object()


def _meta(v: Value, ctx: _Context):
    """What an op's rules see for input `v`: a TensorMeta, a constant, or _UNKNOWN."""
    ok, value = ctx.constant(v)
    if ok:
        return value
    t = v.type
    if isinstance(t, TensorType) and t.dtype is not None and t.shape is not None:
        return TensorMeta(t.shape, t.dtype)
    return _UNKNOWN


def _keeps_type(ctx: _Context, node: Node, x: Value) -> bool:
    """Do the op's rules say the node's result has exactly `x`'s dtype and shape?"""
    op = OPS[node.kind]
    args = [_meta(v, ctx) for v in node.inputs]
    if any(a is _UNKNOWN for a in args) or not isinstance(x.type, TensorType) or x.type.shape is None:
        return False
    try:
        return op.dtype(*args) == x.type.dtype and tuple(op.shape(*args)) == tuple(x.type.shape)
    except Exception:  # a rule that cannot decide on these inputs: keep the node
        return False


def _identity(ctx: _Context, node: Node, x: Value) -> Value | None:
    """`x` if the node (a fresh-result op) may be replaced by it."""
    if ctx.may_alias_fresh(x, node.output) and _keeps_type(ctx, node, x):
        return x
    return None


def _producer(v: Value, kind: str) -> Node | None:
    return v.node if v.node is not None and v.node.kind == kind else None


def _static_shape(v: Value) -> tuple | None:
    t = v.type
    if isinstance(t, TensorType) and t.shape is not None and all(isinstance(d, int) for d in t.shape):
        return tuple(t.shape)
    return None


# -- arithmetic identities ----------------------------------------------------------------------------------
def _mul(ctx, node):
    a, b = node.inputs
    if ctx.is_number(b, 1):
        return _identity(ctx, node, a)
    if ctx.is_number(a, 1):
        return _identity(ctx, node, b)
    return None


def _finite_alpha(ctx, node) -> bool:
    ok, alpha = ctx.constant(node.inputs[2])
    return ok and isinstance(alpha, (int, float)) and np.isfinite(alpha)


def _add(ctx, node):
    a, b, alpha = node.inputs
    if ctx.is_number(b, 0) and _finite_alpha(ctx, node):
        return _identity(ctx, node, a)
    if ctx.is_number(a, 0) and ctx.is_number(alpha, 1):
        return _identity(ctx, node, b)
    return None


def _sub(ctx, node):
    a, b, alpha = node.inputs
    if ctx.is_number(b, 0) and _finite_alpha(ctx, node):
        return _identity(ctx, node, a)
    if a is b and ctx.is_number(alpha, 1) and _exact_zero(ctx, node, a):
        with ctx.graph.inserting_before(node):
            return ctx.graph.insert("aten::zeros_like", [a, ctx.graph.constant(None)], 1,
                                    types=[node.output.type]).output
    return None


def _exact_zero(ctx, node, a) -> bool:
    """`a - a` is exactly zero: integer or bool dtypes (no inf/nan), same dtype and shape as `a`."""
    dtype = a.type.dtype if isinstance(a.type, TensorType) else None
    return dtype is not None and dtype.kind in "iub" and _keeps_type(ctx, node, a)


def _div(ctx, node):
    a, b, mode = node.inputs
    ok, rounding = ctx.constant(mode)
    if ok and rounding is None and ctx.is_number(b, 1):
        return _identity(ctx, node, a)
    return None


# -- movement ops -----------------------------------------------------------------------------------------
def _transpose(ctx, node):
    inner = _producer(node.inputs[0], "aten::transpose")
    if inner is None:
        return None
    dims = [ctx.constant(v) for v in node.inputs[1:] + inner.inputs[1:]]
    if not all(ok and isinstance(d, int) for ok, d in dims):
        return None
    x, d = inner.inputs[0], [d for _, d in dims]
    rank = x.type.rank if isinstance(x.type, TensorType) else None
    if rank:  # -1 and rank - 1 name the same dim
        d = [k % rank if -rank <= k < rank else k for k in d]
    return x if {d[0], d[1]} == {d[2], d[3]} else None


def _t(ctx, node):
    inner = _producer(node.inputs[0], "aten::t")
    return inner.inputs[0] if inner is not None else None


def _permute(ctx, node):
    inner = _producer(node.inputs[0], "aten::permute")
    if inner is None:
        return None
    (ok_q, q), (ok_p, p) = ctx.constant(node.inputs[1]), ctx.constant(inner.inputs[1])
    if not (ok_q and ok_p and isinstance(p, list) and isinstance(q, list)) or len(p) != len(q):
        return None
    n = len(p)
    p, q = [d % n if -n <= d < n else None for d in p], [d % n if -n <= d < n else None for d in q]
    if None in p or None in q or len(set(p)) != n or len(set(q)) != n:
        return None
    dims = [p[j] for j in q]  # permute(permute(x, p), q) takes dim p[q[j]] of x
    x = inner.inputs[0]
    if dims == list(range(n)):
        return x
    with ctx.graph.inserting_before(node):
        return ctx.graph.insert("aten::permute", [x, ctx.graph.constant(dims)], 1, types=[node.output.type]).output


def _reshape(ctx, node):
    x, shape = node.inputs
    ok, target = ctx.constant(shape)
    if ok and isinstance(target, list) and _static_shape(x) == tuple(target):
        return x
    inner = _producer(x, "aten::reshape") if node.kind == "aten::reshape" else None
    if inner is not None and ctx.may_alias_fresh(inner.inputs[0], node.output):
        node.set_input(0, inner.inputs[0])  # reshape(reshape(x, a), b) == reshape(x, b)
        return node.output
    return _infer_missing_size(ctx, node)


def _infer_missing_size(ctx, node):
    """reshape(const, [1, %n, 1]) with one unknown entry: the entry is whatever keeps the element
    count (as -1 would), so the list becomes a constant and the reshape can be folded."""
    x, shape = node.inputs
    ok, value = ctx.constant(x)
    lst = shape.node
    if not ok or not isinstance(value, np.ndarray) or value.size == 0 or lst is None or \
            lst.kind != "prim::ListConstruct":
        return None
    entries = [ctx.constant(v) for v in lst.inputs]
    unknown = [i for i, (known, _) in enumerate(entries) if not known]
    if len(unknown) != 1 or any(d == -1 for known, d in entries if known):
        return None
    dims = [-1 if not known else d for known, d in entries]
    with ctx.graph.inserting_before(node):
        node.set_input(1, ctx.graph.constant(dims))
    return node.output


def _cat(ctx, node):
    tensors, dim = node.inputs
    lst = tensors.node
    if lst is None or lst.kind != "prim::ListConstruct" or len(lst.inputs) != 1:
        return None
    x = lst.inputs[0]
    rank = x.type.rank if isinstance(x.type, TensorType) else None
    ok, d = ctx.constant(dim)
    if not ok or not isinstance(d, int) or not rank or not -rank <= d < rank:
        return None
    return x if ctx.may_alias_fresh(x, node.output) else None


def _contiguous(ctx, node):
    """contiguous() of a result that is contiguous by construction: an earlier contiguous(), or an
    op without tensor inputs (creation ops allocate fresh C-ordered arrays)."""
    x = node.inputs[0]
    producer = x.node
    if producer is None:
        return None
    op = OPS.get(producer.kind)
    fresh = op is not None and not op.tensor_pos and not op.list_pos and op.mutates is None
    return x if producer.kind == "aten::contiguous" or fresh else None


# -- dtype casts --------------------------------------------------------------------------------------------
def _to(ctx, node):
    x, dtype, copy = node.inputs
    (ok_d, target), (ok_c, copies) = ctx.constant(dtype), ctx.constant(copy)
    if not ok_d or not ok_c:
        return None
    collapsed = _collapse_cast_chain(ctx, node, target)
    x = node.inputs[0]
    source = x.type.dtype if isinstance(x.type, TensorType) else None
    same = target is None or (source is not None and np.dtype(target) == source)
    if same and (not copies or _copy_of_fresh(ctx, node)):
        return x
    return node.output if collapsed else None


def _clone(ctx, node):
    """clone() of a fresh result that nothing writes (an in-place activation, once functional)."""
    ok, layout = ctx.constant(node.inputs[1]) if len(node.inputs) > 1 else (True, None)
    return node.inputs[0] if ok and layout is None and _copy_of_fresh(ctx, node) else None


def _copy_of_fresh(ctx, node) -> bool:
    """Is a copy of `node.inputs[0]` needless: new memory an op of this graph made (not an input, a
    parameter or a view of one, which the caller owns), never written, and not also returned as it is?"""
    x = node.inputs[0]
    return x.node is not None and fresh_result(x.node) and ctx.may_alias_fresh(x, node.output) and \
        x not in ctx.graph.outputs


def _collapse_cast_chain(ctx, node, target) -> bool:
    """to(to(x, wider), d) reads x directly: the first cast lost nothing."""
    inner = _producer(node.inputs[0], "aten::to")
    if inner is None or target is None:
        return False
    (ok_mid, mid), origin = ctx.constant(inner.inputs[1]), inner.inputs[0]
    origin_dtype = origin.type.dtype if isinstance(origin.type, TensorType) else None
    if not ok_mid or mid is None or origin_dtype is None or not lossless(origin_dtype, np.dtype(mid)) or \
            not ctx.may_alias_fresh(origin, node.output):  # the result may now be `origin` itself
        return False
    node.set_input(0, origin)
    return True


def lossless(src: np.dtype, dst: np.dtype) -> bool:
    """Does every value of dtype `src` convert to `dst` and back exactly?"""
    if src == dst or src.kind == "b":
        return True
    if dst.kind == "f":
        return src.kind == "f" and dst.itemsize >= src.itemsize or \
            src.kind in "iu" and src.itemsize * 8 < np.finfo(dst).nmant + 1
    if dst.kind in "iu" and src.kind in "iu":
        return np.can_cast(src, dst, "safe")
    return False


def _unchecked_cast(ctx, node):
    """A cast that refines nothing (`Optional[Tensor]` -> `Tensor` of a value known to be a tensor)."""
    x = node.inputs[0]
    return x if x.type != ANY and assignable(x.type, node.output.type) else None


RULES: dict[str, Callable[[_Context, Node], Value | None]] = {
    "aten::mul": _mul,
    "aten::add": _add,
    "aten::sub": _sub,
    "aten::div": _div,
    "aten::transpose": _transpose,
    "aten::t": _t,
    "aten::permute": _permute,
    "aten::reshape": _reshape,
    "aten::view": _reshape,
    "aten::cat": _cat,
    "aten::contiguous": _contiguous,
    "aten::to": _to,
    "aten::clone": _clone,
    "prim::unchecked_cast": _unchecked_cast,
}


def canonicalize(graph: Graph) -> bool:
    """Apply `RULES` to every node once, in program order (in place); True if anything changed."""
    ctx = _Context(graph)
    changed = False
    for node in list(graph.all_nodes()):
        rule = RULES.get(node.kind)
        if rule is None or node.owner is None:
            continue
        new = rule(ctx, node)
        if new is None:
            continue
        changed = True
        if new is not node.output:
            node.output.replace_all_uses_with(new)
            node.destroy()
    return changed
