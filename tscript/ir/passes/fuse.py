"""Fusion grouping: maximal groups of elementwise ops (with broadcasting) become one
`tscript::FusionGroup` node holding the group as a subgraph (attribute `subgraph`), so the code
generator emits one loop over the group's output instead of one pass over memory per op.

A node joins the group of its consumer when the op table says it is pointwise (`op.facts`), its
output is used only inside the group, its shape broadcasts into the group's output, and nothing
it reads is mutated in place anywhere (moving it would then be unsafe; the group's last node, which
stays in place, may read such values). Guarantee: the executor
gives the same results before and after (a group can always be run by interpreting its subgraph).
"""
from __future__ import annotations

from tscript_runtime.ops import OPS
from tscript_runtime.ops.facts import node_compute_dtype

from ..graph import Block, Graph, Node, Value, clone_node
from ..types import ScalarType, TensorType
from .constant_propagation import constant_value
from .effects import mutated_values

# What native kernels load, compute and store (the runtime's kernel_specs.DTYPES): values of other dtypes
# (float16, bfloat16, 8/16-bit integers, complex) stay outside groups and run on the reference kernels.
SUPPORTED_DTYPES = {"float32", "float64", "int64", "int32", "bool"}
GROUP = "tscript::FusionGroup"


def _known_tensor(v: Value) -> bool:
    t = v.type
    return isinstance(t, TensorType) and t.dtype is not None and t.shape is not None and t.dtype.name in SUPPORTED_DTYPES


def fusible(graph: Graph, node: Node, mutable: set) -> bool:
    """Can `node` be computed inside a fusion group?"""
    op = OPS.get(node.kind)
    pw = op.facts.pointwise if op is not None else None
    if pw is None or len(node.outputs) != 1 or not _known_tensor(node.output):
        return False
    if any(v in mutable for v in node.inputs):
        return False
    for v in node.inputs[:pw.n_values]:
        if not (_known_tensor(v) or isinstance(v.type, ScalarType) and v.type.name in ("int", "float", "bool")
                or constant_value(graph, v)[0] and not isinstance(v.type, TensorType)):
            return False
    attrs = []
    for v in node.inputs:
        ok, value = constant_value(graph, v)
        attrs.append(value if ok else _NOT_CONSTANT)
    if any(a is _NOT_CONSTANT for a in attrs[pw.n_values:]):
        return False
    if pw.when is None:
        return True
    scalars = {v: a for v, a in zip(node.inputs, attrs) if a is not _NOT_CONSTANT and not isinstance(v.type, TensorType)}
    return pw.when(attrs, node_compute_dtype(pw, node, scalars))


_NOT_CONSTANT = object()


def _broadcasts_into(shape, target) -> bool:
    if len(shape) > len(target):
        return False
    return all(s == 1 or s == t for s, t in zip(reversed(shape), reversed(target)))


def fuse(graph: Graph) -> bool:
    """Form fusion groups in every block; True if any group was made."""
    mutable = mutated_values(graph, initial_fills=False)
    return _block(graph, graph.block, mutable)


def _block(graph: Graph, block: Block, mutable: set) -> bool:
    changed = False
    grouped: set = set()
    for node in list(block.reversed_nodes()):
        for b in node.blocks:
            changed |= _block(graph, b, mutable)
        # an anchor stays where it is (its group takes its place), so it may read values mutated in place
        if node in grouped or node.owner is None or not fusible(graph, node, set()):
            continue
        members = _grow(graph, node, block, mutable, grouped)
        _make_group(graph, node, members)
        changed = True
    return changed


def _grow(graph: Graph, anchor: Node, block: Block, mutable: set, grouped: set) -> list[Node]:
    """The anchor plus the producers that can join it (in original order)."""
    members = {anchor}
    shape = anchor.output.type.shape
    work = list(anchor.inputs)
    while work:
        v = work.pop()
        p = v.node
        if p is None or p in members or p in grouped or p.owner is not block or p.kind == "prim::Constant":
            continue
        if not fusible(graph, p, mutable) or not _broadcasts_into(p.output.type.shape, shape):
            continue
        if any(u.node not in members for u in p.output.uses):
            continue
        members.add(p)
        work.extend(p.inputs)
    grouped.update(members)
    return [n for n in block.nodes if n in members]


