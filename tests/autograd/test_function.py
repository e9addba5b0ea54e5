"""Custom `tscript.autograd.Function`s: ctx.save_for_backward / saved_tensors / needs_input_grad /
mark_non_differentiable, non-tensor arguments, several outputs, wrong backward results, use inside
a bigger graph, gradcheck, and backward formulas that are themselves differentiable."""
import numpy as np
import pytest

import tscript as ts
from tscript.autograd import Function, gradcheck, gradgradcheck
from tscript.autograd.function import once_differentiable


class ScaledCube(Function):
    """k * x ** 3 with a Python-number k."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x ** 3 * k

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * 3 * x ** 2 * ctx.k, None


class SortWithIndices(Function):
    """Sorted values (differentiable) and their indices (not)."""

    @staticmethod
    def forward(ctx, x):
        values, indices = x.sort()
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        indices, = ctx.saved_tensors
        return ts.zeros_like(grad_values).scatter(0, indices, grad_values)


class MulAdd(Function):
    """(x * y, x + y): two outputs from two inputs; records which inputs needed grads."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        ctx.seen_needs = ctx.needs_input_grad
        return x * y, x + y

    @staticmethod
    def backward(ctx, g_prod, g_sum):
        x, y = ctx.saved_tensors
        return g_prod * y + g_sum, g_prod * x + g_sum


def leaf(data, dtype=None):
    return ts.tensor(data, dtype=dtype, requires_grad=True)


def test_forward_backward_and_saved_tensors():
    x = leaf([1.0, 2.0])
    y = ScaledCube.apply(x, 2.0)
    assert y.tolist() == [2.0, 16.0] and y.requires_grad
    assert y.grad_fn.name() == "ScaledCubeBackward"
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 24.0]


def test_function_node_is_linked_into_the_graph():
    x = leaf([1.0, 2.0])
    y = ScaledCube.apply(x * 2, 1.0)
    (node, nr), = y.grad_fn.next_functions
    assert node.name() == "MulBackward0" and nr == 0
    assert node.next_functions[0][0].name() == "AccumulateGrad"


def test_used_in_a_bigger_graph():
    x = leaf([1.0, 2.0])
    z = (ScaledCube.apply(x.sin(), 1.0) * x).sum()     # sum(sin(x)^3 * x)
    z.backward()
    s, c = np.sin([1.0, 2.0]), np.cos([1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), 3 * s ** 2 * c * [1.0, 2.0] + s ** 3, rtol=1e-5)


def test_needs_input_grad_reflects_the_inputs():
    x, y = leaf([1.0]), ts.tensor([2.0])
    prod, total = MulAdd.apply(x, y)
    assert prod.grad_fn.ctx.seen_needs == (True, False)
    (prod + total).sum().backward()
    assert x.grad.tolist() == [3.0] and y.grad is None


def test_multiple_outputs_share_one_node():
    x, y = leaf([2.0]), leaf([5.0])
    prod, total = MulAdd.apply(x, y)
    assert prod.grad_fn is total.grad_fn
    assert (prod._output_nr, total._output_nr) == (0, 1)
    (prod * 10 + total).sum().backward()
    assert x.grad.tolist() == [51.0] and y.grad.tolist() == [21.0]


def test_an_output_without_gradient_is_materialized_as_zeros():
    x, y = leaf([2.0]), leaf([5.0])
    prod, _ = MulAdd.apply(x, y)
    prod.sum().backward()                 # the sum output got no gradient: backward sees zeros
    assert x.grad.tolist() == [5.0] and y.grad.tolist() == [2.0]


def test_mark_non_differentiable():
    x = leaf([3.0, 1.0, 2.0])
    values, indices = SortWithIndices.apply(x)
    assert values.tolist() == [1.0, 2.0, 3.0] and indices.tolist() == [1, 2, 0]
    assert values.requires_grad and not indices.requires_grad
    (values * ts.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [3.0, 1.0, 2.0]


def test_no_graph_when_no_input_requires_grad():
    y = ScaledCube.apply(ts.tensor([1.0]), 1.0)
    assert not y.requires_grad and y.grad_fn is None
    with ts.no_grad():
        assert ScaledCube.apply(leaf([1.0]), 1.0).grad_fn is None


def test_forward_runs_without_recording():
    seen = []

    class Spy(Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(ts.is_grad_enabled())
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2
    y = Spy.apply(leaf([1.0]))
    assert seen == [False] and y.grad_fn.name() == "SpyBackward"


def test_returning_an_input_unchanged_gives_a_new_tensor():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 7
    x = leaf([1.0])
    y = Identity.apply(x)
    assert y is not x and x.is_leaf
    y.sum().backward()
    assert x.grad.tolist() == [7.0]


def test_wrong_number_of_gradients():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, grad):
            return grad
    x = leaf(2.0)
    with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)"):
        Bad.apply(x, x).backward()


