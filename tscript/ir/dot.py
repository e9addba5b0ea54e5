"""A Graph as Graphviz DOT (`tscript ir MODEL --format dot | dot -Tsvg -o model.svg`).

A box per node (its kind and attributes), an edge per use labelled with the value's name and type,
graph inputs and block parameters as ellipses. Each block of a prim::If / prim::Loop is a cluster
whose result flows (dashed) into its node; a fusion group (a node holding a `subgraph`) is a cluster
around its subgraph's nodes, entered by the group's inputs and left by its outputs.
"""
from __future__ import annotations

from .graph import Block, Graph, Node, Value
from .printer import format_attr

MAX_ATTR = 40  # characters of an attribute value shown in a node's label


def to_dot(graph: Graph, name: str = "graph") -> str:
    """The DOT text of `graph` (a `digraph` named `name`)."""
    writer = _Writer()
    writer.lines += [f"digraph {quote(name)} {{", '  graph [fontname="monospace", fontsize=11];',
                     '  node [shape=box, fontname="monospace", fontsize=10];',
                     '  edge [fontname="monospace", fontsize=9];']
    writer.block(graph.block, "  ", "return")
    return "\n".join(writer.lines + writer.edges + ["}"]) + "\n"


def quote(text: str) -> str:
    """`text` as a DOT string (a newline breaks the label's line)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class _Writer:
    def __init__(self):
        self.lines: list[str] = []
        self.edges: list[str] = []  # written last, at the top level: an edge inside a cluster would pull
        #                             its ends into that cluster
        self.source: dict[Value, str] = {}  # value -> id of the vertex its edges start from
        self.count = 0

    def vertex(self, indent: str, label: str, style: str = "") -> str:
        """A new vertex; its id."""
        self.count += 1
        vid = f"n{self.count}"
        self.lines.append(f"{indent}{vid} [label={quote(label)}{', ' + style if style else ''}];")
        return vid

    def edge(self, value: Value, target: str) -> None:
        self.edges.append(f"  {self.source[value]} -> {target} [label={quote(f'%{value.name} : {value.type}')}];")

    def block(self, block: Block, indent: str, result: str) -> str:
        """The parameters, nodes and returns of `block`; the id of the vertex its returns flow into."""
        for v in block.params:
            self.source[v] = self.vertex(indent, f"%{v.name} : {v.type}", "shape=ellipse")
        for node in block.nodes:
            self.node(node, indent)
        end = self.vertex(indent, result, "shape=ellipse")
        for v in block.returns:
            self.edge(v, end)
        return end

    def cluster(self, indent: str, label: str, style: str, block: Block) -> str:
        """`block` in a cluster; the id of its return vertex."""
        self.count += 1
        self.lines.append(f"{indent}subgraph cluster_{self.count} {{")
        self.lines.append(f"{indent}  label={quote(label)}; {style};")
        end = self.block(block, indent + "  ", "->")
        self.lines.append(f"{indent}}}")
        return end

    def node(self, node: Node, indent: str) -> None:
        sub = node.attrs.get("subgraph")
        if isinstance(sub, Graph):
            end = self.cluster(indent, label(node), 'style=filled; fillcolor="#eef3ff"', sub.block)
            for v, param in zip(node.inputs, sub.inputs):
                self.edge(v, self.source[param])
            self.source.update((v, end) for v in node.outputs)
            return
        vid = self.vertex(indent, label(node))
        for v in node.inputs:
            self.edge(v, vid)
        for i, block in enumerate(node.blocks):
            end = self.cluster(indent, f"{node.kind} block{i}", "style=dashed", block)
            self.edges.append(f"  {end} -> {vid} [style=dashed];")
        self.source.update((v, vid) for v in node.outputs)


def label(node: Node) -> str:
    """The node's kind and its attributes (but subgraphs; long values cut), one per line."""
    lines = [node.kind]
    for key, value in node.attrs.items():
        if isinstance(value, Graph):
            continue
        text = format_attr(value)
        lines.append(f"{key}={text if len(text) <= MAX_ATTR else text[:MAX_ATTR - 3] + '...'}")
    return "\n".join(lines)
