"""`tscript.jit.trace` on functions: the trace equals eager (values, shapes, dtypes) on the example
and on other inputs (another batch size, other scalar arguments), for scalar arguments, nested
container inputs and outputs, in-place ops, multi-output ops, indexing and sizes read from inputs."""
import functools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
from tests.frontend.tracing_helpers import assert_same, constant_values, kinds, trace_matches_eager


randn = ts.randn


# -- scalar arguments --------------------------------------------------------------------------------
def test_float_argument_is_a_graph_input_not_a_constant():
    def scale(x, alpha):
        return x * alpha + 1

    traced = trace_matches_eager(scale, (randn(3, 4), 2.5), (randn(5, 4), -0.75))
    assert [str(v.type) for v in traced.graph.inputs] == ["Float(3, 4)", "float"]
    assert 2.5 not in constant_values(traced.graph)


def test_int_argument_flows_into_sizes_and_arithmetic():
    def f(x, n):
        return x.reshape(n, -1).sum(1) * (n // 2) + n

    traced = trace_matches_eager(f, (randn(4, 6), 4), (randn(4, 6), 2), (randn(3, 4), 6))
    assert str(traced.graph.inputs[1].type) == "int"
    assert {"aten::floordiv.int"} <= set(kinds(traced.graph))


def test_int_and_float_arguments_mix_like_python():
    def f(x, n, scale):
        return x * (n * scale) + n / 4

    trace_matches_eager(f, (randn(3), 3, 0.5), (randn(3), 5, -2.0))


def test_bool_argument_is_frozen_like_a_constant():
    traced = ts.jit.trace(lambda x, flag: x + 1 if flag else x - 1, (ts.ones(2), True))
    np.testing.assert_array_equal(traced(ts.ones(2), True).numpy(), [2, 2])


# -- container inputs and outputs --------------------------------------------------------------------
def test_tuple_output():
    trace_matches_eager(lambda x: (x + 1, (x * 2, x.sum())), (randn(2, 3),), (randn(5, 3),))


def test_dict_output():
    def f(x):
        return {"double": x * 2, "sum": x.sum(0)}

    traced = trace_matches_eager(f, (randn(2, 3),), (randn(4, 3),), strict=False)
    assert kinds(traced.graph)[-1] == "prim::DictConstruct"


def test_list_output():
    trace_matches_eager(lambda x: [x, x + 1], (randn(2),), (randn(3),), strict=False)


@pytest.mark.parametrize("fn, kind", [
    (lambda x: {"a": x}, "dict"),
    (lambda x: (x, {"a": x}), "dict"),
    (lambda x: [x, x], "list"),
    (lambda x: (x, [x]), "list"),
], ids=["dict", "nested-dict", "list", "nested-list"])
def test_list_and_dict_outputs_warn_unless_strict_is_off(fn, kind):
    with pytest.warns(ts.jit.TracerWarning, match=f"Encountering a {kind} at the output of the tracer"):
        ts.jit.trace(fn, randn(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ts.jit.trace(fn, randn(2), strict=False)


def test_nested_dict_list_tuple_inputs():
    def f(batch):
        a, b = batch["pair"]
        (c, extra), = batch["rest"]
        return a @ b + c * extra["scale"] - extra["bias"]

    def make(n):
        return ({"pair": [randn(n, 3), randn(3, 2)], "rest": [(randn(n, 2), {"scale": 0.5, "bias": randn(2)})]},)

    traced = trace_matches_eager(f, make(4), make(7))
    assert str(traced.graph.inputs[0].type).startswith("Dict[str, ")
    assert "aten::__getitem__" in kinds(traced.graph)


# -- in-place ops ------------------------------------------------------------------------------------
def test_in_place_ops_on_intermediates():
    def f(x):
        y = x.clone()
        y.add_(1).mul_(2)
        y[0] = 5.0
        y[:, 1] = x[:, 0]
        y.relu_()
        return y * x

    traced = trace_matches_eager(f, (randn(4, 3),), (randn(6, 3),))
    assert {"aten::add_", "aten::mul_", "aten::relu_"} <= set(kinds(traced.graph))


def test_in_place_op_on_an_input_mutates_it_like_eager():
    def f(x):
        x.mul_(3)
        return x + 1

    traced = ts.jit.trace(f, randn(3), check_trace=False)
    x = ts.tensor([1.0, 2.0, 3.0])
    out = traced(x)
    np.testing.assert_array_equal(x.numpy(), [3, 6, 9])
    np.testing.assert_array_equal(out.numpy(), [4, 7, 10])


def test_view_aliasing_is_kept():
    def f(x):
        y = x.clone()
        row = y[0]          # a view of y
        y.add_(10)          # ... that sees this update
        return row * 1

    trace_matches_eager(f, (randn(2, 3),), (randn(5, 3),))


# -- multi-output ops --------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda x: x.max(1),
    lambda x: x.min(0, keepdim=True),
    lambda x: x.sort(1, descending=True),
    lambda x: x.topk(2, 1),
    lambda x: x.split(2, 1),
    lambda x: x.chunk(3, 1),
    lambda x: x.unbind(1),
], ids=["max.dim", "min.dim", "sort", "topk", "split", "chunk", "unbind"])
def test_multi_output_ops(fn):
    trace_matches_eager(fn, (randn(4, 6),), (randn(7, 6),))


def test_outputs_of_a_multi_output_op_feed_later_ops():
    def f(x):
        values, indices = x.max(dim=1)
        first, *rest = x.unbind(1)
        return values * 2 + indices + first + sum(rest)

    traced = trace_matches_eager(f, (randn(3, 4),), (randn(6, 4),))
    assert "prim::ListUnpack" in kinds(traced.graph)


# -- indexing ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda x, i: x[1:, ::2] * x[0, ::2],
    lambda x, i: x[:, None, -1],
    lambda x, i: x[..., 1:3].flip(1),
    lambda x, i: x[i],
    lambda x, i: x[i, 1:],
    lambda x, i: x[x > 0],
], ids=["slices", "none-and-negative", "ellipsis", "tensor-index", "tensor-and-slice", "mask"])
def test_indexing(fn):
    trace_matches_eager(fn, (randn(4, 5), ts.tensor([0, 2, 2])), (randn(7, 5), ts.tensor([6, 1])))


