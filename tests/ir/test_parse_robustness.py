"""Text the parser should refuse cleanly (found by fuzzing `parse_ir`): every refusal is an IRParseError
naming a line and column, and everything it accepts prints, parses back identically and verifies or
fails with IRVerifyError. Nothing else (RecursionError, JSONDecodeError, TypeError, a hang) escapes."""
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ir.test_printer_parser import (ATTRIBUTES, COMMENTS, LOOP_WITH_IF, SPEC_EXAMPLE, SUBGRAPHS, TYPES,
                                          WEIRD_NAMES)
from tscript.ir import Graph, IRParseError, IRVerifyError, parse_ir, verify
from tscript.ir.parser import MAX_NESTING
from tscript.ir.types import TENSOR

X = "graph(%x : Tensor):\n"
AT = re.compile(r"line \d+, column \d+: ")


def refused(text: str, message: str) -> str:
    """Parse `text`, expecting an IRParseError that starts with `message` (its position included)."""
    with pytest.raises(IRParseError) as info:
        parse_ir(text)
    assert str(info.value).startswith(message), str(info.value)
    return str(info.value)


def roundtrips(text: str) -> Graph:
    g = parse_ir(text)
    assert str(g) == text
    verify(g)
    return g


def constant(value: str, type_: str = "Any") -> str:
    return X + f"  %y : {type_} = prim::Constant[value={value}]()\n  return (%y)\n"


def fusion(name: str, sub: str) -> str:
    """A node whose subgraph is section `sub`, in a graph (or section) called `name`."""
    return (f"{name}(%x : Tensor):\n  %y : Tensor = tscript::FusionGroup[subgraph={sub}](%x)\n"
            f"  return (%y)\n")


# -- 1. subgraph sections that contain themselves -------------------------------------------------------
def test_section_naming_itself_is_refused():
    text = fusion("graph", "a::B_0") + fusion("with a::B_0 = graph", "a::B_0")
    refused(text, "line 5, column 47: subgraph a::B_0 contains itself (a::B_0 -> a::B_0)")


def test_sections_naming_each_other_are_refused():
    text = fusion("graph", "a::B_0") + fusion("with a::B_0 = graph", "a::B_1") + \
        fusion("with a::B_1 = graph", "a::B_0")
    refused(text, "line 8, column 47: subgraph a::B_0 contains itself (a::B_0 -> a::B_1 -> a::B_0)")


def test_unused_cyclic_section_is_refused():
    text = X + "  return (%x)\n" + fusion("with a::B_0 = graph", "a::B_0")
    refused(text, "line 4, column 47: subgraph a::B_0 contains itself")


def test_section_shared_by_two_nodes_is_refused():
    # Sharing would let n sections that each name the next twice print as 2**n sections.
    text = (X + "  %y : Tensor = tscript::FusionGroup[subgraph=a::B_0](%x)\n"
            "  %z : Tensor = tscript::FusionGroup[subgraph=a::B_0](%y)\n  return (%z)\n"
            + fusion("with a::B_0 = graph", "a::B_1") + "with a::B_1 = graph(%x : Tensor):\n  return (%x)\n")
    refused(text, "line 3, column 47: subgraph a::B_0 is already the subgraph of the node at line 2")


def test_long_chain_of_sections_prints_parses_and_verifies():
    n = 3000  # far more than Python's recursion limit
    text = fusion("graph", "tscript::FusionGroup_0") + "".join(
        fusion(f"with tscript::FusionGroup_{i} = graph", f"tscript::FusionGroup_{i + 1}") for i in range(n))
    text += f"with tscript::FusionGroup_{n} = graph(%x : Tensor):\n  return (%x)\n"
    roundtrips(text)


def test_verify_refuses_a_graph_built_to_contain_itself():
    g = Graph()
    x = g.add_input(TENSOR, "x")
    node = g.insert("tscript::FusionGroup", [x], 1, {"subgraph": g})
    g.add_output(node.output)
    with pytest.raises(IRVerifyError, match="its subgraph contains itself"):
        verify(g)


