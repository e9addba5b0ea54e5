"""The verifier accepts well-formed graphs and names the offending node for each broken invariant."""
import textwrap

import pytest

import tscript
from tscript import jit, nn
from tscript.ir import Graph, IRVerifyError, parse_ir, verify
from tscript.ir.graph import Use
from tscript.ir.types import BOOL, INT, STR, TENSOR, ListType, TupleType
from tscript.ir.verify import PRIMS, accepts
from tscript_runtime.prims import PRIMS as RUNTIME_PRIMS


def ir(text: str) -> Graph:
    return parse_ir(textwrap.dedent(text).lstrip("\n"))


def fails(graph: Graph, *fragments: str) -> str:
    with pytest.raises(IRVerifyError) as info:
        verify(graph)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


GOOD = """
    graph(%self : __module__.Net,
          %x : Float(8, 4),
          %n : int):
      %w : Float(3, 4) = prim::GetAttr[name="weight"](%self)
      %none : NoneType = prim::Constant()
      %y : Float(8, 3) = aten::linear(%x, %w, %none) # scope: fc, net.py:3
      %true : bool = prim::Constant[value=True]()
      %out : Float(8, 3) = prim::Loop(%n, %true, %y)
        block0(%i : int, %h : Float(8, 3)):
          %zero : int = prim::Constant[value=0]()
          %c : bool = aten::gt.int(%i, %zero)
          %h2 : Float(8, 3) = prim::If(%c)
            block0():
              %r : Float(8, 3) = aten::relu(%h)
              -> (%r)
            block1():
              -> (%y)
          -> (%true, %h2)
      %one : int = prim::Constant[value=1]()
      %vals : Float(8), %idx : Long(8) = aten::max.dim(%out, %one, %true)
      %list : List[Tensor] = prim::ListConstruct(%vals, %idx)
      %t : Tuple[Tensor, int] = prim::TupleConstruct(%vals, %n)
      %a : Tensor, %b : int = prim::TupleUnpack(%t)
      return (%list, %a, %b)
    """


def test_accepts_a_well_formed_graph():
    verify(ir(GOOD))


def test_accepts_an_empty_graph():
    verify(Graph())


# -- dominance ------------------------------------------------------------------------------------------
def test_use_before_definition():
    g = Graph()
    x = g.add_input(TENSOR, "x")
    first = g.insert("aten::relu", [x], names=["a"])
    second = g.insert("aten::neg", [first.output], names=["b"])
    g.add_output(second.output)
    second.owner._unlink(second)
    second.insert_before(first)
    fails(g, "%b = aten::neg: input %a is used before its definition")


def test_node_reading_its_own_output():
    g = Graph()
    node = g.insert("aten::relu", [], names=["a"])
    node.add_input(node.output)
    fails(g, "%a = aten::relu: input %a is used before its definition")


def test_value_from_sibling_block():
    g = ir("""
        graph(%c : bool):
          %y : Tensor = prim::If(%c)
            block0():
              %a : Tensor = prim::Uninitialized()
              -> (%a)
            block1():
              -> (%a)
          return (%y)
        """)
    fails(g, "the return of block1 of %y = prim::If: input %a is defined in a block that does not enclose this use")


def test_value_from_inner_block_used_outside():
    g = ir("""
        graph(%c : bool, %x : Tensor):
          %y : Tensor = prim::If(%c)
            block0():
              %a : Tensor = aten::relu(%x)
              -> (%a)
            block1():
              -> (%x)
          %z : Tensor = aten::neg(%a)
          return (%z)
        """)
    fails(g, "%z = aten::neg: input %a is defined inside a nested block, which is not visible here")


def test_value_from_another_graph():
    other = Graph()
    foreign = other.add_input(TENSOR, "foreign")
    g = Graph()
    g.add_output(g.insert("aten::relu", [foreign], names=["r"]).output)
    fails(g, "%r = aten::relu: input %foreign belongs to another graph")


def test_value_of_a_removed_node():
    g = Graph()
    x = g.add_input(TENSOR, "x")
    gone = g.insert("aten::relu", [x], names=["gone"])
    user = g.insert("aten::neg", [gone.output], names=["user"])
    g.add_output(user.output)
    gone.owner._unlink(gone)
    fails(g, "%user = aten::neg: input %gone is defined by a node that is no longer in the graph")


# -- structure ------------------------------------------------------------------------------------------
def test_duplicate_and_unprintable_names():
    g = Graph()
    a, b = g.add_input(TENSOR, "a"), g.add_input(TENSOR, "b")
    b.name = "a"
    fails(g, "two values are named %a")
    b.name = "has space"
    fails(g, "value name %has space cannot be printed")
    b.name = ""
    fails(g, "value name % cannot be printed")


