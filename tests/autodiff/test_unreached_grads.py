"""A compiled backward leaves `.grad` None where eager autograd does: for parameters and inputs that no
output with a gradient depends on (the unused head of a two-headed model, an unused submodule)."""
import numpy as np
import pytest

import tscript as ts
from tscript import nn
from tests.autodiff.helpers import clone, compile_twin


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 6)
        self.cls = nn.Linear(6, 3)
        self.box = nn.Linear(6, 2)
        self.spare = nn.Linear(4, 4)  # never called

    def forward(self, x, y):
        h = ts.relu(self.body(x))
        return self.cls(h), self.box(h) * y


def _run(fn, model, x, y, loss_fn):
    """(parameter name -> .grad, x.grad, y.grad) after `loss_fn(*fn(x, y)).backward()` on fresh copies."""
    model.zero_grad()
    x, y = clone((x, y))
    loss_fn(*fn(x, y)).backward()
    return {name: p.grad for name, p in model.named_parameters()}, x.grad, y.grad


def _both(loss_fn):
    """The gradients of the compiled model, then of eager, from equal parameters and inputs."""
    ts.manual_seed(0)
    x, y = ts.randn(5, 4, requires_grad=True), ts.randn(5, 1, requires_grad=True)
    compiled, twin, eager = compile_twin(TwoHeads(), (x, y))
    return _run(compiled, twin, x, y, loss_fn), _run(eager, eager, x, y, loss_fn)


@pytest.mark.parametrize("loss_fn, untouched", [
    (lambda a, b: a.sum(), {"box.weight", "box.bias", "spare.weight", "spare.bias"}),
    (lambda a, b: (b * b).sum(), {"cls.weight", "cls.bias", "spare.weight", "spare.bias"}),
    (lambda a, b: a.sum() + b.mean(), {"spare.weight", "spare.bias"}),
])
def test_parameters_the_loss_does_not_reach_keep_grad_none_as_in_eager(loss_fn, untouched):
    (compiled_grads, cx, cy), (eager_grads, ex, ey) = _both(loss_fn)
    assert {n for n, g in eager_grads.items() if g is None} == untouched
    assert {n for n, g in compiled_grads.items() if g is None} == untouched
    for name, g in eager_grads.items():
        if g is not None:
            np.testing.assert_allclose(compiled_grads[name].numpy(), g.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cx.numpy(), ex.numpy(), rtol=1e-5, atol=1e-6)
    assert (cy is None) == (ey is None)


def test_an_input_only_the_unused_head_reads_keeps_grad_none():
    (_, _, cy), (_, _, ey) = _both(lambda a, b: a.sum())
    assert ey is None and cy is None


def test_a_reached_parameter_whose_gradient_is_zero_gets_zeros_not_none():
    (compiled_grads, _, _), (eager_grads, _, _) = _both(lambda a, b: a.sum() + 0 * b.sum())
    for name in ("box.weight", "box.bias"):
        assert eager_grads[name] is not None and compiled_grads[name] is not None
        assert not compiled_grads[name].numpy().any()


def test_autograd_grad_allow_unused_gives_none_for_the_unused_head():
    ts.manual_seed(1)
    x, y = ts.randn(3, 4), ts.randn(3, 1)
    compiled, twin, _ = compile_twin(TwoHeads(), (x, y))
    a, _ = compiled(x, y)
    grads = ts.autograd.grad(a.sum(), [twin.cls.weight, twin.box.weight], allow_unused=True)
    assert grads[0] is not None and grads[1] is None


def test_sgd_step_leaves_the_unused_head_unchanged_like_eager():
    ts.manual_seed(2)
    x, y = ts.randn(4, 4), ts.randn(4, 1)
    compiled, twin, eager = compile_twin(TwoHeads(), (x, y))
    for model, fn in ((twin, compiled), (eager, eager)):
        opt = ts.optim.SGD(model.parameters(), lr=0.1, weight_decay=0.1)
        opt.zero_grad()
        fn(x, y)[0].sum().backward()
        opt.step()
    for (name, p), q in zip(twin.named_parameters(), eager.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