def test_verify_checks_a_shared_subgraph_once_and_names_its_path():
    leaf = sub = parse_ir(X + "  %y : Tensor = aten::relu(%x)\n  return (%y)\n")
    g = Graph()
    h = g.add_input(TENSOR, "x")
    for _ in range(40):  # 2**40 walks if each use were verified again
        inner = Graph()
        y = inner.insert("tscript::FusionGroup", [inner.add_input(TENSOR, "x")], 1, {"subgraph": sub}).output
        z = inner.insert("tscript::FusionGroup", [y], 1, {"subgraph": sub}).output
        inner.add_output(z)
        sub = inner
    g.add_output(g.insert("tscript::FusionGroup", [h], 1, {"subgraph": sub}).output)
    verify(g)
    next(iter(leaf.nodes)).kind = "aten::nope"
    with pytest.raises(IRVerifyError) as info:
        verify(g)
    assert str(info.value).startswith("in the subgraph of %0 = tscript::FusionGroup: " * 2)
    assert str(info.value).count("in the subgraph of") == 41 and "unknown op" in str(info.value)


# -- 2. literals Python's decoders refuse ---------------------------------------------------------------
@pytest.mark.parametrize("literal, message", [
    ('"a\tb"', "line 2, column 37: invalid control character in string"),
    ('"ab\nc"', "line 2, column 38: invalid control character in string"),
    ('"a\\qb"', "line 2, column 37: invalid \\escape in string"),
    ('"\\u12"', "line 2, column 37: invalid \\uxxxx escape in string"),
], ids=["tab", "newline", "escape", "unicode-escape"])
def test_bad_strings_are_parse_errors_at_the_character(literal, message):
    refused(constant(literal, "str"), message)


def test_overlong_integer_is_a_parse_error():
    refused(constant("-" + "9" * 5000, "int"), "line 2, column 35: integer of 5000 digits (at most 4300)")
    roundtrips(constant("-" + "9" * 4300, "int"))


