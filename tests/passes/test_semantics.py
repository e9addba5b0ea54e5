"""Semantic preservation: after every pass (alone, and stage by stage through the pipelines) the
verifier accepts the graph and the executor gives the results of the original graph, on the model
zoo and on random straight-line graphs of elementwise, reduction and movement ops."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tscript as ts
from tests.passes.helpers import ZOO, assert_same_outputs, flat, run_graph, traced
from tscript.ir import Graph, verify
from tscript.ir.passes.canonicalize import canonicalize
from tscript.ir.passes.constant_propagation import propagate_constants
from tscript.ir.passes.cse import eliminate_common_subexpressions
from tscript.ir.passes.dce import eliminate_dead_code
from tscript.ir.passes.fold_batch_norm import fold_batch_norm
from tscript.ir.passes.freeze import freeze_stages
from tscript.ir.passes.pipeline import PIPELINE
from tscript.ir.passes.remove_mutation import remove_mutation
from tscript.ir.passes.shape_propagation import propagate_shapes
from tscript.ir.passes.unroll import unroll_loops
from tscript.ir.types import TENSOR, ListType, TensorType, tensor_type
from tscript_runtime.ops import OPS, TensorMeta

SINGLE_PASSES = {"canonicalize": canonicalize, "constant_propagation": propagate_constants,
                 "cse": eliminate_common_subexpressions, "dce": eliminate_dead_code,
                 "remove_mutation": remove_mutation, "shape_propagation": propagate_shapes,
                 "unroll": unroll_loops, "fold_batch_norm": fold_batch_norm}


def _check_stages(graph, stages, inputs, module, expected, rtol=1e-5, atol=1e-6):
    for name, fn, _ in stages:
        fn(graph)
        verify(graph)
        assert_same_outputs(flat(run_graph(graph, inputs, module)), expected, rtol, atol)


@pytest.mark.parametrize("name", ZOO)
def test_pipeline_stage_by_stage_preserves_the_zoo(name):
    module, inputs, expected = traced(name)
    _check_stages(module.graph.copy(), PIPELINE, inputs, module._module, expected)


@pytest.mark.parametrize("name", ZOO)
def test_freezing_stage_by_stage_preserves_the_zoo(name):
    module, inputs, expected = traced(name)
    _check_stages(module.graph.copy(), freeze_stages(module._module), inputs, module._module, expected,
                  rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pass_name", SINGLE_PASSES)
@pytest.mark.parametrize("name", ZOO)
def test_each_pass_alone_preserves_the_zoo(name, pass_name):
    module, inputs, expected = traced(name)
    stages = [(pass_name, SINGLE_PASSES[pass_name], 0)]
    _check_stages(module.inlined_graph.copy(), stages, inputs, module._module, expected)


def _scripted_control_flow(x, n: int):
    h = x
    for i in range(3):
        h = h * 2 + i
        if i == 1:
            h = h.relu()
    acc = ts.zeros_like(x)
    for _ in range(n):
        acc = acc + h
    total = acc.sum()
    while n > 0:
        total = total * 0.5
        n = n - 1
    return acc, total


def test_pipeline_preserves_scripted_control_flow():
    fn = ts.jit.script(_scripted_control_flow)
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    expected = flat(run_graph(fn.graph, [x, 4]))
    graph = fn.graph.copy()
    _check_stages(graph, PIPELINE, [x, 4], None, expected)
    assert sum(n.kind == "prim::Loop" for n in graph.all_nodes()) == 2  # range(3) unrolled; range(n), while stay


# -- random straight-line graphs --------------------------------------------------------------------------------
class _Builder:
    """Random graphs through the Graph API; output types come from the ops' own shape/dtype rules,
    so they are exact (canonicalization trusts static shapes)."""

    def __init__(self, draw):
        self.draw, self.g = draw, Graph()
        self.pool: list = []

    def const(self, value):
        return self.g.constant(value)

    def emit(self, kind: str, inputs: list):
        op = OPS[kind]
        args = [TensorMeta(v.type.shape, v.type.dtype) if isinstance(v.type, TensorType) else self._value(v)
                for v in inputs]
        shape, dtype = op.shape(*args), op.dtype(*args)
        out = self.g.insert(kind, inputs, 1, types=[tensor_type(dtype, shape)]).output
        self.pool.append(out)
        return out

    def _value(self, v):
        node = v.node
        if node.kind == "prim::ListConstruct":
            return [TensorMeta(x.type.shape, x.type.dtype) for x in node.inputs]
        return node.attrs.get("value")

    def pick(self, floats=True):
        choices = [v for v in self.pool if not floats or v.type.dtype == np.float32]
        return self.draw(st.sampled_from(choices))

    def same_shape(self, x):
        return self.draw(st.sampled_from([v for v in self.pool if v.type == x.type]))


def _unary(b):
    b.emit(b.draw(st.sampled_from(["aten::relu", "aten::tanh", "aten::sigmoid", "aten::neg", "aten::abs"])),
           [b.pick()])


def _binary(b):
    x = b.pick()
    y = b.same_shape(x)
    kind = b.draw(st.sampled_from(["aten::add", "aten::sub", "aten::mul"]))
    b.emit(kind, [x, y] + ([b.const(b.draw(st.sampled_from([1, 2])))] if kind != "aten::mul" else []))


def _identity(b):
    x = b.pick()
    form = b.draw(st.sampled_from(["mul", "rmul", "add", "sub", "div"]))
    one, zero = b.const(b.draw(st.sampled_from([1, 1.0]))), b.const(b.draw(st.sampled_from([0, 0.0])))
    inputs = {"mul": [x, one], "rmul": [one, x], "add": [x, zero, one], "sub": [x, zero, one],
              "div": [x, one, b.const(None)]}[form]
    b.emit("aten::" + form.lstrip("r"), inputs)


def _duplicate(b):
    candidates = [v.node for v in b.pool if v.node is not None]
    if candidates:
        n = b.draw(st.sampled_from(candidates))
        b.emit(n.kind, list(n.inputs))


def _transpose_pair(b):
    x = b.pick()
    rank = len(x.type.shape)
    if rank < 2:
        return
    d0, d1 = b.draw(st.integers(-rank, rank - 1)), b.draw(st.integers(-rank, rank - 1))
    t = b.emit("aten::transpose", [x, b.const(d0), b.const(d1)])
    b.emit("aten::transpose", [t, b.const(d1), b.const(d0)])


def _permute_pair(b):
    x = b.pick()
    rank = len(x.type.shape)
    p = b.draw(st.permutations(range(rank)))
    q = b.draw(st.permutations(range(rank)))
    b.emit("aten::permute", [b.emit("aten::permute", [x, b.const(list(p))]), b.const(list(q))])


def _reshapes(b):
    x = b.pick()
    flat_ = b.emit("aten::reshape", [x, b.const([-1])])
    b.emit("aten::reshape", [flat_, b.const(list(x.type.shape))])


def _cat(b):
    x = b.pick()
    if len(x.type.shape) == 0:
        return
    parts = [x] if b.draw(st.booleans()) else [x, b.same_shape(x)]
    lst = b.g.insert("prim::ListConstruct", parts, 1, types=[ListType(TENSOR)]).output
    b.emit("aten::cat", [lst, b.const(0)])


def _casts(b):
    x = b.pick()
    f = b.const(False)
    wide = b.emit("aten::to", [x, b.const(np.dtype("float64")), f])
    back = b.emit("aten::to", [wide, b.const(np.dtype("float32")), f])
    ints = b.emit("aten::to", [back, b.const(np.dtype("int64")), f])
    diff = b.emit("aten::sub", [ints, ints, b.const(1)])
    b.emit("aten::to", [diff, b.const(np.dtype("float32")), f])


def _reduce(b):
    x = b.pick()
    rank = len(x.type.shape)
    if rank == 0:
        return
    dim, keep = b.draw(st.integers(-rank, rank - 1)), b.draw(st.booleans())
    kind = b.draw(st.sampled_from(["aten::sum", "aten::mean", "aten::amax"]))
    extra = [b.const(None)] if kind != "aten::amax" else []
    b.emit(kind, [x, b.const([dim]), b.const(keep)] + extra)


def _in_place(b):
    x = b.pick()
    kind = b.draw(st.sampled_from(["aten::add_", "aten::mul_", "aten::relu_", "aten::sigmoid_"]))
    other = {"aten::add_": [b.same_shape(x), b.const(1)], "aten::mul_": [b.const(0.5)]}.get(kind, [])
    b.emit(kind, [x] + other)


def _contiguous(b):
    b.emit("aten::contiguous", [b.pick()])


def _constant_operand(b):
    """x * ones(shape) + full(shape, 0.5): creation ops that constant folding turns into tensors."""
    x = b.pick()
    shape = b.const(list(x.type.shape))
    ones = b.emit("aten::ones", [shape, b.const(None)])
    half = b.emit("aten::full", [shape, b.const(0.5), b.const(None)])
    b.emit("aten::add", [b.emit("aten::mul", [x, ones]), half, b.const(1)])


STEPS = [_constant_operand, _unary, _binary, _identity, _duplicate, _transpose_pair, _permute_pair, _reshapes, _cat, _casts,
         _reduce, _in_place, _contiguous]


@st.composite
def straight_line_graphs(draw):
    b = _Builder(draw)
    shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    for i in range(draw(st.integers(1, 3))):
        b.pool.append(b.g.add_input(tensor_type(np.float32, shape), f"x{i}"))
    inputs = list(b.pool)
    for _ in range(draw(st.integers(1, 14))):
        draw(st.sampled_from(STEPS))(b)
    outputs = inputs + [v for v in b.pool[len(inputs):] if draw(st.booleans())] + [b.pool[-1]]
    for v in outputs:
        b.g.add_output(v)
    return b.g, draw(st.integers(0, 2 ** 16))


@settings(max_examples=60, deadline=None)
@given(straight_line_graphs())
def test_pipeline_preserves_random_straight_line_graphs(case):
    graph, seed = case
    verify(graph)
    rng = np.random.default_rng(seed)
    inputs = [rng.standard_normal(v.type.shape).astype(np.float32) for v in graph.inputs]
    expected = flat(run_graph(graph, inputs))
    _check_stages(graph, PIPELINE, inputs, None, expected, rtol=1e-6, atol=1e-6)
