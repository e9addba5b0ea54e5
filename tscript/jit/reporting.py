"""`tscript.jit.report`: one self-contained HTML report of what the compiler makes of a model (the
work is tscript.report's: imported on use, as it builds on this package's compile)."""
from __future__ import annotations


def report(obj, example_inputs, path: str, runs: int = 10, backward: bool = False, dynamic: dict | None = None,
           layout: str = "auto") -> dict:
    """Compile `obj` for `example_inputs` as `compile` does, recording every pass, profile `runs` runs
    and write the report to `path`: the source beside the IR, the IR after every pass as diffs, the
    graph as a picture, every kernel's schedule and code, the profile, memory. Returns its data."""
    from ..report import report as write_report
    return write_report(obj, example_inputs, path, runs, backward, dynamic, layout)
