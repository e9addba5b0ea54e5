"""Tensor hooks (observe or replace a gradient), their removal, retain_grad, and the hooks of
graph nodes (`grad_fn.register_hook` / `register_prehook`), in PyTorch's order."""
import pytest

import tscript as ts


def leaf(data):
    return ts.tensor(data, requires_grad=True)


def test_hook_on_a_leaf_replaces_the_accumulated_gradient():
    x = leaf([1.0, 2.0])
    x.register_hook(lambda g: g * 10)
    (x * 3).sum().backward()
    assert x.grad.tolist() == [30.0, 30.0]


def test_hook_on_a_non_leaf_changes_what_flows_further():
    x = leaf(2.0)
    y = x * 3
    y.register_hook(lambda g: g + 100)
    (y * y).backward()            # dz/dy = 2y = 12 -> 112
    assert x.grad.item() == 336.0


def test_hook_returning_none_only_observes():
    x = leaf(2.0)
    seen = []
    x.register_hook(lambda g: seen.append(g.item()))
    (x ** 3).backward()
    assert seen == [12.0] and x.grad.item() == 12.0


def test_hooks_run_in_registration_order_each_seeing_the_previous_result():
    x = leaf(1.0)
    y = x * 1
    seen = []
    y.register_hook(lambda g: seen.append(("first", g.item())) or g * 2)
    y.register_hook(lambda g: seen.append(("second", g.item())) or g + 1)
    y.backward()
    assert seen == [("first", 1.0), ("second", 2.0)] and x.grad.item() == 3.0


def test_removing_a_hook_with_its_handle():
    x = leaf(2.0)
    handle = x.register_hook(lambda g: g * 10)
    (x * 3).backward()
    assert x.grad.item() == 30.0
    handle.remove()
    handle.remove()               # removing twice is harmless
    (x * 3).backward()
    assert x.grad.item() == 33.0


def test_removing_a_hook_of_a_non_leaf():
    x = leaf(1.0)
    y = x * 2
    handle = y.register_hook(lambda g: g * 0)
    handle.remove()
    y.backward()
    assert x.grad.item() == 2.0


def test_hooks_run_for_autograd_grad_too():
    x = leaf(1.0)
    x.register_hook(lambda g: g * 2)
    y = x * 3
    y.register_hook(lambda g: g * 5)
    gx, = ts.autograd.grad(y * 1, x)
    assert gx.item() == 30.0
    gy, = ts.autograd.grad(y * 1, y)
    assert gy.item() == 5.0 and x.grad is None


def test_hook_on_one_output_of_a_multi_output_op():
    x = leaf([1.0, 2.0])
    a, b = x.unbind()
    a.register_hook(lambda g: g * 10)
    (a * b).backward()
    assert x.grad.tolist() == [20.0, 1.0]


def test_hook_may_not_change_the_shape_or_dtype():
    x = leaf([1.0, 2.0])
    y = x * 1
    y.register_hook(lambda g: ts.ones(3))
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the size of value"):
        y.sum().backward()

    def to_double(g):
        return g.double()
    z = x * 1
    z.register_hook(to_double)
    with pytest.raises(RuntimeError, match=r"hook 'to_double' has changed the type of value \(was "
                                           r"tscript.FloatTensor got tscript.DoubleTensor\)"):
        z.sum().backward()


def test_hook_on_a_tensor_without_grad_is_an_error():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        ts.tensor([1.0]).register_hook(lambda g: g)


def test_hook_sees_the_summed_gradient_of_all_uses():
    x = leaf(1.0)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.item()))
    (y * 3 + y * 4).backward()
    assert seen == [7.0]


def test_a_gradient_kept_by_a_hook_is_not_changed_by_later_accumulation():
    x = leaf([1.0, 2.0])
    kept = []
    x.register_hook(lambda g: kept.append(g))
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert [g.tolist() for g in kept] == [[2.0, 2.0], [2.0, 2.0]]
    assert x.grad.tolist() == [4.0, 4.0]


# -- retain_grad ---------------------------------------------------------------------------------------

def test_retain_grad_keeps_a_non_leaf_gradient():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    (y * y).sum().backward()
    assert y.grad.tolist() == [6.0, 12.0] and x.grad.tolist() == [18.0, 36.0]


def test_retained_gradient_accumulates_over_backward_calls():
    x = leaf(1.0)
    y = x * 3
    y.retain_grad()
    z = y * 2
    z.backward(retain_graph=True)
    z.backward()
    assert y.grad.item() == 4.0


def test_retain_grad_sees_the_gradient_after_hooks_whatever_the_order():
    for hook_first in (True, False):
        x = leaf(2.0)
        y = x * 3
        if hook_first:
            y.register_hook(lambda g: g * 10)
            y.retain_grad()
        else:
            y.retain_grad()
            y.register_hook(lambda g: g * 10)
        (y * y).backward()
        assert y.grad.item() == 120.0 and x.grad.item() == 360.0


def test_retain_grad_on_a_leaf_does_nothing_special():
    x = leaf(1.0)
    x.retain_grad()
    (x * 2).backward()
    assert x.grad.item() == 2.0 and not x.retains_grad


def test_retain_grad_without_requires_grad_is_an_error():
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        ts.tensor([1.0]).retain_grad()


def test_retained_gradient_is_filled_by_autograd_grad_as_well():
    x = leaf(1.0)
    y = x * 3
    y.retain_grad()
    ts.autograd.grad(y * 2, x)
    assert y.grad.item() == 2.0


# -- node hooks -----------------------------------------------------------------------------------------

def test_node_post_hook_sees_input_and_output_gradients():
    x = leaf([1.0, 2.0])
    y = x * 2
    calls = []
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: calls.append(
        ([None if g is None else g.tolist() for g in grad_inputs], [g.tolist() for g in grad_outputs])))
    y.sum().backward()
    assert calls == [([[2.0, 2.0], None], [[1.0, 1.0]])]


def test_node_pre_hook_may_replace_the_incoming_gradient():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 5,))
    y.sum().backward()
    assert x.grad.tolist() == [10.0, 10.0]


def test_node_metadata_is_a_dict_for_the_user():
    y = leaf([1.0]) * 2
    y.grad_fn.metadata["tag"] = "mine"
    assert y.grad_fn.metadata == {"tag": "mine"}


def test_saved_values_are_visible_on_the_node():
    x = leaf([1.0, 2.0])
    y = x.exp()
    assert y.grad_fn._saved_result.tolist() == y.tolist()
    z = x * ts.tensor([3.0, 4.0])
    assert z.grad_fn._saved_other.tolist() == [3.0, 4.0]
    with pytest.raises(AttributeError):
        y.grad_fn._saved_nothing
