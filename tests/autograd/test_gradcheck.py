"""gradcheck / gradgradcheck: they pass on correct gradients and catch deliberately wrong ones
(raising GradcheckError, or returning False with raise_exception=False)."""
import pytest

import tscript as ts
from tscript.autograd import Function, GradcheckError, gradcheck, gradgradcheck


def inputs(*rows):
    return tuple(ts.tensor(r, dtype=ts.float64, requires_grad=True) for r in rows)


class WrongSquare(Function):
    """x ** 2 whose backward forgets the factor 2."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x


class FlatCube(Function):
    """x ** 3 with a correct first derivative that is cut off from the graph (wrong second one)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * 3 * x.detach() ** 2


def test_correct_functions_pass():
    x, y = inputs([0.5, -1.5, 2.0], [1.0, 2.0, 3.0])
    assert gradcheck(lambda a: (a.sin() * a).sum(), (x,))
    assert gradcheck(lambda a, b: (a * b, a / b), (x, y))
    assert gradcheck(lambda a: a.softmax(0), (x,), eps=1e-6, atol=1e-5, rtol=1e-3)
    assert gradgradcheck(lambda a, b: a.exp() * b, (x, y))
    assert gradgradcheck(lambda a: (a ** 3).sum(), x)


def test_inputs_that_do_not_require_grad_are_held_fixed():
    x, = inputs([1.0, 2.0])
    c = ts.tensor([3.0, 4.0], dtype=ts.float64)
    assert gradcheck(lambda a, b: a * b, (x, c))


def test_wrong_first_derivative_raises():
    x, = inputs([1.0, 2.0])
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(WrongSquare.apply, (x,))
    assert issubclass(GradcheckError, RuntimeError)


def test_wrong_first_derivative_returns_false_when_asked():
    x, = inputs([1.0, 2.0])
    assert gradcheck(WrongSquare.apply, (x,), raise_exception=False) is False


def test_the_error_shows_both_jacobians():
    x, = inputs([1.0, 2.0])
    with pytest.raises(GradcheckError) as info:
        gradcheck(WrongSquare.apply, (x,))
    message = str(info.value)
    assert "numerical:" in message and "analytical:" in message
    assert "[[2. 0.]\n [0. 4.]]" in message and "[[1. 0.]\n [0. 2.]]" in message


def test_wrong_second_derivative_is_caught_by_gradgradcheck_only():
    x, = inputs([1.0, 2.0])
    assert gradcheck(FlatCube.apply, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(FlatCube.apply, (x,))
    assert gradgradcheck(FlatCube.apply, (x,), raise_exception=False) is False


def test_gradgradcheck_with_given_grad_outputs():
    x, = inputs([1.0, 2.0])
    g = ts.tensor([0.5, -2.0], dtype=ts.float64, requires_grad=True)
    assert gradgradcheck(lambda a: a ** 3, (x,), (g,))


def test_no_input_requiring_grad_is_an_error():
    with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to require gradient"):
        gradcheck(lambda a: a * 2, (ts.tensor([1.0], dtype=ts.float64),))


def test_the_inputs_are_left_unchanged():
    x, = inputs([1.0, 2.0])
    gradcheck(lambda a: a.exp(), (x,))
    assert x.tolist() == [1.0, 2.0] and x.grad is None