def test_gradient_for_a_non_tensor_argument():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, grad):
            return grad, grad
    with pytest.raises(RuntimeError, match="Function BadBackward returned a gradient different than None at "
                                           "position 2, but the corresponding forward input was not a Variable"):
        Bad.apply(leaf(1.0), 3.0).backward()


def test_gradient_of_the_wrong_shape():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, grad):
            return ts.ones(3)
    with pytest.raises(RuntimeError, match=r"Function BadBackward returned an invalid gradient at index 0 - got "
                                           r"\[3\] but expected shape compatible with \[2\]"):
        Bad.apply(leaf([1.0, 2.0])).backward()


def test_a_broadcast_gradient_is_summed_to_the_input_shape():
    class Broadcast(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, grad):
            return ts.ones(4, 2)
    x = leaf([1.0, 2.0])
    Broadcast.apply(x).backward()
    assert x.grad.tolist() == [4.0, 4.0]


def test_saved_tensors_are_freed_after_backward():
    x = leaf([1.0])
    y = ScaledCube.apply(x, 1.0)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.sum().backward()


def test_saved_tensor_modified_in_place():
    x = leaf([1.0])
    h = x * 1
    y = ScaledCube.apply(h, 1.0)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_double_backward_through_a_differentiable_backward():
    x = leaf(2.0, dtype=ts.float64)
    y = ScaledCube.apply(x, 1.0)
    g, = ts.autograd.grad(y, x, create_graph=True)
    assert g.item() == 12.0 and g.requires_grad
    h, = ts.autograd.grad(g, x)
    assert h.item() == 12.0                # d2/dx2 x^3 = 6x


def test_once_differentiable_backward_is_not_recorded():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return 2 * x * grad
    x = leaf(3.0)
    g, = ts.autograd.grad(Square.apply(x), x, create_graph=True)
    assert g.item() == 6.0 and not g.requires_grad


def test_gradcheck_of_custom_functions():
    x = leaf([0.3, -1.2, 2.0], dtype=ts.float64)
    y = leaf([1.5, 0.5, -0.7], dtype=ts.float64)
    assert gradcheck(lambda t: ScaledCube.apply(t, 1.5), (x,))
    assert gradcheck(MulAdd.apply, (x, y))
    assert gradgradcheck(lambda t: ScaledCube.apply(t, 1.5), (x,))
    assert gradcheck(lambda t: SortWithIndices.apply(t)[0], (x,))


class SavesItsOutput(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        return grad * y


def test_a_saved_output_keeps_its_graph_position_and_version():
    x = leaf([1.0, 2.0], dtype=ts.float64)
    g, = ts.autograd.grad(SavesItsOutput.apply(x).sum(), x, create_graph=True)
    h, = ts.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), np.exp([1.0, 2.0]))
    y = SavesItsOutput.apply(x)
    y.add_(1)
    with pytest.raises(RuntimeError, match="which is output 0 of SavesItsOutput, is at version 1; expected "
                                           "version 0 instead"):
        y.sum().backward()


def test_a_function_graph_is_freed_without_the_cycle_collector():
    import gc
    import weakref
    gc.disable()
    try:
        y = SavesItsOutput.apply(leaf([1.0]))
        node = weakref.ref(y.grad_fn)
        del y
        assert node() is None
    finally:
        gc.enable()


def test_non_tensor_outputs_pass_through():
    class WithCount(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, 7

        @staticmethod
        def backward(ctx, grad, _):
            assert _ is None
            return grad * 2
    x = leaf([1.0])
    y, count = WithCount.apply(x)
    assert count == 7
    y.sum().backward()
    assert x.grad.tolist() == [2.0]