def test_index_assignment():
    def f(x, i):
        y = ts.zeros_like(x)
        y[i] = x[i] * 2
        y[:, -1] = 1.0
        y[y > 1] = -1.0
        return y

    trace_matches_eager(f, (randn(4, 3), ts.tensor([1, 3])), (randn(6, 3), ts.tensor([0, 5])))


# -- sizes read from inputs are recorded, not frozen ----------------------------------------------------
def test_factory_op_sized_by_an_input():
    def f(x):
        return ts.zeros(x.shape[0], 3) + ts.ones(x.size(0), 1) * x[:, :1]

    traced = trace_matches_eager(f, (randn(4, 5),), (randn(9, 5),), (randn(1, 5),))
    assert kinds(traced.graph).count("aten::size") >= 2
    assert 4 not in constant_values(traced.graph)


def test_view_with_the_batch_size():
    def f(x):
        return x.view(x.size(0), -1) @ ts.ones(x.shape[1] * x.shape[2], 2)

    traced = trace_matches_eager(f, (randn(2, 3, 4),), (randn(5, 3, 4),))
    assert "aten::mul.int" in kinds(traced.graph)


SIZE_FUNCTIONS = [
    lambda x: x.sum(0) / x.shape[0],
    lambda x: x.reshape(x.shape[0] * x.shape[1], -1),
    lambda x: x.flatten(1) + ts.arange(x.shape[1] * x.shape[2]),
    lambda x: ts.full((x.size(0), 2), 7.0) * x.numel(),
    lambda x: x.new_zeros(x.shape[0], 1) - x.shape[0] % 3 + x.shape[-1] // 2,
    lambda x: x.expand(2, *x.shape).sum(0),
    lambda x: x.view(x.size(0), -1).softmax(1) * x.shape[2],
]


@pytest.mark.parametrize("fn", SIZE_FUNCTIONS, ids=["mean-by-size", "reshape-product", "arange", "full-and-numel",
                                                     "new_zeros-mod-floordiv", "expand", "view-softmax"])
def test_size_arithmetic_generalizes(fn):
    trace_matches_eager(fn, (randn(2, 3, 4),), (randn(5, 3, 4),), (randn(3, 2, 6),))


@settings(max_examples=25, deadline=None)
@given(shape=st.tuples(st.integers(1, 6), st.integers(1, 4), st.integers(1, 5)),
       index=st.integers(0, len(SIZE_FUNCTIONS) - 1))
def test_a_trace_made_on_one_shape_matches_eager_on_any_shape(shape, index):
    fn = SIZE_FUNCTIONS[index]
    traced = _traced_size_function(index)
    x = randn(*shape)
    assert_same(traced(x), fn(x))


@functools.cache
def _traced_size_function(index: int):
    return ts.jit.trace(SIZE_FUNCTIONS[index], randn(2, 3, 4))


def test_random_ops_are_recorded_not_frozen():
    traced = ts.jit.trace(lambda x: x + ts.randn(x.shape), ts.zeros(3), check_trace=False)
    assert "aten::randn" in kinds(traced.graph)
    a, b = traced(ts.zeros(3)), traced(ts.zeros(5))
    assert b.shape == (5,) and not np.array_equal(a.numpy(), b.numpy()[:3])


# -- captured tensors ------------------------------------------------------------------------------------
def test_captured_tensor_becomes_a_constant_copy():
    table = ts.tensor([1.0, 2.0, 3.0])
    traced = ts.jit.trace(lambda x: x * table, ts.ones(2, 3))
    assert list(traced.graph.constants) == ["c0"]
    np.testing.assert_array_equal(traced.graph.constants["c0"], [1, 2, 3])
    assert "prim::Constant[value=<Tensor c0>]()" in str(traced.graph)
    table.add_(100)  # the trace keeps the value it saw
    np.testing.assert_array_equal(traced(ts.ones(2, 3)).numpy(), [[1, 2, 3]] * 2)


def test_detach_and_data_stay_in_the_data_flow():
    def f(x):
        return x * x.detach().sum() + x.data

    traced = trace_matches_eager(f, (randn(3),), (randn(5),))
    assert traced.graph.constants == {} and "aten::detach" in kinds(traced.graph)


def test_same_tensor_passed_twice_traces_two_inputs():
    x = ts.randn(2, 3)
    traced = ts.jit.trace(lambda a, b: a * b - b, (x, x))
    a, b = ts.ones(2, 3), ts.full((2, 3), 2.0)
    np.testing.assert_array_equal(traced(a, b).numpy(), np.zeros((2, 3)))
    assert [n.inputs[0].name for n in traced.graph.nodes if n.kind == "aten::mul"] == ["a"]