def test_broken_back_pointers():
    g = Graph()
    x = g.add_input(TENSOR, "x")
    node = g.insert("aten::relu", [x], names=["r"])
    node.outputs[0].node = None
    fails(g, "%r = aten::relu: output %r does not point back to it")


def test_returns_changed_without_uses():
    g = Graph()
    x = g.add_input(TENSOR, "x")
    g.block.returns = [x]
    fails(g, "the graph's return: the returns list was changed without recording its uses")


# -- use lists ------------------------------------------------------------------------------------------
def test_missing_use():
    g = Graph()
    x = g.add_input(TENSOR, "x")
    g.add_output(g.insert("aten::relu", [x], names=["r"]).output)
    x.uses.clear()
    fails(g, "%x records 0 uses but is read by 1 input slots")


def test_recorded_use_that_does_not_read():
    g = Graph()
    x, y = g.add_input(TENSOR, "x"), g.add_input(TENSOR, "y")
    node = g.insert("aten::relu", [x], names=["r"])
    g.add_output(node.output)
    y.uses.append(Use(node, 0))
    fails(g, "%y records a use by input 0 of %r = aten::relu, which does not read it")


def test_duplicated_use():
    g = Graph()
    x = g.add_input(TENSOR, "x")
    node = g.insert("aten::mul", [x, x], names=["r"])
    g.add_output(node.output)
    x.uses[1] = Use(node, 0)
    fails(g, "%x records 2 uses but is read by 2 input slots")


def test_use_by_a_node_outside_the_graph():
    g = Graph()
    x = g.add_input(TENSOR, "x")
    g.add_output(x)
    g.create("aten::relu", [x])  # created, never placed
    fails(g, "%x records a use by input 0 of %0 = aten::relu, which does not read it")


# -- control flow ---------------------------------------------------------------------------------------
IF_HEAD = "graph(%c : bool, %x : Tensor):\n"


@pytest.mark.parametrize("body, fragments", [
    ("  %y : Tensor = prim::If(%x)\n    block0():\n      -> (%x)\n    block1():\n      -> (%x)\n",
     ["%y = prim::If: condition %x has type Tensor"]),
    ("  %y : Tensor = prim::If(%c)\n    block0():\n      -> (%x)\n",
     ["%y = prim::If: expected 2 blocks, got 1"]),
    ("  %y : Tensor = prim::If(%c, %c)\n    block0():\n      -> (%x)\n    block1():\n      -> (%x)\n",
     ["%y = prim::If: expected 1 inputs, got 2"]),
    ("  %y : Tensor = prim::If(%c)\n    block0(%p : int):\n      -> (%x)\n    block1():\n      -> (%x)\n",
     ["%y = prim::If: block0 of prim::If must not have parameters, got 1"]),
    ("  %y : Tensor = prim::If(%c)\n    block0():\n      -> (%x)\n    block1():\n      -> (%x, %x)\n",
     ["%y = prim::If: block1 returns 2 values, expected 1"]),
    ("  %y : Tensor = prim::If(%c)\n    block0():\n      -> (%c)\n    block1():\n      -> (%x)\n",
     ["%y = prim::If: block0 returns %c : bool where Tensor is expected"]),
])
def test_if_arity(body, fragments):
    fails(parse_ir(IF_HEAD + body + "  return ()\n"), *fragments)


LOOP_HEAD = "graph(%n : int, %c : bool, %x : Tensor):\n"


