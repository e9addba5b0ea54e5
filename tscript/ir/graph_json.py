"""Graph <-> the JSON document the runtime executes (format in tscript_runtime/graph_json.py)."""
from __future__ import annotations

from tscript_runtime.graph_json import FORMAT, VERSION, SubgraphDoc, check_graph, decode_attr, encode_attr

from .graph import Block, Graph
from .types import parse_type


def graph_to_json(graph: Graph) -> dict:
    """The executable document of `graph` (tensor constants are referenced, stored separately)."""
    return {"format": FORMAT, "version": VERSION,
            "inputs": [{"name": v.name, "type": str(v.type)} for v in graph.inputs],
            "outputs": [v.name for v in graph.outputs],
            "nodes": _nodes(graph.block)}


def _nodes(block: Block) -> list:
    out = []
    for n in block.nodes:
        entry = {"kind": n.kind, "inputs": [v.name for v in n.inputs],
                 "outputs": [{"name": v.name, "type": str(v.type)} for v in n.outputs]}
        if n.attrs:
            entry["attrs"] = {k: _encode(v) for k, v in n.attrs.items()}
        if n.blocks:
            entry["blocks"] = [{"params": [{"name": p.name, "type": str(p.type)} for p in b.params],
                                "nodes": _nodes(b), "returns": [r.name for r in b.returns]} for b in n.blocks]
        if n.scope:
            entry["scope"] = n.scope
        if n.source:
            entry["source"] = n.source
        out.append(entry)
    return out


def _encode(value):
    return {"graph": graph_to_json(value)} if isinstance(value, Graph) else encode_attr(value)


def _decode(data):
    value = decode_attr(data)
    return graph_from_json(value) if isinstance(value, SubgraphDoc) else value


def graph_from_json(data: dict) -> Graph:
    """Rebuild a Graph from its document."""
    check_graph(data)
    g = Graph()
    values = {i["name"]: g.add_input(parse_type(i["type"]), i["name"]) for i in data["inputs"]}
    _fill(g.block, data["nodes"], values)
    for name in data["outputs"]:
        g.add_output(values[name])
    return g


def _fill(block: Block, nodes: list, values: dict) -> None:
    g = block.graph
    for entry in nodes:
        attrs = {k: _decode(v) for k, v in entry.get("attrs", {}).items()}
        node = g.create(entry["kind"], [values[v] for v in entry["inputs"]], len(entry["outputs"]), attrs,
                        [parse_type(o["type"]) for o in entry["outputs"]], [o["name"] for o in entry["outputs"]])
        node.scope, node.source = entry.get("scope", ""), entry.get("source")
        block.append(node)
        for o, v in zip(entry["outputs"], node.outputs):
            values[o["name"]] = v
        for b in entry.get("blocks", []):
            nb = node.add_block()
            for p in b["params"]:
                values[p["name"]] = nb.add_param(parse_type(p["type"]), p["name"])
            _fill(nb, b["nodes"], values)
            for r in b["returns"]:
                nb.add_return(values[r])
