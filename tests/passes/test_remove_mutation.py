"""remove_mutation: in-place ops on fresh, unaliased values become functional; the rest stay."""
import numpy as np
import pytest

from tests.passes.helpers import check_pass, run_graph
from tscript.ir import parse_ir
from tscript.ir.passes.remove_mutation import remove_mutation


def test_in_place_on_fresh_value_becomes_functional_and_later_reads_are_rewired():
    g = check_pass(remove_mutation, """
graph(%x : Float(2, 3)):
  %one : int = prim::Constant[value=1]()
  %a : Float(2, 3) = aten::relu(%x)
  %b : Float(2, 3) = aten::exp(%a)
  %c : Float(2, 3) = aten::add_(%a, %x, %one)
  %d : Float(2, 3) = aten::mul(%a, %c)
  %e : Float(2, 3) = aten::sigmoid_(%d)
  return (%a, %b, %e)
""", """
graph(%x : Float(2, 3)):
  %one : int = prim::Constant[value=1]()
  %a : Float(2, 3) = aten::relu(%x)
  %b : Float(2, 3) = aten::exp(%a)
  %c : Float(2, 3) = aten::add(%a, %x, %one)
  %d : Float(2, 3) = aten::mul(%c, %c)
  %e : Float(2, 3) = aten::sigmoid(%d)
  return (%c, %b, %e)
""")
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    a = np.maximum(x, 0)
    c = a + x
    for got, want in zip(run_graph(g, [x]), [c, np.exp(a), 1 / (1 + np.exp(-c * c))]):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_zero_fill_and_copy_have_functional_forms():
    check_pass(remove_mutation, """
graph(%x : Float(2, 3), %s : Float(2, 3)):
  %two : float = prim::Constant[value=2.0]()
  %a : Float(2, 3) = aten::relu(%x)
  %b : Float(2, 3) = aten::zero_(%a)
  %c : Float(2, 3) = aten::neg(%x)
  %d : Float(2, 3) = aten::fill_(%c, %two)
  %e : Float(2, 3) = aten::abs(%x)
  %f : Float(2, 3) = aten::copy_(%e, %s)
  return (%b, %d, %f)
""", """
graph(%x : Float(2, 3), %s : Float(2, 3)):
  %two : float = prim::Constant[value=2.0]()
  %a : Float(2, 3) = aten::relu(%x)
  %none : NoneType = prim::Constant()
  %b : Float(2, 3) = aten::zeros_like(%a, %none)
  %c : Float(2, 3) = aten::neg(%x)
  %none2 : NoneType = prim::Constant()
  %d : Float(2, 3) = aten::full_like(%c, %two, %none2)
  %e : Float(2, 3) = aten::abs(%x)
  %f32 : ScalarType = prim::Constant[value=tscript.float32]()
  %true : bool = prim::Constant[value=True]()
  %f : Float(2, 3) = aten::to(%s, %f32, %true)
  return (%b, %d, %f)
""")


@pytest.mark.parametrize("why, body", [
    ("graph input", "%c : Float(2, 3) = aten::add_(%x, %y, %one)"),
    ("a view of a fresh value", "%a : Float(2, 3) = aten::relu(%x)\n  %v : Float(3, 2) = aten::t(%a)\n"
                                "  %c : Float(3, 2) = aten::mul_(%v, %one)"),
    ("a value viewed before", "%a : Float(2, 3) = aten::relu(%x)\n  %v : Float(3, 2) = aten::t(%a)\n"
                              "  %c : Float(2, 3) = aten::mul_(%a, %one)\n  %w : Float(3, 2) = aten::neg(%v)"),
    ("a value put in a list", "%a : Float(2, 3) = aten::relu(%x)\n  %l : List[Tensor] = prim::ListConstruct(%a)\n"
                              "  %c : Float(2, 3) = aten::mul_(%a, %one)\n  %z : int = prim::Constant[value=0]()\n"
                              "  %w : Float(2, 3) = aten::cat(%l, %z)"),
    ("a dtype the in-place op casts away", "%a : Float(2, 3) = aten::relu(%x)\n"
                                           "  %c : Float(2, 3) = aten::add_(%a, %d, %one)"),
    ("a random in-place op", "%a : Float(2, 3) = aten::relu(%x)\n  %none : NoneType = prim::Constant()\n"
                             "  %c : Float(2, 3) = aten::bernoulli_(%a, %half, %none)"),
])
def test_mutation_that_an_alias_could_observe_stays(why, body):
    text = f"""
graph(%x : Float(2, 3), %y : Float(2, 3), %d : Double(2, 3)):
  %one : int = prim::Constant[value=1]()
  %half : float = prim::Constant[value=0.5]()
  {body}
  return (%x, %c)
"""
    check_pass(remove_mutation, text, text, changed=False)


def test_mutation_inside_a_block_of_an_outer_value_stays():
    text = """
graph(%x : Float(2), %c : bool):
  %one : int = prim::Constant[value=1]()
  %a : Float(2) = aten::relu(%x)
  %y : Float(2) = prim::If(%c)
    block0():
      %b : Float(2) = aten::add_(%a, %one, %one)
      -> (%b)
    block1():
      -> (%a)
  return (%a, %y)
"""
    check_pass(remove_mutation, text, text, changed=False)
    g = parse_ir(text)
    x = np.array([-1.0, 2.0], np.float32)
    a, y = run_graph(g, [x, True])
    np.testing.assert_array_equal(a, [1.0, 3.0])  # the If's write is seen by %a: must stay a write
