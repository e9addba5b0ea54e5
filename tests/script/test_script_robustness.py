"""Inputs found by fuzzing `tscript.jit.script`: deeply nested expressions compile (as in CPython),
constant folding stays within the limits of limits.py, f-string `{x=}` fields work, and nothing
but a CompileError comes out of a failed compile (no lark exception, no RecursionError)."""
import importlib.util
import itertools
import sys

import pytest

import tscript as ts
from tscript.frontend.script import limits
from tscript.frontend.script.control import given
from tscript.frontend.script.emitter import FunctionEmitter
from tscript.frontend.script.parser import parse_text
from tscript.frontend.script.source import Source
from tscript.jit import CompileError
from tests.script.helpers import assert_same

HEADER = "import tscript as ts\nfrom tscript import Tensor\n\n\n"
_names = itertools.count()


def _function(tmp_path, source: str):
    """The function `f` of a generated module (in a file, so that its source can be read)."""
    name = f"generated_{next(_names)}"
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


# -- deep expressions: the parser's tree transform and the lowering are not recursive ------------------
DEEP = [
    ("sum_1200", "def f(x: int) -> int:\n    return " + " + ".join(["x"] * 1200), (3,)),
    ("or_1200", "def f(x: int) -> int:\n    return " + " | ".join(f"x * {k}" for k in range(1200)), (3,)),
    ("method_chain_600", "def f(x: Tensor) -> Tensor:\n    return x" + ".relu()" * 600, (ts.ones(2),)),
    # nearly as deep as CPython compiles (about 3000 levels, less the caller's stack)
    ("negations_2000", "def f(x: int) -> int:\n    return " + "-" * 2000 + "x", (3,)),
    ("powers_2000", "def f(x: float) -> float:\n    return " + "x ** " * 2000 + "x", (1.0,)),
    ("and_2000", "def f(b: bool) -> bool:\n    return " + " and ".join(["b"] * 2000), (True,)),
    ("comparisons_2000", "def f(x: int) -> bool:\n    return " + " <= ".join(["x"] * 2000), (3,)),
    ("slices_2000", "def f(x: Tensor) -> Tensor:\n    return x" + "[:]" * 2000, (ts.ones(2),)),
    ("nested_calls_190", "def f(x: Tensor) -> Tensor:\n    return " + "ts.relu(" * 190 + "x" + ")" * 190,
     (ts.ones(2),)),
    ("nested_lists_190", "def f(x: int):\n    return " + "[" * 190 + "x" + "]" * 190, (3,)),
]


@pytest.mark.parametrize("name, source, args", DEEP, ids=[c[0] for c in DEEP])
def test_deep_expressions_compile(tmp_path, name, source, args):
    fn = _function(tmp_path, source + "\n")
    assert_same(ts.jit.script(fn)(*args), fn(*args))


def test_nesting_past_the_recursion_limit_is_a_compile_error(tmp_path):
    """Nested blocks (here 2000 elifs) are compiled and optimized recursively: past Python's
    recursion limit, a CompileError says so at the statement being compiled."""
    source = "def f(n: int) -> int:\n    if n == 0:\n        return 0\n"
    source += "".join(f"    elif n == {k}:\n        return {k}\n" for k in range(1, 2000)) + "    return -1\n"
    fn = _function(tmp_path, source)
    with pytest.raises(CompileError, match=r"too deeply nested to compile: Python's recursion limit "
                                           rf"\(sys.getrecursionlimit\(\) = {sys.getrecursionlimit()}\)") as info:
        ts.jit.script(fn)
    assert info.value.file == fn.__code__.co_filename
    assert info.value.source_line.split()[0] in ("elif", "return")  # where the recursion ran out


# -- constant folding within the limits -------------------------------------------------------------------
def _returns_constant(fn) -> None:
    scripted = ts.jit.script(fn)
    assert [n.kind for n in scripted.graph.nodes] == ["prim::Constant"]
    assert_same(scripted(1), fn(1))


def big_power(n: int) -> int:
    return 2 ** 1000 - 3 ** 600 + int(1e300)


def long_string(n: int) -> str:
    return "ab" * 30000 + f"{'x':>5000}"


def long_tuple(n: int):
    return (0,) * 60000 + (1,) * 5000


def test_constants_within_the_limits_still_fold():
    for fn in (big_power, long_string, long_tuple):
        _returns_constant(fn)


def test_the_limits_are_documented():
    for name in ("MAX_INT_BITS", "MAX_SEQUENCE_LENGTH", "MAX_UNROLL"):
        assert f"{name} = " in limits.__doc__ and getattr(limits, name) > 0


class Unrolled(ts.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = ts.nn.ModuleList([ts.nn.Linear(2, 2) for _ in range(3)])

    def forward(self, x):
        for i in range(3):
            x = self.layers[i](x)
        return x


def test_unrolling_within_the_limit():
    m = Unrolled()
    x = ts.ones(1, 2)
    assert_same(ts.jit.script(m)(x), m(x))


# -- f-strings ----------------------------------------------------------------------------------------------
def shows_expressions(x: int, r: float, s: str) -> str:
    return f"{x=} { r = :.2f}|{s=}|{s=!s}|{x + 1=}|{x=:>4}"


def test_fstring_equals_shows_the_expression():
    args = (3, 2.5, "hi")
    assert ts.jit.script(shows_expressions)(*args) == shows_expressions(*args)


def _parse(text: str):
    source = Source(text, "/src/model.py", 40, 4, "Net.f")
    return parse_text(source, source.text, "file_input")


@pytest.mark.parametrize("text, message, line, column", [
    # an error inside an f-string field, on the field's own line
    ('def f(x):\n    y = 1\n    return f"ok {x=} {x +* 1}"\n', "invalid syntax: unexpected '*'", 43, 30),
    ('def f(x):\n    return f"{x!r=}"\n', "invalid f-string field: '{x!r=}'", 42, 19),
    # errors raised while the parse tree is transformed: CompileErrors, not lark's VisitError
    ('def f(x):\n    return "\\N{no such name}"\n', "invalid syntax: (unicode error)", 42, 16),
    ('def f(x):\n    return 1' + "0" * 5000 + "\n", "invalid syntax: Exceeds the limit (4300 digits)", 42, 16),
])
def test_parse_errors_are_compile_errors(text, message, line, column):
    with pytest.raises(CompileError) as info:
        _parse(text)
    e = info.value
    assert e.explanation.startswith(message)
    assert (e.file, e.line, e.column) == ("/src/model.py", line, column)


def test_the_lowering_driver_throws_errors_into_the_generator_that_asked():
    """FunctionEmitter.run: a failing step's exception reaches the generator that asked for it
    (which may handle it and go on), as it would with recursion."""
    def failing():
        raise ValueError("failed")
        yield

    def handling():
        try:
            yield failing()
        except ValueError:
            return (yield given(41)) + 1

    assert FunctionEmitter.run(None, handling()) == 42
    with pytest.raises(ValueError, match="failed"):
        FunctionEmitter.run(None, failing())


def test_a_comment_inside_a_string_annotation_is_a_compile_error(tmp_path):
    """Found by fuzz/fuzz_script.py: lark's indenter raised IndexError on `n: "int#..."`."""
    path = tmp_path / "annotated_comment.py"
    path.write_text('from tscript import Tensor\n\n\ndef f(x: Tensor, n: "int#x" = 4) -> Tensor:\n    return x * n\n')
    spec = importlib.util.spec_from_file_location("annotated_comment", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(ts.jit.CompileError, match="invalid syntax"):
        ts.jit.script(module.f)
