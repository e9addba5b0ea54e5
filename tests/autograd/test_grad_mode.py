"""no_grad / enable_grad / set_grad_enabled / inference_mode: as context managers and decorators,
nested, restored after exceptions, and thread-local, as in PyTorch."""
import threading

import pytest

import tscript as ts


@pytest.fixture
def x():
    return ts.tensor([1.0, 2.0], requires_grad=True)


def test_default_is_enabled():
    assert ts.is_grad_enabled() and ts.autograd.is_grad_enabled()
    assert not ts.is_inference_mode_enabled()


def test_no_grad_context(x):
    with ts.no_grad():
        assert not ts.is_grad_enabled()
        y = x * 2
    assert ts.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None


def test_enable_grad_inside_no_grad(x):
    with ts.no_grad():
        with ts.enable_grad():
            assert ts.is_grad_enabled()
            y = x * 2
        assert not ts.is_grad_enabled()
    assert y.requires_grad


def test_decorators_with_and_without_parentheses(x):
    @ts.no_grad()
    def a(t):
        return t * 2

    @ts.no_grad
    def b(t):
        return t * 2

    @ts.enable_grad
    def c(t):
        return t * 2

    @ts.inference_mode()
    def d(t):
        return t * 2

    @ts.inference_mode
    def e(t):
        return t * 2
    assert not a(x).requires_grad and not b(x).requires_grad
    assert not d(x).requires_grad and not e(x).requires_grad
    with ts.no_grad():
        assert c(x).requires_grad
    assert a.__name__ == "a" and b.__name__ == "b"


def test_decorated_functions_restore_the_mode_after_an_exception():
    @ts.no_grad()
    def fails():
        raise ValueError("boom")
    with pytest.raises(ValueError):
        fails()
    assert ts.is_grad_enabled()
    with pytest.raises(ValueError):
        with ts.no_grad():
            raise ValueError("boom")
    assert ts.is_grad_enabled()


def test_a_decorated_function_may_call_itself():
    @ts.no_grad()
    def depth(n):
        assert not ts.is_grad_enabled()
        return 0 if n == 0 else 1 + depth(n - 1)
    assert depth(3) == 3 and ts.is_grad_enabled()


def test_set_grad_enabled_called_plainly_takes_effect_at_once(x):
    ts.set_grad_enabled(False)
    try:
        assert not ts.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        ts.set_grad_enabled(True)
    assert ts.is_grad_enabled()


def test_set_grad_enabled_as_context_manager_restores(x):
    for mode in (False, True):
        with ts.no_grad():
            with ts.set_grad_enabled(mode):
                assert ts.is_grad_enabled() is mode
                assert (x * 2).requires_grad is mode
            assert not ts.is_grad_enabled()
    assert ts.is_grad_enabled()


def test_set_grad_enabled_as_decorator_applies_only_inside(x):
    @ts.set_grad_enabled(False)
    def f(t):
        return t * 2, ts.is_grad_enabled()
    assert ts.is_grad_enabled()          # decorating changed nothing outside
    y, inside = f(x)
    assert not inside and not y.requires_grad and ts.is_grad_enabled()


def test_inference_mode(x):
    with ts.inference_mode():
        assert not ts.is_grad_enabled() and ts.is_inference_mode_enabled()
        y = x * 2
    assert not y.requires_grad
    assert ts.is_grad_enabled() and not ts.is_inference_mode_enabled()
    with ts.inference_mode(False):
        assert ts.is_grad_enabled() and not ts.is_inference_mode_enabled()


def test_nesting_restores_each_level(x):
    states = []
    with ts.no_grad():
        states.append(ts.is_grad_enabled())
        with ts.enable_grad():
            states.append(ts.is_grad_enabled())
            with ts.set_grad_enabled(False):
                states.append(ts.is_grad_enabled())
                with ts.inference_mode():
                    states.append(ts.is_grad_enabled())
                states.append(ts.is_grad_enabled())
            states.append(ts.is_grad_enabled())
        states.append(ts.is_grad_enabled())
    states.append(ts.is_grad_enabled())
    assert states == [False, True, False, False, False, True, False, True]


def test_grad_mode_is_thread_local():
    seen = {}
    in_thread = threading.Event()
    main_checked = threading.Event()

    def worker():
        with ts.no_grad():
            seen["worker"] = ts.is_grad_enabled()
            in_thread.set()
            main_checked.wait(5)
        seen["worker_after"] = ts.is_grad_enabled()

    with ts.no_grad():
        t = threading.Thread(target=lambda: seen.setdefault("fresh_thread", ts.is_grad_enabled()))
        t.start()
        t.join()
    t = threading.Thread(target=worker)
    t.start()
    in_thread.wait(5)
    seen["main"] = ts.is_grad_enabled()   # the worker's no_grad does not leak here
    main_checked.set()
    t.join()
    assert seen == {"fresh_thread": True, "worker": False, "main": True, "worker_after": True}


def test_backward_runs_regardless_of_the_callers_grad_mode(x):
    y = (x * x).sum()
    with ts.no_grad():
        y.backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_operations_in_backward_are_not_recorded_without_create_graph(x):
    (x ** 2).sum().backward()
    assert not x.grad.requires_grad and x.grad.grad_fn is None
