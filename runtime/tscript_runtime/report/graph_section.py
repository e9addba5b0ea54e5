"""The graph section: the final graph as a picture (or a list when it is too large to draw), with the
facts its script shows when a node is clicked (embedded as JSON)."""
from __future__ import annotations

import json
from html import escape

from .graph_view import build_view
from .layout import choose_engine, place
from .listview import render_list
from .svg import render_svg

ENGINES = {"dot": "laid out by Graphviz dot", "layered": "laid out by tscript's layered layout",
           "list": "shown as a list (too large to draw)"}


def graph_section(entry: dict, ir, prefix: str, layout: str = "auto") -> tuple[str, object]:
    """(HTML of the section, the GraphView) for a report entry; `layout`: auto, dot, layered or list."""
    view = build_view(entry["graph"], ir)
    engine = choose_engine(view, layout)
    picture, engine = _draw(view, engine, prefix)
    hidden = sum(1 for f in view.nodes.values() if f["k"] in ("prim::Constant", "prim::GetAttr"))
    inside = f" (and {view.n_sub} inside fusion groups)" if view.n_sub else ""
    caption = (f"{view.n_visible} nodes{inside} {ENGINES[engine]}. Fusion groups are boxes around the nodes of their "
               f"kernel; If and Loop boxes hold their blocks; the {hidden} constants and attribute reads are listed "
               f"as the inputs of the nodes reading them. Drag to pan, scroll to zoom, click a node.")
    tools = ('<div class="graph-tools"><button data-act="fit" title="fit the graph in view">fit</button>'
             '<button data-act="in" title="zoom in">+</button><button data-act="out" title="zoom out">−</button>'
             '<button data-act="one" title="actual size">1:1</button>'
             '<input type="search" placeholder="find %value or op…" aria-label="find a node"></div>')
    panel = '<aside class="node-panel"><p class="hint">Click a node to see its IR line, source line and kernel.</p></aside>'
    html = (f'<p class="note">{escape(caption)}</p><div class="graph-wrap" data-engine="{engine}">{tools}'
            f'<div class="graph-view">{picture}</div>{panel}</div>')
    return html, view


def _draw(view, engine: str, prefix: str) -> tuple[str, str]:
    """The picture by `engine`, falling back to the layered layout, then to the list, on failure."""
    for candidate in dict.fromkeys([engine, "layered", "list"]):
        if candidate == "list":
            return render_list(view), "list"
        try:
            place(view.root, candidate)
            return render_svg(view, prefix), candidate
        except (OSError, RuntimeError, ValueError, KeyError):  # dot missing, failing or timing out
            continue
    return render_list(view), "list"


def node_data(view, profile) -> str:
    """The JSON the report's script reads: node facts by id, value producers, per-node profile times."""
    times = {}
    if profile is not None:
        for row in profile.rows:
            node = view.producer.get(row.name)
            if node is not None:
                times[node] = round(row.seconds / profile.runs * 1e3, 5)
    text = json.dumps({"nodes": view.nodes, "producer": view.producer, "ms": times}, separators=(",", ":"))
    return text.replace("</", "<\\/")
