"""The machine-readable graph (`<entry>.graph.json` in a saved model): what the executor runs.

    {"format": "tscript-graph", "version": 1,
     "inputs": [{"name": "x.1", "type": "Float(batch, 784)"}, ...],
     "outputs": ["5"],
     "nodes": [{"kind": "aten::linear", "inputs": ["x.1", "w"], "outputs": [{"name": "5", "type": "..."}],
                "attrs": {...}, "blocks": [{"params": [...], "nodes": [...], "returns": [...]}]}]}

Attribute values are JSON scalars and lists, or tagged objects: {"tuple": [...]}, {"dtype": "float32"},
{"tensor": "c0"} (a tensor constant stored beside the graph), {"float": "nan"|"inf"|"-inf"}.
"""
from __future__ import annotations

import functools
import json
import math

import numpy as np

from . import dtypes as dt
from .errors import ModelError
from .ops import OPS
from .prims import GROUPS, NODE_SHAPES

FORMAT, VERSION = "tscript-graph", 1


class TensorRef:
    """An attribute referring to a tensor constant stored by name beside the graph."""
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorRef) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"<Tensor {self.name}>"


def encode_attr(value):
    """A node attribute as JSON-compatible data."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.dtype):
        return {"dtype": dt.NAMES[value]}
    if isinstance(value, TensorRef):
        return {"tensor": value.name}
    if isinstance(value, tuple):
        return {"tuple": [encode_attr(v) for v in value]}
    if isinstance(value, list):
        return [encode_attr(v) for v in value]
    raise TypeError(f"cannot store attribute value {value!r} in a graph file")


def document_text(doc: dict) -> str:
    """The canonical JSON text of a graph document: what a saved model stores (tscript.jit.save), and
    the text the object cache keys its native code by. A loaded model keys by the member's bytes as
    read, so a file written with this text finds the code its compile left in the cache."""
    return json.dumps(doc, sort_keys=True, allow_nan=False)


class SubgraphDoc(dict):
    """A graph-valued attribute (a fusion group's subgraph), as a checked graph document."""


def decode_attr(data):
    """Inverse of encode_attr, for attributes of a document check_graph accepted (subgraphs are
    checked with their graph); ModelError on anything unexpected (files are untrusted)."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, dict) and set(data) == {"graph"}:
        return SubgraphDoc(data["graph"])
    if isinstance(data, list):
        return [decode_attr(v) for v in data]
    if isinstance(data, dict) and len(data) == 1:
        (tag, v), = data.items()
        if tag == "tuple" and isinstance(v, list):
            return tuple(decode_attr(x) for x in v)
        if tag == "dtype" and v in dt.BY_NAME:
            return dt.BY_NAME[v]
        if tag == "tensor" and isinstance(v, str):
            return TensorRef(v)
        if tag == "float" and v in ("nan", "inf", "-inf"):
            return float(v)
    raise ModelError(f"malformed attribute value in graph: {data!r}")


def check_graph(data) -> dict:
    """Validate the structure of a graph document, its subgraphs (graph-valued attributes) included:
    names, nesting, definitions before uses, and what each node's kind needs (input and output
    counts within its op's schema, the blocks of prim::If and prim::Loop, a group's subgraph, the
    attributes a prim reads), so that running a checked document never fails on its structure."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ModelError("not a tscript graph document")
    if data.get("version") != VERSION:
        raise ModelError(f"unsupported graph format version {data.get('version')!r} (this runtime reads "
                         f"version {VERSION})")
    defined = {_name(i, "graph input") for i in _list(data, "inputs")}
    _check_block(_list(data, "nodes"), defined)
    for r in _list(data, "outputs"):
        if not isinstance(r, str) or r not in defined:
            raise ModelError(f"graph output %{r} is never defined")
    return data


def all_nodes(nodes: list) -> list:
    """Every node of `nodes` (a document check_graph accepted), inside blocks and subgraphs too, in
    document order: each node before those nested in it."""
    found: list = []

    def walk(nodes: list) -> None:
        for node in nodes:
            found.append(node)
            for block in node.get("blocks", _NO_BLOCKS):
                walk(block["nodes"])
            for value in node.get("attrs", _NO_ATTRS).values():
                if isinstance(value, dict) and value.keys() == {"graph"}:
                    walk(value["graph"]["nodes"])
    walk(nodes)
    return found


def _list(d: dict, key: str) -> list:
    v = d.get(key)
    if not isinstance(v, list):
        raise ModelError(f"graph field '{key}' must be a list")
    return v


def _name(entry, what: str) -> str:
    """The name of a value entry, which must also carry its type as text."""
    name = entry.get("name") if isinstance(entry, dict) else None
    if not isinstance(name, str) or not isinstance(entry.get("type"), str):
        raise ModelError(f"{what} without a name and a type: {entry!r}")
    return name


