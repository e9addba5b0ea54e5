"""A graph document (graph_json.py) as the report draws it: boxes and edges, per block.

Every node is one box (`node` class) except constants and attribute reads (`prim::Constant`,
`prim::GetAttr`): they are shown as the inputs of the nodes reading them (in the node's details), as a
picture of a model leaves its weights out of the wiring. A fusion group is a box around the nodes of
its subgraph (`subnode` class: they are nodes of the kernel, not of the graph); `prim::If` and
`prim::Loop` are boxes around one box per block. Graph inputs and the return are `io` boxes. An edge
runs from the box defining a value to each box reading it in the same block: a value read inside a
nested block runs to the box around that block.

Box sizes follow their text (monospace); layout.py places the boxes, svg.py draws them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..prims import GROUPS

HIDDEN = ("prim::Constant", "prim::GetAttr")
CONTAINERS = ("prim::If", "prim::Loop")
CHAR_W, LINE_H, PAD = 6.6, 15.0, 8.0  # 11px monospace: width of a character, height of a line, inner margin
MAX_CHARS = 44                         # longer lines are cut with an ellipsis
MAX_OUTPUT_LINES = 3


@dataclass
class Box:
    """A box of the picture: a node, a graph input or the return, or a cluster around blocks."""
    id: str
    lines: list                                  # first line is the title
    cls: str                                     # CSS classes: node, subnode, io; + cluster, group, block
    inner: list = field(default_factory=list)    # clusters: the DisplayGraph of each block (side by side)
    width: float = 0.0
    height: float = 0.0
    x: float = 0.0                               # top-left, relative to the enclosing graph (layout.py)
    y: float = 0.0


@dataclass
class DisplayGraph:
    """The boxes of one block and the edges between them (box index -> box index, value label)."""
    boxes: list = field(default_factory=list)
    edges: list = field(default_factory=list)
    paths: list = field(default_factory=list)    # per edge, its points (layout.py)
    label: str = ""                              # a block's header: its parameters and returns
    width: float = 0.0
    height: float = 0.0
    x: float = 0.0                               # a cluster's block: where it starts in the cluster
    y: float = 0.0


@dataclass
class GraphView:
    """The picture's model and, per node id, the facts the report's script shows on a click."""
    root: DisplayGraph
    nodes: dict            # node id -> facts (kind, outputs, inputs, source, IR line, kernel, ...)
    producer: dict         # value name (top-level namespace) -> node id
    n_visible: int         # boxes of class `node`: one per node that is not HIDDEN
    n_sub: int             # boxes of class `subnode`: nodes inside fusion groups
    n_boxes: int           # all boxes, subnodes, io and clusters included


def build_view(doc: dict, ir=None) -> GraphView:
    """The GraphView of graph document `doc`; `ir` (ir_text.IRText of the same graph) links nodes to
    their IR lines."""
    builder = _Builder(ir)
    root = builder.block(doc["nodes"], [v for v in doc["inputs"] if not v.get("type", "").startswith("__module__")],
                         doc["outputs"], "", top=True)
    return GraphView(root, builder.facts, builder.producer, builder.visible, builder.sub, builder.boxes)


def size_box(box: Box) -> None:
    """A leaf box's size from its text."""
    box.width = max(len(line) for line in box.lines) * CHAR_W + 2 * PAD
    box.height = len(box.lines) * LINE_H + PAD


