"""canonicalize: IR text in, IR text out, for every rule and for the cases each rule must leave alone."""
import numpy as np
import pytest

from tests.passes.helpers import check_pass, run_graph
from tscript.ir import parse_ir
from tscript.ir.passes.canonicalize import canonicalize, lossless


def test_mul_by_one_and_add_zero_disappear():
    check_pass(canonicalize, """
graph(%x : Float(2, 3)):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %zero : float = prim::Constant[value=0.0]()
  %a : Float(2, 3) = aten::mul(%x, %one)
  %b : Float(2, 3) = aten::mul(%one, %a)
  %c : Float(2, 3) = aten::add(%b, %zero, %one)
  %d : Float(2, 3) = aten::sub(%c, %zero, %one)
  %e : Float(2, 3) = aten::div(%d, %one, %none)
  return (%e)
""", """
graph(%x : Float(2, 3)):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %zero : float = prim::Constant[value=0.0]()
  return (%x)
""")


@pytest.mark.parametrize("expr, dtype", [
    ("aten::mul(%x, %half)", "Float"),       # not the identity
    ("aten::div(%x, %one, %none)", "Long"),  # int / 1 is a float tensor: dtype changes
    ("aten::mul(%x, %onef)", "Long"),        # int * 1.0 is float
    ("aten::add(%x, %ones3, %one)", "Float"),  # broadcasting grows the shape
])
def test_identity_kept_when_type_would_change(expr, dtype):
    text = f"""
graph(%x : {dtype}(3)):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %onef : float = prim::Constant[value=1.0]()
  %half : float = prim::Constant[value=0.5]()
  %ones3 : Float(2, 3) = prim::Constant[value=<Tensor c0>]()
  %y : Tensor = {expr}
  return (%y)
"""
    g = check_pass(canonicalize, text, text, {"c0": np.zeros((2, 3), np.float32)}, changed=False)
    assert "%y" in str(g)


def test_tensor_constant_of_ones_is_an_identity_when_shape_kept():
    check_pass(canonicalize, """
graph(%x : Float(2, 3)):
  %ones : Float(3) = prim::Constant[value=<Tensor c0>]()
  %y : Float(2, 3) = aten::mul(%ones, %x)
  return (%y)
""", """
graph(%x : Float(2, 3)):
  %ones : Float(3) = prim::Constant[value=<Tensor c0>]()
  return (%x)
""", {"c0": np.ones(3, np.float32)})


def test_identity_kept_when_result_or_input_is_written_in_place():
    text = """
graph(%x : Float(2, 3)):
  %one : int = prim::Constant[value=1]()
  %y : Float(2, 3) = aten::mul(%x, %one)
  %z : Float(2, 3) = aten::add_(%y, %one, %one)
  return (%x, %z)
"""
    check_pass(canonicalize, text, text, changed=False)


def test_identity_kept_for_a_view_made_by_a_rewrite_of_a_written_input():
    """permute(permute(x)) becomes one new permute of x; x * 1 of that view must stay a copy, since x
    is written in place afterwards (found by the random-graph property test)."""
    g = parse_ir("""
graph(%x : Float(1, 2, 3)):
  %p : List[int] = prim::Constant[value=[0, 2, 1]]()
  %a : Float(1, 3, 2) = aten::permute(%x, %p)
  %q : List[int] = prim::Constant[value=[0, 1, 2]]()
  %b : Float(1, 3, 2) = aten::permute(%a, %q)
  %one : int = prim::Constant[value=1]()
  %y : Float(1, 3, 2) = aten::mul(%b, %one)
  %w : Float(1, 2, 3) = aten::add_(%x, %x, %one)
  return (%y)
""")
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    want = run_graph(g, [x.copy()])
    canonicalize(g)
    assert any(n.kind == "aten::mul" for n in g.nodes), g
    np.testing.assert_array_equal(run_graph(g, [x.copy()]), want)


