"""The runtime's profiling: executor hooks (free when unused, same results when used, nested blocks
included), Model.profile's table, FLOPs from shapes, the measured peak, and the progress line."""
from __future__ import annotations

import io

import numpy as np

import tscript as ts
from tests.report.models import Repeated, TwoLayer
from tscript.ir.graph_json import graph_to_json
from tscript_runtime.executor import run_steps
from tscript_runtime.flops import flops
from tscript_runtime.native.peak import peak_gflops
from tscript_runtime.profile import profile_executable
from tscript_runtime.progress import Progress


def scripted_program():
    model = ts.jit.script(Repeated().eval())
    cm = ts.jit.compile(model, (ts.randn(4, 8), 3))
    return cm, cm._tree


def test_hooks_see_every_node_and_keep_the_results():
    cm, tree = scripted_program()
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    seen = []

    def make_hook(step, names, depth):
        seen.append((step.where[0], depth))

        def run(steps, env):
            run_steps(steps, env)
        return run
    program = cm.executable.program
    hooked = program.with_hooks(make_hook)
    np.testing.assert_array_equal(hooked.run(tree + [x, 3])[0], program.run(tree + [x, 3])[0])
    kinds = [k for k, _ in seen]
    assert "prim::If" in kinds and "prim::Loop" in kinds
    loop = kinds.index("prim::Loop")
    assert seen[loop][1] == 0 and seen[loop + 1][1] == 1  # the body's nodes are one block deep
    assert program.steps[0].mode != hooked.steps[0].mode  # the plain program keeps its own steps


def test_profile_counts_loop_trips_and_nested_time():
    cm, tree = scripted_program()
    x = np.ones((4, 8), np.float32)
    profile = profile_executable(cm.executable, tree + [x, 5], runs=2)
    body = [r for r in profile.rows if r.depth == 1 and r.kind == "aten::tanh"]
    assert len(body) == 1 and body[0].calls == 2 * 5
    loop = next(r for r in profile.rows if r.kind == "prim::Loop")
    assert loop.container and loop.seconds >= body[0].seconds
    assert "(includes its blocks)" in profile.table()


def test_model_profile_table_is_sorted_and_rates_gemms(tmp_path):
    ts.manual_seed(0)
    path = tmp_path / "m.tsm"
    ts.jit.save(ts.jit.compile(TwoLayer().eval(), (ts.randn(8, 16),)), str(path))
    import tscript_runtime
    profile = tscript_runtime.load(str(path)).profile(np.ones((8, 16), np.float32), runs=3)
    assert profile.entry is not None and profile.entry > 0 and profile.arena_bytes > 0
    times = [r.seconds for r in profile.sorted_rows()]
    assert times == sorted(times, reverse=True)
    table = profile.table()
    steps, nodes = table.split("the same graph node by node through the executor")
    assert "whole-graph native entry" in steps and steps.count("aten::linear") == 2 and nodes.count("aten::linear") == 2


def test_the_entry_steps_are_timed_inside_the_native_call():
    """Each whole-graph entry step gets its own time from the timed build of the same code, labelled by
    its node, with the FLOPs and shapes of its product; its outputs are the untimed code's."""
    ts.manual_seed(0)
    x = ts.randn(64, 16)
    cm = ts.jit.compile(TwoLayer().eval(), (x,))
    takes_self = cm.executable.graph["inputs"][0].get("type", "").startswith("__module__")
    args = (list(cm._tree) if takes_self else []) + [x.numpy()]
    from tscript_runtime.native.step_clock import StepClock
    clock = StepClock(cm.executable)
    steps = cm.executable.entry.layout.steps
    seconds = clock.run(args)
    assert seconds.shape == (len(steps),) and (seconds >= 0).all() and seconds.sum() > 0
    np.testing.assert_array_equal(clock.entry.run(args)[0], cm.executable.entry.run(args)[0])
    profile = profile_executable(cm.executable, args, runs=3)
    assert len(profile.steps) == len(steps) and profile.step_total() > 0
    linears = [r for r in profile.steps if r.kind == "aten::linear"]
    assert len(linears) == 2 and linears[0].flops == 3 * 2 * 64 * 16 * 32
    assert linears[0].shapes == "(64, 16) x (32, 16) -> (64, 32)"
    assert "timed inside the native call" in profile.table()


