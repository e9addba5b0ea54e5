"""Code as the report shows it: a <pre> whose every line is one element the report's script can find
and light up (numbered by CSS, so a line costs the browser one element, however long the IR). Source
lines carry their "file:line" (`data-loc`); IR lines their index (`data-l`) and the source line they
came from; IR text gets light syntax colouring while it is short enough."""
from __future__ import annotations

import re
from html import escape

_VALUE = re.compile(r"%[\w.]+")
_KIND = re.compile(r"(= )([A-Za-z_]\w*::[\w.]+)")
COLOUR_MAX_LINES = 5000  # longer IR is shown without colours: a browser builds each coloured word as an element


def source_pane(name: str, text: str, counts: dict) -> str:
    """The lines of source file `name`; `counts` maps "name:line" to the number of IR lines it made."""
    rows = []
    for i, line in enumerate(text.split("\n"), 1):
        loc = f"{name}:{i}"
        n = counts.get(loc, 0)
        head = (f'<span class="ln hot" data-loc="{escape(loc)}" title="{n} IR line{"s" * (n != 1)}">' if n
                else '<span class="ln">')
        rows.append(f"{head}{escape(line, quote=False)}\n</span>")
    return f'<pre class="code src" data-file="{escape(name)}">{"".join(rows)}</pre>'


def ir_pane(ir, known_files: set) -> str:
    """The lines of IR (an ir_text.IRText); lines whose source file is in the report link to it."""
    rows = []
    paint = colour_ir if len(ir.lines) <= COLOUR_MAX_LINES else (lambda line: escape(line, quote=False))
    for i, (line, loc) in enumerate(zip(ir.lines, ir.source)):
        attrs = f' data-loc="{escape(loc)}"' if loc and loc.rsplit(":", 1)[0] in known_files else ""
        rows.append(f'<span class="ln" data-l="{i}"{attrs}>{paint(line)}\n</span>')
    numbered = "" if len(ir.lines) <= COLOUR_MAX_LINES else " unnumbered"  # (CSS counters cost seconds on 20k lines)
    return f'<pre class="code ir{numbered}">{"".join(rows)}</pre>'


def colour_ir(line: str) -> str:
    """One IR line as HTML: values, op names and the trailing comment get their own colours."""
    code, sep, comment = line.partition(" # ")
    html = _KIND.sub(r'\1<b>\2</b>', _VALUE.sub(r"<i>\g<0></i>", escape(code, quote=False)))
    return html + (f'<span class="c"> # {escape(comment, quote=False)}</span>' if sep else "")


def plain(text: str) -> str:
    """A block of code text, escaped, in a <pre>."""
    return f"<pre>{escape(text, quote=False)}</pre>"
