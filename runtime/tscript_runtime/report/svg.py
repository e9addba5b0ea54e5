"""A laid-out GraphView (graph_view.py, layout.py) as inline SVG: one `<g class="node">` per shown node
(`subnode` for the nodes inside a fusion group, `io` for graph inputs and the return), clusters as
framed groups holding their blocks, edges as curves under the boxes. Nothing in it refers outside
the page: the report's script does zoom, pan and clicks."""
from __future__ import annotations

from html import escape

from .graph_view import LINE_H, PAD

MARGIN = 12.0


def render_svg(view, prefix: str) -> str:
    """The SVG of `view` (placed); `prefix` keeps its ids apart from other graphs in the page."""
    parts: list = []
    _graph(parts, view.root, MARGIN, MARGIN, f"{prefix}-arrow")
    w, h = view.root.width + 2 * MARGIN, view.root.height + 2 * MARGIN
    return (f'<svg class="graph" id="{prefix}-svg" viewBox="0 0 {w:.0f} {h:.0f}" width="{w:.0f}" height="{h:.0f}" '
            f'data-w="{w:.0f}" data-h="{h:.0f}"><defs><marker id="{prefix}-arrow" viewBox="0 0 8 8" refX="7" '
            f'refY="4" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0L8,4L0,8z"/></marker></defs>'
            f'<g class="viewport">{"".join(parts)}</g></svg>')


def _graph(parts: list, graph, ox: float, oy: float, arrow: str) -> None:
    for (_, _, name), path in zip(graph.edges, graph.paths):
        parts.append(f'<path class="edge" d="{_d(path, ox, oy)}" data-v="{escape(name)}" marker-end="url(#{arrow})"/>')
    for box in graph.boxes:
        if box.inner:
            _cluster(parts, box, ox + box.x, oy + box.y, arrow)
        else:
            _leaf(parts, box, ox + box.x, oy + box.y)


def _leaf(parts: list, box, x: float, y: float) -> None:
    text = [f'<tspan class="hd" x="{PAD}" y="{PAD / 2 + LINE_H - 3:.1f}">{escape(box.lines[0])}</tspan>']
    text += [f'<tspan x="{PAD}" dy="{LINE_H}">{escape(line)}</tspan>' for line in box.lines[1:]]
    parts.append(f'<g class="{box.cls}" data-id="{escape(box.id)}" transform="translate({x:.1f},{y:.1f})">'
                 f'<rect width="{box.width:.1f}" height="{box.height:.1f}" rx="4"/><text>{"".join(text)}</text></g>')


def _cluster(parts: list, box, x: float, y: float, arrow: str) -> None:
    parts.append(f'<g class="{box.cls}" data-id="{escape(box.id)}"><rect class="frame" x="{x:.1f}" y="{y:.1f}" '
                 f'width="{box.width:.1f}" height="{box.height:.1f}" rx="7"/>'
                 f'<text class="hd" x="{x + PAD:.1f}" y="{y + PAD / 2 + LINE_H - 3:.1f}">{escape(box.lines[0])}</text>')
    for block in box.inner:
        bx, by = x + block.x, y + block.y
        if block.label:
            parts.append(f'<rect class="block" x="{bx - 4:.1f}" y="{by - LINE_H:.1f}" width="{block.width + 8:.1f}" '
                         f'height="{block.height + LINE_H + 4:.1f}" rx="5"/><text class="blabel" x="{bx:.1f}" '
                         f'y="{by - 4:.1f}">{escape(block.label)}</text>')
        _graph(parts, block, bx, by, arrow)
    parts.append("</g>")


def _d(path, ox: float, oy: float) -> str:
    """SVG path data: dot's Bezier controls as they are; our points joined by vertical S-curves."""
    kind, points, tip = path
    pts = [(px + ox, py + oy) for px, py in points]
    d = [f"M{pts[0][0]:.1f},{pts[0][1]:.1f}"]
    if kind == "bezier":
        d += [f"C{a[0]:.1f},{a[1]:.1f} {b[0]:.1f},{b[1]:.1f} {c[0]:.1f},{c[1]:.1f}"
              for a, b, c in zip(pts[1::3], pts[2::3], pts[3::3])]
        if tip is not None:
            d.append(f"L{tip[0] + ox:.1f},{tip[1] + oy:.1f}")
        return "".join(d)
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if abs(x1 - x0) < 0.5:
            d.append(f"L{x1:.1f},{y1:.1f}")
        else:
            mid = (y1 - y0) / 2
            d.append(f"C{x0:.1f},{y0 + mid:.1f} {x1:.1f},{y1 - mid:.1f} {x1:.1f},{y1:.1f}")
    return "".join(d)
