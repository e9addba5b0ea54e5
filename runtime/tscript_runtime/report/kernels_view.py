"""The kernels section: a table of every native kernel (template, schedule, vector width, loops), then a
card per kernel with its subgraph, its schedule and its code (emitted LLVM IR, optimized IR, assembly:
collapsed)."""
from __future__ import annotations

from collections import Counter
from html import escape

from .code_view import plain

MAX_TWIN_CARDS = 100  # beyond this many kernels, those sharing another's code get a table row only
TEMPLATES = {"pointwise": "a loop nest over the output, every input read through its own strides",
             "row": "one pass per row: the row's reductions, then its elementwise outputs"}


def kernels_section(kernels: list, describe: str) -> str:
    """HTML for the kernel dicts of kernel_code.kernel_facts."""
    if not kernels:
        return f'<p class="note">No native kernel: {escape(describe)}</p>'
    warned = sum(bool(k.get("warnings")) for k in kernels)
    head = (f'<p class="summary-line">{len(kernels)} kernel{"s" * (len(kernels) != 1)}, '
            f'{len({k["symbol"] for k in kernels})} distinct functions'
            f'{f", <b class=warn>{warned} with a warning</b>" if warned else ""}. {escape(describe)}</p>')
    rows = "".join(_row(k) for k in kernels)
    twins = Counter(k["shares"] for k in kernels if k["shares"] != k["name"])
    for k in kernels:
        k["twins"] = twins.get(k["name"], 0)
    table = (f'<table class="kernels"><thead><tr><th>kernel</th><th>template</th><th>node</th><th>vector width</th>'
             f'<th>loops</th><th>tile</th><th>split from</th><th>entry step</th></tr></thead><tbody>{rows}</tbody></table>')
    cards = [k for k in kernels if k["shares"] == k["name"] or len(kernels) <= MAX_TWIN_CARDS]
    more = "" if len(cards) == len(kernels) else (
        f'<p class="note">The other {len(kernels) - len(cards)} kernels emit the same code as one above (the table '
        f'says which node each runs).</p>')
    return head + table + "".join(_card(k) for k in cards) + more


def _row(k: dict) -> str:
    warn = ' class="warn"' if k.get("warnings") else ""
    return (f'<tr{warn}><td><a href="#{_anchor(k)}">{escape(k["name"])}</a></td><td>{escape(k["template"])}</td>'
            f'<td>{_value_link(k)}</td><td>{escape(width(k))}</td><td>{escape(loops(k))}</td>'
            f'<td>{k["tile"] or "—"}</td><td>{k["split_min"]:,}</td>'
            f'<td>{"—" if k["step"] is None else k["step"]}</td></tr>')


def width(k: dict) -> str:
    """"16 × float (512-bit)", or "scalar"."""
    if "lanes" not in k:
        return "unknown"
    if k["lanes"] <= 1:
        return "scalar"
    return f'{k["lanes"]} × {k["element"]} ({k["bits"]}-bit)'


def loops(k: dict) -> str:
    if "loops" not in k:
        return "unknown"
    rest = k["loops"] - k["vector_loops"] - k["remainder_loops"]
    parts = [f'{k["vector_loops"]} vectorized'] + ([f'{k["remainder_loops"]} remainder'] if k["remainder_loops"] else []) \
        + ([f"{rest} scalar"] if rest else [])
    return f'{k["loops"]}: ' + ", ".join(parts)


def _card(k: dict) -> str:
    if k["shares"] != k["name"]:
        return _twin_card(k)
    spec = k["spec"]
    warnings = "".join(f'<p class="warning">⚠ {escape(w)}</p>' for w in k.get("warnings", []))
    twins = k.get("twins", 0)
    shares = f'<p class="note">{twins} more kernel{"s" * (twins != 1)} run this same code.</p>' if twins else ""
    schedule = [("template", f'{k["template"]}: {TEMPLATES.get(k["template"], "")}'),
                ("iteration space", f'{spec["iteration"]} (rank {spec["rank"]})'),
                ("inputs", ", ".join(f"{kind} {d} {s}" for kind, d, s in
                                     zip(_tensors_first(spec), spec["in_dtypes"], spec["in_shapes"])) or "—"),
                ("outputs", ", ".join(spec["out_dtypes"])),
                ("tiled walk", f'{k["tile"]}×{k["tile"]} tiles when an input is transposed' if k["tile"] else
                 "none (no input can be transposed)"),
                ("two threads from", f'{k["split_min"]:,} elements'),
                ("runs as", "whole-graph entry step " + str(k["step"]) if k["step"] is not None else
                 "a call from the executor"),
                ("vector width", width(k)), ("loops", loops(k)), ("function", k["symbol"])]
    facts = "".join(f"<tr><th>{escape(a)}</th><td>{escape(str(b))}</td></tr>" for a, b in schedule)
    code = "" if "llvm" not in k else (
        _code("LLVM IR as emitted", k["llvm"]) + _code("LLVM IR optimized for this CPU", k["optimized"]) +
        _code("assembly", k["asm"]))
    if k.get("reason"):
        code = f'<p class="note">No code shown: {escape(k["reason"])}</p>'
    return (f'<div class="kernel-card" id="{_anchor(k)}" data-kernel="{escape(k["name"])}"><h4>{escape(k["name"])} '
            f'<small>{escape(k["template"])} · {_value_link(k)}{" · " + escape(k["source"]) if k.get("source") else ""}'
            f'</small></h4>{warnings}{shares}<table class="facts">{facts}</table>'
            f'<details open><summary>subgraph</summary>{plain(k["subgraph"])}</details>{code}</div>')


def _twin_card(k: dict) -> str:
    """A kernel emitting the same code as an earlier one: its node, entry step and subgraph; the
    schedule and code are on the first one's card."""
    step = f' · entry step {k["step"]}' if k["step"] is not None else ""
    return (f'<div class="kernel-card twin" id="{_anchor(k)}" data-kernel="{escape(k["name"])}"><h4>{escape(k["name"])} '
            f'<small>{escape(k["template"])} · {_value_link(k)}{" · " + escape(k["source"]) if k.get("source") else ""}'
            f'{step}</small></h4><p class="note">Same code and schedule as <a href="#{_anchor(k, k["shares"])}">'
            f'{escape(k["shares"])}</a> (one function serves both).</p>'
            f'<details><summary>subgraph</summary>{plain(k["subgraph"])}</details></div>')


def _tensors_first(spec: dict) -> list:
    return [kind for kind in spec["inputs"] if kind == "tensor"]


def _code(title: str, text: str) -> str:
    return f'<details><summary>{escape(title)} ({text.count(chr(10)) + 1} lines)</summary>{plain(text)}</details>'


def _anchor(k: dict, name: str | None = None) -> str:
    return f'kernel-{k.get("entry", "")}-{name or k["name"]}'


def _value_link(k: dict) -> str:
    if not k.get("value"):
        return ""
    return f'<a class="vlink" data-value="{escape(k["value"])}">%{escape(k["value"])}</a>'