@pytest.mark.parametrize("body, fragments", [
    ("  %y : Tensor = prim::Loop(%c, %c, %x)\n    block0(%i : int, %h : Tensor):\n      -> (%c, %h)\n",
     ["%y = prim::Loop: max trip count %c has type bool"]),
    ("  %y : Tensor = prim::Loop(%n, %n, %x)\n    block0(%i : int, %h : Tensor):\n      -> (%c, %h)\n",
     ["initial condition %n has type int"]),
    ("  %y : Tensor = prim::Loop(%n)\n    block0(%i : int):\n      -> (%c)\n",
     ["%y = prim::Loop: expected at least 2 inputs, got 1"]),
    ("  %y : Tensor = prim::Loop(%n, %c, %x)\n    block0(%h : Tensor):\n      -> (%c, %h)\n",
     ["body has 1 parameters, expected 2 (the iteration number and 1 loop-carried values)"]),
    ("  %y : Tensor = prim::Loop(%n, %c, %x)\n    block0(%i : bool, %h : Tensor):\n      -> (%c, %h)\n",
     ["iteration parameter %i has type bool"]),
    ("  %y : Tensor, %z : Tensor = prim::Loop(%n, %c, %x)\n    block0(%i : int, %h : Tensor):\n"
     "      -> (%c, %h)\n", ["%y, %z = prim::Loop: has 2 outputs for 1 loop-carried values"]),
    ("  %y : Tensor = prim::Loop(%n, %c, %x)\n    block0(%i : int, %h : Tensor):\n      -> (%h)\n",
     ["the body returns 1 values, expected 2"]),
    ("  %y : Tensor = prim::Loop(%n, %c, %x)\n    block0(%i : int, %h : Tensor):\n      -> (%h, %h)\n",
     ["the body returns %h : Tensor where bool is expected"]),
    ("  %y : int = prim::Loop(%n, %c, %x)\n    block0(%i : int, %h : Tensor):\n      -> (%c, %h)\n",
     ["loop-carried %x : Tensor, body parameter %h : Tensor and output %y : int disagree"]),
    ("  %y : Tensor = prim::Loop(%n, %c, %x)\n    block0(%i : int, %h : Tensor):\n      -> (%c, %h)\n"
     "    block1():\n      -> ()\n", ["expected 1 blocks, got 2"]),
])
def test_loop_arity(body, fragments):
    fails(parse_ir(LOOP_HEAD + body + "  return ()\n"), *fragments)


# -- op schemas -----------------------------------------------------------------------------------------
OP_HEAD = "graph(%x : Tensor, %i : int, %f : float, %b : bool, %l : List[int], %t : List[Tensor]):\n"


@pytest.mark.parametrize("line, fragments", [
    ("%y : Tensor = aten::frobnicate(%x)",
     ["%y = aten::frobnicate: unknown op (not in the op table) aten::frobnicate"]),
    ("%y : Tensor = prim::Frobnicate(%x)", ["%y = prim::Frobnicate: unknown node kind prim::Frobnicate"]),
    ("%y : Tensor = aten::add(%x, %x)", ["%y = aten::add: expected 3 inputs (self, other, alpha), got 2"]),
    ("%y : Tensor = aten::relu(%i)", ["argument 'self' (input 0) must be Tensor, got %i : int"]),
    ("%y : Tensor = aten::sum(%x, %f, %b, %x)", ["argument 'dim' (input 1) must be int[]?, got %f : float"]),
    ("%y : Tensor = aten::cat(%x, %i)", ["argument 'tensors' (input 0) must be Tensor[], got %x : Tensor"]),
    ("%y : Tensor = aten::cat(%l, %i)", ["argument 'tensors' (input 0) must be Tensor[], got %l : List[int]"]),
    ("%y : Tensor = aten::add(%x, %x, %x)", ["argument 'alpha' (input 2) must be Scalar, got %x : Tensor"]),
    ("%y : Tensor = aten::size(%x, %b)", ["argument 'dim' (input 1) must be int, got %b : bool"]),
    ("%y : Tensor = aten::max.dim(%x, %i, %b)", ["%y = aten::max.dim: expected 2 outputs, got 1"]),
    ("%y : int, %z : Tensor = aten::max.dim(%x, %i, %b)", ["output 0 must be Tensor, got %y : int"]),
    ("%y : Tensor = aten::size(%x, %i)", ["%y = aten::size: output 0 must be int, got %y : Tensor"]),
    ("%y : Tensor = prim::GetAttr(%x)", ["%y = prim::GetAttr: needs a str attribute 'name', got None"]),
    ("%y : Tensor = prim::Constant[value=1]()", ["%y = prim::Constant: value 1 does not have the output type Tensor"]),
    ("%y : int = prim::Constant()", ["value None does not have the output type int"]),
    ("%y : Tensor = prim::Constant[value=[1]]()", ["value [1] does not have the output type Tensor"]),
    ("%y : int = prim::Constant[value=<Tensor c0>]()", ["value <Tensor c0> does not have the output type int"]),
    ("%y : Tensor = prim::Constant(%x)", ["%y = prim::Constant: expected 0 inputs, got 1"]),
    ("= prim::RaiseException()", ["prim::RaiseException: expected 1 to 2 inputs, got 0"]),
    ("%y : Tensor = prim::ListConstruct(%x)", ["%y = prim::ListConstruct: output %y has type Tensor"]),
    ("%y : Tensor = prim::ListUnpack(%x)", ["%y = prim::ListUnpack: input %x has type Tensor"]),
    ("%y : Tuple[int] = prim::TupleConstruct(%x)", ["output of a 1-tuple %y has type Tuple[int]"]),
    ("%y : Tuple[Tensor] = prim::TupleConstruct(%x, %x)", ["output of a 2-tuple %y has type Tuple[Tensor]"]),
    ("%y : Tensor, %z : Tensor = prim::TupleUnpack(%l)", ["input unpacked into 2 values %l has type List[int]"]),
    ("%y : Dict[str, Tensor] = prim::DictConstruct(%x)", ["expected key/value pairs, got 1 inputs"]),
    ("%y : Tensor = prim::CallMethod[name=\"forward\"]()", ["prim::CallMethod: expected at least 1 inputs, got 0"]),
    ("%y : Tensor = tscript::FusionGroup[subgraph=1](%x)", ["needs a Graph attribute 'subgraph', got 1"]),
])
def test_node_kinds(line, fragments):
    fails(parse_ir(OP_HEAD + "  " + line + "\n  return ()\n"), *fragments)