def test_why_no_entry_names_the_node():
    cm, tree = scripted_program()
    profile = profile_executable(cm.executable, tree + [np.ones((4, 8), np.float32), 1], runs=1)
    assert profile.entry is None and "prim::If" in profile.why_no_entry


def test_flops_from_shapes():
    a, b = np.zeros((3, 5, 7)), np.zeros((7, 2))
    assert flops("aten::matmul", [a, b], np.zeros((3, 5, 2))) == 2 * 3 * 5 * 2 * 7
    x, w = np.zeros((2, 4, 9, 9)), np.zeros((6, 2, 3, 3))  # groups=2
    assert flops("aten::conv2d", [x, w], np.zeros((2, 6, 7, 7))) == 2 * 2 * 6 * 7 * 7 * 2 * 3 * 3
    assert flops("aten::relu", [x], x) == 0.0


def test_peak_is_measured_once_and_scales_with_threads():
    one = peak_gflops()
    assert one > 0.5 and peak_gflops() == one and peak_gflops(2) == 2 * one


def test_progress_is_silent_off_a_terminal():
    stream = io.StringIO()
    with Progress("job", stream=stream) as p:
        p.step("working", 1, 3)
    assert stream.getvalue() == ""
    stream = io.StringIO()
    with Progress("job", stream=stream, enabled=True) as p:
        p.step("working")
    assert "\rjob: working" in stream.getvalue().replace("\x1b[K", "") and stream.getvalue().endswith("\r\x1b[K")


def test_the_interpreted_program_profiles_too():
    """A graph without native code (no plan) still gets its table, with no entry and no peak."""
    def fn(x):
        return (x @ x.t()).relu()
    traced = ts.jit.trace(fn, (ts.randn(4, 3),))
    from tscript_runtime.executable import Executable
    graph = traced.inlined_graph
    executable = Executable(graph_to_json(graph), graph.constants, None)
    profile = profile_executable(executable, [np.ones((4, 3), np.float32)], runs=2)
    assert profile.peak_gflops == 0 and "no native code" in profile.why_no_entry
    assert [r.kind for r in profile.rows][-1] == "aten::relu"


def test_a_failing_timed_build_leaves_the_rest_of_the_profile(monkeypatch):
    ts.manual_seed(0)
    x = ts.randn(8, 16)
    cm = ts.jit.compile(TwoLayer().eval(), (x,))
    takes_self = cm.executable.graph["inputs"][0].get("type", "").startswith("__module__")
    args = (list(cm._tree) if takes_self else []) + [x.numpy()]
    from tscript_runtime.native import step_clock

    def fail(executable):
        raise RuntimeError("LLVM said no")
    monkeypatch.setattr(step_clock, "StepClock", fail)
    profile = profile_executable(cm.executable, args, runs=2)
    assert profile.entry is not None and profile.rows and not profile.steps
    assert "the entry's steps are not timed: RuntimeError: LLVM said no" in profile.table()



def test_the_steps_are_timed_before_the_executor_runs(monkeypatch):
    """The executor's numpy GEMMs leave OpenBLAS's threads spinning: the entry's steps are timed first."""
    ts.manual_seed(0)
    x = ts.randn(8, 16)
    cm = ts.jit.compile(TwoLayer().eval(), (x,))
    takes_self = cm.executable.graph["inputs"][0].get("type", "").startswith("__module__")
    args = (list(cm._tree) if takes_self else []) + [x.numpy()]
    from tscript_runtime.native import step_clock
    order = []

    class Clock(step_clock.StepClock):
        def run(self, args):
            order.append("steps")
            return super().run(args)
    monkeypatch.setattr(step_clock, "StepClock", Clock)
    program = type(cm.executable.program)
    real = program.run
    monkeypatch.setattr(program, "run", lambda self, a: (order.append("executor"), real(self, a))[1])
    profile = profile_executable(cm.executable, args, runs=2)
    assert order[0] == "steps" and "executor" in order and order.index("executor") > order.count("steps") - 1
    assert len(profile.steps) == len(cm.executable.entry.layout.steps) and profile.steps[0].kind