def short(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"


def title(kind: str) -> str:
    """An op's name as a box shows it: without the aten:: and tscript:: namespaces."""
    for space in ("aten::", "tscript::"):
        if kind.startswith(space):
            return kind[len(space):]
    return kind


class _Builder:
    def __init__(self, ir):
        self.ir = ir
        self.facts: dict = {}
        self.producer: dict = {}
        self.visible = self.sub = self.boxes = 0
        self.kernel = None  # the kernel of the fusion group being built

    def block(self, nodes: list, params: list, returns: list, section: str, top: bool = False,
              sub: bool = False) -> DisplayGraph:
        """The DisplayGraph of one block (a subgraph's when `sub`)."""
        graph = DisplayGraph()
        where: dict = {}  # value name -> index of the box defining it in this block
        if top:
            for v in params:
                where[v["name"]] = self.add(graph, Box(f"in-{v['name']}", ["input", short(f"%{v['name']} : {v['type']}")],
                                                       "io"))
        for node in nodes:
            self.node(graph, node, where, section, sub)
        if top:
            out = self.add(graph, Box("return", ["return", short(", ".join(f"%{r}" for r in returns))], "io"))
            self.wire(graph, where, returns, out)
        return graph

    def add(self, graph: DisplayGraph, box: Box) -> int:
        if not box.inner:
            size_box(box)
        graph.boxes.append(box)
        self.boxes += 1
        return len(graph.boxes) - 1

    def node(self, graph: DisplayGraph, node: dict, where: dict, section: str, sub: bool) -> None:
        nid = f"n{len(self.facts)}"
        kind, outs = node["kind"], node["outputs"]
        line = self.ir.line_of(outs[0]["name"], section) if self.ir is not None and outs else None
        self.facts[nid] = _facts(node, line)
        if sub:  # its values are named in the group's own subgraph, not in the graph
            self.facts[nid]["g"] = 1
            if self.kernel:
                self.facts[nid]["ker"] = self.kernel
        else:
            self.producer.update((o["name"], nid) for o in outs)
        if kind in HIDDEN:
            return
        lines = [title(kind)] + [short(f"%{o['name']} : {o['type']}") for o in outs[:MAX_OUTPUT_LINES]]
        if len(outs) > MAX_OUTPUT_LINES:
            lines.append(f"(+{len(outs) - MAX_OUTPUT_LINES} more)")
        cls = "subnode" if sub else "node"
        box = Box(nid, lines, cls)
        if kind in GROUPS and isinstance(node.get("attrs", {}).get("subgraph"), dict):
            self.group(box, node, line)
        elif kind in CONTAINERS and node.get("blocks"):
            self.container(box, node, section)
        if box.inner:  # a cluster's one header line: its title and first output
            box.lines = [lines[0] + (f"  → {lines[1]}" if len(lines) > 1 else "")]
        index = self.add(graph, box)
        self.visible += cls == "node"
        self.sub += cls == "subnode"
        self.wire(graph, where, _reads(node), index)
        where.update((o["name"], index) for o in outs)

    def group(self, box: Box, node: dict, line) -> None:
        """A fusion group: a box around its subgraph's nodes."""
        doc = node["attrs"]["subgraph"]["graph"]
        kernel = node.get("attrs", {}).get("kernel")
        box.lines[0] = f"{title(node['kind'])} {kernel}" if isinstance(kernel, str) else box.lines[0]
        box.cls += " cluster group"
        section = self.ir.subgraph.get(line, "") if self.ir is not None and line is not None else ""
        self.kernel = kernel if isinstance(kernel, str) else None
        box.inner = [self.block(doc["nodes"], doc["inputs"], doc["outputs"], section, sub=True)]
        self.kernel = None

    def container(self, box: Box, node: dict, section: str) -> None:
        """prim::If / prim::Loop: a box around one box per block."""
        box.cls += " cluster"
        names = ("then", "else") if node["kind"] == "prim::If" else ("body",)
        box.inner = []
        for label, block in zip(names, node["blocks"]):
            params = ", ".join(f"%{p['name']}" for p in block["params"])
            inner = self.block(block["nodes"], block["params"], block["returns"], section)
            inner.label = short(f"{label}({params}) -> ({', '.join('%' + r for r in block['returns'])})")
            box.inner.append(inner)

    @staticmethod
    def wire(graph: DisplayGraph, where: dict, names, target: int) -> None:
        seen = set()
        for name in names:
            source = where.get(name)
            if source is not None and source != target and source not in seen:
                seen.add(source)
                graph.edges.append((source, target, name))


def _reads(node: dict) -> list:
    """The values a node reads, those read inside its blocks included (in order, once each); values
    defined inside its blocks are not."""
    reads = list(node["inputs"])
    for block in node.get("blocks", []):
        inside = {p["name"] for p in block["params"]}
        for inner in block["nodes"]:
            reads += [v for v in _reads(inner) if v not in inside]
            inside.update(o["name"] for o in inner["outputs"])
        reads += [r for r in block["returns"] if r not in inside]
    return list(dict.fromkeys(reads))


def _facts(node: dict, line) -> dict:
    """What a click on the node shows: kind, outputs with types, inputs, attributes, source, IR line."""
    attrs = {k: v for k, v in node.get("attrs", {}).items() if k != "subgraph"}
    facts = {"k": node["kind"], "o": [[o["name"], o.get("type", "")] for o in node["outputs"]], "i": node["inputs"]}
    if attrs:
        text = json.dumps(attrs, sort_keys=True)
        facts["a"] = text if len(text) <= 200 else text[:199] + "…"
    for key, field_ in (("s", "source"), ("sc", "scope")):
        if isinstance(node.get(field_), str) and node[field_]:
            facts[key] = node[field_]
    if line is not None:
        facts["l"] = line
    kernel = node.get("attrs", {}).get("kernel")
    if isinstance(kernel, str):
        facts["ker"] = kernel
    return facts
