"""A profile of real runs of one Executable: the time of every executor node over N runs (fusion groups
calling their native kernels, the rest on the op library), GFLOP/s of the GEMMs and convolutions
against this CPU's measured peak, the whole-graph entry's time per call when the model has one (or the
node that keeps it out of one), and the executor's peak of live intermediate memory.

The whole-graph entry is one native call: its steps are timed inside it, by a timed build of the same
code that reads the CPU's cycle counter between steps (native/step_clock.py); the node table times the
same graph run node by node through the executor, as a model without an entry runs. `Model.profile`
and `tsrt bench --profile` print `Profile.table()`.
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
    shapes: str = ""     #: GEMMs and convolutions: their operands' and result's shapes

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
    steps: list = field(default_factory=list)  #: NodeTime per whole-graph entry step, in order (timed natively)
    why_no_steps: str = ""                     #: why the entry's steps were not timed (its timed build failed)

    def sorted_rows(self) -> list:
        """The rows, slowest first (If/Loop nodes, which include their blocks' time, among them)."""
        return sorted(self.rows, key=lambda r: (-r.seconds, r.name))

    def sorted_steps(self) -> list:
        """The whole-graph entry's steps, slowest first."""
        return sorted(self.steps, key=lambda r: (-r.seconds, r.name))

    def step_total(self) -> float:
        """Seconds per run of the whole-graph entry's steps."""
        return sum(r.seconds for r in self.steps) / self.runs

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
        lines.append(f"whole-graph native entry: {_ms(p.entry)} per call (one native call)")
    elif p.why_no_entry:
        lines.append(f"no whole-graph native call: {p.why_no_entry}")
    if p.peak_gflops:
        lines.append(f"peak: {p.peak_gflops:.1f} GFLOP/s (float32 FMAs measured on one core, x {p.threads} threads)")
    if p.steps:
        lines.append(f"the entry's {len(p.steps)} steps, timed inside the native call (sum {_ms(p.step_total())} "
                     f"per call):")
        lines += _rows(p, p.sorted_steps(), p.step_total(), limit, "steps")
        lines.append("the same graph node by node through the executor (as a call the entry cannot plan runs):")
    elif p.why_no_steps:
        lines.append(f"the entry's steps are not timed: {p.why_no_steps}")
    return lines + _rows(p, p.sorted_rows(), p.node_total(), limit, "nodes")


def _rows(p: Profile, rows: list, total: float, limit: int | None, what: str) -> list[str]:
    """A table of `rows` (NodeTime, already sorted): time per run, share of `total`, calls, GFLOP/s."""
    total = total or 1e-30
    lines = [f"{'ms/run':>10} {'%':>6} {'calls':>6} {'GFLOP/s':>8} {'%peak':>6}  node"]
    for r in rows[:limit]:
        rate = p.gflops(r)
        share = "" if r.depth or r.container else f"{100 * r.seconds / p.runs / total:.1f}"
        lines.append(f"{r.seconds / p.runs * 1e3:>10.4f} {share:>6} {r.calls // p.runs:>6} "
                     f"{'' if rate is None else f'{rate:.2f}':>8} "
                     f"{'' if rate is None or not p.peak_gflops else f'{100 * rate / p.peak_gflops:.1f}':>6}  {label(r)}")
    if limit is not None and len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more {what}")
    return lines


def label(row: NodeTime) -> str:
    """`%name = kind  (file:line)`, indented by block depth; If/Loop say they include their blocks."""
    name = f"%{row.name} = " if row.name else ""
    extra = " (includes its blocks)" if row.container else ""
    shapes = f"  {row.shapes}" if row.shapes else ""
    return f"{'  ' * row.depth}{name}{row.kind}{extra}{shapes}{f'  ({row.source})' if row.source else ''}"


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
    steps = None
    if profile.entry is not None:
        # before the executor runs: its numpy GEMMs leave OpenBLAS's threads spinning on both cores for a
        # while, and steps timed then took twice their time (a DCGAN's transposed convolutions)
        try:
            steps = _time_steps(executable, args, profile.runs)
        except Exception as e:  # (LLVM failing on the timed build: the rest of the profile still stands)
            profile.why_no_steps = f"{type(e).__name__}: {e}"
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
    if steps is not None:
        _label_steps(executable, steps, profile)
    return profile


def _time_steps(executable, args: list, runs: int) -> np.ndarray:
    """Each whole-graph entry step's seconds over `runs` calls (native/step_clock.py)."""
    from .native.step_clock import StepClock
    clock = StepClock(executable)
    clock.run(args)  # (first-call costs: its plan, the arena)
    totals = np.zeros(clock.steps)
    for _ in range(runs):
        totals += clock.run(args)
    return totals


def _label_steps(executable, totals: np.ndarray, profile: Profile) -> None:
    """profile.steps: a NodeTime per entry step of `totals` seconds, labelled by its graph node, with
    the FLOPs and shapes the executor counted for that node."""
    per_call = {r.name: (r.flops / r.calls, r.shapes) for r in profile.rows if r.calls and r.name}
    nodes = executable.graph["nodes"]
    for step, seconds in zip(executable.entry.layout.steps, totals):
        node = nodes[step.node]
        name = node["outputs"][0]["name"] if node.get("outputs") else ""
        source = node.get("source") if isinstance(node.get("source"), str) else None
        work, shapes = per_call.get(name, (0.0, ""))
        profile.steps.append(NodeTime(name, node["kind"], source, 0, float(seconds), profile.runs,
                                      work * profile.runs, shapes))


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
                row.shapes = row.shapes or _shapes(list(inputs)[:2], env[out])
        return run


def _shapes(inputs: list, output) -> str:
    """`(8, 64, 56, 56) x (64, 64, 3, 3) -> (8, 64, 56, 56)`: a product's operands and result."""
    shapes = [tuple(getattr(v, "shape", ())) for v in inputs]
    return " x ".join(map(str, shapes)) + f" -> {tuple(getattr(output, 'shape', ()))}"


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
