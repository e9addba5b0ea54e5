"""The report's picture of a graph: the layered layout (deterministic, no overlaps, edges from box to
box), IR text read back, pass recording through the pipeline's observer hook, diffs."""
from __future__ import annotations

import tscript as ts
from tests.report.models import TwoLayer
from tscript.ir.graph_json import graph_to_json
from tscript.report.passes import PassRecorder
from tscript.ir.passes.pipeline import PIPELINE, observe_passes, run_pipeline
from tscript_runtime.report.graph_view import build_view
from tscript_runtime.report.ir_text import read_ir
from tscript_runtime.report.layout import place
from tscript_runtime.report.passes_view import diff_lines
from tscript_runtime.report.svg import render_svg


def chain_graph(n: int):
    """A traced function of `n` alternating ops with a skip every few: many layers, long edges."""
    def fn(x):
        skip = x
        for i in range(n):
            x = (x * 1.5).tanh() if i % 2 else x + skip
        return x
    with ts.no_grad():
        return ts.jit.trace(fn, (ts.randn(3, 4),)).inlined_graph


def boxes_of(graph):
    out = []
    for box in graph.boxes:
        out.append((box.id, round(box.x, 3), round(box.y, 3), round(box.width, 3)))
        for inner in box.inner:
            out += boxes_of(inner)
    return out


def test_layered_layout_is_deterministic_and_boxes_do_not_overlap():
    doc = graph_to_json(chain_graph(12))
    first, second = build_view(doc), build_view(doc)
    place(first.root, "layered")
    place(second.root, "layered")
    assert boxes_of(first.root) == boxes_of(second.root)
    rows: dict = {}
    for box in first.root.boxes:
        rows.setdefault(round(box.y + box.height / 2, 3), []).append((box.x, box.x + box.width))
    for spans in rows.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    for (s, t, _), (_, points, _) in zip(first.root.edges, first.root.paths):
        a, b = first.root.boxes[s], first.root.boxes[t]
        assert points[0] == (a.x + a.width / 2, a.y + a.height) and points[-1] == (b.x + b.width / 2, b.y)


def test_svg_has_a_group_per_box():
    view = build_view(graph_to_json(chain_graph(6)))
    place(view.root, "layered")
    svg = render_svg(view, "t")
    assert svg.count('<g class="node"') == view.n_visible == 6 * 2 - 3  # (x * 1.5).tanh() is two ops
    assert "http" not in svg


def test_ir_text_links_values_and_sources():
    with ts.no_grad():
        cm = ts.jit.compile(TwoLayer().eval(), (ts.randn(8, 16),))
    ir = read_ir(str(cm.graph))
    line = ir.line_of(cm.graph.outputs[0].name)
    assert line is not None and ir.subgraph[line].startswith("tscript::RowGroup")
    assert any(loc and loc.startswith("models.py:") for loc in ir.source)


def test_the_recorder_sees_every_pass():
    graph = chain_graph(4).copy()
    recorder = PassRecorder()
    with observe_passes(recorder):
        run_pipeline(graph)
    (run,) = recorder.runs
    assert [p["name"] for p in run["passes"]] == [s[0] for s in PIPELINE]
    assert run["passes"][-1]["nodes_after"] == sum(1 for _ in graph.all_nodes())
    assert all((p["ir"] is not None) == p["changed"] for p in run["passes"])
    run_pipeline(graph)
    assert len(recorder.runs) == 1, "observing ends with the with-block"


def test_diffs_count_added_and_removed_lines():
    rows, added, removed = diff_lines(["a", "b", "c"], ["a", "c", "d"])
    assert (added, removed) == (1, 1) and any('class="ln add"' in r for r in rows)
