"""The graph as a list, for graphs too large to draw: one row per shown node (the same boxes as the
picture), nested under the fusion group or block holding it, each with its output values and types."""
from __future__ import annotations

from html import escape


def render_list(view) -> str:
    """An indented list of `view`'s boxes; rows carry the node ids the report's script selects."""
    parts = ['<div class="graph-list">']
    _graph(parts, view.root)
    parts.append("</div>")
    return "".join(parts)


def _graph(parts: list, graph) -> None:
    parts.append("<ul>")
    for box in graph.boxes:
        head, rest = box.lines[0], box.lines[1:]
        parts.append(f'<li class="{box.cls}" data-id="{escape(box.id)}"><span class="hd">{escape(head)}</span> '
                     f'<span class="v">{escape("  ".join(rest))}</span>')
        for block in box.inner:
            if block.label:
                parts.append(f'<div class="blabel">{escape(block.label)}</div>')
            _graph(parts, block)
        parts.append("</li>")
    parts.append("</ul>")
