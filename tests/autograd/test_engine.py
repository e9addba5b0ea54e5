"""The autograd engine as a PyTorch user sees it: requires_grad propagation, grad_fn graphs,
`.grad` accumulation, `backward`/`autograd.backward`/`autograd.grad` and their arguments,
higher-order gradients, gradients through every kind of op, and PyTorch's error messages."""
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
from tests.conftest import assert_close


def leaf(data, dtype=None):
    return ts.tensor(data, dtype=dtype, requires_grad=True)


# -- requires_grad, is_leaf, grad_fn ------------------------------------------------------------------

def test_requires_grad_propagates_to_results_of_float_ops():
    x, c = leaf([1.0, 2.0]), ts.tensor([3.0, 4.0])
    assert (x * c).requires_grad and (c + x).requires_grad
    assert not (c * 2).requires_grad
    assert not (x > 1).requires_grad and (x > 1).grad_fn is None     # comparisons: bool, no grad
    assert not x.argmax().requires_grad
    values, indices = x.max(dim=0)
    assert values.requires_grad and not indices.requires_grad


def test_is_leaf():
    x = leaf([1.0])
    assert x.is_leaf and ts.tensor([1.0]).is_leaf
    assert not (x * 2).is_leaf
    assert (ts.tensor([1.0]) * 2).is_leaf       # no grad needed: still a leaf, as in PyTorch
    assert x.detach().is_leaf and not x.detach().requires_grad
    with ts.no_grad():
        y = x * 2
    assert y.is_leaf and not y.requires_grad and y.grad_fn is None


def test_grad_fn_names_and_next_functions():
    x = leaf([1.0, 2.0])
    z = ((x * 2) + 1).sum()
    assert z.grad_fn.name() == "SumBackward0"
    (add, nr), = z.grad_fn.next_functions
    assert add.name() == "AddBackward0" and nr == 0
    mul, none = add.next_functions
    assert mul[0].name() == "MulBackward0" and none == (None, 0)
    acc, scalar = mul[0].next_functions
    assert acc[0].name() == "AccumulateGrad" and acc[0].variable is x and scalar == (None, 0)
    assert repr(z).endswith("grad_fn=<SumBackward0>)")


def test_grad_fn_names_match_pytorch(oracle):
    def build(lib, x):
        v, i = x.max(dim=1)
        return [x.exp(), x.sin(), x @ x.t(), x.t(), x[0], x[:, 1:], x.view(6), x.unsqueeze(0), x.sum(1),
                x.mean(), v, x.relu(), lib.cat([x, x]), lib.where(x > 0, x, x * 2), x.clamp(0, 1), -x, x / 2,
                x - 1, x ** 2, x.softmax(1), x.log_softmax(1), x.transpose(0, 1), x.expand(2, 2, 3)]
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    ours = build(ts, ts.tensor(data, requires_grad=True))
    theirs = build(oracle, oracle.tensor(data, requires_grad=True))
    assert [t.grad_fn.name() for t in ours] == [t.grad_fn.name() for t in theirs]


def test_multiple_outputs_have_output_numbers():
    x = leaf([[3.0, 1.0], [2.0, 4.0]])
    a, b = x.unbind(1)
    assert a.grad_fn is b.grad_fn and a.grad_fn.name() == "UnbindBackward0"
    assert (a._output_nr, b._output_nr) == (0, 1)
    mul = (a * b).grad_fn
    assert mul.next_functions == ((a.grad_fn, 0), (b.grad_fn, 1))


# -- .grad accumulation -----------------------------------------------------------------------------

def test_grad_accumulates_on_leaves_across_backward_calls():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0, 9.0]
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


def test_accumulation_is_in_place_and_never_aliases_other_gradients():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (a + b).sum().backward()           # both receive the same incoming gradient
    grad_a = a.grad
    a.grad.mul_(10)                     # an in-place change (e.g. gradient clipping) of a's gradient ...
    assert b.grad.tolist() == [1.0, 1.0]   # ... leaves b's alone
    (a * 2).sum().backward()
    assert a.grad is grad_a and a.grad.tolist() == [12.0, 12.0]


