"""THE pass pipeline, top-down as a list of named stages, and IR logging.

`TSCRIPT_LOG=passes` prints the IR after every pass that changed it (with the pass name and time);
`TSCRIPT_LOG=passes:cse,dce` limits that to the named passes."""
from __future__ import annotations

import os
import sys
import time
from typing import Callable

from ..graph import Graph
from .constant_propagation import propagate_constants
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .inline import inline_calls
from .shape_propagation import propagate_shapes

# (name, pass, lowest optimization level that runs it). A pass returns True when it changed the graph.
PIPELINE: list[tuple[str, Callable[[Graph], bool], int]] = [
    ("inline", inline_calls, 0),
    ("constant_propagation", propagate_constants, 1),
    ("cse", eliminate_common_subexpressions, 1),
    ("dce", eliminate_dead_code, 1),
    ("shape_propagation", propagate_shapes, 1),
]


def log_filter() -> set | None:
    """Pass names to log from TSCRIPT_LOG (empty set: all; None: logging off)."""
    spec = os.environ.get("TSCRIPT_LOG", "")
    for part in spec.split(";"):
        if part == "passes":
            return set()
        if part.startswith("passes:"):
            return {p.strip() for p in part[len("passes:"):].split(",") if p.strip()}
    return None


def run_pipeline(graph: Graph, level: int = 2, log=None, stream=None) -> Graph:
    """Run every stage enabled at `level` on `graph` (in place). `log`: a set of pass names to print
    after (empty = all), default from TSCRIPT_LOG."""
    log = log_filter() if log is None else log
    stream = stream or sys.stderr
    for name, fn, min_level in PIPELINE:
        if level < min_level:
            continue
        start = time.perf_counter()
        changed = fn(graph)
        elapsed = time.perf_counter() - start
        if log is not None and changed and (not log or name in log):
            stream.write(f"== after {name} ({elapsed * 1e3:.2f} ms) ==\n{graph}\n")
    return graph
