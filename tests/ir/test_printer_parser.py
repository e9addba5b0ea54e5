"""The printer and `parse_ir` are exact inverses: IR text in, the same text out; random graphs built
with the Graph API print, parse and print again identically (and verify)."""
import math
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tscript.ir import (Graph, IRParseError, ListType, ModuleType, OptionalType, TensorType, TupleType,
                        parse_ir, tensor_type, verify)
from tscript.ir.types import ANY, BOOL, DTYPE, FLOAT, INT, STR, TENSOR
from tscript_runtime import dtypes as dt
from tscript_runtime.graph_json import TensorRef
from tscript_runtime.ops import OPS


def ir(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def roundtrip(text: str) -> Graph:
    g = parse_ir(text)
    assert str(g) == text
    return g


# -- hand-written IR ------------------------------------------------------------------------------------
SPEC_EXAMPLE = ir("""
    graph(%self : __module__.Net,
          %x.1 : Float(8, 784),
          %cond : bool):
      %3 : int = prim::Constant[value=1]()
      %w : Tensor = prim::GetAttr[name="weight"](%self)
      %b : Tensor = prim::GetAttr[name="bias"](%self)
      %5 : Float(8, 10) = aten::linear(%x.1, %w, %b) # scope: fc1, model.py:12
      %6 : Tensor = prim::If(%cond)
        block0():
          -> (%5)
        block1():
          -> (%x.1)
      return (%6)
    """)

WEIRD_NAMES = ir("""
    graph(%0 : Tensor,
          %1.2 : Tensor,
          %_ : int,
          %graph : bool,
          %return : Tensor,
          %block0 : Tensor,
          %é : Tensor,
          %a.b.c : Tensor,
          %x.1 : Tensor):
      %with : Tensor = aten::relu(%0)
      %. : Tensor = aten::neg(%1.2)
      %self : Tensor, %1 : Tensor = aten::max.dim(%return, %_, %graph)
      return (%with, %., %self, %1, %block0, %é, %a.b.c, %x.1)
    """)

LOOP_WITH_IF = ir("""
    graph(%x.1 : Float(batch, 3),
          %n : int):
      %true : bool = prim::Constant[value=True]()
      %y : Float(batch, 3), %count : int = prim::Loop(%n, %true, %x.1, %n)
        block0(%i : int, %h.1 : Float(batch, 3), %c.1 : int):
          %zero : int = prim::Constant[value=0]()
          %odd : bool = aten::gt.int(%i, %zero)
          %h.2 : Float(batch, 3) = prim::If(%odd)
            block0():
              %h.3 : Float(batch, 3) = aten::relu(%h.1) # scope: body.act, net.py:7
              -> (%h.3)
            block1():
              %msg : str = prim::Constant[value="never \\"odd\\""]()
              = prim::RaiseException(%msg) # net.py:9
              -> (%h.1)
          %c.2 : int = aten::add.int(%c.1, %i)
          -> (%true, %h.2, %c.2)
      return (%y, %count)
    """)

SUBGRAPHS = ir("""
    graph(%a : Float(4, 4),
          %b : Float(4, 4)):
      %c : Float(4, 4), %d : Float(4, 4) = tscript::FusionGroup[subgraph=tscript::FusionGroup_0](%a, %b)
      %e : Float(4, 4) = tscript::FusionGroup[subgraph=tscript::FusionGroup_1](%c)
      return (%d, %e)
    with tscript::FusionGroup_0 = graph(%x : Float(4, 4),
                                        %y : Float(4, 4)):
      %z : Float(4, 4) = aten::mul(%x, %y)
      %w : Float(4, 4) = tscript::FusionGroup[subgraph=tscript::FusionGroup_2](%z)
      return (%z, %w)
    with tscript::FusionGroup_1 = graph(%x : Float(4, 4)):
      %t : Float(4, 4) = aten::tanh(%x)
      return (%t)
    with tscript::FusionGroup_2 = graph(%x : Float(4, 4)):
      %s : Float(4, 4) = aten::sigmoid(%x)
      return (%s)
    """)

ATTRIBUTES = ir("""
    graph():
      %0 : int = prim::Constant[value=-12345678901234567890]()
      %1 : float = prim::Constant[value=1e-05]()
      %2 : List[float] = prim::Constant[value=[nan, inf, -inf, -0.0, 1e+300, 2.5]]()
      %3 : str = prim::Constant[value="tab\\t \\"q\\" \\u00e9 \\\\"]()
      %4 : ScalarType = prim::Constant[value=tscript.float64]()
      %5 : Float(2, 3) = prim::Constant[value=<Tensor fc1.weight>]()
      %6 : Tuple[int] = prim::Constant[value=(1,)]()
      %7 : Tuple[()] = prim::Constant[value=()]()
      %8 : List[Any] = prim::Constant[value=[None, True, False, [], [[1], (2, "x")]]]()
      %9 : NoneType = prim::Constant()
      %10 : Any = prim::Uninitialized()
      return (%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10)
    """)

TYPES = ir("""
    graph(%a : Tensor,
          %b : Float(8, 10),
          %c : Double(batch, *, 3),
          %d : Long(...),
          %e : Int(),
          %f : Bool(0),
          %g : Tensor(2, 3),
          %h : List[Tensor],
          %i : Tuple[Tensor, int, Tuple[()]],
          %j : Optional[List[Optional[float]]],
          %k : Dict[str, Tensor],
          %l : __module__.Net,
          %m : __module__.encoder.Layer,
          %n : NoneType,
          %o : ScalarType,
          %p : Device,
          %q : Generator,
          %r : Any,
          %s : str):
      return ()
    """)

COMMENTS = ir("""
    graph(%x : Tensor):
      %a : Tensor = aten::relu(%x) # scope: enc.layers.0
      %b : Tensor = aten::relu(%a) # model.py:3
      %c : Tensor = aten::relu(%b) # scope: fc, model, v2.py:4
      %d : Tensor = aten::relu(%c) # scope: "a, b", "scope: not a scope"
      %e : Tensor = aten::relu(%d) # "line\\nbreak"
      return (%e)
    """)

EMPTY = "graph():\n  return ()\n"


@pytest.mark.parametrize("text", [SPEC_EXAMPLE, WEIRD_NAMES, LOOP_WITH_IF, SUBGRAPHS, ATTRIBUTES, TYPES,
                                  COMMENTS, EMPTY],
                         ids=["spec", "names", "loop-if", "subgraphs", "attrs", "types", "comments", "empty"])
def test_text_roundtrips(text):
    roundtrip(text)


def test_parsed_structure():
    g = parse_ir(SPEC_EXAMPLE)
    assert [v.name for v in g.inputs] == ["self", "x.1", "cond"]
    assert g.inputs[0].type == ModuleType("Net")
    assert g.inputs[1].type == tensor_type(np.float32, (8, 784))
    nodes = list(g.nodes)
    assert [n.kind for n in nodes] == ["prim::Constant", "prim::GetAttr", "prim::GetAttr", "aten::linear",
                                       "prim::If"]
    linear, if_ = nodes[3], nodes[4]
    assert (linear.scope, linear.source) == ("fc1", "model.py:12")
    assert linear.inputs == [g.inputs[1], nodes[1].output, nodes[2].output]
    assert [(u.node, u.index) for u in nodes[1].output.uses] == [(linear, 1)]
    assert [b.returns for b in if_.blocks] == [[linear.output], [g.inputs[1]]]
    assert g.outputs == [if_.output]
    assert [u.node for u in linear.output.uses] == [if_.blocks[0].return_node]
    verify(g)


def test_parsed_loop_blocks_and_types():
    g = parse_ir(LOOP_WITH_IF)
    loop = next(iter(g.nodes)).next
    body = loop.blocks[0]
    assert [p.name for p in body.params] == ["i", "h.1", "c.1"]
    assert body.params[1].type == TensorType(dt.float32, ("batch", 3))
    inner_if = [n for n in body.nodes if n.kind == "prim::If"][0]
    raise_node = list(inner_if.blocks[1].nodes)[1]
    assert raise_node.outputs == [] and raise_node.source == "net.py:9"
    assert list(inner_if.blocks[1].nodes)[0].attrs == {"value": 'never "odd"'}
    verify(g)


def test_parsed_attributes_and_types():
    g = parse_ir(ATTRIBUTES)
    values = [n.attrs.get("value") for n in g.nodes]
    assert values[0] == -12345678901234567890 and values[1] == 1e-05
    assert math.isnan(values[2][0]) and values[2][1:4] == [math.inf, -math.inf, 0.0]
    assert math.copysign(1, values[2][3]) == -1
    assert values[3] == 'tab\t "q" é \\'
    assert values[4] == dt.float64
    assert values[5] == TensorRef("fc1.weight")
    assert values[6] == (1,) and values[7] == ()
    assert values[8] == [None, True, False, [], [[1], (2, "x")]]
    assert values[9] is None
    types = [v.type for v in parse_ir(TYPES).inputs]
    assert types[:7] == [TENSOR, tensor_type(np.float32, (8, 10)), TensorType(dt.float64, ("batch", None, 3)),
                         TensorType(dt.int64, None), TensorType(dt.int32, ()), TensorType(dt.bool_, (0,)),
                         TensorType(None, (2, 3))]
    assert types[8] == TupleType((TENSOR, INT, TupleType(())))
    assert types[9] == OptionalType(ListType(OptionalType(FLOAT)))
    assert types[12] == ModuleType("encoder.Layer")


def test_parsed_subgraphs_are_graphs():
    g = parse_ir(SUBGRAPHS)
    first, second = g.nodes
    sub0 = first.attrs["subgraph"]
    assert isinstance(sub0, Graph) and [v.name for v in sub0.inputs] == ["x", "y"]
    nested = list(sub0.nodes)[1].attrs["subgraph"]
    assert [n.kind for n in nested.nodes] == ["aten::sigmoid"]
    assert [n.kind for n in second.attrs["subgraph"].nodes] == ["aten::tanh"]
    verify(g)


def test_parsed_comments():
    a, b, c, d, e = parse_ir(COMMENTS).nodes
    assert (a.scope, a.source) == ("enc.layers.0", None)
    assert (b.scope, b.source) == ("", "model.py:3")
    assert (c.scope, c.source) == ("fc", "model, v2.py:4")
    assert (d.scope, d.source) == ("a, b", "scope: not a scope")
    assert (e.scope, e.source) == ("", "line\nbreak")


def test_layout_is_not_significant():
    reindented = "\n".join("\t " + line.strip() for line in SPEC_EXAMPLE.splitlines()).replace(",\n", ", ")
    assert str(parse_ir(reindented)) == SPEC_EXAMPLE


def test_comment_quoting_in_printer():
    g = Graph()
    x = g.add_input(TENSOR, "x")
    node = g.insert("aten::relu", [x])
    node.scope, node.source = "a, b", "f.py:1"
    g.add_output(node.output)
    assert '# scope: "a, b", f.py:1' in str(g)
    node.scope, node.source = "", '"quoted"'
    assert '# "\\"quoted\\""' in str(g)
    assert str(parse_ir(str(g))) == str(g)


def test_numpy_scalar_attributes_print_as_python_values():
    g = Graph()
    g.add_output(g.constant(np.float64(1.5)))
    g.add_output(g.constant(np.int64(3)))
    node = g.insert("prim::Constant", (), 1, {"value": np.bool_(True)}, [BOOL])
    g.add_output(node.output)
    assert "[value=1.5]" in str(g) and "[value=3]" in str(g) and "[value=True]" in str(g)
    assert str(parse_ir(str(g))) == str(g)


# -- errors ---------------------------------------------------------------------------------------------
X = "graph(%x : Tensor):\n"


@pytest.mark.parametrize("text, where, fragment", [
    (X + "  %y : Tensor = aten::relu(%x\n  return (%y)\n", "line 3, column 3",
     "unexpected 'return'; expected ')', ','"),
    (X + "  %y : Tensor = aten::relu(%x)\n  return (%y", "line 3, column 13", "unexpected end of input; expected ')'"),
    (X + "  %y : Tensor aten::relu(%x)\n  return (%y)\n", "line 2, column 15", "expected"),
    (X + "  %y : Tensor = aten::relu[a=$](%x)\n  return (%y)\n", "line 2, column 30",
     "unexpected character '$'; expected"),
    (X + "  %y : Tensor = relu(%x)\n  return (%y)\n", "line 2, column 17", "an op kind (ns::name)"),
    ("", "line 1, column 1", "unexpected end of input; expected 'graph'"),
    (X + "  return (%x)\n  %y : Tensor = aten::relu(%x)\n", "line 3, column 3", "unexpected '%y'; expected 'with'"),
])
def test_syntax_errors_name_line_column_and_expectation(text, where, fragment):
    with pytest.raises(IRParseError) as info:
        parse_ir(text)
    message = str(info.value)
    assert message.startswith(where + ":") and fragment in message


@pytest.mark.parametrize("text, message", [
    (X + "  %y : Tensor = aten::relu(%z)\n  return (%y)\n", "line 2, column 28: use of undefined value %z"),
    (X + "  %y : Tensor = aten::relu(%y)\n  return (%y)\n", "line 2, column 28: use of undefined value %y"),
    (X + "  return (%q)\n", "line 2, column 11: use of undefined value %q"),
    (X + "  %x : Tensor = aten::relu(%x)\n  return (%x)\n",
     "line 2, column 3: value %x is defined twice (first at line 1)"),
    ("graph(%x : Tensr):\n  return (%x)\n", "line 1, column 12: unknown type Tensr"),
    ("graph(%x : Floaty(2)):\n  return (%x)\n", "line 1, column 12: unknown tensor type Floaty"),
    ("graph(%x : Float(2x)):\n  return (%x)\n", "line 1, column 12: bad size '2x' in tensor type Float(2x)"),
    ("graph(%x : List[int, int]):\n  return (%x)\n", "line 1, column 12: unknown type List[int, int]"),
    ("graph(%x : Set[int]):\n  return (%x)\n", "line 1, column 12: unknown type Set[int]"),
    ("graph(%x : List[()]):\n  return (%x)\n", "line 1, column 12: unknown type List[()]"),
    (X + "  %y : Tensor = aten::relu[a=tscript.float99](%x)\n  return (%y)\n",
     "line 2, column 30: unknown dtype tscript.float99"),
    (X + "  %y : Tensor = aten::relu[a=1, a=2](%x)\n  return (%y)\n",
     "line 2, column 33: attribute a of aten::relu is given twice"),
    (X + "  %y : Tensor = aten::relu[g=g::G_0](%x)\n  return (%y)\n",
     "line 2, column 30: attribute g names subgraph g::G_0, but there is no `with g::G_0 = graph(...)` section"),
    (X + "  %y : Tensor = prim::If(%x)\n    block1():\n      -> (%x)\n  return (%y)\n",
     "line 3, column 5: expected block0 of prim::If, got block1"),
    (X + '  %y : Tensor = aten::relu(%x) # scope: "abc\n  return (%y)\n', "line 2, column 32: bad quoted scope"),
    (X + '  %y : Tensor = aten::relu(%x) # scope: "a" b\n  return (%y)\n',
     "line 2, column 32: expected ', <source>' after the scope"),
    (X + "  return (%x)\nwith a::B_0 = graph():\n  return ()\nwith a::B_0 = graph():\n  return ()\n",
     "line 5, column 6: subgraph a::B_0 is defined twice"),
])
def test_semantic_errors_name_the_value_and_line(text, message):
    with pytest.raises(IRParseError) as info:
        parse_ir(text)
    assert str(info.value).startswith(message)


def test_parse_errors_are_value_errors_with_context():
    with pytest.raises(ValueError) as info:
        parse_ir(X + "  %y : Tensor = aten::relu(%x))\n  return (%y)\n")
    assert "  %y : Tensor = aten::relu(%x))\n" in str(info.value) and str(info.value).endswith("^")


# -- random graphs --------------------------------------------------------------------------------------
NAME_HINTS = st.one_of(st.none(), st.sampled_from(["x", "x.1", "1", "0.5", "self", "graph", "return", "block0",
                                                     "with", "é", "a.b.c", "_", ".", "h"]),
                       st.from_regex(r"[a-z_][a-z0-9_]{0,3}(\.[0-9]{1,2})?", fullmatch=True))
TENSOR_TYPES = st.builds(tensor_type, st.sampled_from([None, *dt.ALL]),
                         st.none() | st.lists(st.integers(0, 9) | st.none() | st.sampled_from(["batch", "n"]),
                                              max_size=3))
SCALAR_CONSTANTS = {
    "int": st.integers(), "float": st.floats(), "bool": st.booleans(), "str": st.text(max_size=6),
    "Scalar": st.integers(-3, 3) | st.floats(-2, 2) | st.booleans(), "ScalarType": st.sampled_from(dt.ALL),
}
CONSTANTS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4) | st.sampled_from(dt.ALL),
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple), max_leaves=6)