def test_create_graph_gradients_of_two_leaves_are_separate_tensors():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (a + b).sum().backward(create_graph=True)
    assert a.grad is not b.grad
    with ts.no_grad():
        a.grad.mul_(10)
    assert b.grad.tolist() == [1.0, 1.0]


def test_user_gradient_is_not_aliased_by_grad():
    x = leaf([1.0, 2.0])
    g = ts.tensor([1.0, 1.0])
    x.backward(g)
    (x * 2).sum().backward()
    assert g.tolist() == [1.0, 1.0] and x.grad.tolist() == [3.0, 3.0]


def test_grad_of_non_leaf_is_none_unless_retained():
    x = leaf([1.0, 2.0])
    y = x * 2
    z = y * y
    z.sum().backward()
    assert y.grad is None and z.grad is None and not y.retains_grad
    assert x.grad.tolist() == [8.0, 16.0]


def test_integer_and_bool_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ts.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ts.tensor([1, 2], requires_grad=True)


def test_float64_gradients_keep_their_dtype():
    x = leaf([1.0, 2.0], dtype=ts.float64)
    (x * ts.tensor([1.0, 1.0])).sum().backward()   # float32 constant: the result is float64
    assert x.grad.dtype == ts.float64 and x.grad.tolist() == [1.0, 1.0]


def test_gradient_of_float32_input_through_a_cast():
    x = leaf([1.5, 2.5])
    (x.double() * 2).sum().backward()
    assert x.grad.dtype == ts.float32 and x.grad.tolist() == [2.0, 2.0]


# -- backward() arguments ------------------------------------------------------------------------------

def test_backward_with_gradient_argument():
    x = leaf([1.0, 2.0])
    (x * x).backward(ts.tensor([1.0, 10.0]))
    assert x.grad.tolist() == [2.0, 40.0]


def test_backward_retain_graph_allows_a_second_backward():
    x = leaf(3.0)
    y = x ** 3
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.item() == 54.0
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_nodes_that_saved_no_tensor_can_run_twice():
    x = leaf([1.0, 2.0])
    y = (x + 1).sum()   # AddBackward0 / SumBackward0 keep only scalars and shapes, as in PyTorch
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_backward_create_graph_makes_grad_differentiable():
    x = leaf([1.0, 2.0])
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.tolist() == [3.0, 12.0]
    g = x.grad
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


def test_backward_inputs_limits_accumulation():
    a, b = leaf(2.0), leaf(3.0)
    y = a * b
    y.backward(inputs=[a])
    assert a.grad.item() == 3.0 and b.grad is None


def test_backward_inputs_may_be_a_non_leaf():
    a = leaf(2.0)
    y = a * 3
    (y * y).backward(inputs=[y])
    assert y.grad.item() == 12.0 and a.grad is None


def test_backward_inputs_empty_is_an_error():
    x = leaf(1.0)
    with pytest.raises(RuntimeError, match="'inputs' argument to backward\\(\\) cannot be empty."):
        (x * 2).backward(inputs=[])


def test_autograd_backward_several_roots():
    x = leaf([1.0, 2.0])
    ts.autograd.backward([x * 2, (x * x).sum()], [ts.ones(2), None])
    assert x.grad.tolist() == [4.0, 6.0]


def test_backward_of_a_leaf_itself():
    x = leaf(1.5)
    x.backward()
    assert x.grad.item() == 1.0


# -- autograd.grad ---------------------------------------------------------------------------------------

def test_grad_returns_gradients_without_touching_dot_grad():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    gx, gw = ts.autograd.grad((x * w).sum(), [x, w])
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0]
    assert x.grad is None and w.grad is None and not gx.requires_grad


def test_grad_with_grad_outputs():
    x = leaf([1.0, 2.0])
    gx, = ts.autograd.grad(x * x, x, grad_outputs=ts.tensor([1.0, 0.5]))
    assert gx.tolist() == [2.0, 2.0]


def test_grad_of_a_non_leaf_stops_there():
    x = leaf(2.0)
    y = x * 3
    z = y * y
    gy, = ts.autograd.grad(z, y)
    assert gy.item() == 12.0 and x.grad is None


