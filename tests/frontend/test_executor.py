"""The graph executor on graphs built by hand with the IR builder API: control flow (If, Loop,
nested loops with carried values, If inside Loop), release of intermediates after their last use,
and errors that name the failing node."""
import weakref

import numpy as np
import pytest

import tscript as ts
from tscript.frontend.modules import TensorDomain
from tscript.ir import Graph, Value, tensor_type
from tscript.ir.graph_json import graph_to_json
from tscript.ir.types import BOOL, INT, TENSOR
from tscript_runtime.errors import ModelError
from tscript_runtime.executor import ArrayDomain, Program

F32 = tensor_type(np.float32, (3,))


def run(graph: Graph, *inputs, domain=None):
    """The graph's outputs for `inputs` (in the array domain unless another is given)."""
    program = Program(graph_to_json(graph), domain or ArrayDomain(graph.constants))
    return program.run(list(inputs))


def op(graph: Graph, kind: str, *inputs, type=TENSOR):
    """Insert `kind(inputs)` with one output at the insertion point; Python numbers become constants."""
    values = [i if isinstance(i, Value) else graph.constant(i) for i in inputs]
    return graph.insert(kind, values, 1, types=[type]).output


def loop(graph: Graph, trip, carried: list):
    """A prim::Loop node with `carried` values; returns (node, body, i, params of the carried values)."""
    node = graph.insert("prim::Loop", [trip, graph.constant(True), *carried], len(carried),
                        types=[v.type for v in carried])
    body = node.add_block()
    i = body.add_param(INT, "i")
    return node, body, i, [body.add_param(v.type) for v in carried]


def x3():
    return np.array([1.0, 2.0, 3.0], np.float32)


# -- control flow ------------------------------------------------------------------------------------
def if_graph() -> Graph:
    """y = (x + x if c else x); return y * x  -- x is read inside a branch and after the If."""
    g = Graph()
    x, c = g.add_input(F32, "x"), g.add_input(BOOL, "c")
    node = g.insert("prim::If", [c], 1, types=[F32])
    then, other = node.add_block(), node.add_block()
    with g.inserting_at_end(then):
        then.add_return(op(g, "aten::add", x, x, 1))
    other.add_return(x)
    g.add_output(op(g, "aten::mul", node.output, x))
    return g


@pytest.mark.parametrize("cond, expected", [(True, [2.0, 8.0, 18.0]), (False, [1.0, 4.0, 9.0])])
def test_if_runs_the_chosen_block_and_keeps_outer_values_alive(cond, expected):
    (out,) = run(if_graph(), x3(), cond)
    np.testing.assert_array_equal(out, np.array(expected, np.float32))
    assert out.dtype == np.float32


def test_loop_with_a_carried_value_reads_an_outer_value_every_iteration():
    # acc = 0; for i in range(n): acc = acc + x * i
    g = Graph()
    x, n = g.add_input(F32, "x"), g.add_input(INT, "n")
    acc0 = op(g, "aten::mul", x, 0.0, type=F32)
    node, body, i, (acc,) = loop(g, n, [acc0])
    with g.inserting_at_end(body):
        step = op(g, "aten::mul", x, i, type=F32)
        body.add_return(g.constant(True))
        body.add_return(op(g, "aten::add", acc, step, 1, type=F32))
    g.add_output(node.output)
    for trips in (0, 1, 5):
        (out,) = run(g, x3(), trips)
        np.testing.assert_allclose(out, x3() * sum(range(trips)))


def test_nested_loops_with_carried_values():
    # acc = x; for i in range(n): for j in range(m): acc = acc * 2 + (i * m + j)
    g = Graph()
    x, n, m = g.add_input(F32, "x"), g.add_input(INT, "n"), g.add_input(INT, "m")
    outer, outer_body, i, (acc,) = loop(g, n, [x])
    with g.inserting_at_end(outer_body):
        inner, inner_body, j, (acc_in,) = loop(g, m, [acc])
        with g.inserting_at_end(inner_body):
            k = op(g, "aten::add.int", op(g, "aten::mul.int", i, m, type=INT), j, type=INT)
            doubled = op(g, "aten::mul", acc_in, 2, type=F32)
            inner_body.add_return(g.constant(True))
            inner_body.add_return(op(g, "aten::add", doubled, k, 1, type=F32))
        outer_body.add_return(g.constant(True))
        outer_body.add_return(inner.output)
    g.add_output(outer.output)

    expected = x3()
    for k in range(3 * 4):
        expected = expected * 2 + k
    (out,) = run(g, x3(), 3, 4)
    np.testing.assert_allclose(out, expected)