class Scope:
    """The values visible where nodes are being added (a nested block sees its parents' values)."""

    def __init__(self, g: Graph, values: list):
        self.g, self.values = g, values

    def child(self, extra=()) -> "Scope":
        return Scope(self.g, self.values + list(extra))

    def of(self, pred) -> list:
        return [v for v in self.values if pred(v.type)]


def _pick_tensor(draw, scope: Scope):
    return draw(st.sampled_from(scope.of(lambda t: isinstance(t, TensorType))))


def _scalar(draw, scope: Scope, base: str):
    t = {"int": INT, "float": FLOAT, "bool": BOOL, "str": STR, "ScalarType": DTYPE}.get(base)
    existing = scope.of(lambda ty: ty == t) if t is not None else []
    if existing and draw(st.booleans()):
        return draw(st.sampled_from(existing))
    return scope.g.constant(draw(SCALAR_CONSTANTS[base]), draw(NAME_HINTS))


def _list_of(draw, scope: Scope, items: list, elem_type):
    return scope.g.insert("prim::ListConstruct", items, 1, None, [ListType(elem_type)], [draw(NAME_HINTS)]).output


def _argument(draw, scope: Scope, schema_type: str):
    """A value of the schema type: an existing value or new constants / list constructions."""
    if schema_type.endswith("?") and draw(st.booleans()):
        return scope.g.constant(None, draw(NAME_HINTS))
    base = schema_type.rstrip("?")
    if base == "Tensor":
        return _pick_tensor(draw, scope)
    if base == "Tensor|Scalar":
        return _pick_tensor(draw, scope) if draw(st.booleans()) else _scalar(draw, scope, "Scalar")
    if base in ("Tensor[]", "Tensor?[]"):
        return _list_of(draw, scope, [_pick_tensor(draw, scope) for _ in range(draw(st.integers(1, 3)))], TENSOR)
    if base == "int[]":
        if draw(st.booleans()):
            return scope.g.constant(draw(st.lists(st.integers(-2, 4), max_size=3)), draw(NAME_HINTS))
        return _list_of(draw, scope, [_scalar(draw, scope, "int") for _ in range(draw(st.integers(0, 2)))], INT)
    if base == "Generator":
        return scope.g.constant(None, draw(NAME_HINTS))
    return _scalar(draw, scope, base)


