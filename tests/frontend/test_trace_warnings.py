"""TracerWarning: converting a traced tensor to a Python value names the user's source line;
check_trace warns when a second trace or the trace's results differ from the Python function, and
stays silent for deterministic code."""
import inspect
import random
import time
import warnings

import pytest

import tscript as ts
from tscript import nn
from tscript.jit import TracerWarning


def trace_warnings(fn, example, **kwargs) -> list:
    """The TracerWarnings emitted while tracing `fn`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ts.jit.trace(fn, example, **kwargs)
    return [w for w in caught if issubclass(w.category, TracerWarning)]


def line_of(fn, text: str) -> int:
    """The line number of the first source line of `fn` containing `text`."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def item_fn(x):
    return x * x.sum().item()


def bool_fn(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


def int_fn(x):
    return x * int(x[0])


def float_fn(x):
    return x * float(x.max())


def tolist_fn(x):
    return x * len(x.tolist())


def numpy_fn(x):
    return x + x.detach().numpy().mean()


@pytest.mark.parametrize("fn, marker, what", [
    (item_fn, ".item()", "Python number"),
    (bool_fn, "if x.sum() > 0", "Python boolean"),
    (int_fn, "int(x[0])", "Python int"),
    (float_fn, "float(x.max())", "Python float"),
    (tolist_fn, ".tolist()", "Python list"),
    (numpy_fn, ".numpy()", "NumPy array"),
], ids=["item", "bool", "int", "float", "tolist", "numpy"])
def test_conversion_warns_with_the_user_line(fn, marker, what):
    caught = trace_warnings(fn, ts.ones(3), check_trace=False)
    assert len(caught) == 1
    warning = caught[0]
    assert warning.filename == __file__ and warning.lineno == line_of(fn, marker)
    message = str(warning.message)
    assert f"{__file__}:{warning.lineno}" in message
    assert f"Converting a tensor to a {what} might cause the trace to be incorrect" in message


def test_conversions_inside_a_module_name_the_module_line():
    class Gate(nn.Module):
        def forward(self, x):
            return x * 2 if bool(x.mean() > 0) else x

    caught = trace_warnings(Gate(), ts.ones(2))
    assert [w.lineno for w in caught] == [line_of(Gate.forward, "bool(x.mean() > 0)")]


def test_no_warning_without_tracing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ts.ones(1).item() == 1.0 and bool(ts.ones(1)) and ts.ones(2).tolist() == [1.0, 1.0]
        ts.ones(2).numpy()


def test_the_converted_value_is_frozen_into_the_trace():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracerWarning)
        traced = ts.jit.trace(bool_fn, ts.ones(3), check_trace=False)
    assert traced(-ts.ones(2)).tolist() == [0.0, 0.0]  # eager would take the other branch


# -- check_trace ------------------------------------------------------------------------------------
def deterministic(x):
    return (x * 2).relu().sum(0) + x.shape[0]


def uses_random(x):
    return x * random.random()


def uses_time(x):
    return x + time.perf_counter_ns() % 1000


def test_check_trace_is_silent_for_deterministic_code():
    assert trace_warnings(deterministic, ts.randn(4, 3)) == []
    assert trace_warnings(nn.Sequential(nn.Linear(3, 2), nn.Tanh()), ts.randn(4, 3)) == []


@pytest.mark.parametrize("fn", [uses_random, uses_time], ids=["random", "time"])
def test_check_trace_warns_when_a_rerun_differs(fn):
    messages = [str(w.message) for w in trace_warnings(fn, ts.ones(3))]
    assert any("Graphs differed across invocations" in m for m in messages)
    assert all(w.filename == __file__ for w in trace_warnings(fn, ts.ones(3)))


def test_check_trace_warns_when_outputs_differ():
    state = {"calls": 0}
    table = ts.ones(3)

    def drifting(x):  # the captured tensor changes between the trace and the check
        state["calls"] += 1
        table.fill_(float(state["calls"]))
        return x * table

    messages = [str(w.message) for w in trace_warnings(drifting, ts.ones(3))]
    assert any("Output nr 1. of the traced function does not match" in m for m in messages)


def test_check_trace_names_random_nodes():
    messages = [str(w.message) for w in trace_warnings(nn.Dropout(0.5), ts.ones(200))]
    assert any("Trace had nondeterministic nodes. Did you forget call .eval()" in m for m in messages)


def test_check_trace_off_emits_nothing():
    assert trace_warnings(uses_random, ts.ones(3), check_trace=False) == []


def test_check_inputs_are_each_checked():
    def f(x):
        return x.sum(0) if x.shape[0] < 4 else x.sum(1)  # Python branch on a size

    assert trace_warnings(f, ts.ones(2, 3), check_inputs=[ts.ones(3, 3)]) == []
    messages = [str(w.message) for w in trace_warnings(f, ts.ones(2, 3), check_inputs=[(ts.ones(5, 3),)])]
    assert any("Graphs differed across invocations" in m for m in messages)


def test_check_trace_does_not_mutate_inputs_twice():
    def bump(x):
        x.add_(1)
        return x * 2

    x = ts.zeros(2)
    trace_warnings(bump, x)
    assert x.tolist() == [1.0, 1.0]  # the trace ran once on x; the checks ran on copies
