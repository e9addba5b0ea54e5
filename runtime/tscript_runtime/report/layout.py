"""Placing a GraphView (graph_view.py): clusters inside out (each block of a cluster laid out on its
own, the cluster sized around its blocks side by side), every block by one engine: Graphviz's `dot`
when it is on PATH and the graph is small enough for it, else our layered layout (layered.py). A
graph too large for either is shown as a list (listview.py) instead of a picture."""
from __future__ import annotations

from .dot_layout import dot_layout, dot_program
from .graph_view import CHAR_W, LINE_H, PAD
from .layered import layered_layout

DOT_MAX_BOXES = 600        # dot takes seconds to minutes beyond this; the layered layout does not
PICTURE_MAX_BOXES = 60_000  # past this a browser struggles with the picture: the list view instead
CLUSTER_PAD = 10.0
BLOCK_GAP = 16.0


def choose_engine(view, requested: str = "auto") -> str:
    """"dot", "layered" or "list" for `view`: `requested` unless it is "auto" (or "dot" without dot)."""
    if requested == "dot" and dot_program() is None:
        requested = "auto"
    if requested != "auto":
        return requested
    if view.n_boxes > PICTURE_MAX_BOXES:
        return "list"
    return "dot" if dot_program() is not None and view.n_boxes <= DOT_MAX_BOXES else "layered"


def place(graph, engine: str) -> None:
    """Lay out `graph` (a DisplayGraph) and, first, every cluster's blocks in it."""
    for box in graph.boxes:
        if box.inner:
            for inner in box.inner:
                place(inner, engine)
            _size_cluster(box)
    if engine == "dot" and len(graph.boxes) > 2:
        dot_layout(graph)
    else:
        layered_layout(graph)


def _size_cluster(box) -> None:
    """A cluster's size around its blocks, and where each block starts inside it (block.x, block.y)."""
    head = LINE_H + PAD
    labelled = any(b.label for b in box.inner)
    x = CLUSTER_PAD
    for block in box.inner:
        label_w = len(block.label) * CHAR_W if labelled else 0.0
        block.width, block.height = max(block.width, label_w, 24.0), max(block.height, 8.0)
        block.x, block.y = x, head + (LINE_H if labelled else 0.0)
        x += block.width + BLOCK_GAP
    inner_h = max(b.height for b in box.inner)
    box.width = max(x - BLOCK_GAP + CLUSTER_PAD, len(box.lines[0]) * CHAR_W + 2 * PAD)
    box.height = head + (LINE_H if labelled else 0.0) + inner_h + CLUSTER_PAD