_SCALAR_TYPES = {"int": INT, "float": FLOAT, "bool": BOOL, "str": STR, "ScalarType": DTYPE, "Scalar": INT}


def _return_type(schema_type: str):
    """A strategy for the IR type of an op output declared as `schema_type`."""
    if schema_type == "Tensor":
        return TENSOR_TYPES
    if schema_type.endswith("[]"):
        return _return_type(schema_type[:-2]).map(ListType)
    return st.just(_SCALAR_TYPES.get(schema_type, ANY))


_BUILDABLE = {"Tensor", "Tensor|Scalar", "Tensor[]", "Tensor?[]", "int[]", "Generator", *SCALAR_CONSTANTS}
# Ops whose every argument type `_argument` can build (the op table grows; new types are skipped).
OP_NAMES = sorted(name for name, op in OPS.items() if all(a.type.rstrip("?") in _BUILDABLE for a in op.schema.args))


def _annotate(draw, node) -> None:
    if draw(st.integers(0, 3)) == 0:
        node.scope, node.source = draw(st.text(max_size=6)), draw(st.none() | st.text(max_size=8))


def _op(draw, scope: Scope) -> list:
    op = OPS[draw(st.sampled_from(OP_NAMES))]
    inputs = [_argument(draw, scope, a.type) for a in op.schema.args]
    types = [draw(_return_type(r.type)) for r in op.schema.returns]
    node = scope.g.insert(op.name, inputs, len(types), None, types, [draw(NAME_HINTS) for _ in types])
    _annotate(draw, node)
    return node.outputs


