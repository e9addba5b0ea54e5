"""A small layered (Sugiyama-style) layout of one block's boxes, top to bottom, deterministic:

1. layers: each box one below the lowest box it reads from (boxes reading nothing sit just above their
   first reader);
2. an edge spanning several layers gets a point per layer it crosses, so it bends around the boxes;
3. order within layers: a few sweeps sorting each layer by the mean position of its neighbours;
4. x: each box moves toward the mean of its neighbours' centres, packed left to right without overlap;
5. edges: from the bottom of the box defining the value, through its points, to the top of the reader.

Graphviz's `dot` (dot_layout.py) does better on small graphs; this one is for when it is missing or the
graph is too large for it (linear in boxes + crossed layers per sweep).
"""
from __future__ import annotations

GAP_X, GAP_Y = 18.0, 30.0
SWEEPS = 4
MAX_SPAN = 12           # edges longer than this bend only when the points stay few (see _spans)
BEND_W = 6.0            # the width an edge's point takes in a layer


def layered_layout(graph) -> None:
    """Place the boxes of `graph` (graph_view.DisplayGraph; cluster sizes already known): sets each
    box's x, y, the graph's width and height, and `graph.paths`: per edge ("smooth", points, None), a
    curve leaving and entering each point vertically."""
    n = len(graph.boxes)
    if n == 0:
        graph.width = graph.height = 0.0
        return
    edges = [(s, t) for s, t, _ in graph.edges if s < t]
    rank = _ranks(n, edges, graph.boxes)
    layers, width, up, down, chains = _virtual(graph, edges, rank)
    _order(layers, up, down)
    x = _coordinates(layers, width, up, down)
    tops, heights = _rows(graph.boxes, layers)
    for v, box in enumerate(graph.boxes):
        box.x = x[v] - box.width / 2
        box.y = tops[rank[v]] + (heights[rank[v]] - box.height) / 2
    graph.width = max(x[v] + width[v] / 2 for v in range(len(width)))
    graph.height = tops[-1] + heights[-1]
    graph.paths = [_path(graph.boxes, s, t, chains.get((s, t), ()), x, rank, tops, heights)
                   for s, t, _ in graph.edges]


def _ranks(n: int, edges: list, boxes: list) -> list:
    preds = [[] for _ in range(n)]
    succs = [[] for _ in range(n)]
    for s, t in edges:
        preds[t].append(s)
        succs[s].append(t)
    rank = [0] * n
    for v in range(n):
        if preds[v]:
            rank[v] = max(rank[p] for p in preds[v]) + 1
    for v in reversed(range(n)):  # a box reading nothing (a constant-made tensor) sits above its reader
        if not preds[v] and succs[v] and "io" not in boxes[v].cls:
            rank[v] = max(0, min(rank[s] for s in succs[v]) - 1)
    return rank


def _spans(edges: list, rank: list, n: int) -> int:
    """The longest span that still gets bend points: all of them while they stay few."""
    total = sum(rank[t] - rank[s] - 1 for s, t in edges if rank[t] - rank[s] > 1)
    return 1 << 30 if total <= 4 * n + 2000 else MAX_SPAN


def _virtual(graph, edges: list, rank: list):
    """Layers of vertices (boxes, then bend points), their widths, neighbours across layers, and each
    bent edge's chain of points."""
    n = len(graph.boxes)
    width = [b.width for b in graph.boxes]
    vrank = list(rank)
    up = [[] for _ in range(n)]
    down = [[] for _ in range(n)]
    chains: dict = {}
    longest = _spans(edges, rank, n)
    for s, t in edges:
        span = rank[t] - rank[s]
        if span < 1:
            continue
        chain = []
        prev = s
        if 1 < span <= longest:
            for r in range(rank[s] + 1, rank[t]):
                v = len(width)
                width.append(BEND_W)
                vrank.append(r)
                up.append([prev])
                down.append([])
                down[prev].append(v)
                chain.append(v)
                prev = v
        down[prev].append(t)
        up[t].append(prev)
        if chain:
            chains[(s, t)] = chain
    layers = [[] for _ in range(max(rank) + 1)]
    for v in range(len(width)):
        layers[vrank[v]].append(v)
    return layers, width, up, down, chains


def _order(layers: list, up: list, down: list) -> None:
    """Barycenter sweeps, down then up (stable sorts: the same graph always gets the same picture)."""
    pos = {}
    for layer in layers:
        pos.update((v, i) for i, v in enumerate(layer))
    for _ in range(SWEEPS):
        for r in range(1, len(layers)):
            _sort_layer(layers[r], up, pos)
        for r in range(len(layers) - 2, -1, -1):
            _sort_layer(layers[r], down, pos)


def _sort_layer(layer: list, neighbours: list, pos: dict) -> None:
    def key(v):
        near = neighbours[v]
        return (sum(pos[u] for u in near) / len(near) if near else pos[v], pos[v])
    layer.sort(key=key)
    pos.update((v, i) for i, v in enumerate(layer))


def _coordinates(layers: list, width: list, up: list, down: list) -> list:
    """Centre x of every vertex: packed, then pulled toward its neighbours a few times."""
    x = [0.0] * len(width)
    for layer in layers:
        _pack(layer, width, x, {v: 0.0 for v in layer})
    for _ in range(3):
        for layer in layers[1:]:
            _pack(layer, width, x, _wanted(layer, up, x))
        for layer in reversed(layers[:-1]):
            _pack(layer, width, x, _wanted(layer, down, x))
    for layer in layers[1:]:
        _pack(layer, width, x, _wanted(layer, up, x))
    left = min(x[v] - width[v] / 2 for v in range(len(width)))
    return [c - left for c in x]


def _wanted(layer: list, neighbours: list, x: list) -> dict:
    return {v: sum(x[u] for u in neighbours[v]) / len(neighbours[v]) if neighbours[v] else x[v] for v in layer}


def _pack(layer: list, width: list, x: list, wanted: dict) -> None:
    """Centres as close to `wanted` as the order and no overlap allow (left to right, then the
    layer shifted so that it is off by as much to the left as to the right)."""
    right = None
    for v in layer:
        c = wanted[v]
        if right is not None:
            c = max(c, right + GAP_X + width[v] / 2)
        x[v] = c
        right = c + width[v] / 2
    shift = sum(x[v] - wanted[v] for v in layer) / len(layer)
    for v in layer:
        x[v] -= shift


def _rows(boxes: list, layers: list) -> tuple[list, list]:
    heights = [max((boxes[v].height for v in layer if v < len(boxes)), default=0.0) for layer in layers]
    tops, y = [], 0.0
    for h in heights:
        tops.append(y)
        y += h + GAP_Y
    return tops, heights


def _path(boxes: list, s: int, t: int, chain, x: list, rank: list, tops: list, heights: list) -> list:
    a, b = boxes[s], boxes[t]
    points = [(a.x + a.width / 2, a.y + a.height)]
    for k, v in enumerate(chain):
        r = rank[s] + 1 + k
        points += [(x[v], tops[r]), (x[v], tops[r] + heights[r])]
    points.append((b.x + b.width / 2, b.y))
    return ("smooth", points, None)