def test_grad_allow_unused():
    x, unused = leaf(1.0), leaf(2.0)
    gx, gu = ts.autograd.grad(x * 2, [x, unused], allow_unused=True)
    assert gx.item() == 2.0 and gu is None
    gx, gu = ts.autograd.grad(x * 2, [x, unused], materialize_grads=True)
    assert gu.item() == 0.0


def test_grad_retain_graph():
    x = leaf(2.0)
    y = x.exp()
    first, = ts.autograd.grad(y, x, retain_graph=True)
    second, = ts.autograd.grad(y, x)
    assert first.item() == second.item() == pytest.approx(np.exp(2.0))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        ts.autograd.grad(y, x)


def test_second_derivative_of_a_quadratic():
    x = leaf(3.0)
    a, b, c = 1.0, 4.0, 7.0
    y = a * x ** 2 + b * x + c
    dy, = ts.autograd.grad(y, x, create_graph=True)
    assert dy.item() == 10.0 and dy.requires_grad
    d2y, = ts.autograd.grad(dy, x)
    assert d2y.item() == 2.0


def test_higher_derivatives_of_sin_cycle():
    x = leaf(0.5, dtype=ts.float64)
    y, values = x.sin(), []
    for _ in range(4):
        y, = ts.autograd.grad(y, x, create_graph=True)
        values.append(y.item())
    expected = [np.cos(0.5), -np.sin(0.5), -np.cos(0.5), np.sin(0.5)]
    np.testing.assert_allclose(values, expected, rtol=1e-12)


def test_third_derivative_of_a_cube():
    x = leaf(2.0)
    g1, = ts.autograd.grad(x ** 3, x, create_graph=True)
    g2, = ts.autograd.grad(g1, x, create_graph=True)
    g3, = ts.autograd.grad(g2, x)
    assert (g1.item(), g2.item(), g3.item()) == (12.0, 12.0, 6.0)


def test_hessian_vector_product():
    x = leaf([1.0, 2.0, 3.0])
    f = (x ** 2).prod()                 # f = (x0 x1 x2)^2
    g, = ts.autograd.grad(f, x, create_graph=True)
    v = ts.tensor([1.0, 0.0, 0.0])
    hv, = ts.autograd.grad((g * v).sum(), x)
    # d2f/dx0dxj = [2 x1^2 x2^2, 4 x0 x1 x2^2, 4 x0 x1^2 x2]
    assert hv.tolist() == [72.0, 72.0, 48.0]


def test_grad_through_a_mixed_graph_of_several_outputs():
    x = leaf([1.0, 2.0])
    gx, = ts.autograd.grad([x.sum(), (x * x).sum()], x)
    assert gx.tolist() == [3.0, 5.0]


# -- gradients through ops ---------------------------------------------------------------------------------

def test_broadcasting_sums_gradients_back():
    a = leaf(np.ones((2, 3), np.float32))
    b = leaf([1.0, 2.0, 3.0])
    c = leaf(2.0)
    (a * b * c).sum().backward()
    assert a.grad.tolist() == [[2.0, 4.0, 6.0]] * 2
    assert b.grad.tolist() == [4.0, 4.0, 4.0]
    assert c.grad.item() == 12.0
    d = leaf([[1.0], [2.0]])
    (d + ts.zeros(2, 3)).sum().backward()
    assert d.grad.tolist() == [[3.0], [3.0]]


def test_views_route_gradients_to_their_base():
    x = leaf(np.arange(6, dtype=np.float32))
    y = x.view(2, 3).t()[1:, :]           # rows 1..2 of the transpose: x[1], x[4], x[2], x[5]
    (y * ts.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 3.0, 0.0, 2.0, 4.0]


def test_expand_squeeze_unsqueeze_permute():
    x = leaf([[1.0, 2.0]])
    y = x.expand(3, 2).unsqueeze(0).permute(2, 1, 0).squeeze(-1)
    (y * ts.tensor([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])).sum().backward()
    assert x.grad.tolist() == [[3.0, 6.0]]


