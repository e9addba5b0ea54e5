"""Custom `autograd.Function`s inside traced code: the trace records one prim::PythonOp (its forward's
ops in the callee, so the traced model still runs), and a compiled backward runs the user's own
`backward`, recorded into the backward graph (TorchScript cannot compile these)."""
import numpy as np

import tscript as ts
from tscript import nn
from tests.autodiff.helpers import check_model


class Square(ts.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x + x)  # not the table's 2 * x * grad, but equal


class Exp(ts.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return y * grad


class RoundSTE(ts.autograd.Function):
    """Rounding with a straight-through gradient: the op's own derivative would be zero."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return (x * scale).round() / scale

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class ScaledPair(ts.autograd.Function):
    """Two inputs, two outputs, a None saved tensor and needs_input_grad."""

    @staticmethod
    def forward(ctx, a, b, alpha):
        ctx.save_for_backward(a, None, b)
        ctx.alpha = alpha
        return a * b * alpha, a + b

    @staticmethod
    def backward(ctx, g_prod, g_sum):
        a, none, b = ctx.saved_tensors
        assert none is None
        ga = g_prod * b * ctx.alpha + g_sum if ctx.needs_input_grad[0] else None
        gb = g_prod * a * ctx.alpha + g_sum if ctx.needs_input_grad[1] else None
        return ga, gb, None


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 6), nn.Linear(6, 3), nn.Linear(4, 3)

    def forward(self, x):
        h = Square.apply(self.a(x))
        q = RoundSTE.apply(self.c(x), 4.0)
        prod, total = ScaledPair.apply(self.b(h), q, 0.5)
        return Exp.apply(prod * 0.1) + total


def test_the_trace_records_one_node_per_call_and_still_runs():
    ts.manual_seed(0)
    model, x = Net(), ts.randn(5, 4)
    traced = ts.jit.trace(model, x)
    calls = [n.attrs["name"] for n in traced.graph.nodes if n.kind == "prim::PythonOp"]
    assert calls == ["Square", "RoundSTE", "ScaledPair", "Exp"]
    assert "prim::PythonOp" not in str(traced.inlined_graph)
    with ts.no_grad():
        np.testing.assert_allclose(traced(x).numpy(), model(x).numpy(), rtol=1e-6)


def test_compiled_gradients_come_from_the_users_backward():
    ts.manual_seed(1)
    compiled = check_model(Net(), (ts.randn(5, 4, requires_grad=True),), (ts.randn(2, 4, requires_grad=True),),
                           dynamic={0: [0]})
    assert "aten::round" not in str(compiled.backward_graph)  # straight through, as the user wrote


def test_the_users_backward_is_used_even_when_it_disagrees_with_the_forward():
    class Doubled(ts.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    compiled = ts.jit.compile(lambda x: Doubled.apply(x).sum(), ts.randn(3), backward=True)
    x = ts.randn(3, requires_grad=True)
    compiled(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 2, np.float32))


def test_float64_gradcheck_through_a_custom_function():
    ts.manual_seed(2)
    compiled = ts.jit.compile(lambda x, y: ScaledPair.apply(Square.apply(x), Exp.apply(y), 1.5),
                              (ts.randn(3).double(), ts.randn(3).double()), backward=True)
    inputs = (ts.randn(3).double().requires_grad_(), ts.randn(3).double().requires_grad_())
    assert ts.autograd.gradcheck(compiled, inputs)