def test_x_minus_x_is_zeros_for_integers_only():
    check_pass(canonicalize, """
graph(%x : Long(2, 3)):
  %one : int = prim::Constant[value=1]()
  %y : Long(2, 3) = aten::sub(%x, %x, %one)
  return (%y)
""", """
graph(%x : Long(2, 3)):
  %one : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %y : Long(2, 3) = aten::zeros_like(%x, %none)
  return (%y)
""")
    floats = """
graph(%x : Float(2, 3)):
  %one : int = prim::Constant[value=1]()
  %y : Float(2, 3) = aten::sub(%x, %x, %one)
  return (%y)
"""
    check_pass(canonicalize, floats, floats, changed=False)  # inf - inf is nan


def test_double_transpose_and_t_collapse():
    check_pass(canonicalize, """
graph(%x : Float(2, 3, 4)):
  %0 : int = prim::Constant[value=0]()
  %m1 : int = prim::Constant[value=-1]()
  %2 : int = prim::Constant[value=2]()
  %a : Float(4, 3, 2) = aten::transpose(%x, %0, %m1)
  %b : Float(2, 3, 4) = aten::transpose(%a, %2, %0)
  %c : Float(2, 3, 4) = aten::relu(%b)
  %d : Tensor = aten::t(%c)
  %e : Tensor = aten::t(%d)
  return (%e)
""", """
graph(%x : Float(2, 3, 4)):
  %0 : int = prim::Constant[value=0]()
  %m1 : int = prim::Constant[value=-1]()
  %2 : int = prim::Constant[value=2]()
  %a : Float(4, 3, 2) = aten::transpose(%x, %0, %m1)
  %c : Float(2, 3, 4) = aten::relu(%x)
  %d : Tensor = aten::t(%c)
  return (%c)
""")


def test_transposes_of_different_dims_stay():
    text = """
graph(%x : Float(2, 3, 4)):
  %0 : int = prim::Constant[value=0]()
  %1 : int = prim::Constant[value=1]()
  %2 : int = prim::Constant[value=2]()
  %a : Float(3, 2, 4) = aten::transpose(%x, %0, %1)
  %b : Float(3, 4, 2) = aten::transpose(%a, %1, %2)
  return (%b)
"""
    check_pass(canonicalize, text, text, changed=False)


def test_permute_of_permute_composes():
    g = check_pass(canonicalize, """
graph(%x : Float(2, 3, 4)):
  %p : List[int] = prim::Constant[value=[1, 2, 0]]()
  %q : List[int] = prim::Constant[value=[2, 0, -2]]()
  %a : Float(3, 4, 2) = aten::permute(%x, %p)
  %b : Float(2, 3, 4) = aten::permute(%a, %p)
  %c : Float(2, 3, 4) = aten::permute(%b, %q)
  %d : Float(2, 3, 4) = aten::permute(%c, %q)
  return (%d)
""", """
graph(%x : Float(2, 3, 4)):
  %p : List[int] = prim::Constant[value=[1, 2, 0]]()
  %q : List[int] = prim::Constant[value=[2, 0, -2]]()
  %a : Float(3, 4, 2) = aten::permute(%x, %p)
  %pp : List[int] = prim::Constant[value=[2, 0, 1]]()
  %b : Float(2, 3, 4) = aten::permute(%x, %pp)
  %ppq : List[int] = prim::Constant[value=[1, 2, 0]]()
  %c : Float(2, 3, 4) = aten::permute(%x, %ppq)
  return (%x)
""")  # each permute composes with the (already composed) one before; the last is the identity
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(run_graph(g, [x])[0], x.transpose(1, 2, 0).transpose(1, 2, 0)
                                  .transpose(2, 0, 1).transpose(2, 0, 1))


def test_permute_pair_back_to_identity():
    check_pass(canonicalize, """
graph(%x : Float(2, 3, 4)):
  %p : List[int] = prim::Constant[value=[1, 2, 0]]()
  %q : List[int] = prim::Constant[value=[2, 0, 1]]()
  %a : Float(3, 4, 2) = aten::permute(%x, %p)
  %b : Float(2, 3, 4) = aten::permute(%a, %q)
  return (%b)
""", """
graph(%x : Float(2, 3, 4)):
  %p : List[int] = prim::Constant[value=[1, 2, 0]]()
  %q : List[int] = prim::Constant[value=[2, 0, 1]]()
  %a : Float(3, 4, 2) = aten::permute(%x, %p)
  return (%x)
""")


