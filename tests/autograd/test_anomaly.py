"""Anomaly detection: a NaN produced in backward raises an error naming the node and showing where
its forward op was called; without anomaly mode nothing is checked."""
import warnings

import numpy as np
import pytest

import tscript as ts
from tscript.autograd import Function


class NaNGrad(Function):
    """Identity whose backward returns NaN."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * float("nan")


class Failing(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("backward failed")


def forward_nan(x):
    return NaNGrad.apply(x)  # the line the traceback must show


def test_without_anomaly_mode_nan_flows_silently():
    x = ts.tensor([1.0, 2.0], requires_grad=True)
    forward_nan(x).sum().backward()
    assert np.isnan(x.grad.numpy()).all()


def test_detect_anomaly_names_the_function_and_its_forward_call():
    x = ts.tensor([1.0, 2.0], requires_grad=True)
    with ts.autograd.detect_anomaly():
        y = forward_nan(x)
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
    message = str(info.value)
    assert message.startswith("Function 'NaNGradBackward' returned nan values in its 0th output.")
    assert "Traceback of forward call that caused the error:" in message
    assert f'File "{__file__}"' in message
    assert "in forward_nan" in message and "return NaNGrad.apply(x)  # the line the traceback must show" in message
    assert "tscript/autograd" not in message     # the trace ends at the user's call
    assert not ts.autograd.is_anomaly_enabled()


def test_set_detect_anomaly_switches_on_and_off():
    x = ts.tensor([1.0], requires_grad=True)
    ts.autograd.set_detect_anomaly(True)
    try:
        assert ts.autograd.is_anomaly_enabled()
        y = forward_nan(x)
        with pytest.raises(RuntimeError, match="Function 'NaNGradBackward' returned nan values"):
            y.backward()
    finally:
        ts.autograd.set_detect_anomaly(False)
    assert not ts.autograd.is_anomaly_enabled()
    forward_nan(x).backward()     # off again: no error


def test_set_detect_anomaly_as_context_manager_restores():
    with ts.autograd.set_detect_anomaly(True):
        assert ts.autograd.is_anomaly_enabled()
    assert not ts.autograd.is_anomaly_enabled()


def test_detect_anomaly_as_decorator():
    @ts.autograd.detect_anomaly()
    def train_step(x):
        forward_nan(x).sum().backward()
    with pytest.raises(RuntimeError, match="returned nan values"):
        train_step(ts.tensor([1.0], requires_grad=True))


def test_check_nan_false_skips_the_nan_check():
    x = ts.tensor([1.0], requires_grad=True)
    with ts.autograd.detect_anomaly(check_nan=False):
        assert ts.autograd.is_anomaly_enabled() and not ts.autograd.is_anomaly_check_nan_enabled()
        forward_nan(x).backward()
    assert np.isnan(x.grad.item())


def test_nan_from_a_builtin_op_names_that_op():
    x = ts.tensor([0.0], requires_grad=True)
    with ts.autograd.detect_anomaly():
        y = x.sqrt() * 0          # d/dx sqrt at 0 is inf; inf * 0 = nan in SqrtBackward0's input
        with pytest.raises(RuntimeError) as info:
            y.backward()
    assert str(info.value).startswith("Function 'SqrtBackward0' returned nan values in its 0th output.")
    assert "y = x.sqrt() * 0" in str(info.value)


def test_other_backward_errors_warn_with_the_forward_trace():
    x = ts.tensor([1.0], requires_grad=True)
    with ts.autograd.detect_anomaly():
        y = Failing.apply(x)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(ValueError, match="backward failed"):
                y.backward()
    assert any("Error detected in FailingBackward" in str(w.message) and "y = Failing.apply(x)" in str(w.message)
               for w in caught)

