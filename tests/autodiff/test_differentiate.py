"""`tscript.autodiff.differentiate` on IR written by hand: the forward returns its outputs then the
saved values, the backward takes one gradient per output then the saved values and returns one
gradient per `wrt` input; both run in the runtime's executor and give hand-computed gradients."""
import numpy as np
import pytest

from tscript.autodiff import differentiate
from tscript.ir import parse_ir
from tscript.ir.graph_json import graph_to_json
from tscript_runtime.executor import ArrayDomain, Program


def run(graph, inputs: list) -> list:
    return Program(graph_to_json(graph), ArrayDomain(graph.constants)).run(inputs)


def gradients(d, inputs: list, grad_outputs: list) -> list:
    """Run the forward, then the backward on its saved values."""
    outs = run(d.forward, inputs)
    n = len(outs) - len(d.saved)
    return run(d.backward, grad_outputs + outs[n:])


X = np.array([1.0, -2.0, 3.0], np.float32)
W = np.array([0.5, 4.0, -1.0], np.float32)
G = np.array([1.0, 2.0, -3.0], np.float32)

AFFINE = """
graph(%x : Float(3), %w : Float(3), %b : Float(1)):
  %one : int = prim::Constant[value=1]()
  %p : Float(3) = aten::mul(%x, %w)
  %y : Float(3) = aten::add(%p, %b, %one)
  %t : Float(3) = aten::tanh(%y)
  return (%t)
"""


def test_straight_line_code():
    g = parse_ir(AFFINE)
    b = np.array([0.25], np.float32)
    d = differentiate(g, g.inputs, [X, W, b])
    assert [v.name for v in d.backward.inputs[:1]] == ["grad_t"]
    assert len(d.forward.outputs) == 1 + len(d.saved)
    gx, gw, gb = gradients(d, [X, W, b], [G])
    dy = G * (1 - np.tanh(X * W + b) ** 2)
    np.testing.assert_allclose(gx, dy * W, rtol=1e-6)
    np.testing.assert_allclose(gw, dy * X, rtol=1e-6)
    np.testing.assert_allclose(gb, [dy.sum()], rtol=1e-6)  # summed over the broadcast dim


def test_only_what_the_backward_reads_is_saved():
    g = parse_ir(AFFINE)
    d = differentiate(g, [g.inputs[2]], [X, W, np.zeros(1, np.float32)], recompute=False)  # db: tanh's result
    assert [v.name for v in d.saved] == ["t"]
    assert len(d.backward.outputs) == 1 and "aten::sum" in str(d.backward)  # db sums over the broadcast dim


BRANCHES = """
graph(%c : bool, %x : Float(3), %w : Float(3)):
  %y : Float(3) = prim::If(%c)
    block0():
      %a : Float(3) = aten::mul(%x, %w)
      %a2 : Float(3) = aten::sin(%a)
      -> (%a2)
    block1():
      %one : int = prim::Constant[value=1]()
      %b : Float(3) = aten::add(%x, %w, %one)
      -> (%b)
  return (%y)
"""


@pytest.mark.parametrize("example", [True, False])
def test_if_differentiates_the_branch_taken_at_run_time(example):
    g = parse_ir(BRANCHES)
    d = differentiate(g, g.inputs[1:], [example, X, W])
    assert "prim::If" in str(d.backward)
    gx, gw = gradients(d, [True, X, W], [G])
    np.testing.assert_allclose(gx, G * np.cos(X * W) * W, rtol=1e-6)
    np.testing.assert_allclose(gw, G * np.cos(X * W) * X, rtol=1e-6)
    gx, gw = gradients(d, [False, X, W], [G])
    np.testing.assert_array_equal(gx, G)
    np.testing.assert_array_equal(gw, G)


DYNAMIC = """
graph(%x : Float(batch, 3), %w : Float(3)):
  %dims : List[int] = prim::Constant[value=[0]]()
  %f : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %m : Float(batch, 3) = aten::mul(%x, %w)
  %s : Float(3) = aten::mean(%m, %dims, %f, %none)
  return (%s)
"""


def test_symbolic_sizes_are_saved_as_ints():
    g = parse_ir(DYNAMIC)
    d = differentiate(g, g.inputs, [np.ones((4, 3), np.float32), W])
    assert "int" in [str(v.type) for v in d.backward.inputs]
    for batch in (2, 5):
        x = np.arange(batch * 3, dtype=np.float32).reshape(batch, 3)
        gx, gw = gradients(d, [x, W], [G])
        np.testing.assert_allclose(gx, np.broadcast_to(G * W / batch, (batch, 3)), rtol=1e-6)
        np.testing.assert_allclose(gw, G * x.mean(0), rtol=1e-6)


def test_without_recomputation_every_read_value_is_saved():
    text = AFFINE.replace("Float(1)", "Float(3)")
    g = parse_ir(text)
    b = np.zeros(3, np.float32)
    kept = differentiate(g, g.inputs, [X, W, b], recompute=False)
    assert sorted(v.name for v in kept.saved) == ["t", "w", "x"]
