"""The report: one self-contained HTML file showing what the compiler made of a model (`tsrt report`,
`tscript report`, `tscript.jit.report`). Its style and script are inline and it loads nothing: it
opens from disk, offline. Written from a report dict:

    {"title": str, "subtitle": str, "notes": [str],
     "sources": {"model.py": text},              # by file name, as nodes record "model.py:12"
     "layout": "auto" | "dot" | "layered" | "list",
     "entries": [{                               # one per graph: forward, backward, exported methods
         "name": "forward",
         "ir": final IR text, "graph": its graph document (graph_json.py), "describe": one line,
         "passes": [{"title": str, "input": IR text before the first pass,
                     "passes": [{"name", "seconds", "changed", "nodes_before", "nodes_after",
                                 "ir": IR text after it (None when unchanged)}]}] or None,
         "passes_note": why there is no pass record,
         "kernels": kernel_code.kernel_facts(...),
         "profile": profile.Profile or None, "profile_note": str,
         "memory": [(what, bytes or None, remark)]}]}

collect.py builds the entries of an Executable (and of a saved model); tscript.report adds the passes
and the source files for models compiled in the process.
"""
from __future__ import annotations

import os
import tempfile

from .page import render_page


def render(report: dict) -> str:
    """The HTML text of `report`."""
    return render_page(report)


def write_report(report: dict, path: str) -> int:
    """Write the HTML of `report` to `path` (atomically: a reader never sees half a file); its size."""
    text = render(report).encode("utf-8")
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # (mkstemp makes it private; a report is for reading)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return len(text)