def _check_block(nodes: list, defined: set) -> None:
    for node in nodes:
        if not isinstance(node, dict) or not isinstance(node.get("kind"), str):
            raise ModelError(f"malformed node in graph: {node!r}")
        inputs = node.get("inputs")
        for v in inputs if inputs.__class__ is list else _list(node, "inputs"):
            if not isinstance(v, str) or v not in defined:
                raise ModelError(f"{node['kind']} uses %{v} before it is defined")
        attrs, blocks = node.get("attrs", _NO_ATTRS), node.get("blocks", _NO_BLOCKS)
        if not isinstance(attrs, dict) or not (blocks is _NO_BLOCKS or isinstance(blocks, list)):
            raise ModelError(f"{node['kind']} has malformed attributes or blocks")
        for value in attrs.values():
            if isinstance(value, dict) and value.keys() == {"graph"}:
                try:
                    check_graph(value["graph"])
                except ModelError as e:
                    raise ModelError(f"subgraph of {node['kind']}: {e}") from None
        for block in blocks:
            if not isinstance(block, dict):
                raise ModelError(f"malformed block of {node['kind']}: {block!r}")
            inner = set(defined) | {_name(p, "block parameter") for p in _list(block, "params")}
            _check_block(_list(block, "nodes"), inner)
            for r in _list(block, "returns"):
                if not isinstance(r, str) or r not in inner:
                    raise ModelError(f"block of {node['kind']} returns undefined %{r}")
        outputs = node.get("outputs")
        for o in outputs if outputs.__class__ is list else _list(node, "outputs"):
            name = o.get("name") if o.__class__ is dict else None
            defined.add(name if name.__class__ is str and o.get("type").__class__ is str else _name(o, "node output"))
        _check_kind(node)


_NO_ATTRS, _NO_BLOCKS = {}, ()  # (never changed: what a node without attributes or blocks reads)


# -- what each kind of node needs (so a document the executor runs never fails on its structure) ----

def _check_kind(node: dict) -> None:
    """The inputs, outputs, blocks and attributes `node`'s kind needs (of a node whose lists are
    checked); kinds this runtime does not know are the loader's to refuse."""
    kind, n_in, n_out, blocks = node["kind"], len(node["inputs"]), len(node["outputs"]), node.get("blocks", [])
    if kind == "prim::If":
        _count(kind, "inputs", n_in, 1, 1)
        _blocks(kind, blocks, 2, params=0, returns=n_out)
    elif kind == "prim::Loop":  # (max trips, condition, *carried) -> carried; body (i, *carried) -> (cond, *carried)
        _count(kind, "inputs", n_in, 2, None)
        _count(kind, "outputs", n_out, n_in - 2, n_in - 2)
        _blocks(kind, blocks, 1, params=n_in - 1, returns=n_in - 1)
    elif blocks:
        raise ModelError(f"{kind} has blocks (only prim::If and prim::Loop have them)")
    elif kind in GROUPS:
        _group(node, n_in, n_out)
    elif kind in NODE_SHAPES:
        lo, hi, outs, attrs = NODE_SHAPES[kind]
        _count(kind, "inputs", n_in, lo, hi)
        if outs is not None:
            _count(kind, "outputs", n_out, outs, outs)
        for name, kind_of in attrs.items():
            if not isinstance(node.get("attrs", {}).get(name), kind_of):
                raise ModelError(f"{kind} needs a {kind_of.__name__} attribute '{name}'")
        if kind == "prim::DictConstruct" and n_in % 2:
            raise ModelError(f"{kind} takes keys and values (an even number of inputs), got {n_in}")
    elif kind in OPS:
        _check_op_counts(kind, n_in, n_out)


@functools.lru_cache(maxsize=4096)  # a graph has thousands of nodes of a few dozen ops (a raise is not cached)
def _check_op_counts(kind: str, n_in: int, n_out: int) -> None:
    """An op node's input and output counts are within its schema's."""
    op = OPS[kind]
    _count(kind, "inputs", n_in, op.n_required, len(op.schema.args), op.schema)
    _count(kind, "outputs", n_out, len(op.schema.returns), len(op.schema.returns), op.schema)


def _count(kind: str, what: str, n: int, lo: int, hi: int | None, schema=None) -> None:
    """`n` of `what` must be lo..hi (hi None: no limit); the error quotes the op's `schema` if given
    (formatted only then: a graph has thousands of nodes)."""
    if n < lo or (hi is not None and n > hi):
        wanted = str(lo) if lo == hi else f"at least {lo}" if hi is None else f"{lo} to {hi}"
        noun = what[:-1] if wanted == "1" else what  # "1 input"
        raise ModelError(f"{kind} takes {wanted} {noun}{'' if schema is None else f' ({schema})'}, got {n}")


def _blocks(kind: str, blocks: list, n: int, params: int, returns: int) -> None:
    if len(blocks) != n:
        raise ModelError(f"{kind} needs {n} block{'s' * (n != 1)}, got {len(blocks)}")
    for i, b in enumerate(blocks):
        if len(b["params"]) != params or len(b["returns"]) != returns:
            raise ModelError(f"{kind}: block {i} takes {len(b['params'])} parameters and returns "
                             f"{len(b['returns'])} values, expected {params} and {returns}")


def _group(node: dict, n_in: int, n_out: int) -> None:
    """A fused group: its subgraph (already checked) takes the node's inputs and gives its one output."""
    kind, sub = node["kind"], node.get("attrs", {}).get("subgraph")
    if not (isinstance(sub, dict) and set(sub) == {"graph"}):
        raise ModelError(f"{kind} needs a 'subgraph' attribute (a graph)")
    _count(kind, "outputs", n_out, 1, 1)
    sub_in, sub_out = len(sub["graph"]["inputs"]), len(sub["graph"]["outputs"])
    if (sub_in, sub_out) != (n_in, n_out):
        raise ModelError(f"{kind}: its subgraph takes {sub_in} inputs and returns {sub_out} values, the node has "
                         f"{n_in} inputs and {n_out} outputs")
