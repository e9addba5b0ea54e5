"""THE pass pipeline, top-down as a list of named stages, and IR logging.

`TSCRIPT_LOG=passes` prints the IR after every pass that changed it (with the pass name and time);
`TSCRIPT_LOG=passes:cse,dce` limits that to the named passes.

Order matters: mutation is removed before folding (a written value is no constant), constant
folding and canonicalization feed each other (a folded size makes a reshape a no-op, a
canonicalized reshape list makes a constant foldable), unrolling exposes the loop counter as a
constant, and CSE/DCE clean up after all of them; shapes are propagated last, over the final graph.
"""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable

from ..graph import Graph
from .canonicalize import canonicalize
from .constant_propagation import propagate_constants
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .explicit_copies import make_copies_explicit
from .fold_batch_norm import fold_batch_norm
from .inline import inline_calls
from .remove_mutation import remove_mutation
from .fuse import fuse, fuse_rows
from .fuse_conv import fuse_conv_epilogues
from .shape_propagation import fold_static_sizes, propagate_shapes
from .unroll import unroll_loops

Stage = tuple[str, Callable[[Graph], bool], int]

# (name, pass, lowest optimization level that runs it). A pass returns True when it changed the graph.
PIPELINE: list[Stage] = [
    ("inline", inline_calls, 0),
    ("remove_mutation", remove_mutation, 1),
    ("constant_propagation", propagate_constants, 1),
    ("canonicalize", canonicalize, 1),
    ("unroll", unroll_loops, 2),
    ("constant_propagation", propagate_constants, 1),
    ("canonicalize", canonicalize, 1),
    ("cse", eliminate_common_subexpressions, 1),
    ("dce", eliminate_dead_code, 1),
    ("shape_propagation", propagate_shapes, 1),
    ("fold_static_sizes", fold_static_sizes, 2),  # sizes the types know become constants ...
    ("constant_propagation", propagate_constants, 2),  # ... so shape arithmetic folds before fusion
    ("make_copies_explicit", make_copies_explicit, 2),  # reshapes of transposes: a copy kernel + a view
    ("fuse_rows", fuse_rows, 2),                  # elementwise + last-dim reductions -> RowGroup
    ("fuse", fuse, 2),                            # elementwise chains -> FusionGroup
    ("fuse_conv", fuse_conv_epilogues, 2),        # conv2d + the group after it -> ConvGroup (epilogue)
    ("dce", eliminate_dead_code, 2),
]

# What `tscript.jit.freeze` runs after inlining and turning attributes into constants.
FREEZE_PIPELINE: list[Stage] = [
    ("remove_mutation", remove_mutation, 0),
    ("constant_propagation", propagate_constants, 0),
    ("canonicalize", canonicalize, 0),
    ("constant_propagation", propagate_constants, 0),
    ("dce", eliminate_dead_code, 0),  # the folded size reads went: conv outputs have one reader
    ("fold_batch_norm", fold_batch_norm, 0),
    ("cse", eliminate_common_subexpressions, 0),
    ("dce", eliminate_dead_code, 0),
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


@contextmanager
def observe_passes(observer):
    """While active (in this thread or task), every pipeline run tells `observer`: `observer.start(graph)`
    before its first pass, `observer.after(name, graph, seconds, changed)` after each, `observer.end(graph)`
    after the last (tscript.report records the IR after every pass this way)."""
    token = _observers.set(_observers.get() + (observer,))
    try:
        yield observer
    finally:
        _observers.reset(token)


_observers: ContextVar[tuple] = ContextVar("tscript_pass_observers", default=())


def watched() -> bool:
    """Is someone watching pipeline runs (an observer, or TSCRIPT_LOG)? Then they must run, not be
    skipped for a result kept from before (tscript/jit/stage_cache.py)."""
    return bool(_observers.get()) or log_filter() is not None


def run_stages(graph: Graph, stages: list[Stage], level: int = 2, log=None, stream=None) -> Graph:
    """Run every stage of `stages` enabled at `level` on `graph` (in place). `log`: a set of pass
    names to print the IR after (empty = all), default from TSCRIPT_LOG; `stream`: where (stderr)."""
    log = log_filter() if log is None else log
    stream = stream or sys.stderr
    observers = _observers.get()
    for observer in observers:
        observer.start(graph)
    for name, fn, min_level in stages:
        if level < min_level:
            continue
        start = time.perf_counter()
        changed = fn(graph)
        elapsed = time.perf_counter() - start
        if log is not None and changed and (not log or name in log):
            stream.write(f"== after {name} ({elapsed * 1e3:.2f} ms) ==\n{graph}\n")
        for observer in observers:
            observer.after(name, graph, elapsed, bool(changed))
    for observer in observers:
        observer.end(graph)
    return graph


def run_pipeline(graph: Graph, level: int = 2, log=None, stream=None) -> Graph:
    """Run `PIPELINE` at optimization `level` (0: inline only; 1: cleanups and folding; 2: + loop
    unrolling) on `graph` in place; logging as in `run_stages`."""
    return run_stages(graph, PIPELINE, level, log, stream)