def test_reshape_to_the_same_static_shape_and_reshape_chains():
    check_pass(canonicalize, """
graph(%x : Float(2, 6)):
  %s : List[int] = prim::Constant[value=[2, 6]]()
  %t : List[int] = prim::Constant[value=[3, 4]]()
  %u : List[int] = prim::Constant[value=[-1]]()
  %a : Float(2, 6) = aten::view(%x, %s)
  %b : Float(3, 4) = aten::reshape(%a, %t)
  %c : Float(12) = aten::reshape(%b, %u)
  return (%c)
""", """
graph(%x : Float(2, 6)):
  %s : List[int] = prim::Constant[value=[2, 6]]()
  %t : List[int] = prim::Constant[value=[3, 4]]()
  %u : List[int] = prim::Constant[value=[-1]]()
  %b : Float(3, 4) = aten::reshape(%x, %t)
  %c : Float(12) = aten::reshape(%x, %u)
  return (%c)
""")


def test_reshape_of_a_constant_with_one_unknown_size_gets_a_constant_list():
    check_pass(canonicalize, """
graph(%x : Float(2, 4, 5)):
  %1 : int = prim::Constant[value=1]()
  %w : Float(4) = prim::Constant[value=<Tensor c0>]()
  %n : int = aten::size(%x, %1)
  %s : List[int] = prim::ListConstruct(%1, %n, %1)
  %r : Float(1, 4, 1) = aten::reshape(%w, %s)
  return (%r)
""", """
graph(%x : Float(2, 4, 5)):
  %1 : int = prim::Constant[value=1]()
  %w : Float(4) = prim::Constant[value=<Tensor c0>]()
  %n : int = aten::size(%x, %1)
  %s : List[int] = prim::ListConstruct(%1, %n, %1)
  %l : List[int] = prim::Constant[value=[1, -1, 1]]()
  %r : Float(1, 4, 1) = aten::reshape(%w, %l)
  return (%r)
""", {"c0": np.arange(4, dtype=np.float32)})


def test_cat_of_one_tensor():
    check_pass(canonicalize, """
graph(%x : Float(2, 3)):
  %0 : int = prim::Constant[value=0]()
  %l : Tensor[] = prim::ListConstruct(%x)
  %y : Float(2, 3) = aten::cat(%l, %0)
  return (%y)
""".replace("Tensor[]", "List[Tensor]"), """
graph(%x : Float(2, 3)):
  %0 : int = prim::Constant[value=0]()
  %l : List[Tensor] = prim::ListConstruct(%x)
  return (%x)
""")


def test_redundant_casts():
    check_pass(canonicalize, """
graph(%x : Float(3)):
  %f : bool = prim::Constant[value=False]()
  %f32 : ScalarType = prim::Constant[value=tscript.float32]()
  %f64 : ScalarType = prim::Constant[value=tscript.float64]()
  %a : Float(3) = aten::to(%x, %f32, %f)
  %b : Double(3) = aten::to(%a, %f64, %f)
  %c : Float(3) = aten::to(%b, %f32, %f)
  return (%c)
""", """
graph(%x : Float(3)):
  %f : bool = prim::Constant[value=False]()
  %f32 : ScalarType = prim::Constant[value=tscript.float32]()
  %f64 : ScalarType = prim::Constant[value=tscript.float64]()
  %b : Double(3) = aten::to(%x, %f64, %f)
  return (%x)
""")