def test_indexing_gradients():
    x = leaf([10.0, 20.0, 30.0, 40.0])
    y = x[ts.tensor([0, 2, 0])].sum() + x[x > 25].sum() * 2 + x[1:3].sum() * 10
    y.backward()
    assert x.grad.tolist() == [2.0, 10.0, 13.0, 2.0]


def test_gather_and_scatter_gradients():
    x = leaf([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    src = leaf([[7.0, 8.0], [9.0, 10.0]])
    g = x.gather(1, ts.tensor([[2, 2], [0, 1]]))
    s = x.scatter(1, ts.tensor([[0, 1], [2, 0]]), src)
    (g.sum() + (s * ts.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum()).backward()
    # gather picks x[0,2] twice, x[1,0], x[1,1]; scatter overwrote x[0,0], x[0,1], x[1,2], x[1,0]
    assert x.grad.tolist() == [[0.0, 0.0, 5.0], [1.0, 6.0, 0.0]]
    assert src.grad.tolist() == [[1.0, 2.0], [6.0, 4.0]]


def test_matmul_with_batch_broadcasting(oracle):
    rng = np.random.default_rng(0)
    a_np, b_np = rng.standard_normal((2, 1, 3, 4)).astype(np.float32), rng.standard_normal((5, 4, 2)).astype(np.float32)
    grads = []
    for lib in (ts, oracle):
        a, b = lib.tensor(a_np, requires_grad=True), lib.tensor(b_np, requires_grad=True)
        (a @ b).sin().sum().backward()
        grads.append((a.grad, b.grad))
    for ours, theirs in zip(*grads):
        assert_close(ours, theirs, rtol=1e-4, atol=1e-5)


def test_matmul_vector_cases_by_hand():
    m = leaf([[1.0, 2.0], [3.0, 4.0]])
    v = leaf([1.0, -1.0])
    (m @ v).sum().backward()          # m @ v = [-1, -1]
    assert m.grad.tolist() == [[1.0, -1.0], [1.0, -1.0]] and v.grad.tolist() == [4.0, 6.0]
    w = leaf([2.0, 3.0])
    (w @ v).backward()
    assert w.grad.tolist() == [1.0, -1.0] and v.grad.tolist() == [6.0, 9.0]


def test_max_min_ties_split_evenly_for_full_reductions():
    x = leaf([[1.0, 3.0, 3.0], [2.0, 3.0, 0.0]])
    x.max().backward()
    third = np.float32(1) / 3
    assert_close(x.grad, np.array([[0.0, third, third], [0.0, third, 0.0]], np.float32))
    x.grad = None
    x.amax(dim=1).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.5, 0.5], [0.0, 1.0, 0.0]]


def test_max_dim_ties_pick_the_returned_index(oracle):
    data = [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]
    grads = []
    for lib in (ts, oracle):
        x = lib.tensor(data, requires_grad=True)
        (x.max(dim=1).values.sum() + x.min(dim=0).values.sum()).backward()
        grads.append(x.grad)
    assert_close(*grads)
    assert grads[0].tolist() == [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]   # first maximum / minimum wins


def test_maximum_of_equal_values_splits_the_gradient():
    a, b = leaf([1.0, 2.0, 3.0]), leaf([1.0, 5.0, 0.0])
    ts.maximum(a, b).sum().backward()
    assert a.grad.tolist() == [0.5, 0.0, 1.0] and b.grad.tolist() == [0.5, 1.0, 0.0]


def test_where_and_cat_and_stack():
    a, b = leaf([1.0, 5.0]), leaf([3.0, 2.0])
    y = ts.where(a > b, a, b * 10) + ts.cat([a, b]).view(2, 2).sum(0) + ts.stack([a, b], 1)[:, 1] * 100
    y.sum().backward()
    assert a.grad.tolist() == [1.0, 2.0]
    assert b.grad.tolist() == [111.0, 101.0]


def test_multi_output_ops():
    x = leaf([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    w = ts.tensor([[1.0, 10.0, 100.0]])
    s, _ = x.sort(dim=1)                       # [[1,2,3],[0,4,5]]
    top, _ = x.topk(1, dim=1)                  # [[3],[5]]
    first, second = x.unbind(0)
    left, right = x.split([1, 2], dim=1)
    loss = (s * w).sum() + top.sum() * 1000 + (second * 2).sum() + (right * 3).sum() + left.sum() * 7
    loss.backward()
    assert x.grad.tolist() == [[1107.0, 4.0, 13.0], [10.0, 1105.0, 15.0]]


def test_unused_outputs_of_multi_output_ops_get_zero_gradient():
    x = leaf([1.0, 2.0, 3.0])
    a, b, c = x.unbind()
    b.backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]


def test_diamond_graph_sums_both_paths():
    x = leaf(0.5)
    a = x * 2
    y = a.sin() * a.cos() + a          # = sin(2a)/2 + a, so dy/dx = 2 cos(2a) + 2
    y.backward()
    assert x.grad.item() == pytest.approx(2 * np.cos(2.0) + 2, rel=1e-6)


def test_the_same_tensor_used_twice_in_one_op():
    x = leaf(3.0)
    (x * x).backward()
    assert x.grad.item() == 6.0


def test_a_long_chain_does_not_hit_the_recursion_limit():
    x = leaf(1.0, dtype=ts.float64)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.backward()
    assert x.grad.item() == pytest.approx(1.0001 ** 10_000, rel=1e-9)


def test_a_wide_graph_through_grad_with_inputs():
    xs = [leaf(float(i)) for i in range(50)]
    total = xs[0]
    for x in xs[1:]:
        total = total + x * x
    grads = ts.autograd.grad(total, xs[::7])
    assert [g.item() for g in grads] == [1.0] + [2.0 * i for i in range(7, 50, 7)]


def test_reductions_and_softmax_family(oracle):
    rng = np.random.default_rng(1)
    data = rng.standard_normal((3, 4)).astype(np.float32)
    grads = []
    for lib in (ts, oracle):
        x = lib.tensor(data, requires_grad=True)
        y = (x.softmax(1) * 3).sum() + x.log_softmax(0)[1].sum() + x.logsumexp(1).sum() + x.var(0).sum() \
            + x.std() + x.norm() + x.mean(1).sum() + x.prod(1).sum() + x.cumsum(0).sum()
        y.backward()
        grads.append(x.grad)
    assert_close(*grads, rtol=1e-4, atol=1e-5)


def test_mlp_loss_gradients_match_pytorch(oracle):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.1 for s in ((8, 5), (5,), (5, 3), (3,))]
    x_np, target = rng.standard_normal((4, 8)).astype(np.float32), np.array([0, 2, 1, 2])
    results = []
    for lib in (ts, oracle):
        w1, b1, w2, b2 = (lib.tensor(a, requires_grad=True) for a in arrays)
        h = (lib.tensor(x_np) @ w1 + b1).relu()
        logp = (h @ w2 + b2).log_softmax(dim=1)
        loss = -logp.gather(1, lib.tensor(target).unsqueeze(1)).mean()
        loss.backward()
        results.append([loss, w1.grad, b1.grad, w2.grad, b2.grad])
    for ours, theirs in zip(*results):
        assert_close(ours, theirs, rtol=1e-4, atol=1e-6)


# -- detach, requires_grad_ -----------------------------------------------------------------------------

def test_detach_shares_data_and_version_but_stops_gradients():
    x = leaf([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d._base is None
    assert np.shares_memory(d.numpy(), y.detach().numpy())
    z = (y * d).sum()
    z.backward()
    assert x.grad.tolist() == [4.0, 8.0]       # d is a constant


def test_detach_in_place():
    x = leaf([1.0])
    y = x * 2
    assert y.detach_() is y
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf


def test_detach_in_place_on_a_view_is_an_error():
    y = leaf([1.0, 2.0]) * 1
    with pytest.raises(RuntimeError, match="Can't detach views in-place. Use detach\\(\\) instead."):
        y[0:1].detach_()


def test_requires_grad_false_on_a_non_leaf_is_an_error():
    y = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)
    assert y.requires_grad_(True) is y     # asking for what it already has is fine


# -- errors, with PyTorch's wording -----------------------------------------------------------------------

def test_implicit_gradient_needs_a_scalar():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        ts.autograd.grad(x * 2, x)


def test_backward_of_a_tensor_that_does_not_require_grad():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        (ts.tensor([1.0]) * 2).sum().backward()


def test_grad_of_an_input_that_does_not_require_grad():
    x = leaf(1.0)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        ts.autograd.grad(x * 2, [x, ts.tensor(1.0)])


def test_grad_of_an_unused_input_without_allow_unused():
    x, unused = leaf(1.0), leaf(2.0)
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not have been used in "
                                           "the graph. Set allow_unused=True if this is the desired behavior."):
        ts.autograd.grad(x * 2, [x, unused])


def test_grad_outputs_of_the_wrong_shape():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of tscript.Size\(\[3\]\) "
                                           r"and output\[0\] has a shape of tscript.Size\(\[2\]\)."):
        ts.autograd.grad(x * 2, x, grad_outputs=ts.ones(3))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(ts.ones(1, 2))