def _tuple(draw, scope: Scope) -> list:
    items = draw(st.lists(st.sampled_from(scope.values), min_size=1, max_size=3))
    g = scope.g
    tup = g.insert("prim::TupleConstruct", items, 1, None, [TupleType(tuple(v.type for v in items))]).output
    return [tup] + g.insert("prim::TupleUnpack", [tup], len(items), None, [v.type for v in items],
                            [draw(NAME_HINTS) for _ in items]).outputs


def _constant(draw, scope: Scope) -> list:
    if draw(st.booleans()):
        return [scope.g.constant(draw(CONSTANTS), draw(NAME_HINTS))]
    ref = TensorRef(draw(st.from_regex(r"c[0-9]{1,2}|[a-z]{1,3}\.weight", fullmatch=True)))
    return scope.g.insert("prim::Constant", (), 1, {"value": ref}, [draw(TENSOR_TYPES)]).outputs


def _if(draw, scope: Scope, depth: int) -> list:
    g = scope.g
    bools = scope.of(lambda t: t == BOOL)
    cond = draw(st.sampled_from(bools)) if bools and draw(st.booleans()) else g.constant(draw(st.booleans()))
    n_out = draw(st.integers(0, 2))
    node = g.insert("prim::If", [cond], n_out, None, [draw(TENSOR_TYPES) for _ in range(n_out)],
                    [draw(NAME_HINTS) for _ in range(n_out)])
    for _ in range(2):
        block = node.add_block()
        with g.inserting_at_end(block):
            inner = _fill(draw, scope.child(), depth + 1)
            if draw(st.integers(0, 4)) == 0:
                g.insert("prim::RaiseException", [g.constant(draw(st.text(max_size=5)))], 0)
        for _ in range(n_out):
            block.add_return(_pick_tensor(draw, inner))
    return node.outputs