def _make_group(graph: Graph, anchor: Node, members: list[Node], kind: str = GROUP, copy=None) -> Node:
    """Replace `members` (in order; `anchor` last) by one `kind` node holding them as a subgraph.
    Scalar constants move inside; every other outside value becomes a group input. `copy(sub,
    node, value_map)` puts a member into the subgraph (default: a clone)."""
    sub = Graph()
    value_map: dict = {}
    inputs: list[Value] = []
    member_set = set(members)
    for n in members:
        for v in n.inputs:
            if v in value_map or (v.node is not None and v.node in member_set):
                continue
            ok, value = constant_value(graph, v)
            if ok and not isinstance(v.type, TensorType):
                value_map[v] = sub.constant(value)
            else:
                value_map[v] = sub.add_input(v.type, v.name)
                inputs.append(v)
    with sub.inserting_at_end(sub.block):
        for n in members:
            (copy or _clone)(sub, n, value_map)
    sub.add_output(value_map[anchor.output])
    with graph.inserting_before(anchor):
        group = graph.insert(kind, inputs, 1, {"subgraph": sub}, [anchor.output.type])
    group.source, group.scope = anchor.source, anchor.scope
    anchor.output.replace_all_uses_with(group.output)
    for n in reversed(members):
        n.destroy()
    return group


def _clone(sub: Graph, node: Node, value_map: dict) -> None:
    clone_node(node, sub.block, value_map)


# -- row groups: elementwise ops plus reductions over the last dim (one kernel per group) ----------

ROW_GROUP = "tscript::RowGroup"
_REDUCE_KINDS = {name for name, op in OPS.items() if op.facts.row_reduction}
_ROW_COMPOSITES = {"aten::softmax", "aten::log_softmax"}  # decomposed into row reductions in the group
_NONEMPTY_KINDS = {"aten::amax", "aten::amin"}
_LOGICAL_KINDS = {"aten::all", "aten::any"}


def _const_arg(graph: Graph, node: Node, i: int):
    ok, value = constant_value(graph, node.inputs[i])
    return value if ok else _NOT_CONSTANT


def _last_dim(value, rank: int) -> bool:
    dims = value if isinstance(value, (list, tuple)) else [value]
    return len(dims) == 1 and isinstance(dims[0], int) and dims[0] in (-1, rank - 1)


def _row_role(graph: Graph, node: Node, shape: tuple, mutable: set) -> str | None:
    """"full", "row" (a per-row scalar) or None: how `node` can take part in a row group over `shape`."""
    if len(node.outputs) != 1 or not _known_tensor(node.output) or any(v in mutable for v in node.inputs):
        return None
    out = tuple(node.output.type.shape)
    row_shape = tuple(shape[:-1]) + (1,)
    if node.kind in _REDUCE_KINDS:
        src = node.inputs[0]
        keep = _const_arg(graph, node, 2 if node.kind != "aten::var" else 3)
        logical = node.kind in _LOGICAL_KINDS  # all / any: bool results, no dtype argument
        dtype_ok = node.kind in ("aten::amax", "aten::amin", "aten::var") or logical or _const_arg(graph, node, 3) is None
        # amax/amin of an empty row raise; a kernel cannot, so their rows must be known non-empty
        length_ok = node.kind not in _NONEMPTY_KINDS or isinstance(shape[-1], int) and shape[-1] > 0
        if (_known_tensor(src) and tuple(src.type.shape) == shape and keep is True and dtype_ok and length_ok
                and _last_dim(_const_arg(graph, node, 1), len(shape)) and out == row_shape
                and node.output.type.dtype.kind == ("b" if logical else "f")):
            return "row"
        return None
    if node.kind in _ROW_COMPOSITES:
        ok = (out == shape and _last_dim(_const_arg(graph, node, 1), len(shape)) and _const_arg(graph, node, 2) is None
              and node.output.type.dtype.kind == "f")
        return "full" if ok else None
    if fusible(graph, node, mutable) and out in (shape, row_shape):
        return "full" if out == shape else "row"
    return None