def test_errors_match_pytorch_text(oracle):
    def messages(lib):
        out = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        for fn in (lambda: (x * 2).backward(), lambda: lib.autograd.grad((x * 2).sum(), [x, lib.ones(1, requires_grad=True)]),
                   lambda: (lib.ones(1) * 2).sum().backward()):
            with pytest.raises(RuntimeError) as info:
                fn()
            out.append(str(info.value))
        return out
    assert messages(ts) == messages(oracle)


# -- threads ------------------------------------------------------------------------------------------------

def test_backward_in_several_threads_at_once():
    results = {}

    def work(k):
        x = leaf([float(k)])
        for _ in range(50):
            x.grad = None
            (x * x * k).sum().backward()
        results[k] = x.grad.item()
    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {k: 2.0 * k * k for k in range(1, 5)}


# -- property: random broadcasting graphs agree with finite differences ----------------------------------

BINARY = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b * 2, lambda a, b: a / (b * b + 1),
          lambda a, b: ts.maximum(a, b), lambda a, b: ts.where(a > b, a * b, a - b)]
UNARY = [lambda a: a.sin(), lambda a: (-a * a).exp(), lambda a: a.tanh(), lambda a: a.sigmoid(), lambda a: a ** 2,
         lambda a: a.sum(-1, keepdim=True), lambda a: a.mean(0), lambda a: a.softmax(-1), lambda a: a.abs()]


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_random_graphs_match_finite_differences(data):
    shape = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3), label="shape")
    # the second input broadcasts: some of its dims are 1 or missing
    other = [data.draw(st.sampled_from([1, s]), label="dim") for s in shape][data.draw(st.integers(0, len(shape))):]
    seed = data.draw(st.integers(0, 2 ** 16), label="seed")
    steps = data.draw(st.lists(st.tuples(st.booleans(), st.integers(0, 100)), min_size=1, max_size=4), label="ops")
    rng = np.random.default_rng(seed)
    a = ts.tensor(rng.standard_normal(shape), dtype=ts.float64, requires_grad=True)
    b = ts.tensor(rng.standard_normal(other), dtype=ts.float64, requires_grad=True)

    def fn(a, b):
        y = a
        for binary, k in steps:
            y = BINARY[k % len(BINARY)](y, b) if binary else UNARY[k % len(UNARY)](y)
        return y
    assert ts.autograd.gradcheck(fn, (a, b), eps=1e-6, atol=1e-5, rtol=1e-3)


# -- memory ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("build", [lambda x: x.exp(), lambda x: x.sort()[0], lambda x: x.max(0)[0],
                                   lambda x: (x * 2).sigmoid().sum(), lambda x: x.unbind()[1]])
def test_graphs_are_freed_by_reference_counting(build):
    """No reference cycles: a graph goes away with its last tensor, without the cycle collector."""
    import gc
    import weakref
    x = leaf([1.0, 2.0, 3.0])
    gc.disable()
    try:
        y = build(x)
        node = weakref.ref(y.grad_fn)
        del y
        assert node() is None
    finally:
        gc.enable()
