"""IR-text cases for the cleanup passes: DCE, CSE, constant propagation, shape propagation, inlining."""
import numpy as np

from tests.passes.helpers import canonical, check_pass, run_graph
from tscript.ir import Graph, parse_ir, tensor_type, verify
from tscript.ir.passes.constant_propagation import propagate_constants
from tscript.ir.passes.cse import eliminate_common_subexpressions
from tscript.ir.passes.dce import eliminate_dead_code
from tscript.ir.passes.inline import inline_calls
from tscript.ir.passes.shape_propagation import mark_dynamic, propagate_shapes


def test_dce_removes_unused_pure_nodes_and_dead_if_outputs_keeps_effects():
    check_pass(eliminate_dead_code, """
graph(%x : Float(3), %c : bool):
  %one : int = prim::Constant[value=1]()
  %a : Float(3) = aten::relu(%x)
  %b : Float(3) = aten::exp(%a)
  %w : Float(3) = aten::add_(%x, %one, %one)
  %y : Float(3), %z : Float(3) = prim::If(%c)
    block0():
      %u : Float(3) = aten::neg(%x)
      -> (%x, %u)
    block1():
      %msg : str = prim::Constant[value="no"]()
      = prim::RaiseException(%msg)
      -> (%x, %x)
  return (%y)
""", """
graph(%x : Float(3), %c : bool):
  %one : int = prim::Constant[value=1]()
  %w : Float(3) = aten::add_(%x, %one, %one)
  %y : Float(3) = prim::If(%c)
    block0():
      -> (%x)
    block1():
      %msg : str = prim::Constant[value="no"]()
      = prim::RaiseException(%msg)
      -> (%x)
  return (%y)
""")


def test_cse_merges_equal_pure_nodes_into_nested_blocks_but_not_random_or_written_ones():
    check_pass(eliminate_common_subexpressions, """
graph(%x : Float(3), %c : bool):
  %one : int = prim::Constant[value=1]()
  %one.1 : int = prim::Constant[value=1]()
  %a : Float(3) = aten::add(%x, %x, %one)
  %b : Float(3) = aten::add(%x, %x, %one.1)
  %s : List[int] = prim::Constant[value=[3]]()
  %none : NoneType = prim::Constant()
  %z1 : Float(3) = aten::zeros(%s, %none)
  %z2 : Float(3) = aten::zeros(%s, %none)
  %z3 : Float(3) = aten::add_(%z2, %one, %one)
  %r1 : Float(3) = aten::rand(%s, %none, %none)
  %r2 : Float(3) = aten::rand(%s, %none, %none)
  %y : Float(3) = prim::If(%c)
    block0():
      %d : Float(3) = aten::add(%x, %x, %one)
      -> (%d)
    block1():
      -> (%b)
  return (%a, %y, %z1, %z3, %r1, %r2)
""", """
graph(%x : Float(3), %c : bool):
  %one : int = prim::Constant[value=1]()
  %a : Float(3) = aten::add(%x, %x, %one)
  %s : List[int] = prim::Constant[value=[3]]()
  %none : NoneType = prim::Constant()
  %z1 : Float(3) = aten::zeros(%s, %none)
  %z2 : Float(3) = aten::zeros(%s, %none)
  %z3 : Float(3) = aten::add_(%z2, %one, %one)
  %r1 : Float(3) = aten::rand(%s, %none, %none)
  %r2 : Float(3) = aten::rand(%s, %none, %none)
  %y : Float(3) = prim::If(%c)
    block0():
      -> (%a)
    block1():
      -> (%a)
  return (%a, %y, %z1, %z3, %r1, %r2)
""")


def test_constant_propagation_folds_ops_lists_and_ifs():
    g = check_pass(propagate_constants, """
graph(%x : Float(2)):
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %n : int = aten::mul.int(%two, %three)
  %l : List[int] = prim::ListConstruct(%two, %n)
  %none : NoneType = prim::Constant()
  %o : Float(2, 6) = aten::ones(%l, %none)
  %t : bool = prim::Constant[value=True]()
  %y : Float(2) = prim::If(%t)
    block0():
      %u : Float(2) = aten::neg(%x)
      -> (%u)
    block1():
      -> (%x)
  return (%o, %y)
""", """
graph(%x : Float(2)):
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %n : int = prim::Constant[value=6]()
  %l : List[int] = prim::Constant[value=[2, 6]]()
  %none : NoneType = prim::Constant()
  %o : Float(2, 6) = prim::Constant[value=<Tensor c0>]()
  %t : bool = prim::Constant[value=True]()
  %u : Float(2) = aten::neg(%x)
  return (%o, %u)
""")
    np.testing.assert_array_equal(g.constants["c0"], np.ones((2, 6), np.float32))


def test_constant_propagation_leaves_random_and_written_values():
    text = """
graph(%x : Float(2)):
  %s : List[int] = prim::Constant[value=[2]]()
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %r : Float(2) = aten::rand(%s, %none, %none)
  %z : Float(2) = aten::zeros(%s, %none)
  %w : Float(2) = aten::add_(%z, %x, %one)
  return (%r, %w)
"""
    g = check_pass(propagate_constants, text, text, changed=False)
    x = np.ones(2, np.float32)
    run_graph(g, [x])
    np.testing.assert_array_equal(run_graph(g, [x])[1], x)  # no state leaks from one run into the next


def test_shape_propagation_with_symbolic_batch():
    g = parse_ir("""
graph(%x : Float(8, 4), %w : Float(10, 4)):
  %none : NoneType = prim::Constant()
  %0 : int = prim::Constant[value=0]()
  %y : Tensor = aten::linear(%x, %w, %none)
  %r : Tensor = aten::relu(%y)
  %one : int = prim::Constant[value=1]()
  %l : List[int] = prim::ListConstruct(%one)
  %f : bool = prim::Constant[value=False]()
  %v : Tensor = aten::sum(%r, %l, %f, %none)
  return (%v)
""")
    mark_dynamic(g, {0: [0]})
    assert propagate_shapes(g)
    verify(g)
    assert "%r : Float(batch, 10) = aten::relu" in str(g)
    assert "%v : Float(batch) = aten::sum" in str(g)
    assert not propagate_shapes(g)  # a fixed point: nothing more to refine


def test_symbolic_dims_reach_tuple_outputs():
    """A tuple's type follows its items': a model returning (logits, state) reports the dynamic dim too."""
    g = parse_ir("""
graph(%x : Float(8, 4)):
  %r : Float(8, 4) = aten::relu(%x)
  %t : Tuple[Float(8, 4), Float(8, 4)] = prim::TupleConstruct(%r, %x)
  return (%t)
""")
    mark_dynamic(g, {0: [0]})
    assert propagate_shapes(g)
    verify(g)
    assert "Tuple[Float(batch, 4), Float(batch, 4)] = prim::TupleConstruct" in str(g)
    assert not propagate_shapes(g)


def test_inline_replaces_calls_by_the_callee_body():
    callee = parse_ir("""
graph(%a : Float(2)):
  %b : Float(2) = aten::relu(%a)
  return (%b)
""")
    g = Graph()
    x = g.add_input(tensor_type(np.float32, (2,)), "x")
    call = g.insert("prim::CallFunction", [x], 1, None, [tensor_type(np.float32, (2,))])
    call.callee = callee
    g.add_output(call.output)
    assert inline_calls(g)
    assert canonical(g) == canonical("""
graph(%x : Float(2)):
  %b : Float(2) = aten::relu(%x)
  return (%b)
""")
