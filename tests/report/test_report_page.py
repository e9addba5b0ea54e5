"""A report for each test model (models.py) renders every section: the graph picture has one element
per node, the pass list is complete, the profile table has a row per executor node, the kernels are
all there with their code, and nothing in the file points outside it."""
from __future__ import annotations

import json
import re

import pytest

from tests.report.html_facts import read_page
from tscript.ir.passes.pipeline import PIPELINE
from tscript_runtime.report.graph_view import HIDDEN

MODELS = ["mlp", "script", "resnet", "gpt"]
SECTIONS = ["source", "passes", "graph", "kernels", "profile", "memory"]


def shown_nodes(nodes: list) -> int:
    """Nodes the picture draws: all but constants and attribute reads, nested blocks included."""
    return sum((n["kind"] not in HIDDEN) + sum(shown_nodes(b["nodes"]) for b in n.get("blocks", [])) for n in nodes)


def group_members(nodes: list) -> int:
    """Nodes inside fusion groups' subgraphs (drawn inside their group's box)."""
    total = 0
    for n in nodes:
        sub = n.get("attrs", {}).get("subgraph")
        if isinstance(sub, dict):
            total += shown_nodes(sub["graph"]["nodes"])
        total += sum(group_members(b["nodes"]) for b in n.get("blocks", []))
    return total


@pytest.mark.parametrize("name", MODELS)
def test_every_section_is_rendered(reports, name):
    path, data = reports[name]
    page = read_page(path)
    for section in SECTIONS:
        assert f"e-forward-{section}" in page.ids(), section
    assert page.having("entry-data", "script"), "the node facts for the page's script"


@pytest.mark.parametrize("name", MODELS)
def test_the_graph_has_one_element_per_node(reports, name):
    path, data = reports[name]
    page = read_page(path)
    graph = data["entries"][0]["graph"]
    assert page.having("graph", "svg"), "a picture, not the list view"
    assert len(page.having("node", "g", in_svg=True)) == shown_nodes(graph["nodes"])
    assert len(page.having("subnode", "g", in_svg=True)) == group_members(graph["nodes"])
    conv_groups = sum(n["kind"] == "tscript::ConvGroup" for n in graph["nodes"])  # (boxes without a kernel)
    assert len(page.having("group", "g", in_svg=True)) == len(data["entries"][0]["kernels"]) + conv_groups


def test_if_and_loop_blocks_are_clusters(reports):
    path, _ = reports["script"]
    clusters = [e for e in read_page(path).having("cluster", "g", in_svg=True)]
    assert len(clusters) == 2  # the prim::If and the prim::Loop
    assert len(read_page(path).having("block", "rect", in_svg=True)) == 3  # then, else, body


@pytest.mark.parametrize("name", MODELS)
def test_the_pass_list_is_complete(reports, name):
    path, data = reports[name]
    listed = [e[1]["data-pass"] for e in read_page(path).having("pass")]
    runs = data["entries"][0]["passes"]
    assert len(runs) >= 1
    assert listed == [stage[0] for _ in runs for stage in PIPELINE]
    changed = read_page(path).having("changed", "details")
    assert len(changed) == sum(p["changed"] for r in runs for p in r["passes"])


@pytest.mark.parametrize("name", MODELS)
def test_the_profile_has_a_row_per_entry_step_and_executor_node(reports, name):
    path, data = reports[name]
    profile = data["entries"][0]["profile"]
    rows = read_page(path).having("prof-row", "tr")
    assert len(rows) == len(profile.steps) + len(profile.rows) and profile.rows
    assert (len(profile.steps) > 0) == (profile.entry is not None)  # (the scripted model has no entry)
    assert {r[1]["data-node"] for r in rows if r[1]["data-node"]} <= set(_node_data(path)["nodes"])


def test_gemm_rows_are_rated_against_the_peak(reports):
    profile = reports["mlp"][1]["entries"][0]["profile"]
    linears = [r for r in profile.rows if r.kind == "aten::linear"]
    assert [r.flops / r.calls for r in linears] == [2 * 8 * 16 * 32, 2 * 8 * 32 * 4]
    assert profile.peak_gflops > 0 and all(profile.gflops(r) > 0 for r in linears)


@pytest.mark.parametrize("name", ["mlp", "resnet", "gpt"])
def test_every_kernel_has_its_schedule_and_code(reports, name):
    path, data = reports[name]
    kernels = data["entries"][0]["kernels"]
    cards = read_page(path).having("kernel-card")
    assert [c[1]["data-kernel"] for c in cards] == [k["name"] for k in kernels] and kernels
    for k in kernels:
        assert k["subgraph"].startswith("with tscript::")
        if k["shares"] == k["name"]:  # (a kernel emitting the same code as an earlier one shows it there)
            assert "define " in k["llvm"] and "define " in k["optimized"] and ".size" in k["asm"]
        assert k["lanes"] > 1, f"{k['name']} did not vectorize"


def test_source_lines_and_ir_lines_link_both_ways(reports):
    path, data = reports["mlp"]
    page = read_page(path)
    hot = {e[1]["data-loc"] for e in page.having("hot")}
    ir_locs = {e[1]["data-loc"] for e in page.having("ln") if "data-loc" in e[1] and "data-l" in e[1]}
    assert hot and hot == ir_locs
    assert all(loc.startswith("models.py:") for loc in hot)
    nodes = _node_data(path)["nodes"]
    linear = next(n for n in nodes.values() if n["k"] == "aten::linear")
    assert linear["s"] in hot and isinstance(linear["l"], int)


@pytest.mark.parametrize("name", MODELS)
def test_nothing_points_outside_the_file(reports, name):
    path, _ = reports[name]
    text = open(path, encoding="utf-8").read()
    assert not re.search(r"(?i)\b(?:https?|ftp):", text)
    assert not re.search(r"(?i)(?:src|href)\s*=\s*[\"'](?!#)", text)
    assert "<link" not in text and "@import" not in text


def test_memory_facts(reports):
    memory = {what.split(" (")[0]: n for what, n, _ in reports["mlp"][1]["entries"][0]["memory"]}
    assert memory["parameters and buffers"] == 4 * (16 * 32 + 32 + 32 * 4 + 4)
    assert memory["whole-graph entry's arena"] > 0
    assert memory["peak of live intermediates"] >= 8 * 32 * 4


def _node_data(path) -> dict:
    page = read_page(path)
    attrs, text = next(s for s in page.scripts if "entry-data" in (s[0].get("class") or ""))
    return json.loads(text)
