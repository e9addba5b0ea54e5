"""A graph document (graph_json.py) with its types parsed and attributes decoded: what the native
plan is checked against and what the emitter reads. Values, nodes and graphs have the attribute
names of the compiler's IR (`value.type`, `node.kind`, `node.inputs`, `node.output`, `graph.nodes`,
...), so code written against one reads the other.

Building one from an untrusted document is a check too: every type string must parse, and sizes are
bounded (a ModelError names what is wrong).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ModelError
from .graph_json import SubgraphDoc, decode_attr
from .types import TensorType, Type, parse_type

MAX_RANK = 64


@dataclass(eq=False)
class Value:
    """A value: its name, its type and the node that produces it (None for inputs and parameters)."""
    name: str
    type: Type
    node: "Node | None" = None

    def __repr__(self) -> str:
        return f"%{self.name} : {self.type}"


@dataclass(eq=False)
class Block:
    """A nested block: parameters, nodes in order, returned values."""
    params: list
    nodes: list
    returns: list


@dataclass(eq=False)
class Node:
    """An op application: kind, input and output values, decoded attributes (subgraphs as Graphs),
    nested blocks, and its index in its block."""
    kind: str
    inputs: list
    outputs: list
    attrs: dict
    blocks: list = field(default_factory=list)
    index: int = 0

    @property
    def output(self) -> Value:
        """The only output."""
        assert len(self.outputs) == 1, f"{self.kind} has {len(self.outputs)} outputs"
        return self.outputs[0]


@dataclass(eq=False)
class Graph:
    """A typed graph: inputs, the top-level nodes, outputs."""
    inputs: list
    nodes: list
    outputs: list


def typed_graph(doc: dict) -> Graph:
    """The typed graph of a graph document that check_graph accepted; ModelError when a type does
    not parse or a tensor's rank is out of bounds."""
    values: dict = {}
    inputs = [_value(v, values) for v in doc["inputs"]]
    nodes = _nodes(doc["nodes"], values)
    return Graph(inputs, nodes, [values[name] for name in doc["outputs"]])


def _nodes(entries: list, values: dict) -> list:
    nodes = []
    for index, entry in enumerate(entries):
        attrs = {k: v if v.__class__ in _PLAIN else _attr(decode_attr(v)) for k, v in entry.get("attrs", {}).items()}
        node = Node(entry["kind"], [values[v] for v in entry["inputs"]], [], attrs, index=index)
        for b in entry.get("blocks", []):
            params = [_value(p, values) for p in b["params"]]
            node.blocks.append(Block(params, _nodes(b["nodes"], values), [values[r] for r in b["returns"]]))
        node.outputs = [_value(o, values, node) for o in entry["outputs"]]
        nodes.append(node)
    return nodes


_PLAIN = {bool, int, float, str, type(None)}  # attribute values that decode to themselves


def _attr(value):
    return typed_graph(value) if isinstance(value, SubgraphDoc) else value


def _value(entry: dict, values: dict, node: Node | None = None) -> Value:
    try:
        t = parse_type(entry["type"])
    except ValueError as e:
        raise ModelError(f"value %{entry['name']}: malformed type {entry['type'][:80]!r} ({e})") from None
    if isinstance(t, TensorType) and t.shape is not None and len(t.shape) > MAX_RANK:
        raise ModelError(f"value %{entry['name']}: a tensor of rank {len(t.shape)} (at most {MAX_RANK})")
    v = values[entry["name"]] = Value(entry["name"], t, node)
    return v
