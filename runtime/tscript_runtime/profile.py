"""A profile of real runs of one Executable: the time of every executor node over N runs (fusion groups
calling their native kernels, the rest on the op library), GFLOP/s of the GEMMs and convolutions
against this CPU's measured peak, the whole-graph entry's time per call when the model has one (or the
node that keeps it out of one), and the executor's peak of live intermediate memory.

The whole-graph entry is one native call: its steps are not timed one by one (it has no per-step
clock); the node table times the same graph run node by node through the executor, as a model without
an entry runs. `Model.profile` and `tsrt bench --profile` print `Profile.table()`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .executor import run_steps
from .flops import FLOPS, flops

_clock = time.perf_counter
CONTAINERS = ("prim::If", "prim::Loop")


@dataclass
class NodeTime:
    """One executor node's time, summed over the profiled runs."""
    name: str            #: its first output value's name ("" when it has none)
    kind: str            #: op name
    source: str | None   #: "file:line" of the user code that made it
    depth: int           #: 0 at the top level, +1 per enclosing If/Loop block
    seconds: float = 0.0
    calls: int = 0       #: calls over all runs (a node in a loop body runs once per trip)
    flops: float = 0.0   #: FLOPs over all runs (GEMMs and convolutions only)

    @property
    def container(self) -> bool:
        """An If or Loop: its time includes its blocks' nodes (listed on their own too)."""
        return self.kind in CONTAINERS


@dataclass
class Profile:
    """What `profile_executable` measured; times are seconds per run unless named otherwise."""
    runs: int
    rows: list = field(default_factory=list)   #: NodeTime per executor node, graph order
    executor: float = 0.0                      #: the executor's time per run (hooks included)
    entry: float | None = None                 #: the whole-graph entry's time per call, when it runs these inputs
    why_no_entry: str = ""                     #: why these inputs do not run as one native call
    peak_gflops: float = 0.0                   #: this CPU's measured float32 FMA peak (one core x threads)
    threads: int = 1                           #: threads native code may use (the peak counts them)
    peak_bytes: int = 0                        #: most bytes of intermediate arrays alive at once (executor)
    arena_bytes: int | None = None             #: the whole-graph entry's arena for these inputs

    def sorted_rows(self) -> list:
        """The rows, slowest first (If/Loop nodes, which include their blocks' time, among them)."""
        return sorted(self.rows, key=lambda r: (-r.seconds, r.name))

    def node_total(self) -> float:
        """Seconds per run of all nodes outside If/Loop blocks (their nested nodes are inside their time)."""
        return sum(r.seconds for r in self.rows if r.depth == 0) / self.runs

    def gflops(self, row: NodeTime) -> float | None:
        return row.flops / row.seconds / 1e9 if row.flops and row.seconds else None

    def table(self, limit: int | None = None) -> str:
        """The sorted table as plain text (terminals and logs)."""
        return "\n".join(table_lines(self, limit))


def table_lines(profile: Profile, limit: int | None = None) -> list[str]:
    p = profile
    lines = [f"profile over {p.runs} run{'s' * (p.runs != 1)}: executor {_ms(p.executor)} per run "
             f"(sum of nodes {_ms(p.node_total())})"]
    if p.entry is not None:
        lines.append(f"whole-graph native entry: {_ms(p.entry)} per call (one native call; its steps are not "
                     f"timed one by one)")
    elif p.why_no_entry:
        lines.append(f"no whole-graph native call: {p.why_no_entry}")
    if p.peak_gflops:
        lines.append(f"peak: {p.peak_gflops:.1f} GFLOP/s (float32 FMAs measured on one core, x {p.threads} threads)")
    total = p.node_total() or 1e-30
    lines.append(f"{'ms/run':>10} {'%':>6} {'calls':>6} {'GFLOP/s':>8} {'%peak':>6}  node")
    rows = p.sorted_rows()
    for r in rows[:limit]:
        rate = p.gflops(r)
        share = "" if r.depth or r.container else f"{100 * r.seconds / p.runs / total:.1f}"
        lines.append(f"{r.seconds / p.runs * 1e3:>10.4f} {share:>6} {r.calls // p.runs:>6} "
                     f"{'' if rate is None else f'{rate:.2f}':>8} "
                     f"{'' if rate is None or not p.peak_gflops else f'{100 * rate / p.peak_gflops:.1f}':>6}  {label(r)}")
    if limit is not None and len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more nodes")
    return lines