def _loop(draw, scope: Scope, depth: int) -> list:
    g = scope.g
    carried = draw(st.lists(st.sampled_from(scope.of(lambda t: isinstance(t, TensorType))), max_size=2))
    trips = _scalar(draw, scope, "int")
    types = [draw(TENSOR_TYPES) for _ in carried]
    node = g.insert("prim::Loop", [trips, g.constant(True), *carried], len(carried), None, types,
                    [draw(NAME_HINTS) for _ in carried])
    body = node.add_block()
    params = [body.add_param(INT, draw(NAME_HINTS))] + [body.add_param(t, draw(NAME_HINTS)) for t in types]
    with g.inserting_at_end(body):
        inner = _fill(draw, scope.child(params), depth + 1)
        body.add_return(_scalar(draw, inner, "bool"))
    for _ in carried:
        body.add_return(_pick_tensor(draw, inner))
    return node.outputs


def _fusion(draw, scope: Scope, depth: int) -> list:
    inputs = draw(st.lists(st.sampled_from(scope.of(lambda t: isinstance(t, TensorType))), min_size=1,
                           max_size=3))
    sub = draw(graphs(n_inputs=len(inputs), depth=depth + 1))
    node = scope.g.insert("tscript::FusionGroup", inputs, len(sub.outputs), {"subgraph": sub},
                          [v.type for v in sub.outputs])
    return node.outputs


