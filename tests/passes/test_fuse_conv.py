"""The fuse_conv pass: IR text in, IR text out (a conv2d and the fusion group reading it become one
tscript::ConvGroup taking the conv's seven inputs, then the group's other tensors; its subgraph is the
conv, then the group's ops), the cases it leaves alone, and the executor's results before and after."""
import numpy as np

from tscript.ir import parse_ir
from tscript.ir.passes.fuse_conv import fuse_conv_epilogues

from tests.passes.helpers import assert_same_outputs, check_pass, run_graph

HEAD = """graph(%x : Float(2, 4, 8, 8),
      %w : Float(6, 4, 3, 3),
      %r : Float(2, 6, 8, 8),
      %s : Float(6, 1, 1)):
  %none : NoneType = prim::Constant()
  %one : List[int] = prim::Constant[value=[1, 1]]()
  %g : int = prim::Constant[value=1]()
  %y : Float(2, 6, 8, 8) = aten::conv2d(%x, %w, %none, %one, %one, %one, %g)
"""
GROUP = """with tscript::FusionGroup_0 = graph(%a : Float(2, 6, 8, 8),
                                    %b : Float(6, 1, 1),
                                    %c : {c_type}):
  %k : int = prim::Constant[value=1]()
  %m : Float(2, 6, 8, 8) = aten::mul(%a, %b)
  %n : Float(2, 6, 8, 8) = aten::add(%m, %c, %k)
  %o : Float(2, 6, 8, 8) = aten::relu(%n)
  return (%o)
"""
BEFORE = HEAD + """  %z : Float(2, 6, 8, 8) = tscript::FusionGroup[subgraph=tscript::FusionGroup_0](%y, %s, %r)
  return (%z)
""" + GROUP.format(c_type="Float(2, 6, 8, 8)")

AFTER = """graph(%x : Float(2, 4, 8, 8),
      %w : Float(6, 4, 3, 3),
      %r : Float(2, 6, 8, 8),
      %s : Float(6, 1, 1)):
  %none : NoneType = prim::Constant()
  %one : List[int] = prim::Constant[value=[1, 1]]()
  %g : int = prim::Constant[value=1]()
  %z : Float(2, 6, 8, 8) = tscript::ConvGroup[subgraph=tscript::ConvGroup_0](%x, %w, %none, %one, %one, %one, %g, %s, %r)
  return (%z)
with tscript::ConvGroup_0 = graph(%x : Float(2, 4, 8, 8),
                                  %w : Float(6, 4, 3, 3),
                                  %none : NoneType,
                                  %one : List[int],
                                  %one.1 : List[int],
                                  %one.2 : List[int],
                                  %g : int,
                                  %s : Float(6, 1, 1),
                                  %r : Float(2, 6, 8, 8)):
  %y : Float(2, 6, 8, 8) = aten::conv2d(%x, %w, %none, %one, %one.1, %one.2, %g)
  %k : int = prim::Constant[value=1]()
  %m : Float(2, 6, 8, 8) = aten::mul(%y, %s)
  %n : Float(2, 6, 8, 8) = aten::add(%m, %r, %k)
  %o : Float(2, 6, 8, 8) = aten::relu(%n)
  return (%o)
"""


def test_conv_and_its_group_become_one_conv_group():
    check_pass(fuse_conv_epilogues, BEFORE, AFTER)


def test_a_conv_result_read_twice_stays():
    text = BEFORE.replace("  return (%z)\n", "  return (%z, %y)\n", 1)
    check_pass(fuse_conv_epilogues, text, text, changed=False)


def test_an_input_broadcast_along_the_image_stays():
    """The epilogue reads tensors of the result's shape, one value per channel, or one value: not a
    (2, 1, 8, 8) one."""
    text = BEFORE.replace("%r : Float(2, 6, 8, 8)", "%r : Float(2, 1, 8, 8)").replace(
        "%c : Float(2, 6, 8, 8)", "%c : Float(2, 1, 8, 8)")
    check_pass(fuse_conv_epilogues, text, text, changed=False)


def test_the_executor_gives_the_same_results():
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in ((2, 4, 8, 8), (6, 4, 3, 3), (2, 6, 8, 8), (6, 1, 1))]
    before = parse_ir(BEFORE)
    after = parse_ir(BEFORE)
    assert fuse_conv_epilogues(after)
    assert_same_outputs(run_graph(after, inputs), run_graph(before, inputs), rtol=0, atol=0)