def test_lossy_cast_chain_and_copying_cast_stay():
    text = """
graph(%x : Float(3)):
  %f : bool = prim::Constant[value=False]()
  %t : bool = prim::Constant[value=True]()
  %f32 : ScalarType = prim::Constant[value=tscript.float32]()
  %i64 : ScalarType = prim::Constant[value=tscript.int64]()
  %a : Long(3) = aten::to(%x, %i64, %f)
  %b : Float(3) = aten::to(%a, %f32, %f)
  %c : Float(3) = aten::to(%b, %f32, %t)
  return (%c)
"""
    check_pass(canonicalize, text, text, changed=False)


@pytest.mark.parametrize("src, dst, exact", [
    ("float32", "float64", True), ("float64", "float32", False), ("int32", "float64", True),
    ("int32", "float32", False), ("int64", "float64", False), ("int16", "float32", True),
    ("bool", "int64", True), ("int32", "int64", True), ("int64", "int32", False), ("float32", "int64", False),
])
def test_lossless_casts(src, dst, exact):
    assert lossless(np.dtype(src), np.dtype(dst)) is exact


def test_contiguous_of_a_contiguous_result():
    check_pass(canonicalize, """
graph(%x : Float(2, 3)):
  %s : List[int] = prim::Constant[value=[2, 3]]()
  %none : NoneType = prim::Constant()
  %z : Float(2, 3) = aten::zeros(%s, %none)
  %a : Float(2, 3) = aten::contiguous(%z)
  %t : Float(3, 2) = aten::t(%x)
  %b : Float(3, 2) = aten::contiguous(%t)
  %c : Float(3, 2) = aten::contiguous(%b)
  return (%a, %c)
""", """
graph(%x : Float(2, 3)):
  %s : List[int] = prim::Constant[value=[2, 3]]()
  %none : NoneType = prim::Constant()
  %z : Float(2, 3) = aten::zeros(%s, %none)
  %t : Float(3, 2) = aten::t(%x)
  %b : Float(3, 2) = aten::contiguous(%t)
  return (%z, %b)
""")


def test_unchecked_cast_of_a_value_that_already_has_the_type():
    check_pass(canonicalize, """
graph(%x : Float(2), %o : Optional[Tensor]):
  %a : Tensor = prim::unchecked_cast(%x)
  %b : Tensor = prim::unchecked_cast(%o)
  return (%a, %b)
""", """
graph(%x : Float(2), %o : Optional[Tensor]):
  %b : Tensor = prim::unchecked_cast(%o)
  return (%x, %b)
""")


def test_rules_apply_inside_blocks():
    g = parse_ir("""
graph(%x : Float(2), %c : bool):
  %one : int = prim::Constant[value=1]()
  %y : Float(2) = prim::If(%c)
    block0():
      %a : Float(2) = aten::mul(%x, %one)
      -> (%a)
    block1():
      -> (%x)
  return (%y)
""")
    assert canonicalize(g)
    assert "aten::mul" not in str(g)


def test_copies_of_fresh_unwritten_results_go_copies_of_inputs_stay():
    """What an in-place activation leaves once functional: clone(y) and to(.., copy=True) of a new
    result; a copy of an input (the caller's memory) or of a view of it is kept."""
    text = """
graph(%x : Float(3)):
  %t : bool = prim::Constant[value=True]()
  %f32 : ScalarType = prim::Constant[value=tscript.float32]()
  %y : Float(3) = aten::exp(%x)
  %c : Float(3) = aten::clone(%y)
  %r : Float(3) = aten::relu(%c)
  %d : Float(3) = aten::to(%r, %f32, %t)
  %k : Float(3) = aten::clone(%x)
  %v : Float(3) = aten::to(%x, %f32, %t)
  return (%d, %k, %v)
"""
    expected = """
graph(%x : Float(3)):
  %t : bool = prim::Constant[value=True]()
  %f32 : ScalarType = prim::Constant[value=tscript.float32]()
  %y : Float(3) = aten::exp(%x)
  %r : Float(3) = aten::relu(%y)
  %k : Float(3) = aten::clone(%x)
  %v : Float(3) = aten::to(%x, %f32, %t)
  return (%r, %k, %v)
"""
    check_pass(canonicalize, text, expected)
