"""The profile section (profile.Profile as sorted tables, a row per whole-graph entry step timed inside
the native call, then a row per executor node, with GFLOP/s and the share of the CPU's peak for GEMMs
and convolutions) and the memory section."""
from __future__ import annotations

from html import escape

SHOWN_ROWS = 200  # the slowest nodes in the table; the others in a folded one below it
STEPS = ("The whole-graph entry runs the model as one native call; a timed build of the same code reads the "
         "CPU's cycle counter between its steps. Each step (a kernel, a product, a convolution with its "
         "epilogue) is labelled by its node:")
EXECUTOR = ("The same graph run node by node through the executor (fusion groups calling their native kernels, "
            "the rest on the op library), as a call the whole-graph entry cannot plan runs:")


def profile_section(profile, note: str, producer: dict) -> str:
    """HTML for `profile` (None: `note` says why there is none); `producer` maps value names to node ids."""
    if profile is None:
        return f'<p class="note">{escape(note or "Not profiled.")}</p>'
    p = profile
    lines = [f"<b>{_ms(p.executor)}</b> per run through the executor, over {p.runs} runs "
             f"(sum of its nodes {_ms(p.node_total())})"]
    if p.entry is not None:
        lines.insert(0, f"<b>{_ms(p.entry)}</b> per call as one native call (the whole-graph entry)")
    elif p.why_no_entry:
        lines.insert(0, f'<span class="warn">No whole-graph native call:</span> {escape(p.why_no_entry)}')
    if p.peak_gflops:
        lines.append(f"peak of this CPU: {p.peak_gflops:.1f} GFLOP/s (float32 FMAs, measured on one core × "
                     f"{p.threads} thread{'s' * (p.threads != 1)})")
    head = "".join(f"<li>{line}</li>" for line in lines)
    steps = (f'<p class="note">{STEPS}</p>{_tables(p, p.sorted_steps(), p.step_total(), producer, "steps")}'
             if p.steps else f'<p class="note">The entry\'s steps are not timed: {escape(p.why_no_steps)}</p>'
             if p.why_no_steps else "")
    return (f'<ul class="facts-list">{head}</ul><p class="note">{escape(note or "")}</p>{steps}'
            f'<p class="note">{EXECUTOR}</p>{_tables(p, p.sorted_rows(), p.node_total(), producer, "nodes")}')


def _tables(p, ordered: list, total: float, producer: dict, what: str) -> str:
    """The slowest SHOWN_ROWS of `ordered` rows as a table, the others folded in one below it."""
    total = total or 1e-30
    slowest = max((r.seconds for r in ordered if not r.depth and not r.container), default=0.0) / p.runs or 1e-30
    rows = [_row(p, r, total, slowest, producer) for r in ordered]
    more = (f'<details class="more-rows"><summary>the other {len(rows) - SHOWN_ROWS} {what}, slowest first</summary>'
            f'{_table("".join(rows[SHOWN_ROWS:]))}</details>' if len(rows) > SHOWN_ROWS else "")
    return f'{_table("".join(rows[:SHOWN_ROWS]))}{more}'


def _table(rows: str) -> str:
    return (f'<table class="profile"><thead><tr><th>node</th><th>source</th><th class="num">ms / run</th>'
            f'<th class="num">share</th><th class="num">calls / run</th><th class="num">GFLOP/s</th>'
            f'<th class="num">% of peak</th></tr></thead><tbody>{rows}</tbody></table>')


def _row(p, r, total: float, slowest: float, producer: dict) -> str:
    """A table row; its bar is the node's time against the slowest node's."""
    per_run = r.seconds / p.runs
    share = "" if r.depth or r.container else f"{100 * per_run / total:.1f}%"
    rate = p.gflops(r)
    bar = "" if not share else f'<i style="width:{min(100.0, 100 * per_run / slowest):.1f}%"></i>'
    node = producer.get(r.name, "")
    name = f"%{escape(r.name)} = " if r.name else ""
    extra = ' <small>(includes its blocks)</small>' if r.container else ""
    extra += f' <small>{escape(r.shapes)}</small>' if r.shapes else ""
    return (f'<tr class="prof-row" data-node="{escape(node)}" data-depth="{r.depth}"><td class="nm">'
            f'{"&nbsp;&nbsp;" * r.depth}{name}<b>{escape(r.kind)}</b>{extra}</td><td>{escape(r.source or "")}</td>'
            f'<td class="num">{per_run * 1e3:.4f}</td><td class="num share">{bar}<span>{share}</span></td>'
            f'<td class="num">{r.calls // p.runs if r.calls >= p.runs else f"{r.calls / p.runs:.2f}"}</td>'
            f'<td class="num">{"" if rate is None else f"{rate:.2f}"}</td>'
            f'<td class="num">{"" if rate is None or not p.peak_gflops else f"{100 * rate / p.peak_gflops:.1f}"}</td></tr>')


def memory_section(memory: list) -> str:
    """HTML for the memory facts: (what, bytes or None, remark) triples."""
    if not memory:
        return '<p class="note">No memory facts.</p>'
    rows = "".join(f'<tr><th>{escape(what)}</th><td class="num">{size(n) if n is not None else "—"}</td>'
                   f'<td>{escape(remark)}</td></tr>' for what, n, remark in memory)
    return f'<table class="memory">{rows}</table>'


def size(n: int) -> str:
    """Bytes for people: 512 B, 3.2 KiB, 1.5 MiB, 2.0 GiB."""
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"