def label(row: NodeTime) -> str:
    """`%name = kind  (file:line)`, indented by block depth; If/Loop say they include their blocks."""
    name = f"%{row.name} = " if row.name else ""
    extra = " (includes its blocks)" if row.container else ""
    return f"{'  ' * row.depth}{name}{row.kind}{extra}{f'  ({row.source})' if row.source else ''}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


# -- measuring ---------------------------------------------------------------------------------------------

def profile_executable(executable, args: list, runs: int = 10, threads: int = 1) -> Profile:
    """Run `executable` (an Executable) on `args` (its graph inputs) `runs` times node by node through
    the executor, and as one native call when its whole-graph entry runs them; see the module doc."""
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
        raise ValueError(f"runs must be a positive int, got {runs!r}")
    profile = Profile(runs, threads=threads)
    _time_entry(executable, args, profile)
    timer = _Timer(profile.rows)
    program = executable.program.with_hooks(timer.hook)
    program.run(args)  # warm-up: first-call costs (kernel launch plans) are not what a model spends
    for row in profile.rows:
        row.seconds, row.calls, row.flops = 0.0, 0, 0.0
    start = _clock()
    for _ in range(runs):
        program.run(args)
    profile.executor = (_clock() - start) / runs
    memory = _Memory()
    executable.program.with_hooks(memory.hook).run(args)
    profile.peak_bytes = memory.peak
    profile.peak_gflops = _peak(executable, threads)
    return profile


def _time_entry(executable, args: list, profile: Profile) -> None:
    """The whole-graph entry's time per call (median of `runs` calls), or why it does not run `args`."""
    entry = executable.entry
    if entry is None:
        plan = executable.plan
        profile.why_no_entry = (plan.why_no_entry if plan is not None and plan.why_no_entry
                                else executable.describe())
        return
    if entry.run(args) is None:
        profile.why_no_entry = ("the whole-graph entry cannot run inputs of these shapes and dtypes (it planned no "
                                "call for them): the executor runs them")
        return
    times = []
    for _ in range(profile.runs):
        start = _clock()
        entry.run(args)
        times.append(_clock() - start)
    profile.entry = float(np.median(times))
    profile.arena_bytes = arena_bytes(entry, args)


def arena_bytes(entry, args: list) -> int | None:
    """Bytes of arena the whole-graph entry plans for `args` (None if it cannot tell)."""
    try:
        found = entry._plan_of(args)
    except Exception:  # the entry's internals are its own: a report then just says "unknown"
        return None
    return found[0].arena if found is not None else None


def _peak(executable, threads: int) -> float:
    if executable.mode != "native":
        return 0.0
    from .native.peak import peak_gflops
    return peak_gflops(threads)


class _Timer:
    """Hooks (executor.Program.with_hooks) adding each step's time, calls and FLOPs to its row."""

    def __init__(self, rows: list):
        self.rows = rows

    def hook(self, step, names: list, depth: int):
        kind, source = step.where
        row = NodeTime(names[0] if names else "", kind, source, depth)
        self.rows.append(row)
        out = step.out if isinstance(step.out, int) and kind in FLOPS else None

        def run(steps, env):
            inputs = step.args(env) if out is not None else None
            start = _clock()
            run_steps(steps, env)
            row.seconds += _clock() - start
            row.calls += 1
            if out is not None:
                row.flops += flops(kind, list(inputs), env[out])
        return run


class _Memory:
    """Hooks that follow the bytes of intermediate arrays alive between steps (views count nothing)."""

    def __init__(self):
        self.live = self.peak = 0

    def hook(self, step, names: list, depth: int):
        outs = [] if step.where[0] in CONTAINERS else step.out if isinstance(step.out, list) else \
            [step.out] if step.out is not None else []
        frees = step.frees

        def run(steps, env):
            freed = sum(_owned(env[s]) for s in frees)
            run_steps(steps, env)
            self.live += sum(_owned(env[s]) for s in outs if s not in frees)
            self.peak = max(self.peak, self.live)
            self.live -= freed
        return run


def _owned(value) -> int:
    return value.nbytes if value.__class__ is np.ndarray and value.base is None else 0
