"""Property: scripting a small generated function, or a mutation of one, either compiles (and
then, where Python runs the function, the scripted function runs too) or raises CompileError;
never another exception (a lark error, RecursionError, MemoryError, OverflowError...)."""
import ast
import importlib.util
import itertools
import os
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tscript as ts
from tscript.ir.verify import verify
from tscript.jit import CompileError

# A fixed sequence of examples in CI; TSCRIPT_FUZZ_EXAMPLES=5000 fuzzes further, at random.
EXAMPLES = int(os.environ.get("TSCRIPT_FUZZ_EXAMPLES", "120"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="TSCRIPT_FUZZ_EXAMPLES" not in os.environ,
                database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

HEADER = ("from __future__ import annotations\nimport math\nfrom typing import List, Optional\n"
          "import tscript as ts\nfrom tscript import Tensor\n\n")
SIGNATURE = "def f(x: Tensor, n: int, r: float, s: str, b: bool, xs: List[int], o: Optional[int]):\n"
ARGS = (ts.ones(3), 3, 0.5, "ab", True, [1, 2, 3], None)

# Values stay small when the function runs (exponents and repeat counts are small literals), but
# for the constants that pass the limits of folding (limits.py), which scripting must refuse.
SMALL = st.sampled_from(["0", "1", "2", "3"])
LEAVES = st.sampled_from(["x", "n", "r", "s", "b", "xs", "o", "i", "0", "1", "2", "5", "0.5", "1e3", "-7", "True",
                          "False", "None", "'a'", '"{}"', "()", "[]", "(x, n)", "(1, 2)", "{'k': 1}", "10 ** 40",
                          "9 ** 9 ** 9", "(x,) * 99999999999", "range(10 ** 30)", "range(3)", "len(xs)"])
BINARY = ["+", "-", "*", "/", "//", "%", "&", "|", "^", "<", "<=", "==", "!=", "is", "is not", "in"]
CALLS = ["len", "int", "float", "str", "abs", "bool", "list", "tuple", "max", "min", "range", "isinstance",
         "enumerate", "zip", "sum", "any", "getattr", "hasattr", "ts.relu", "math.sqrt", "x.sum", "x.view",
         "s.upper", "ts.cat"]


def _expr(children):
    def binary(a, op, c):
        return f"({a} {op} {c})"
    return st.one_of(
        st.builds(binary, children, st.sampled_from(BINARY), children),
        # scripted `and`/`or` give bools (as in TorchScript), Python one of the operands
        st.builds(lambda a, op, c: f"(bool({a}) {op} bool({c}))", children, st.sampled_from(["and", "or"]), children),
        st.builds(lambda a, k: f"({a} ** {k})", children, SMALL),
        st.builds(lambda a, k: f"({a} * {k})", children, SMALL),
        st.builds(lambda op, a: f"({op}{a})", st.sampled_from(["-", "+", "~", "not "]), children),
        st.builds(lambda a, c, d: f"({a} if {c} else {d})", children, children, children),
        st.builds(lambda fn, args: f"{fn}({', '.join(args)})", st.sampled_from(CALLS), st.lists(children, max_size=2)),
        st.builds(lambda a, c: f"{a}[{c}]", children, children),
        st.builds(lambda a: f"{a}[1:]", children),
        st.builds(lambda a: f"{a}.shape", children),
        st.builds(lambda items: f"[{', '.join(items)}]", st.lists(children, max_size=3)),
        st.builds(lambda items: f"({', '.join(items)},)", st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda a, c: f"[{a} for i in {c}]", children, children),
        st.builds(lambda a, spec: f"f'{{{a}{spec}}}'", children, st.sampled_from(["", "=", "!r"])),
        # (format specs for numbers: the runtime formats a tensor as a numpy array)
        st.builds(lambda a, spec: f"f'{{float({a}){spec}}}'", children, st.sampled_from([":>4", "=:.2f"])),
        st.builds(lambda a: f"(lambda i: {a})(n)", children),
    )


EXPR = st.recursive(LEAVES, _expr, max_leaves=6)
TARGET = st.sampled_from(["y", "n", "x", "xs[0]", "(y, z)", "s"])


def _block(depth):
    simple = st.one_of(
        st.builds(lambda t, e: f"{t} = {e}", TARGET, EXPR),
        st.builds(lambda t, op, e: f"{t} {op}= {e}", TARGET, st.sampled_from(["+", "-", "*", "|"]), EXPR),
        st.builds(lambda e: f"return {e}", EXPR),
        st.builds(lambda e: f"assert {e}", EXPR),
        st.builds(lambda e: f"raise ValueError({e})", EXPR),
        st.builds(lambda e: f"y: int = {e}", EXPR),
        st.sampled_from(["pass", "break", "continue", "yield x", "del y", "z = yield", "i = 0"]),
    )
    if depth == 0:
        return st.lists(simple, min_size=1, max_size=3)
    inner = _block(depth - 1)
    compound = st.one_of(
        st.builds(lambda c, a, e: [f"if {c}:"] + _indent(a) + ["else:"] + _indent(e), EXPR, inner, inner),
        st.builds(lambda k, a: [f"for i in range({k}):"] + _indent(a), st.sampled_from(["3", "n", "len(xs)"]), inner),
        st.builds(lambda t, a: [f"for i in {t}:"] + _indent(a), st.sampled_from(["xs", "(1, 2)", "s"]), inner),
    )
    return st.lists(st.one_of(simple.map(lambda s: [s]), compound), min_size=1, max_size=3).map(
        lambda parts: [line for part in parts for line in part])


def _indent(lines):
    return ["    " + line for line in lines]


BODY = _block(2).map(lambda lines: "".join("    " + line + "\n" for line in lines + ["return x"]))
INSERTS = ["(", ")", "[", "]", ":", ",", "=", "yield ", "lambda: ", "9 ** 9 ** 9", "**", "not ", "if ", "else ",
           " and ", "\n", "\n    ", "f'{x=}'", "'", "#", "\\", "@", "...", "*", "-" * 40, "0x", "1e999", "{", "}"]
_names = itertools.count()


def _mutate(source: str, data) -> str:
    """`source` with a few characters deleted and fragments inserted at random places."""
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(len(HEADER + SIGNATURE), len(source)))
        if data.draw(st.booleans()):
            source = source[:i] + source[i + data.draw(st.integers(1, 4)):]
        else:
            source = source[:i] + data.draw(st.sampled_from(INSERTS)) + source[i:]
    return source


def _load(tmp_path, source: str):
    """The function `f` of `source` (written to a file, so its source can be read back), or None
    when Python refuses the text or importing it would run more than imports and `def`s."""
    name = f"fuzz_{next(_names)}"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings of odd but valid code
        try:
            tree = ast.parse(source)
            compile(tree, str(path), "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        if not _inert(tree):
            return None
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module.f


def _inert(tree: ast.Module) -> bool:
    """Does importing the module only import and define (a mutation may have moved `9 ** 9 ** 9`
    out of the function, or into a default)? Annotations are not evaluated (HEADER)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.decorator_list:
            defaults = node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
            if all(isinstance(d, ast.Constant) for d in defaults):
                continue
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            return False
    return True


def _check(fn, run: bool) -> None:
    """Scripting `fn` compiles (to a graph the verifier accepts) or raises CompileError; compiled,
    it runs wherever Python runs `fn`."""
    try:
        scripted = ts.jit.script(fn)
    except CompileError:
        return
    verify(scripted.graph)
    if not run:
        return
    try:
        fn(*_args())
    except Exception:  # Python refuses these inputs: the scripted function may too
        return
    scripted(*_args())


def _args():
    return tuple(a.clone() if isinstance(a, ts.Tensor) else list(a) if isinstance(a, list) else a for a in ARGS)


@FUZZ
@given(body=BODY)
def test_generated_functions_compile_or_raise_compile_error(tmp_path, body):
    fn = _load(tmp_path, HEADER + SIGNATURE + body)
    if fn is not None:
        _check(fn, run=True)


@FUZZ
@given(body=BODY, data=st.data())
def test_mutated_functions_compile_or_raise_compile_error(tmp_path, body, data):
    fn = _load(tmp_path, _mutate(HEADER + SIGNATURE + body, data))
    if fn is not None:
        _check(fn, run=False)