def test_if_inside_loop():
    # acc = 0; for i in range(n): acc = acc + x if i % 2 == 0 else acc - 1
    g = Graph()
    x, n = g.add_input(F32, "x"), g.add_input(INT, "n")
    node, body, i, (acc,) = loop(g, n, [op(g, "aten::mul", x, 0.0, type=F32)])
    with g.inserting_at_end(body):
        even = op(g, "aten::eq.int", op(g, "aten::remainder.int", i, 2, type=INT), 0, type=BOOL)
        branch = g.insert("prim::If", [even], 1, types=[F32])
        plus, minus = branch.add_block(), branch.add_block()
        with g.inserting_at_end(plus):
            plus.add_return(op(g, "aten::add", acc, x, 1, type=F32))
        with g.inserting_at_end(minus):
            minus.add_return(op(g, "aten::sub", acc, 1, 1, type=F32))
        body.add_return(g.constant(True))
        body.add_return(branch.output)
    g.add_output(node.output)
    (out,) = run(g, x3(), 5)  # +x, -1, +x, -1, +x
    np.testing.assert_allclose(out, 3 * x3() - 2)


def test_while_loop_stops_on_the_condition_from_its_body():
    # while acc.sum() < 100: acc = acc * 2   (max trip count: none)
    g = Graph()
    x = g.add_input(F32, "x")
    node = g.insert("prim::Loop", [g.constant(None), g.constant(True), x], 1, types=[F32])
    body = node.add_block()
    body.add_param(INT, "i")
    acc = body.add_param(F32, "acc")
    with g.inserting_at_end(body):
        doubled = op(g, "aten::mul", acc, 2, type=F32)
        total = op(g, "aten::sum", doubled, None, False, None)
        body.add_return(op(g, "aten::lt", total, 100))
        body.add_return(doubled)
    g.add_output(node.output)
    (out,) = run(g, x3())
    np.testing.assert_allclose(out, x3() * 32)  # sums 12, 24, 48, 96, 192


def test_multi_output_op_and_list_unpack():
    g = Graph()
    x = g.add_input(tensor_type(np.float32, (2, 3)), "x")
    node = g.insert("aten::max.dim", [x, g.constant(1), g.constant(False)], 2)
    parts = g.insert("aten::unbind", [x, g.constant(0)], 1).output
    rows = g.insert("prim::ListUnpack", [parts], 2)
    g.add_output(node.outputs[0])
    g.add_output(node.outputs[1])
    g.add_output(rows.outputs[1])
    a = np.array([[1, 5, 2], [7, 0, 3]], np.float32)
    values, indices, row = run(g, a)
    np.testing.assert_array_equal(values, [5, 7])
    np.testing.assert_array_equal(indices, [1, 0])
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(row, a[1])
    with pytest.raises(RuntimeError, match="expected 2 values but got 3"):
        run(g, np.zeros((3, 3), np.float32))


def test_tensor_domain_records_autograd():
    g = if_graph()
    x = ts.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (out,) = run(g, x, True, domain=TensorDomain({}))
    out.sum().backward()  # d/dx (2x * x) = 4x
    np.testing.assert_allclose(x.grad.numpy(), 4 * x3())


# -- memory ------------------------------------------------------------------------------------------
class WatchingDomain(ArrayDomain):
    """Array domain that keeps weak references to every op result and notes, when each op starts,
    which earlier results are still alive (arrays are freed by reference counting, at once)."""

    def __init__(self):
        super().__init__()
        self.results: list = []        # (op name, weakref to its result)
        self.log: list = []            # (op name, names of earlier results alive when it started)

    def op_runner(self, op):
        kernel = op.kernel

        def run(*args):
            self.log.append((op.name, [name for name, ref in self.results if ref() is not None]))
            out = kernel(*args)
            self.results.append((op.name, weakref.ref(out)))
            return out
        return run


