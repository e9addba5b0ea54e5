"""In-place operations and autograd: version counters catch saved tensors that changed, leaves that
require grad refuse in-place ops (except under no_grad), in-place ops on non-leaves and on views of
graph tensors give PyTorch's gradients."""
import numpy as np
import pytest

import tscript as ts
from tests.conftest import assert_close


def leaf(data, dtype=None):
    return ts.tensor(data, dtype=dtype, requires_grad=True)


MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace operation: "
HINT = ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
        "tscript.autograd.set_detect_anomaly(True, check_nan=False).")


# -- saved tensors modified in place ---------------------------------------------------------------------

def test_modified_output_saved_by_its_op():
    x = leaf([1.0, 2.0])
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert str(info.value) == (MODIFIED + "[tscript.FloatTensor [2]], which is output 0 of Exp, is at version 1; "
                                          "expected version 0 instead. " + HINT)


def test_modified_input_saved_by_a_later_op():
    x = leaf([1.0, 2.0])
    y = x * 2
    z = y.sin()
    y.add_(1)
    with pytest.raises(RuntimeError) as info:
        z.sum().backward()
    assert str(info.value) == (MODIFIED + "[tscript.FloatTensor [2]], which is output 0 of Add, is at version 1; "
                                          "expected version 0 instead. " + HINT)


def test_modified_constant_saved_for_backward():
    x = leaf([[1.0, 2.0]], dtype=ts.float64)
    w = ts.tensor([[3.0], [4.0]], dtype=ts.float64)
    z = x @ w
    w.mul_(2)
    with pytest.raises(RuntimeError) as info:
        z.sum().backward()
    assert str(info.value) == (MODIFIED + "[tscript.DoubleTensor [2, 1]] is at version 1; expected version 0 "
                                          "instead. " + HINT)


def test_messages_match_pytorch(oracle):
    def message(lib, scenario):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(RuntimeError) as info:
            scenario(lib, x)
        return str(info.value).replace("torch.", "tscript.")

    def saved_output(lib, x):
        y = x.sigmoid()
        y.mul_(2)
        y.sum().backward()

    def saved_input(lib, x):
        y = x * 1
        z = y * y
        y.sub_(1)
        z.sum().backward()

    def sorted_values(lib, x):
        v, _ = x.sort()
        z = v * v
        v.add_(1)
        z.sum().backward()
    for scenario in (saved_output, saved_input, sorted_values):
        assert message(ts, scenario) == message(oracle, scenario)


def test_a_change_after_backward_is_fine():
    x = leaf([1.0, 2.0])
    y = x * 1
    z = (y * y).sum()
    z.backward()
    y.add_(1)
    assert x.grad.tolist() == [2.0, 4.0]


def test_in_place_on_a_tensor_that_was_not_saved_is_fine():
    x = leaf([1.0, 2.0])
    y = x * 1
    z = y.exp() * 3          # exp saves its result, not y; mul by a number saves nothing of y
    y.add_(100)
    z.sum().backward()
    assert_close(x.grad, 3 * np.exp(np.array([1.0, 2.0], np.float32)))


def test_version_counter_counts_in_place_ops():
    t = ts.zeros(3)
    assert t._version == 0
    t.add_(1)
    t[0] = 5.0
    t.mul_(2)
    assert t._version == 3
    v = t[1:]
    v.zero_()
    assert t._version == v._version == 4


# -- leaves ------------------------------------------------------------------------------------------

def test_in_place_on_a_leaf_that_requires_grad_is_an_error():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "
                                           "operation."):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x += 1
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation."):
        x[0] = 3.0
    assert x.tolist() == [1.0, 2.0]


def test_in_place_on_a_leaf_under_no_grad_is_an_optimizer_step():
    p = leaf([1.0, 2.0])
    (p * p).sum().backward()
    with ts.no_grad():
        p -= 0.1 * p.grad
        p[0] = p[0] * 10
    assert p.tolist() == pytest.approx([8.0, 1.6])
    assert p.is_leaf and p.requires_grad and p.grad_fn is None
    p.grad.zero_()
    (p * 3).sum().backward()
    assert p.grad.tolist() == [3.0, 3.0]


# -- in-place ops on non-leaves ------------------------------------------------------------------------------

def test_in_place_chain_on_a_non_leaf():
    a = leaf([0.5, 1.0])
    x = a * 2
    x.mul_(3)
    x.exp_()
    assert x.grad_fn.name() == "ExpBackward0"
    x.sum().backward()
    assert_close(a.grad, 6 * np.exp(6 * np.array([0.5, 1.0], np.float32)))


def test_in_place_ops_whose_derivative_reads_the_old_value(oracle):
    data = np.array([0.3, -1.2, 2.0], np.float32)
    grads = []
    for lib in (ts, oracle):
        a = lib.tensor(data, requires_grad=True)
        x = a * 1
        x.sin_()
        x.pow_(2)
        x.clamp_(0.1, 0.8)
        x.mul_(a)
        x.sum().backward()
        grads.append(a.grad)
    assert_close(*grads)


