"""One block's boxes placed by Graphviz's `dot` (when it is on PATH): boxes of fixed size in, their
centres and the edges' spline points out (`dot -Tjson`), in the same form as layered.py gives."""
from __future__ import annotations

import json
import shutil
import subprocess

TIMEOUT = 60  # seconds for one block: dot is superlinear, and the layered layout is the fallback


def dot_program() -> str | None:
    """The path of Graphviz's `dot`, or None."""
    return shutil.which("dot")


def dot_layout(graph) -> None:
    """Place `graph` (graph_view.DisplayGraph) with dot, as layered.layered_layout does; raises
    RuntimeError when dot fails."""
    if not graph.boxes:
        graph.width = graph.height = 0.0
        return
    try:
        done = subprocess.run([dot_program() or "dot", "-Tjson"], input=_dot_text(graph), capture_output=True,
                              text=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"dot took more than {TIMEOUT} s") from None
    if done.returncode != 0:
        raise RuntimeError(f"dot failed: {done.stderr.strip()[:300]}")
    laid = json.loads(done.stdout)
    height = float(laid["bb"].split(",")[3])
    for obj in laid.get("objects", []):
        box = graph.boxes[int(obj["name"][1:])]
        cx, cy = (float(c) for c in obj["pos"].split(","))
        box.x, box.y = cx - box.width / 2, height - cy - box.height / 2
    graph.width = float(laid["bb"].split(",")[2])
    graph.height = height
    paths = {int(e["id"][1:]): _spline(e["pos"], height) for e in laid.get("edges", [])}
    graph.paths = [paths.get(k) or _straight(graph, k) for k in range(len(graph.edges))]


def _dot_text(graph) -> str:
    lines = ["digraph G {", "graph [rankdir=TB, nodesep=0.25, ranksep=0.42, splines=spline];",
             'node [shape=box, fixedsize=true, label=""];']
    for i, box in enumerate(graph.boxes):
        lines.append(f"v{i} [width={box.width / 72:.4f}, height={box.height / 72:.4f}];")
    for k, (s, t, _) in enumerate(graph.edges):
        lines.append(f'v{s} -> v{t} [id="e{k}"];')
    lines.append("}")
    return "\n".join(lines)


def _spline(pos: str, height: float) -> list:
    """dot's edge `pos` ("e,x,y p0 p1 ...": the arrow's tip, then cubic Bezier control points) as a
    path ("bezier", [first point, then triples of controls], tip) in our coordinates."""
    tip, points = None, []
    for token in pos.split():
        parts = token.split(",")
        if parts[0] in ("e", "s"):
            if parts[0] == "e":
                tip = (float(parts[1]), height - float(parts[2]))
            continue
        points.append((float(parts[0]), height - float(parts[1])))
    return ("bezier", points, tip)


def _straight(graph, k: int) -> list:
    s, t, _ = graph.edges[k]
    a, b = graph.boxes[s], graph.boxes[t]
    return ("smooth", [(a.x + a.width / 2, a.y + a.height), (b.x + b.width / 2, b.y)], None)