# -- 3. nesting -----------------------------------------------------------------------------------------
def nested_list(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def nested_type(depth: int) -> str:
    return "List[" * depth + "int" + "]" * depth


def test_nesting_up_to_the_limit_roundtrips_and_verifies():
    roundtrips(constant(nested_list(MAX_NESTING - 1)))   # inside the attribute list's own bracket
    roundtrips(constant("(" * (MAX_NESTING - 1) + "1,)" + ",)" * (MAX_NESTING - 2)))
    roundtrips(X + f"  %y : {nested_type(MAX_NESTING)} = prim::Uninitialized()\n  return (%y)\n")
    roundtrips(f"graph(%x : {nested_type(MAX_NESTING - 1)}):\n  return (%x)\n")  # inside graph(...)


@pytest.mark.parametrize("text, where", [
    (constant(nested_list(MAX_NESTING)), (2, 34 + MAX_NESTING)),
    (constant(nested_list(5000)), (2, 34 + MAX_NESTING)),
    (constant("(" * 5000 + "1" + ",)" * 5000), (2, 34 + MAX_NESTING)),
    (f"graph(%x : {nested_type(3000)}):\n  return (%x)\n", (1, 11 + 5 * MAX_NESTING)),
    (X + f"  %y : {nested_type(MAX_NESTING + 1)} = prim::Uninitialized()\n  return (%y)\n",
     (2, 12 + 5 * MAX_NESTING)),
], ids=["list", "list-5000", "tuple-5000", "param-type-3000", "output-type"])
def test_deeper_brackets_are_refused_naming_the_limit(text, where):
    refused(text, f"line {where[0]}, column {where[1]}: brackets nested more than {MAX_NESTING} deep (MAX_NESTING)")


def nested_ifs(depth: int) -> str:
    """`depth` prim::If nodes, each in block0 of the one before."""
    lines = [X.rstrip("\n"), "  %c : bool = prim::Constant[value=True]()"]
    for i in range(depth):
        pad = "  " + "    " * i
        lines += [f"{pad}= prim::If(%c)", f"{pad}  block0():"]
    for i in reversed(range(depth)):
        pad = "  " + "    " * i
        lines += [f"{pad}    -> ()", f"{pad}  block1():", f"{pad}    -> ()"]
    return "\n".join(lines + ["  return (%x)", ""])


def test_blocks_nested_to_the_limit_roundtrip_and_deeper_are_refused():
    roundtrips(nested_ifs(MAX_NESTING))
    message = refused(nested_ifs(MAX_NESTING + 1), f"line {3 + 2 * MAX_NESTING + 1}, column ")
    assert f"blocks nested more than {MAX_NESTING} deep (MAX_NESTING)" in message
    refused(nested_ifs(2000), f"line {3 + 2 * MAX_NESTING + 1}, column ")


def test_every_nesting_at_the_limit_at_once_roundtrips_and_verifies():
    """The limit leaves the printer and verifier room on Python's stack even when all of it is used."""
    text = nested_ifs(MAX_NESTING)
    innermost = text.index("-> ()")
    innermost = text.rindex("\n", 0, innermost) + 1
    pad = "  " + "    " * MAX_NESTING
    node = f"{pad}%y : {nested_type(MAX_NESTING)} = prim::Constant[value={nested_list(MAX_NESTING - 1)}]()\n"
    roundtrips(text[:innermost] + node + text[innermost:])


# -- 4. subgraph labels inside list attributes ----------------------------------------------------------
@pytest.mark.parametrize("value, column", [("[4, prim::If3]", 39), ("(prim::If3,)", 36), ("[[a::B_0]]", 37)])
def test_subgraph_label_inside_a_list_is_refused(value, column):
    refused(constant(value) + "with prim::If3 = graph():\n  return ()\n",
            f"line 2, column {column}: subgraph ")


# -- fuzzing --------------------------------------------------------------------------------------------
SEEDS = [SPEC_EXAMPLE, WEIRD_NAMES, LOOP_WITH_IF, SUBGRAPHS, ATTRIBUTES, TYPES, COMMENTS]
FRAGMENTS = st.sampled_from([
    "[", "]", "(", ")", ",", ":", " = ", "%x", "%y.1", "%new", "prim::If", "tscript::FusionGroup_0", "block0():",
    "block1(%i : int):", "-> ()", "-> (%x)", "return ()", '"', "\\", "\\q", "\\u00", "\t", "\n", "# c", "#",
    "with tscript::FusionGroup_0 = graph():\n  return ()\n", "[" * (MAX_NESTING + 1), "9" * 4301, "List[",
    "Tuple[()]", "Tensor", "Float(2, *)", "Long(...)", "1e999", "nan", "-", "tscript.float32", "<Tensor w>",
    "True", "None", "()", "__module__.", "scope: ", "[value=[4, prim::If3]]", "[subgraph=tscript::FusionGroup_1]",
]) | st.text(max_size=4)


@st.composite
def mutated_ir(draw) -> str:
    """A valid IR text with a few random deletions, insertions and duplicated spans."""
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = min(len(text), i + draw(st.integers(0, 12)))
        edit = draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        if edit == "delete":
            text = text[:i] + text[j:]
        elif edit == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i] + draw(FRAGMENTS) + text[j if edit == "replace" else i:]
    return text


def _verified(g: Graph) -> bool:
    try:
        verify(g)
    except IRVerifyError:
        return False
    return True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_ir() | st.text(max_size=40) | st.sampled_from(SEEDS).map(lambda s: s[:len(s) // 2]))
def test_any_text_parses_and_roundtrips_or_is_a_parse_error(text):
    try:
        g = parse_ir(text)
    except IRParseError as e:
        assert AT.match(str(e)), str(e)
        return
    printed = str(g)
    again = parse_ir(printed)
    assert str(again) == printed
    assert _verified(g) == _verified(again)
