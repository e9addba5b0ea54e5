"""The examples of PyTorch's autograd documentation and tutorials, run with `import tscript as torch`,
each asserting the exact values the documentation shows."""
import pytest

import tscript as torch


def test_backward_twice_with_retain_graph_doubles_the_gradient():
    x = torch.tensor([[-1.0, -1.0], [0.0, 2.0]], requires_grad=True)
    y = (x ** 2).sum()
    y.backward(retain_graph=True)
    assert x.grad.tolist() == [[-2.0, -2.0], [0.0, 4.0]]
    y.backward()
    assert x.grad.tolist() == [[-4.0, -4.0], [0.0, 8.0]]


def test_gradients_of_non_leaves_are_not_kept():
    x = torch.tensor([[-1.0, -1.0], [0.0, 2.0]], requires_grad=True)
    squared = x ** 2
    y = squared.sum()
    y.backward()
    assert squared.grad is None and y.grad is None
    assert x.is_leaf and not squared.is_leaf and not y.is_leaf


def test_hooks_on_intermediate_results_see_their_gradients():
    x = torch.tensor(2.0, requires_grad=True)
    y1 = x ** 2
    y2 = -y1
    seen = []
    y1.register_hook(lambda grad: seen.append(("y1", grad.item())))
    y2.register_hook(lambda grad: seen.append(("y2", grad.item())))
    z = y1 * y2                  # dz/dy1 = y2 = -4, dz/dy2 = y1 = 4
    z.backward()
    assert seen == [("y2", 4.0), ("y1", -4.0 + -4.0)]   # y1 also feeds y2: -4 + (4 * -1)
    assert x.grad.item() == -32.0                                  # z = -x^4


def test_hooks_on_two_independent_factors():
    x = torch.tensor(2.0, requires_grad=True)
    y1 = x ** 2
    y2 = -y1.detach()            # a constant: only the direct path reaches y1
    y2.requires_grad_()
    seen = []
    y1.register_hook(lambda grad: seen.append(grad.item()))
    y2.register_hook(lambda grad: seen.append(grad.item()))
    (y1 * y2).backward()
    assert seen == [4.0, -4.0]           # dz/dy2 = y1 = 4 (the leaf runs first), dz/dy1 = y2 = -4


def test_second_derivative_of_a_quadratic_is_two():
    x = torch.tensor(5.0, requires_grad=True)
    b, c = 3.0, -7.0
    y = x ** 2 + b * x + c
    dy_dx, = torch.autograd.grad(y, x, create_graph=True)
    assert dy_dx.item() == 13.0
    d2y_dx2, = torch.autograd.grad(dy_dx, x)
    assert d2y_dx2.item() == 2.0


def test_second_derivative_with_a_tensor_coefficient():
    a = torch.tensor(1.0, requires_grad=True)
    x = torch.tensor(3.0, requires_grad=True)
    y = a * x ** 2 + 2 * x + 1
    dy_dx, = torch.autograd.grad(y, x, create_graph=True)
    dy_dx.backward()
    assert x.grad.item() == 2.0          # d/dx (2 a x + 2) = 2 a
    assert a.grad.item() == 6.0          # d/da (2 a x + 2) = 2 x


def test_freezing_part_of_a_model():
    """Plain tensors as layers: the frozen layer gets no .grad, the trainable one does."""
    x = torch.tensor([[1.0, 2.0]])
    frozen_w = torch.tensor([[1.0, 0.0], [0.0, 1.0]], requires_grad=True)
    frozen_b = torch.tensor([0.5, -0.5], requires_grad=True)
    head_w = torch.tensor([[2.0], [3.0]], requires_grad=True)
    constant = torch.tensor([[1.0]])                     # never required grad
    for p in (frozen_w, frozen_b):
        p.requires_grad_(False)
    hidden = x @ frozen_w + frozen_b                     # [[1.5, 1.5]]
    assert not hidden.requires_grad and hidden.grad_fn is None
    out = (hidden @ head_w + constant).sum()
    out.backward()
    assert frozen_w.grad is None and frozen_b.grad is None and constant.grad is None
    assert head_w.grad.tolist() == [[1.5], [1.5]]


def test_requires_grad_of_an_op_result_follows_its_inputs():
    x = torch.rand(5, 5)
    y = torch.rand(5, 5)
    z = torch.rand((5, 5), requires_grad=True)
    assert not (x + y).requires_grad
    assert (x + z).requires_grad


def test_no_grad_excludes_a_computation():
    x = torch.tensor([1.0], requires_grad=True)
    with torch.no_grad():
        y = x * 2
    assert not y.requires_grad

    @torch.no_grad()
    def doubler(t):
        return t * 2
    assert not doubler(x).requires_grad

    @torch.enable_grad()
    def tripler(t):
        return t * 3
    with torch.no_grad():
        assert tripler(x).requires_grad


def test_set_grad_enabled_examples():
    x = torch.tensor([1.0], requires_grad=True)
    is_train = False
    with torch.set_grad_enabled(is_train):
        y = x * 2
    assert not y.requires_grad
    torch.set_grad_enabled(True)
    y = x * 2
    assert y.requires_grad
    torch.set_grad_enabled(False)
    y = x * 2
    assert not y.requires_grad
    torch.set_grad_enabled(True)


def test_optimizer_step_under_no_grad():
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    lr = 0.1
    for _ in range(3):
        loss = (w ** 2).sum()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None
    assert w.is_leaf and w.requires_grad
    assert w.tolist() == pytest.approx([0.8 ** 3, -2.0 * 0.8 ** 3])


def test_vector_jacobian_product():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    v = torch.tensor([0.1, 1.0, 0.0001])
    y.backward(v)
    assert x.grad.tolist() == pytest.approx([0.2, 2.0, 0.0002])
