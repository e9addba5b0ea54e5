"""The IR verifier: `verify(graph)` raises `IRVerifyError` naming the first broken node, or returns.

It checks, in one walk (linear in the size of the graph):
- dominance: every value read is defined before, in the same block or an enclosing one (not later,
  not in a sibling block, not inside a nested block), and belongs to this graph;
- structure: node/block back-pointers and links agree; value names are unique and printable;
- each node against its kind: aten ops against their schema in the op table (input count and
  types, output count and types), prim nodes against the arity table `PRIMS` (prim::If and
  prim::Loop with their block signatures); unknown kinds are errors;
- use lists: every input slot is recorded in its value's `uses`, and every recorded use is a real
  input slot of a node in the graph.
Graph-valued attributes (fusion groups' subgraphs) are verified too, each once however many nodes
hold it; a subgraph that contains itself is an error.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Callable, NoReturn

from tscript_runtime.graph_json import TensorRef
from tscript_runtime.ops import OPS

from .graph import Block, Graph, Node, Value
from .types import (ANY, BOOL, DEVICE, DTYPE, FLOAT, GENERATOR, INT, NONE, STR, DictType, ListType,
                    OptionalType, TensorType, TupleType, Type, type_of_value)


class IRVerifyError(ValueError):
    """The graph breaks an IR invariant; the message names the node (kind and outputs)."""


def verify(graph: Graph) -> None:
    """Check `graph`'s invariants (module docstring); raise IRVerifyError on the first violation.
    Subgraphs are walked depth-first without recursion (a chain of them may be long)."""
    path: dict[Graph, list] = {}  # graphs being verified, outermost first -> [holding node, subgraphs left]
    done: set[Graph] = set()
    _enter(path, graph, None)
    while path:
        g, (_, todo) = next(reversed(path.items()))
        node, sub = next(todo, (None, None))
        if sub is None:
            done.add(g)
            del path[g]
        elif sub in path:
            raise IRVerifyError(f"{_where(path)}{describe(node)}: its subgraph contains itself")
        elif sub not in done:
            _enter(path, sub, node)


def _enter(path: dict, graph: Graph, holder: Node | None) -> None:
    """Check `graph` itself and put it at the end of the path, with its subgraphs still to walk."""
    path[graph] = [holder, iter(())]
    try:
        path[graph][1] = iter(_Verifier(graph).run())
    except IRVerifyError as e:
        raise IRVerifyError(f"{_where(path)}{e}") from None


def _where(path: dict) -> str:
    """`in the subgraph of <node>: ` for each subgraph on the path (the prefix of error messages)."""
    return "".join(f"in the subgraph of {describe(node)}: " for node, _ in path.values() if node is not None)


# The printer writes names as they are; the parser reads `%` followed by these characters.
_NAME = re.compile(r"[\w.]+")


def describe(node: Node) -> str:
    """A node as error messages name it: `%a, %b = aten::max.dim`, with its source line if known."""
    if node.kind == "prim::Return":
        block = node.owner
        if block is None or block.owner is None:
            return "the graph's return"
        return f"the return of block{block.owner.blocks.index(block)} of {describe(block.owner)}"
    outs = ", ".join(f"%{o.name}" for o in node.outputs)
    text = f"{outs} = {node.kind}" if outs else node.kind
    return f"{text} ({node.source})" if node.source else text


class _Verifier:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.visible: set[Value] = set()     # values a node may read at the current point of the walk
        self.defined: list[Value] = []
        self.names: dict[str, Value] = {}
        self.reads: dict[Value, int] = {}     # input slots reading each value
        self.live: set[Node] = set()          # nodes reached (return pseudo-nodes included)
        self.subgraphs: list[tuple[Node, Graph]] = []

    def run(self) -> list[tuple[Node, Graph]]:
        """Check the graph (not its subgraphs); return its subgraphs with the nodes holding them."""
        if self.graph.block.owner is not None:
            raise IRVerifyError("the graph's top block is owned by a node")
        self.block(self.graph.block)
        self.check_uses()
        return self.subgraphs

    # -- the walk -------------------------------------------------------------------------------------
    def block(self, block: Block) -> None:
        added = []
        for p in block.params:
            if p.block is not block or p.node is not None:
                raise IRVerifyError(f"block parameter %{p.name} does not point back to its block")
            self.define(p, added)
        prev = None
        for node in block.nodes:
            if node.owner is not block or node.prev is not prev:
                raise IRVerifyError(f"{describe(node)}: its owner/prev links disagree with its block")
            self.node(node, block)
            for out in node.outputs:
                if out.node is not node or out.block is not None:
                    raise IRVerifyError(f"{describe(node)}: output %{out.name} does not point back to it")
                self.define(out, added)
            prev = node
        if block.last is not prev:
            raise IRVerifyError("a block's last-node link disagrees with its node list")
        self.returns(block)
        self.visible.difference_update(added)

    def returns(self, block: Block) -> None:
        ret = block.return_node
        if len(block.returns) != len(ret.inputs) or any(a is not b for a, b in zip(block.returns, ret.inputs)):
            raise IRVerifyError(f"{describe(ret)}: the returns list was changed without recording its uses")
        self.live.add(ret)
        for v in ret.inputs:
            self.read(ret, v, block)

    def node(self, node: Node, block: Block) -> None:
        self.live.add(node)
        for v in node.inputs:
            self.read(node, v, block)
        _check_kind(node)
        for key, value in node.attrs.items():
            if isinstance(value, Graph):
                self.subgraphs.append((node, value))
        for b in node.blocks:
            if b.owner is not node:
                raise IRVerifyError(f"{describe(node)}: one of its blocks does not point back to it")
            self.block(b)

    def define(self, v: Value, added: list) -> None:
        if v.graph is not self.graph:
            raise IRVerifyError(f"%{v.name} belongs to another graph")
        if not _NAME.fullmatch(v.name):
            raise IRVerifyError(f"value name %{v.name} cannot be printed (names are letters, digits, _ and .)")
        if self.names.setdefault(v.name, v) is not v:
            raise IRVerifyError(f"two values are named %{v.name}")
        self.visible.add(v)
        self.defined.append(v)
        added.append(v)

    def read(self, user: Node, v: Value, block: Block) -> None:
        if v not in self.visible:
            raise IRVerifyError(f"{describe(user)}: input %{v.name} {_why_not_visible(v, block, self.graph)}")
        self.reads[v] = self.reads.get(v, 0) + 1

    # -- use lists ------------------------------------------------------------------------------------
    def check_uses(self) -> None:
        for v in self.defined:
            slots = set()
            for use in v.uses:
                node, i = use.node, use.index
                if node not in self.live or i >= len(node.inputs) or node.inputs[i] is not v:
                    raise IRVerifyError(f"%{v.name} records a use by input {i} of {describe(node)}, "
                                        f"which does not read it")
                slots.add((node, i))
            if len(slots) != len(v.uses) or len(v.uses) != self.reads.get(v, 0):
                raise IRVerifyError(f"%{v.name} records {len(v.uses)} uses but is read by "
                                    f"{self.reads.get(v, 0)} input slots")


def _why_not_visible(v: Value, block: Block, graph: Graph) -> str:
    """Why a value read in `block` is not in scope there (only called on failure)."""
    if v.graph is not graph:
        return "belongs to another graph"
    home = v.block if v.node is None else v.node.owner
    if home is None:
        return "is defined by a node that is no longer in the graph"
    if _encloses(home, block):
        return "is used before its definition"
    if _encloses(block, home):
        return "is defined inside a nested block, which is not visible here"
    return "is defined in a block that does not enclose this use"


def _encloses(outer: Block, inner: Block | None) -> bool:
    while inner is not None:
        if inner is outer:
            return True
        inner = inner.owner.owner if inner.owner is not None else None
    return False


# -- node kinds ---------------------------------------------------------------------------------------
def _check_kind(node: Node) -> None:
    op = OPS.get(node.kind)
    if op is not None:
        _check_blocks(node, 0)
        _check_schema(node, op.schema)
        return
    prim = PRIMS.get(node.kind)
    if prim is None:
        what = "op (not in the op table)" if node.kind.startswith("aten::") else "node kind"
        raise IRVerifyError(f"{describe(node)}: unknown {what} {node.kind}")
    prim.check(node)


def _check_blocks(node: Node, n: int) -> None:
    if len(node.blocks) != n:
        raise IRVerifyError(f"{describe(node)}: expected {n} blocks, got {len(node.blocks)}")


def _check_schema(node: Node, schema) -> None:
    args = schema.args
    if len(node.inputs) != len(args):
        raise IRVerifyError(f"{describe(node)}: expected {len(args)} inputs "
                            f"({', '.join(a.name for a in args)}), got {len(node.inputs)}")
    for i, (a, v) in enumerate(zip(args, node.inputs)):
        if not accepts(a.type, v.type):
            raise IRVerifyError(f"{describe(node)}: argument '{a.name}' (input {i}) must be {a.type}, "
                                f"got %{v.name} : {v.type}")
    if len(node.outputs) != len(schema.returns):
        raise IRVerifyError(f"{describe(node)}: expected {len(schema.returns)} outputs, got {len(node.outputs)}")
    for i, (r, v) in enumerate(zip(schema.returns, node.outputs)):
        if not accepts(r.type, v.type):
            raise IRVerifyError(f"{describe(node)}: output {i} must be {r.type}, got %{v.name} : {v.type}")


_NUMBERS = {INT, FLOAT, BOOL}
# Which IR types each schema type accepts. Numbers widen (an int passes as float), a dtype may be
# an int code as in TorchScript, and `Any`-typed values pass everywhere (see `accepts`).
_ACCEPTS: dict[str, Callable[[Type], bool]] = {
    "Tensor": lambda t: isinstance(t, TensorType),
    "Tensor|Scalar": lambda t: isinstance(t, TensorType) or t in _NUMBERS,
    "Scalar": lambda t: t in _NUMBERS,
    "int": lambda t: t == INT,
    "float": lambda t: t in (FLOAT, INT),
    "bool": lambda t: t == BOOL,
    "str": lambda t: t == STR,
    "ScalarType": lambda t: t in (DTYPE, INT),
    "Generator": lambda t: t == GENERATOR,
    "Device": lambda t: t == DEVICE,
    "Any": lambda t: True,
}


@functools.lru_cache(maxsize=4096)  # few distinct (schema type, IR type) pairs; runs per input
def accepts(schema_type: str, t: Type) -> bool:
    """Can a value of IR type `t` be passed where the op schema says `schema_type` (`int[]?`...)?"""
    if t == ANY:
        return True
    if schema_type.endswith("?"):
        inner = schema_type[:-1]
        return t == NONE or accepts(inner, t.elem if isinstance(t, OptionalType) else t)
    if schema_type.endswith("[]"):
        elem = schema_type[:-2]
        if isinstance(t, ListType):
            return accepts(elem, t.elem)
        if isinstance(t, TupleType):
            return all(accepts(elem, e) for e in t.elems)
        return elem == "int" and t == INT  # int[] dims take a single int, as in PyTorch
    return _ACCEPTS[schema_type](t)


def assignable(src: Type, dst: Type) -> bool:
    """Can a value of type `src` flow where `dst` is expected (block returns, loop-carried values)?
    Tensors of any dtype/shape flow into each other: shapes are refined, not checked, here."""
    if src == dst or ANY in (src, dst):
        return True
    if isinstance(src, TensorType) and isinstance(dst, TensorType):
        return True
    if isinstance(dst, OptionalType):
        return src == NONE or assignable(src.elem if isinstance(src, OptionalType) else src, dst.elem)
    if isinstance(src, ListType) and isinstance(dst, ListType):
        return assignable(src.elem, dst.elem)
    if isinstance(src, TupleType) and isinstance(dst, TupleType):
        return len(src.elems) == len(dst.elems) and all(map(assignable, src.elems, dst.elems))
    return False


# -- prim nodes ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Prim:
    """How a non-schema node kind looks: input and output counts as (min, max) with max None for
    no bound, the attributes it needs (name -> Python type), how many blocks, and an extra check."""
    inputs: tuple[int, int | None]
    outputs: tuple[int, int | None]
    attrs: dict = field(default_factory=dict)
    blocks: int = 0
    extra: Callable[[Node], None] | None = None

    def check(self, node: Node) -> None:
        _check_count(node, "inputs", len(node.inputs), self.inputs)
        _check_count(node, "outputs", len(node.outputs), self.outputs)
        for name, kind in self.attrs.items():
            if not isinstance(node.attrs.get(name), kind):
                raise IRVerifyError(f"{describe(node)}: needs a {kind.__name__} attribute '{name}', "
                                    f"got {node.attrs.get(name)!r}")
        _check_blocks(node, self.blocks)
        if self.extra is not None:
            self.extra(node)


def _check_count(node: Node, what: str, n: int, bounds: tuple) -> None:
    lo, hi = bounds
    if n < lo or (hi is not None and n > hi):
        wanted = str(lo) if lo == hi else f"at least {lo}" if hi is None else f"{lo} to {hi}"
        raise IRVerifyError(f"{describe(node)}: expected {wanted} {what}, got {n}")


def _fail(node: Node, problem: str) -> NoReturn:
    raise IRVerifyError(f"{describe(node)}: {problem}")


def _check_type(node: Node, v: Value, role: str, ok: bool) -> None:
    if not ok:
        _fail(node, f"{role} %{v.name} has type {v.type}")


def _constant(node: Node) -> None:
    value, t = node.attrs.get("value"), node.output.type
    if isinstance(value, TensorRef):
        expected_ok = isinstance(t, TensorType)
    elif isinstance(value, (list, tuple)):
        expected_ok = isinstance(t, ListType if isinstance(value, list) else TupleType) or t == ANY
    else:
        expected_ok = type_of_value(value) == t or (value is None and isinstance(t, OptionalType)) or t == ANY
    if not expected_ok:
        _fail(node, f"value {value!r} does not have the output type {t}")


def _list_construct(node: Node) -> None:
    _check_type(node, node.output, "output", isinstance(node.output.type, ListType) or node.output.type == ANY)


def _list_unpack(node: Node) -> None:
    (lst,) = node.inputs
    _check_type(node, lst, "input", isinstance(lst.type, ListType) or lst.type == ANY)


def _tuple_construct(node: Node) -> None:
    t = node.output.type
    ok = isinstance(t, TupleType) and len(t.elems) == len(node.inputs) and \
        all(assignable(v.type, e) for v, e in zip(node.inputs, t.elems))
    _check_type(node, node.output, f"output of a {len(node.inputs)}-tuple", ok or t == ANY)


def _tuple_unpack(node: Node) -> None:
    (tup,) = node.inputs
    ok = isinstance(tup.type, TupleType) and len(tup.type.elems) == len(node.outputs)
    _check_type(node, tup, f"input unpacked into {len(node.outputs)} values", ok or tup.type == ANY)


def _dict_construct(node: Node) -> None:
    if len(node.inputs) % 2:
        _fail(node, f"expected key/value pairs, got {len(node.inputs)} inputs")
    _check_type(node, node.output, "output", isinstance(node.output.type, DictType) or node.output.type == ANY)


def _check_returns(node: Node, block: Block, label: str, types: list[Type]) -> None:
    if len(block.returns) != len(types):
        _fail(node, f"{label} returns {len(block.returns)} values, expected {len(types)}")
    for v, t in zip(block.returns, types):
        if not assignable(v.type, t):
            _fail(node, f"{label} returns %{v.name} : {v.type} where {t} is expected")


def _if(node: Node) -> None:
    (cond,) = node.inputs
    _check_type(node, cond, "condition", cond.type in (BOOL, ANY))
    for i, block in enumerate(node.blocks):
        if block.params:
            _fail(node, f"block{i} of prim::If must not have parameters, got {len(block.params)}")
        _check_returns(node, block, f"block{i}", [o.type for o in node.outputs])


def _loop(node: Node) -> None:
    trips, cond, *carried = node.inputs
    _check_type(node, trips, "max trip count", trips.type in (INT, ANY))
    _check_type(node, cond, "initial condition", cond.type in (BOOL, ANY))
    (body,) = node.blocks
    if len(body.params) != 1 + len(carried):
        _fail(node, f"body has {len(body.params)} parameters, expected {1 + len(carried)} "
                    f"(the iteration number and {len(carried)} loop-carried values)")
    if len(node.outputs) != len(carried):
        _fail(node, f"has {len(node.outputs)} outputs for {len(carried)} loop-carried values")
    it, *params = body.params
    _check_type(node, it, "iteration parameter", it.type in (INT, ANY))
    for v, p, o in zip(carried, params, node.outputs):
        if not (assignable(v.type, p.type) and assignable(p.type, o.type)):
            _fail(node, f"loop-carried %{v.name} : {v.type}, body parameter %{p.name} : {p.type} and "
                        f"output %{o.name} : {o.type} disagree")
    _check_returns(node, body, "the body", [BOOL] + [p.type for p in params])


def _fusion_group(node: Node) -> None:
    sub = node.attrs["subgraph"]
    if len(sub.inputs) != len(node.inputs) or len(sub.outputs) != len(node.outputs):
        _fail(node, f"subgraph takes {len(sub.inputs)} inputs and returns {len(sub.outputs)} values, "
                    f"the node has {len(node.inputs)} inputs and {len(node.outputs)} outputs")
    for outer, inner in [*zip(node.inputs, sub.inputs), *zip(sub.outputs, node.outputs)]:
        if not assignable(outer.type, inner.type):
            _fail(node, f"%{outer.name} : {outer.type} flows into %{inner.name} : {inner.type} "
                        f"across the subgraph boundary")


NO, ONE, TWO, ANY_N = (0, 0), (1, 1), (2, 2), (0, None)
_FUSION = Prim(ANY_N, ANY_N, {"subgraph": Graph}, extra=_fusion_group)
# Every node kind that is not an op-table op (tscript_runtime.prims.PRIMS runs most of them).
PRIMS: dict[str, Prim] = {
    "prim::Constant": Prim(NO, ONE, extra=_constant),
    "prim::GetAttr": Prim(ONE, ONE, {"name": str}),
    "prim::SetAttr": Prim(TWO, NO, {"name": str}),
    "prim::ListConstruct": Prim(ANY_N, ONE, extra=_list_construct),
    "prim::ListUnpack": Prim(ONE, ANY_N, extra=_list_unpack),
    "prim::TupleConstruct": Prim(ANY_N, ONE, extra=_tuple_construct),
    "prim::TupleUnpack": Prim(ONE, ANY_N, extra=_tuple_unpack),
    "prim::TupleIndex": Prim(TWO, ONE),
    "prim::DictConstruct": Prim(ANY_N, ONE, extra=_dict_construct),
    "prim::RaiseException": Prim((1, 2), NO),
    "prim::Uninitialized": Prim(NO, ONE),
    "prim::unchecked_cast": Prim(ONE, ONE),
    "prim::dtype": Prim(ONE, ONE),
    "prim::requires_grad": Prim(ONE, ONE),
    "prim::CallMethod": Prim((1, None), ANY_N, {"name": str}),
    "prim::CallFunction": Prim(ANY_N, ANY_N),
    "prim::PythonOp": Prim(ANY_N, ANY_N, {"name": str}),
    "prim::If": Prim(ONE, ANY_N, blocks=2, extra=_if),
    "prim::Loop": Prim((2, None), ANY_N, blocks=1, extra=_loop),
    "prim::FusionGroup": _FUSION,
    "tscript::FusionGroup": _FUSION,
    "tscript::RowGroup": _FUSION,
    "tscript::ConvGroup": _FUSION,
    "aten::__getitem__": Prim(TWO, ONE),
    "aten::len": Prim(ONE, ONE),
    "aten::dim": Prim(ONE, ONE),
}
