"""The passes section: every pipeline run, every pass in it with its time and node counts, the IR it
changed as a diff against the IR before it; runs of passes that changed nothing are folded into one
line (each still listed, with its time)."""
from __future__ import annotations

from html import escape

from .code_view import plain
from .diff import grouped, opcodes

MAX_DIFF_LINES = 4000   # a diff longer than this is cut (its +/- counts stay whole)
CONTEXT = 2


def passes_section(runs: list | None, note: str) -> str:
    """HTML for the pipeline `runs` (see report/__init__.py), or `note` when there are none."""
    if not runs:
        return f'<p class="note">{escape(note or "No pass record.")}</p>'
    return "".join(_run(k, len(runs), run) for k, run in enumerate(runs))


def _run(k: int, n: int, run: dict) -> str:
    passes = run["passes"]
    total = sum(p["seconds"] for p in passes) or 1e-30
    changed = sum(p["changed"] for p in passes)
    first, last = (passes[0]["nodes_before"], passes[-1]["nodes_after"]) if passes else (0, 0)
    head = (f'<h4>{escape(run.get("title") or f"pipeline run {k + 1} of {n}")}</h4><p class="pass-summary">'
            f'{len(passes)} passes in {_ms(total)}; {changed} changed the IR; nodes {first} → {last}</p>'
            f'<details class="ir-before"><summary>IR before the first pass ({len(run["input"].splitlines())} '
            f'lines)</summary>{plain(run["input"])}</details>')
    body, folded, before = [], [], run["input"].split("\n")
    for p in passes:
        if not p["changed"] or p.get("ir") is None:
            folded.append(p)
            continue
        body.append(_folded(folded, total))
        folded = []
        after = p["ir"].split("\n")
        body.append(_changed(p, before, after, total))
        before = after
    body.append(_folded(folded, total))
    return f'<div class="pipeline">{head}<div class="passes">{"".join(body)}</div></div>'


def _changed(p: dict, before: list, after: list, total: float) -> str:
    lines, added, removed = diff_lines(before, after)
    return (f'<details class="pass changed" data-pass="{escape(p["name"])}"><summary>{_cells(p, total)}'
            f'<span class="delta"><ins>+{added}</ins> <del>−{removed}</del></span></summary>'
            f'<div class="code diff">{"".join(lines)}</div></details>')


def _folded(passes: list, total: float) -> str:
    if not passes:
        return ""
    names = ", ".join(p["name"] for p in passes)
    rows = "".join(f'<div class="pass unchanged" data-pass="{escape(p["name"])}">{_cells(p, total)}</div>'
                   for p in passes)
    word = "pass" if len(passes) == 1 else f"{len(passes)} passes"
    return (f'<details class="unchanged-group"><summary><span class="fold">{word} left the IR unchanged: '
            f'{escape(names)}</span><span class="t">{_ms(sum(p["seconds"] for p in passes))}</span></summary>'
            f'{rows}</details>')


def _cells(p: dict, total: float) -> str:
    share = 100 * p["seconds"] / total
    return (f'<span class="pname">{escape(p["name"])}</span><span class="bar" title="{share:.1f}% of the run">'
            f'<i style="width:{share:.1f}%"></i></span><span class="t">{_ms(p["seconds"])}</span>'
            f'<span class="nodes">{p["nodes_before"]} → {p["nodes_after"]} nodes</span>')


def diff_lines(before: list, after: list) -> tuple[list, int, int]:
    """(HTML rows of the unified diff, lines added, lines removed)."""
    ops = opcodes(before, after)
    added = sum(j2 - j1 for tag, _, _, j1, j2 in ops if tag != "equal")
    removed = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag != "equal")
    rows: list = []
    for hunk in grouped(ops, CONTEXT):
        if len(rows) >= MAX_DIFF_LINES:
            rows.append(f'<div class="ln hunk">… the diff goes on (cut at {MAX_DIFF_LINES} lines)</div>')
            break
        _, i1, _, j1, _ = hunk[0]
        rows.append(f'<div class="ln hunk">@@ line {i1 + 1} before, {j1 + 1} after @@</div>')
        for tag, i1, i2, j1, j2 in hunk:
            if tag == "equal":
                rows += [f'<div class="ln">  {escape(line, quote=False)}</div>' for line in before[i1:i2]]
                continue
            rows += [f'<div class="ln del">- {escape(line, quote=False)}</div>' for line in before[i1:i2]]
            rows += [f'<div class="ln add">+ {escape(line, quote=False)}</div>' for line in after[j1:j2]]
    return rows, added, removed


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"
