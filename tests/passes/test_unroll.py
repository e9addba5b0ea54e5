"""unroll: constant-trip-count loops become straight-line code; everything else stays a loop."""
import numpy as np
import pytest

from tests.passes.helpers import check_pass, run_graph
from tscript.ir import parse_ir, verify
from tscript.ir.passes import unroll
from tscript.ir.passes.unroll import unroll_loops

RANGE_LOOP = """
graph(%x : Float(2, 3)):
  %n : int = prim::Constant[value={n}]()
  %true : bool = prim::Constant[value=True]()
  %y : Float(2, 3) = prim::Loop(%n, %true, %x)
    block0(%i : int, %h : Float(2, 3)):
      %h2 : Float(2, 3) = aten::add(%h, %x, %i)
      -> (%true, %h2)
  return (%y)
"""


def test_range_loop_becomes_copies_with_constant_counter():
    g = check_pass(unroll_loops, RANGE_LOOP.format(n=3), """
graph(%x : Float(2, 3)):
  %n : int = prim::Constant[value=3]()
  %true : bool = prim::Constant[value=True]()
  %i0 : int = prim::Constant[value=0]()
  %h0 : Float(2, 3) = aten::add(%x, %x, %i0)
  %i1 : int = prim::Constant[value=1]()
  %h1 : Float(2, 3) = aten::add(%h0, %x, %i1)
  %i2 : int = prim::Constant[value=2]()
  %h2 : Float(2, 3) = aten::add(%h1, %x, %i2)
  return (%h2)
""")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(run_graph(g, [x])[0], x * 4)  # x + 0x + 1x + 2x


def test_zero_trips_returns_the_initial_values():
    check_pass(unroll_loops, RANGE_LOOP.format(n=0), """
graph(%x : Float(2, 3)):
  %n : int = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=True]()
  return (%x)
""")


UNKNOWN_TRIPS = """
graph(%x : Float(2, 3), %n : int):
  %true : bool = prim::Constant[value=True]()
  %y : Float(2, 3) = prim::Loop(%n, %true, %x)
    block0(%i : int, %h : Float(2, 3)):
      %h2 : Float(2, 3) = aten::add(%h, %x, %i)
      -> (%true, %h2)
  return (%y)
"""
WHILE_LOOP = """
graph(%x : Float(2, 3)):
  %n : int = prim::Constant[value=3]()
  %true : bool = prim::Constant[value=True]()
  %y : Float(2, 3) = prim::Loop(%n, %true, %x)
    block0(%i : int, %h : Float(2, 3)):
      %h2 : Float(2, 3) = aten::add(%h, %x, %i)
      %go : bool = aten::lt.int(%i, %i)
      -> (%go, %h2)
  return (%y)
"""


@pytest.mark.parametrize("text", [UNKNOWN_TRIPS, WHILE_LOOP])
def test_loops_without_a_known_trip_count_stay(text):
    check_pass(unroll_loops, text, text, changed=False)


def test_size_limit(monkeypatch):
    monkeypatch.setattr(unroll, "MAX_UNROLLED_NODES", 5)
    text = RANGE_LOOP.format(n=6)
    check_pass(unroll_loops, text, text, changed=False)
    assert unroll_loops(parse_ir(RANGE_LOOP.format(n=5)))


def test_nested_loops_unroll_inside_out():
    g = parse_ir("""
graph(%x : Float(2)):
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %true : bool = prim::Constant[value=True]()
  %y : Float(2) = prim::Loop(%two, %true, %x)
    block0(%i : int, %h : Float(2)):
      %z : Float(2) = prim::Loop(%three, %true, %h)
        block0(%j : int, %k : Float(2)):
          %k2 : Float(2) = aten::add(%k, %x, %j)
          -> (%true, %k2)
      -> (%true, %z)
  return (%y)
""")
    assert unroll_loops(g)
    verify(g)
    assert "prim::Loop" not in str(g) and str(g).count("aten::add") == 6
    x = np.ones(2, np.float32)
    np.testing.assert_allclose(run_graph(g, [x])[0], x * 7)  # 1 + 2 * (0 + 1 + 2)