def test_in_place_with_a_tensor_operand_that_requires_grad():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    x = a * 1
    x.mul_(b)
    x.add_(b, alpha=2)
    x.sum().backward()
    assert a.grad.tolist() == [3.0, 4.0] and b.grad.tolist() == [3.0, 4.0]


def test_augmented_assignment_on_a_non_leaf():
    a = leaf([1.0, 2.0])
    x = a * 2
    x += a
    x *= 4
    x -= a
    x.sum().backward()              # x = 11 a
    assert a.grad.tolist() == [11.0, 11.0]


def test_squaring_in_place_overwrites_a_value_its_own_gradient_needs():
    a = leaf([1.0, 2.0])
    x = a * 2
    x *= x                          # PyTorch refuses this too: `other` (x itself) was saved, then changed
    with pytest.raises(RuntimeError, match="which is output 0 of Mul, is at version 1; expected version 0"):
        x.sum().backward()


def test_in_place_on_a_tensor_that_did_not_require_grad():
    a = leaf([1.0, 2.0])
    buf = ts.zeros(2)
    buf.add_(a * 3)
    assert buf.requires_grad and not buf.is_leaf and buf.grad_fn.name() == "AddBackward0"
    buf.sum().backward()
    assert a.grad.tolist() == [3.0, 3.0]


# -- views -------------------------------------------------------------------------------------------------

def test_in_place_on_a_view_rebases_the_base():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1
    v = y[0:2]
    v.mul_(2)
    assert y.tolist() == [2.0, 4.0, 3.0]
    assert y.grad_fn.name() == "CopySlices" and v.grad_fn.name() == "AsStridedBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "MulBackward0"
    (y * ts.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert x.grad.tolist() == [2.0, 20.0, 100.0]


def test_views_of_a_changed_base_see_the_change(oracle):
    results = []
    for lib in (ts, oracle):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        a, b = y[0:2], y[1:3]          # overlapping views
        a.mul_(3)
        (b.sum() * 10 + a.sum()).backward()
        results.append(x.grad)
    assert_close(*results)
    assert results[0].tolist() == [3.0, 33.0, 10.0]


def test_view_taken_before_an_in_place_op_on_the_base():
    x = leaf([1.0, 2.0])
    y = x * 1
    v = y[0:1]
    y.mul_(2)
    v.sum().backward()
    assert x.grad.tolist() == [2.0, 0.0]


def test_index_assignment_into_a_non_leaf(oracle):
    data = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    grads = []
    for lib in (ts, oracle):
        x = lib.tensor(data, requires_grad=True)
        y = x * 1
        y[1] = x[0] * 5
        y[2:] = x[2:] * x[3]
        y[lib.tensor([0])] = 7.0
        y[y > 10] = 0.0
        (y * lib.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
        grads.append(x.grad)
    assert_close(*grads)


def test_writing_a_tensor_that_requires_grad_into_a_constant_buffer():
    x = leaf([1.0, 2.0])
    buf = ts.zeros(2, 3)
    buf[:, 1] = x * 2
    assert buf.requires_grad and buf.grad_fn.name() == "CopySlices"
    buf.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_in_place_through_a_transposed_and_reshaped_view(oracle):
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    grads = []
    for lib in (ts, oracle):
        x = lib.tensor(data, requires_grad=True)
        y = x * 1
        y.t()[1:].mul_(lib.tensor([[2.0, 3.0]]))
        y.view(6)[::2].add_(x.view(6)[:3])
        (y ** 2).sum().backward()
        grads.append(x.grad)
    assert_close(*grads)


def test_higher_order_through_an_in_place_view_update():
    x = leaf([1.0, 2.0])
    y = x * 1
    y[0:1].mul_(x[0:1])               # y = [x0^2, x1]
    g, = ts.autograd.grad(y.sum() * y.sum(), x, create_graph=True)
    (h,) = ts.autograd.grad(g[0], x)
    s = 1.0 + 2.0                     # f = (x0^2 + x1)^2; df/dx0 = 4 x0 s; d2f/dx0^2 = 4 s + 8 x0^2
    assert g.tolist() == [4 * s, 2 * s] and h.tolist() == [4 * s + 8, 4.0]


def test_in_place_on_an_output_of_a_multi_view_op_is_an_error():
    y = leaf([1.0, 2.0]) * 1
    a, b = y.unbind()
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view and is being modified inplace. This view "
                                           "is the output of a function that returns multiple views."):
        a.mul_(2)


@pytest.mark.parametrize("make_view", [
    lambda a: a[1:, ::2], lambda a: a.T[::-1], lambda a: a[..., 1], lambda a: a.reshape(-1)[3:9:2],
    lambda a: a[::-1, ::-2].T, lambda a: a[2:2], lambda a: a[None, 1:3, :, None],
])
@pytest.mark.parametrize("transposed_base", [False, True])
def test_index_map_of_a_view_in_its_base(make_view, transposed_base):
    from tscript.autograd.views import index_map
    base = np.zeros((5, 4), np.float32).T if transposed_base else np.zeros((4, 5), np.float32)
    view = make_view(base)
    if view.size and not np.shares_memory(view, base):
        pytest.skip("numpy copied: not a view of this base")
    assert index_map(view, base).tolist() == make_view(np.arange(20).reshape(4, 5)).tolist()