def test_schema_accepts_optional_none_scalars_and_any():
    verify(parse_ir(OP_HEAD + """\
  %none : NoneType = prim::Constant()
  %s : Tensor = aten::sum(%x, %none, %b, %none)
  %s1 : Tensor = aten::sum(%x, %i, %b, %none)
  %s2 : Tensor = aten::sum(%x, %l, %b, %none)
  %a : Tensor = aten::add(%f, %x, %b)
  %any : Any = prim::Uninitialized()
  %r : Tensor = aten::relu(%any)
  %c : Tensor = aten::cat(%t, %i)
  %d : float = aten::add.float(%f, %i)
  return (%s, %s1, %s2, %a, %r, %c, %d)
"""))
    assert accepts("Tensor?[]", ListType(TENSOR)) and accepts("int[]", TupleType((INT, INT)))
    assert not accepts("Tensor", ListType(TENSOR)) and not accepts("str", INT)


def test_fusion_group_subgraph_is_checked():
    g = ir("""
        graph(%x : Tensor):
          %y : Tensor = tscript::FusionGroup[subgraph=tscript::FusionGroup_0](%x, %x)
          return (%y)
        with tscript::FusionGroup_0 = graph(%a : Tensor):
          %b : Tensor = aten::relu(%a)
          return (%b)
        """)
    fails(g, "%y = tscript::FusionGroup: subgraph takes 1 inputs and returns 1 values, the node has 2 inputs "
             "and 1 outputs")
    g = ir("""
        graph(%x : Tensor):
          %y : Tensor = tscript::FusionGroup[subgraph=tscript::FusionGroup_0](%x)
          return (%y)
        with tscript::FusionGroup_0 = graph(%a : Tensor):
          %b : Tensor = aten::relu(%a, %a)
          return (%b)
        """)
    fails(g, "in the subgraph of %y = tscript::FusionGroup: %b = aten::relu: expected 1 inputs (self), got 2")
    g = ir("""
        graph(%x : int):
          %y : Tensor = tscript::FusionGroup[subgraph=tscript::FusionGroup_0](%x)
          return (%y)
        with tscript::FusionGroup_0 = graph(%a : Tensor):
          return (%a)
        """)
    fails(g, "%y = tscript::FusionGroup: %x : int flows into %a : Tensor across the subgraph boundary")


def test_error_names_the_source_line():
    g = parse_ir("graph(%x : int):\n  %y : Tensor = aten::relu(%x) # scope: fc, net.py:7\n  return (%y)\n")
    fails(g, "%y = aten::relu (net.py:7): argument 'self'")


def test_every_runtime_prim_has_an_arity_row():
    assert set(RUNTIME_PRIMS) <= set(PRIMS)


def test_accepts_graphs_built_with_the_api():
    g = Graph()
    x = g.add_input(TENSOR, "x")
    s = g.constant("boom")
    flag = g.constant(True)
    node = g.insert("prim::If", [flag], 1, types=[TENSOR])
    then, other = node.add_block(), node.add_block()
    with g.inserting_at_end(then):
        then.add_return(g.insert("aten::relu", [x]).output)
    with g.inserting_at_end(other):
        g.insert("prim::RaiseException", [s], 0)
        other.add_return(x)
    g.add_output(node.output)
    assert s.type == STR and flag.type == BOOL
    verify(g)


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return tscript.relu(self.fc(x)).sum(1), x.shape[0] * 2


def test_traced_graphs_verify_and_roundtrip():
    traced = jit.trace(TinyNet(), (tscript.randn(5, 4),))
    for g in (traced.graph, traced.inlined_graph):
        verify(g)
        assert str(parse_ir(str(g))) == str(g)