def fuse_rows(graph: Graph) -> bool:
    """Form row groups (at least one reduction or softmax inside); True if any was made."""
    mutable = mutated_values(graph, initial_fills=False)
    changed = False
    for block in _blocks(graph.block):
        grouped: set = set()
        for node in list(block.reversed_nodes()):
            if node in grouped or node.owner is None:
                continue
            shape = _row_shape(node)
            if shape is None or _row_role(graph, node, shape, mutable) is None:
                continue
            members = _grow_rows(graph, node, block, shape, mutable, grouped)
            if any(m.kind in _REDUCE_KINDS | _ROW_COMPOSITES for m in members):
                _make_row_group(graph, node, members)
                changed = True
    return changed


def _blocks(block: Block):
    yield block
    for n in block.nodes:
        for b in n.blocks:
            yield from _blocks(b)


def _row_shape(node: Node):
    """The full row-iteration shape a group anchored at `node` works over."""
    if node.kind in _REDUCE_KINDS:
        src = node.inputs[0]
        return tuple(src.type.shape) if _known_tensor(src) and src.type.rank else None
    if len(node.outputs) == 1 and _known_tensor(node.output) and node.output.type.rank:
        return tuple(node.output.type.shape)
    return None


def _grow_rows(graph, anchor, block, shape, mutable, grouped) -> list[Node]:
    members = {anchor}
    work = list(anchor.inputs)
    while work:
        v = work.pop()
        p = v.node
        if p is None or p in members or p in grouped or p.owner is not block or p.kind == "prim::Constant":
            continue
        if _row_role(graph, p, shape, mutable) is None or any(u.node not in members for u in p.output.uses):
            continue
        members.add(p)
        work.extend(p.inputs)
    grouped.update(members)
    return [n for n in block.nodes if n in members]


def _decompose_softmax(sub: Graph, node: Node, value_map: dict) -> None:
    """softmax / log_softmax over the last dim as amax, exp, sum and elementwise ops (in the group)."""
    x = value_map[node.inputs[0]]
    t, row_t = node.output.type, _row_type(node.output.type)
    dim, keep, none, one = sub.constant([-1]), sub.constant(True), sub.constant(None), sub.constant(1)
    m = sub.insert("aten::amax", [x, dim, keep], 1, types=[row_t]).output
    shifted = sub.insert("aten::sub", [x, m, one], 1, types=[t]).output
    e = sub.insert("aten::exp", [shifted], 1, types=[t]).output
    s = sub.insert("aten::sum", [e, dim, keep, none], 1, types=[row_t]).output
    if node.kind == "aten::softmax":  # times 1/sum (once per row), as PyTorch's CPU kernel
        inv = sub.insert("aten::reciprocal", [s], 1, types=[row_t]).output
        out = sub.insert("aten::mul", [e, inv], 1, types=[t]).output
    else:
        log_s = sub.insert("aten::log", [s], 1, types=[row_t]).output
        out = sub.insert("aten::sub", [shifted, log_s, one], 1, types=[t]).output
    value_map[node.output] = out


def _row_type(t: TensorType) -> TensorType:
    return TensorType(t.dtype, tuple(t.shape[:-1]) + (1,))


def _make_row_group(graph: Graph, anchor: Node, members: list[Node]) -> Node:
    return _make_group(graph, anchor, members, ROW_GROUP, _copy_row_member)


def _copy_row_member(sub: Graph, node: Node, value_map: dict) -> None:
    """Row-group members are cloned, softmax/log_softmax decomposed into row reductions."""
    if node.kind in _ROW_COMPOSITES:
        _decompose_softmax(sub, node, value_map)
    else:
        clone_node(node, sub.block, value_map)