_MAX_DEPTH = 2


def _fill(draw, scope: Scope, depth: int) -> Scope:
    """Add random nodes at the insertion point; returns the scope after them."""
    kinds = ["op", "op", "op", "tuple", "constant"] + (["if", "loop", "fusion"] if depth < _MAX_DEPTH else [])
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(kinds))
        if kind in ("op", "tuple", "constant"):
            made = {"op": _op, "tuple": _tuple, "constant": _constant}[kind](draw, scope)
        else:
            made = {"if": _if, "loop": _loop, "fusion": _fusion}[kind](draw, scope, depth)
        scope = scope.child(made)
    return scope


@st.composite
def graphs(draw, n_inputs=None, depth=0):
    """Random well-typed graphs: op-table ops on fitting inputs, constants, tuples, nested If/Loop,
    fusion groups with subgraphs; random (weird) value names, types and comments."""
    g = Graph()
    values = []
    if n_inputs is None and draw(st.booleans()):
        self_value = g.add_input(ModuleType("Net"), "self")
        attr = g.insert("prim::GetAttr", [self_value], 1, {"name": "weight"}, [draw(TENSOR_TYPES)], ["weight"])
        values = [self_value, attr.output]
    for _ in range(n_inputs or draw(st.integers(1, 3))):
        values.append(g.add_input(draw(TENSOR_TYPES), draw(NAME_HINTS)))
    scope = _fill(draw, Scope(g, values), depth)
    for v in draw(st.lists(st.sampled_from(scope.values), min_size=1, max_size=3)):
        g.add_output(v)
    return g


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(graphs())
def test_random_graphs_roundtrip_and_verify(g):
    text = str(g)
    parsed = parse_ir(text)
    assert str(parsed) == text
    verify(g)
    verify(parsed)
