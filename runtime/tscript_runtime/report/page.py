"""The report page: one HTML document holding everything (its style and script inline, no request to
anywhere): a contents bar, an overview, and per graph (entry point) the source beside the IR, the
passes, the graph picture, the kernels, the profile and the memory."""
from __future__ import annotations

import re
from html import escape
from importlib import resources

from .code_view import ir_pane, source_pane
from .graph_section import graph_section, node_data
from .ir_text import read_ir
from .kernels_view import kernels_section
from .passes_view import passes_section
from .profile_view import memory_section, profile_section

SECTIONS = (("source", "Source ↔ IR"), ("passes", "Passes"), ("graph", "Graph"), ("kernels", "Kernels"),
            ("profile", "Profile"), ("memory", "Memory"))


def render_page(report: dict) -> str:
    """The whole HTML document of `report` (the dict report/__init__.py describes)."""
    sources = report.get("sources", {})
    entries = [_entry(e, sources, report.get("layout", "auto")) for e in report["entries"]]
    nav = "".join(_nav(e["name"]) for e in report["entries"])
    data = "".join(d for _, d in entries)
    body = "".join(h for h, _ in entries)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width, initial-scale=1"><title>{escape(report["title"])} · tscript report</title>'
            f'<style>{_asset("report.css")}</style></head><body><nav class="toc"><div class="brand">tscript report</div>'
            f'<a href="#overview">Overview</a>{nav}</nav><main><header><h1>{escape(report["title"])}</h1>'
            f'<p class="sub">{escape(report.get("subtitle", ""))}</p></header>{_overview(report)}{body}</main>'
            f'{data}<script>{_asset("report.js")}</script></body></html>')


def _nav(name: str) -> str:
    links = "".join(f'<a href="#{_id(name)}-{key}">{title}</a>' for key, title in SECTIONS)
    return f'<div class="entry-name">{escape(name)}</div>{links}'


def _overview(report: dict) -> str:
    cards = []
    for e in report["entries"]:
        p = e.get("profile")
        facts = [("nodes", str(_count_nodes(e["graph"]["nodes"]))), ("kernels", str(len(e.get("kernels", []))))]
        if e.get("passes"):
            facts.append(("passes", f'{sum(len(r["passes"]) for r in e["passes"])} in '
                                    f'{sum(q["seconds"] for r in e["passes"] for q in r["passes"]) * 1e3:.1f} ms'))
        if p is not None:
            facts.append(("one call", f"{p.entry * 1e3:.3f} ms native" if p.entry is not None else
                          f"{p.executor * 1e3:.3f} ms executor"))
        cells = "".join(f'<div class="fact"><span>{escape(a)}</span><b>{escape(b)}</b></div>' for a, b in facts)
        cards.append(f'<div class="card"><h3><a href="#{_id(e["name"])}">{escape(e["name"])}</a></h3>'
                     f'<div class="facts-row">{cells}</div><p>{escape(e.get("describe", ""))}</p></div>')
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.get("notes", []))
    return (f'<section id="overview"><h2>Overview</h2><div class="cards">{"".join(cards)}</div>'
            f'{f"<ul class=notes>{notes}</ul>" if notes else ""}</section>')


def _entry(e: dict, sources: dict, layout: str) -> tuple[str, str]:
    """(the entry's sections, its data script)."""
    prefix = _id(e["name"])
    ir = read_ir(e["ir"])
    graph_html, view = graph_section(e, ir, prefix, e.get("layout", layout))
    for k in e.get("kernels", []):
        k["entry"] = prefix
    parts = {
        "source": _source_ir(ir, sources),
        "passes": passes_section(e.get("passes"), e.get("passes_note", "")),
        "graph": graph_html,
        "kernels": kernels_section(e.get("kernels", []), e.get("describe", "")),
        "profile": profile_section(e.get("profile"), e.get("profile_note", ""), view.producer),
        "memory": memory_section(e.get("memory", [])),
    }
    sections = "".join(f'<section id="{prefix}-{key}" class="part part-{key}"><h3>{title}</h3>{parts[key]}</section>'
                       for key, title in SECTIONS)
    html = f'<section class="entry" id="{prefix}" data-entry="{prefix}"><h2>{escape(e["name"])}</h2>{sections}</section>'
    data = f'<script type="application/json" class="entry-data" data-entry="{prefix}">{node_data(view, e.get("profile"))}</script>'
    return html, data


def _source_ir(ir, sources: dict) -> str:
    counts: dict = {}
    for loc in ir.source:
        if loc:
            counts[loc] = counts.get(loc, 0) + 1
    used = [name for name in sources if any(loc.rsplit(":", 1)[0] == name for loc in counts)]
    if used:
        options = "".join(f'<option value="{escape(n)}">{escape(n)}</option>' for n in used)
        panes = "".join(source_pane(n, sources[n], counts) for n in used)
        left = (f'<div class="pane src-pane"><div class="pane-head">source <select class="file-pick">{options}'
                f'</select></div>{panes}</div>')
    else:
        left = ('<div class="pane src-pane"><div class="pane-head">source</div><p class="note">The source files '
                'of this graph are not here (a saved model keeps file names and lines, not the files).</p></div>')
    right = (f'<div class="pane ir-pane"><div class="pane-head">IR after all passes · {len(ir.lines)} lines</div>'
             f'{ir_pane(ir, set(used))}</div>')
    return (f'<p class="note">Click a highlighted source line to see the IR it became; click an IR line to see '
            f'its source line and its node in the graph.</p><div class="split">{left}{right}</div>'
            f'<div class="status" aria-live="polite"></div>')


def _count_nodes(nodes: list) -> int:
    return sum(1 + sum(_count_nodes(b["nodes"]) for b in n.get("blocks", [])) for n in nodes)


def _id(name: str) -> str:
    return "e-" + re.sub(r"[^\w-]", "_", name)


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")