def test_intermediates_are_released_after_their_last_use():
    # big = x * 2 (4 MB); s = big.sum(); t = s + 1; u = t * 3
    g = Graph()
    x = g.add_input(tensor_type(np.float32, (1024, 1024)), "x")
    big = op(g, "aten::mul", x, 2)
    s = op(g, "aten::sum", big, None, False, None)
    t = op(g, "aten::add", s, 1, 1)
    g.add_output(op(g, "aten::mul", t, 3))
    domain = WatchingDomain()
    (out,) = Program(graph_to_json(g), domain).run([np.ones((1024, 1024), np.float32)])
    assert float(out) == (2 * 1024 * 1024 + 1) * 3
    assert domain.log == [("aten::mul", []),
                          ("aten::sum", ["aten::mul"]),   # big is alive while sum reads it
                          ("aten::add", ["aten::sum"]),   # ... and released right after
                          ("aten::mul", ["aten::add"])]


def test_loop_body_values_are_released_each_iteration():
    g = Graph()
    x, n = g.add_input(F32, "x"), g.add_input(INT, "n")
    node, body, i, (acc,) = loop(g, n, [x])
    with g.inserting_at_end(body):
        tmp = op(g, "aten::exp", acc)
        body.add_return(g.constant(True))
        body.add_return(op(g, "aten::neg", tmp))
    g.add_output(node.output)
    domain = WatchingDomain()
    (out,) = Program(graph_to_json(g), domain).run([x3(), 2])
    np.testing.assert_allclose(out, -np.exp(-np.exp(x3())), rtol=1e-6)
    # each iteration holds only the carried value and the value being computed
    assert domain.log == [("aten::exp", []), ("aten::neg", ["aten::exp"]),
                          ("aten::exp", ["aten::neg"]), ("aten::neg", ["aten::exp"])]


# -- errors ------------------------------------------------------------------------------------------
def test_op_error_names_the_op_and_the_source_line():
    g = Graph()
    a, b = g.add_input(TENSOR, "a"), g.add_input(TENSOR, "b")
    node = g.insert("aten::add", [a, b, g.constant(1)], 1)
    node.source = "model.py:7"
    g.add_output(node.output)
    with pytest.raises(RuntimeError) as info:
        run(g, np.ones(3, np.float32), np.ones(2, np.float32))
    message = str(info.value)
    assert "The size of tensor a (3) must match the size of tensor b (2)" in message
    assert "while running aten::add at model.py:7" in message


def test_error_inside_a_loop_names_the_inner_node_once():
    g = Graph()
    x, n = g.add_input(F32, "x"), g.add_input(INT, "n")
    node, body, i, (acc,) = loop(g, n, [x])
    with g.inserting_at_end(body):
        body.add_return(g.constant(True))
        body.add_return(op(g, "aten::reshape", acc, [2, 2]))
    g.add_output(node.output)
    with pytest.raises(RuntimeError) as info:
        run(g, x3(), 2)
    message = str(info.value)
    assert "shape '[2, 2]' is invalid for input of size 3" in message
    assert message.count("while running") == 1 and "aten::reshape" in message


def test_non_op_errors_become_clean_errors_naming_the_node():
    with pytest.raises(ValueError, match=r"(?s)truth value.*while running prim::If"):
        run(if_graph(), x3(), np.ones(3, bool))


def test_unknown_op_is_refused_when_loading():
    g = Graph()
    x = g.add_input(TENSOR, "x")
    g.add_output(g.insert("aten::does_not_exist", [x], 1).output)
    with pytest.raises(ModelError, match="unknown op 'aten::does_not_exist'"):
        run(g, x3())


def test_wrong_number_of_inputs():
    with pytest.raises(RuntimeError, match="graph expects 2 inputs, got 1"):
        run(if_graph(), x3())


def test_constants_are_evaluated_once_and_shared_by_runs():
    g = Graph()
    x = g.add_input(F32, "x")
    g.add_output(op(g, "aten::add", x, 2.5, 1))
    program = Program(graph_to_json(g), ArrayDomain())
    assert len(program.steps) == 1  # only the add runs per call
    for _ in range(2):
        np.testing.assert_allclose(program.run([x3()])[0], x3() + 2.5)
