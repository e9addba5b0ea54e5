"""Parsing: source text -> `syntax` tree, with the lark grammar `tscript.lark` (LALR, Python's
indentation rules through lark's PythonIndenter). The grammar tables are built once per process
(and cached on disk, in the tscript cache directory, keyed by the grammar's hash)."""
from __future__ import annotations

import ast
import functools
import inspect
import os
import re

from lark import Lark, Token, Transformer_NonRecursive, v_args
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, VisitError
from lark.indenter import PythonIndenter
from tscript_runtime.user_cache import cache_dir

from . import syntax as S
from . import tree_cache
from .errors import CompileError
from .source import Source

_GRAMMAR = os.path.join(os.path.dirname(__file__), "tscript.lark")


@functools.lru_cache(maxsize=None)
def _lark() -> Lark:
    options = dict(parser="lalr", postlex=PythonIndenter(), start=["file_input", "eval_input"],
                   propagate_positions=True, maybe_placeholders=True)
    try:
        os.makedirs(cache_dir(), exist_ok=True)
        return Lark.open(_GRAMMAR, cache=os.path.join(cache_dir(), "tscript-grammar.lark-cache"), **options)
    except OSError:  # an unwritable cache directory only costs time
        return Lark.open(_GRAMMAR, **options)


_functions: dict = {}


def parse_function(source: Source) -> S.FunctionDef:
    """The FunctionDef of a function's source (its decorators parsed and kept, docstring dropped)."""
    key = (source.file, source.line_offset, source.text)
    if key not in _functions:
        stmts = parse_text(source, source.text, "file_input")
        defs = [s for s in stmts if isinstance(s, S.FunctionDef)]
        if len(defs) != 1:
            raise source.error("expected the source of exactly one function definition", (1, 1))
        _functions[key] = defs[0]
    return _functions[key]


def parse_lambda(source: Source, fn) -> S.FunctionDef:
    """A lambda as a function definition `def <lambda>(params): return body`, found in the source
    of the statement that holds it (by its parameter names, and its line and column when the
    statement has several)."""
    code = fn.__code__
    names = list(code.co_varnames[:code.co_argcount])
    stmts = parse_text(source, source.text, "file_input")
    found = [e for s in stmts for e in S.walk_exprs(s) if isinstance(e, S.Lambda) and e.params == names]
    where = next((p for p in code.co_positions() if p[0] is not None and p[2] is not None), None)
    if where is not None and len(found) > 1:
        line, column = where[0] - source.line_offset, where[2] + 1 - source.col_offset
        found = sorted(found, key=lambda e: (e.pos[0] != line, abs(e.pos[1] - column)))
    if not found:
        raise source.error("the source of this lambda could not be found (scripted lambdas must be whole "
                           "expressions on the lines that define them)", (1, 1))
    lam = found[0]
    params = [S.Param(lam.pos, n, None, None) for n in names]
    return S.FunctionDef(lam.pos, "<lambda>", params, None, [S.Return(lam.body.pos, lam.body)])


def parse_text(source: Source, text: str, start: str, line: int = 1):
    """`text` (the source's, or a fragment of it that starts on the source's line `line`) parsed
    from the grammar rule `start`; syntax errors are CompileErrors at their position in `source`.
    No lark exception gets out: errors inside the tree transform come out unwrapped. A text is
    parsed once per user (tree_cache.py); each call returns a tree of its own."""
    if not tree_cache.worth_keeping(source.file):
        return _parse_text(source, text, start, line)
    name = tree_cache.key(_parser_digest(), start, line, text)
    tree = tree_cache.load(name)
    if tree is None:
        tree = _parse_text(source, text, start, line)
        tree_cache.store(name, tree)
    return tree


@functools.lru_cache(maxsize=None)
def _parser_digest() -> bytes:
    """What a cached tree depends on besides its text: the grammar and the code building trees."""
    here = os.path.dirname(__file__)
    return b"".join(open(os.path.join(here, f), "rb").read() for f in ("tscript.lark", "parser.py", "syntax.py"))


def _parse_text(source: Source, text: str, start: str, line: int):
    try:
        tree = _lark().parse(text, start=start)
    except UnexpectedInput as e:
        what = f"unexpected character {text[e.pos_in_stream]!r}" if isinstance(e, UnexpectedCharacters) \
            else f"unexpected {_token_text(getattr(e, 'token', None))}"
        raise source.error(f"invalid syntax: {what}", (e.line + line - 1, e.column)) from None
    except LarkError as e:  # DedentError among them
        raise source.error(f"invalid syntax: {e}", None) from None
    except IndexError:  # lark's indenter on a comment without a line end, e.g. in a string annotation "int#"
        raise source.error("invalid syntax", (line, 0)) from None
    try:
        return _Builder(source, line).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, CompileError):
            raise e.orig_exc from None
        where = _pos(e.obj if isinstance(e.obj, Token) else e.obj.meta)
        message = getattr(e.orig_exc, "msg", e.orig_exc)  # a SyntaxError's, without its "(<unknown>, line 1)"
        raise source.error(f"invalid syntax: {message}", (where[0] + line - 1, where[1])) from None


_SUSPENDS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE


def refuse_generator(fn, source: Source) -> None:
    """Refuse a generator (or async) function, as TorchScript does ("Yield aren't supported"):
    compiled as a plain function it would return a value where Python returns a generator.
    Python's own flags say what is one (a `yield` anywhere in the body, reachable or not); its
    parser finds the `yield` (or the `async def`) to point at."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None or not code.co_flags & _SUSPENDS:
        return
    try:
        fdef = ast.parse(source.text).body[0]
    except (SyntaxError, IndexError):
        fdef = None
    if isinstance(fdef, ast.AsyncFunctionDef):
        raise source.error("async function definitions aren't supported", _ast_pos(source, fdef))
    suspends = [n for n in _own_nodes(fdef) if isinstance(n, (ast.Yield, ast.YieldFrom))]
    first = min(suspends, key=lambda n: (n.lineno, n.col_offset), default=None)
    what = type(first).__name__ if first is not None else "Yield"
    raise source.error(f"{what} aren't supported: a function that yields is a generator, which cannot be "
                       f"scripted", _ast_pos(source, first))


def _own_nodes(fdef) -> list:
    """The nodes of a function's body, without those of functions and classes defined in it."""
    out, stack = [], list(getattr(fdef, "body", []))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _ast_pos(source: Source, node):
    """(line, column) of a Python ast node (whose column counts UTF-8 bytes) in `source`."""
    if node is None:
        return None
    text = source.lines[node.lineno - 1] if node.lineno <= len(source.lines) else ""
    return node.lineno, len(text.encode()[:node.col_offset].decode(errors="ignore")) + 1


def _token_text(token) -> str:
    if token is None or token.type == "$END":
        return "end of input"
    if token.type in ("_NEWLINE", "_INDENT", "_DEDENT"):
        return {"_NEWLINE": "end of line", "_INDENT": "indent", "_DEDENT": "dedent"}[token.type]
    return repr(str(token))


def _pos(meta_or_token) -> tuple:
    return (meta_or_token.line, meta_or_token.column)


_BINARY = {"or_expr": "|", "xor_expr": "^", "and_expr": "&"}


@v_args(meta=True)
class _Builder(Transformer_NonRecursive):
    """Lark tree -> syntax nodes (see syntax.py). Non-recursive: a 3000-term sum or a chain of
    1000 method calls is a tree that deep, which CPython compiles."""

    def __init__(self, source: Source, line: int = 1):
        super().__init__()
        self.source = source
        self.line = line  # the source line of the parsed text's first line

    # -- definitions --------------------------------------------------------------------------------
    def file_input(self, meta, items):
        return _flat(items)

    def eval_input(self, meta, items):
        return items[0]

    def decorator(self, meta, items):
        return items[0]

    def decorators(self, meta, items):
        return items

    def decorated(self, meta, items):
        decorators, definition = items
        if isinstance(definition, S.FunctionDef):
            definition.decorators = decorators
        return definition

    def funcdef(self, meta, items):
        name, params, returns, body = items
        return S.FunctionDef(_pos(meta), str(name), _flat(params or []), returns, body)

    def parameters(self, meta, items):
        return _flat([i for i in items if i is not None])

    def starparams(self, meta, items):
        star, *rest = items
        kw = [p for p in rest if p is not None]
        for p in kw:
            if p.kind == "positional":
                p.kind = "keyword"
        if star is not None:
            star.kind = "varargs"
            return [star] + kw
        return kw

    def kwparams(self, meta, items):
        items[0].kind = "varkw"
        return items[0]

    def paramvalue(self, meta, items):
        param, default = items
        param.default = default
        return param

    def typedparam(self, meta, items):
        name, annotation = items
        return S.Param(_pos(name), str(name), annotation, None)

    def classdef(self, meta, items):
        return S.UnsupportedStmt(_pos(meta), "class definitions")

    # -- statements ----------------------------------------------------------------------------------
    def simple_stmt(self, meta, items):
        return [i for i in items if i is not None]

    def suite(self, meta, items):
        return _flat(items)

    def expr_stmt(self, meta, items):
        return S.ExprStmt(_pos(meta), items[0])

    def assign(self, meta, items):
        return S.Assign(_pos(meta), items[:-1], items[-1])

    def annassign(self, meta, items):
        return S.AnnAssign(_pos(meta), *items)

    def augassign(self, meta, items):
        target, op, value = items
        return S.AugAssign(_pos(meta), target, str(op)[:-1], value)

    def pass_stmt(self, meta, items):
        return S.Pass(_pos(meta))

    def break_stmt(self, meta, items):
        return S.Break(_pos(meta))

    def continue_stmt(self, meta, items):
        return S.Continue(_pos(meta))

    def return_stmt(self, meta, items):
        return S.Return(_pos(meta), items[0])

    def raise_stmt(self, meta, items):
        return S.Raise(_pos(meta), items[0])

    def assert_stmt(self, meta, items):
        return S.Assert(_pos(meta), items[0], items[1])

    def del_stmt(self, meta, items):
        return S.UnsupportedStmt(_pos(meta), "del statements")

    def import_stmt(self, meta, items):
        return S.UnsupportedStmt(_pos(meta), "import statements (import at module level instead)")

    def global_stmt(self, meta, items):
        return S.UnsupportedStmt(_pos(meta), f"{str(items[0])} statements")

    def yield_stmt(self, meta, items):
        return S.UnsupportedStmt(_pos(meta), "generators (yield)")

    def dotted_name(self, meta, items):
        return items

    def if_stmt(self, meta, items):
        test, body, *elifs, orelse = items
        orelse = orelse or []
        for e_test, e_body, e_pos in reversed(elifs):
            orelse = [S.If(e_pos, e_test, e_body, orelse)]
        return S.If(_pos(meta), test, body, orelse)

    def elif_clause(self, meta, items):
        return items[0], items[1], _pos(meta)

    def while_stmt(self, meta, items):
        return S.While(_pos(meta), items[0], items[1], items[2] or [])

    def for_stmt(self, meta, items):
        return S.For(_pos(meta), items[0], items[1], items[2], items[3] or [])

    def else_clause(self, meta, items):
        return items[0]

    def try_stmt(self, meta, items):
        return S.UnsupportedStmt(_pos(meta), "try blocks")

    def with_stmt(self, meta, items):
        return S.UnsupportedStmt(_pos(meta), "with statements")

    # -- expressions ---------------------------------------------------------------------------------
    def test(self, meta, items):
        body, test, orelse = items
        return S.IfExp(_pos(meta), test, body, orelse)

    def lambdef(self, meta, items):
        names = [str(t) for t in items if isinstance(t, Token) and t.type == "NAME"]
        return S.Lambda(_pos(meta), names, items[-1])

    def or_test(self, meta, items):
        return S.BoolOp(_pos(meta), "or", items)

    def and_test(self, meta, items):
        return S.BoolOp(_pos(meta), "and", items)

    def not_expr(self, meta, items):
        return S.UnaryOp(_pos(meta), "not", items[0])

    def comparison(self, meta, items):
        return S.Compare(_pos(meta), items[0], items[1::2], items[2::2])

    def comp_op(self, meta, items):
        return " ".join(str(t) for t in items)

    def or_expr(self, meta, items):
        return self._fold(meta, items, "|")

    def xor_expr(self, meta, items):
        return self._fold(meta, items, "^")

    def and_expr(self, meta, items):
        return self._fold(meta, items, "&")

    @staticmethod
    def _fold(meta, items, op):
        out = items[0]
        for right in items[1:]:
            out = S.BinOp(_pos(meta), op, out, right)
        return out

    def _fold_ops(self, meta, items):
        out = items[0]
        for op, right in zip(items[1::2], items[2::2]):
            out = S.BinOp(_pos(meta), str(op), out, right)
        return out

    shift_expr = arith_expr = term = _fold_ops

    def unary(self, meta, items):
        op, operand = items
        if str(op) == "-" and isinstance(operand, S.Const) and type(operand.value) in (int, float):
            return S.Const(_pos(meta), -operand.value)  # -1 is a literal, as in TorchScript
        return S.UnaryOp(_pos(meta), str(op), operand)

    def power(self, meta, items):
        return S.BinOp(_pos(meta), "**", items[0], items[2])

    def call(self, meta, items):
        func, arguments = items
        if isinstance(arguments, S.Unsupported):
            return arguments
        args, keywords = arguments or ([], [])
        return S.Call(_pos(meta), func, args, keywords)

    def subscript(self, meta, items):
        return S.Subscript(_pos(meta), items[0], items[1])

    def attribute(self, meta, items):
        return S.Attribute(_pos(items[1]), items[0], str(items[1]))

    def tuple(self, meta, items):
        if len(items) == 1 and (items[0] is None or isinstance(items[0], list)):
            return S.TupleExpr(_pos(meta), items[0] or [])
        return S.TupleExpr(_pos(meta), [i for i in items if i is not None])

    def generator(self, meta, items):
        items[0].kind = "generator"  # compiled as a list comprehension, or as a tuple when unrolled
        return items[0]

    def generator_argument(self, meta, items):
        elt, *gens, cond = items
        return [S.Comprehension(_pos(meta), "generator", elt, None, _generators(gens, cond))], []

    def list(self, meta, items):
        return S.ListExpr(_pos(meta), items[0] or [])

    def list_comp(self, meta, items):
        return items[0]

    def dict(self, meta, items):
        pairs = items[0] or []
        return S.DictExpr(_pos(meta), [k for k, _ in pairs], [v for _, v in pairs])

    def dict_comp(self, meta, items):
        (key, value), *gens, cond = items
        return S.Comprehension(_pos(meta), "dict", value, key, _generators(gens, cond))

    def set(self, meta, items):
        return S.Unsupported(_pos(meta), "set literals")

    def name(self, meta, items):
        return S.Name(_pos(items[0]), str(items[0]))

    def number(self, meta, items):
        tok = items[0]
        if tok.type == "IMAG_NUMBER":
            return S.Unsupported(_pos(tok), "complex numbers")
        return S.Const(_pos(tok), ast.literal_eval(str(tok).replace("_", "")))

    def strings(self, meta, items):
        parts = [self._string(t) for t in items]
        bad = next((p for p in parts if isinstance(p, S.Unsupported)), None)
        if bad is not None:
            return bad
        if all(isinstance(p, S.Const) for p in parts):
            return S.Const(_pos(meta), "".join(p.value for p in parts))
        fmt = "".join(p.value.replace("{", "{{").replace("}", "}}") if isinstance(p, S.Const) else p.format
                      for p in parts)
        return S.FString(_pos(meta), fmt, [v for p in parts if isinstance(p, S.FString) for v in p.values])

    def _string(self, tok: Token):
        text = str(tok)
        quote = min(i for i in (text.find("'"), text.find('"')) if i >= 0)
        prefix = text[:quote].lower()
        if "b" in prefix:
            return S.Unsupported(_pos(tok), "bytes literals")
        if "f" not in prefix:
            return S.Const(_pos(tok), ast.literal_eval(text[quote:] if "r" not in prefix else "r" + text[quote:]))
        return _FStringParser(self, tok, text, quote, "r" in prefix).parse()

    def ellipsis(self, meta, items):
        return S.Const(_pos(meta), Ellipsis)

    def const_none(self, meta, items):
        return S.Const(_pos(meta), None)

    def const_true(self, meta, items):
        return S.Const(_pos(meta), True)

    def const_false(self, meta, items):
        return S.Const(_pos(meta), False)

    def tuple_inner(self, meta, items):
        return [i for i in items if i is not None]

    exprlist_inner = tuple_inner

    def dict_inner(self, meta, items):
        return [i for i in items if i is not None]

    def key_value(self, meta, items):
        return items[0], items[1]

    def star_expr(self, meta, items):
        return S.Unsupported(_pos(meta), "starred expressions (*x)")

    def slice(self, meta, items):
        return S.Slice(_pos(meta), *(list(items) + [None] * 3)[:3])

    def arguments(self, meta, items):
        args, keywords = [], []
        for a in _flatten_starargs(items):
            if a is None:
                continue
            if isinstance(a, S.Unsupported):
                return a
            if isinstance(a, tuple) and a and a[0] == "keyword":
                keywords.append((a[1], a[2]))
            elif isinstance(a, S.Starred) and keywords:
                return S.Unsupported(a.pos, "positional arguments after keyword arguments")
            else:
                args.append(a)
        return args, keywords

    def keyword(self, meta, items):
        return ("keyword", str(items[0]), items[1])

    def starargs(self, meta, items):
        return ("starargs", items)

    def star_arg(self, meta, items):
        return S.Starred(_pos(meta), items[0])

    def star_kwarg(self, meta, items):
        return ("keyword", None, items[0])  # **mapping: a keyword without a name

    def comprehension(self, meta, items):
        elt, *gens, cond = items
        return S.Comprehension(_pos(meta), "list", elt, None, _generators(gens, cond))

    def comp_for(self, meta, items):
        return items[0], items[1]

    def comp_if(self, meta, items):
        return items[0]

    def parse_field(self, text: str, line: int, column: int):
        """An f-string field's expression, positioned where it stands in the file."""
        expr = parse_text(self.source, " " * (column - 1) + text, "eval_input", line + self.line - 1)
        for e in S.walk_exprs(expr):
            e.pos = (e.pos[0] + line - 1, e.pos[1])
        return expr

    def error(self, message: str, pos: tuple):
        """A CompileError at `pos`, a position in the parsed text."""
        return self.source.error(message, (pos[0] + self.line - 1, pos[1]))


def _generators(gens: list, cond) -> list:
    out = [(target, it, []) for target, it in gens]
    if cond is not None:
        out[-1][2].append(cond)
    return out


def _flat(items) -> list:
    out = []
    for i in items:
        if isinstance(i, list):
            out.extend(_flat(i))
        elif i is not None and not isinstance(i, Token):
            out.append(i)
    return out


class _FStringParser:
    """Splits an f-string token into a `str.format` template and its field expressions."""

    def __init__(self, builder: _Builder, tok: Token, text: str, quote: int, raw: bool):
        self.builder, self.tok, self.raw = builder, tok, raw
        q = text[quote:quote + 3] if text[quote:quote + 3] in ('"""', "'''") else text[quote]
        self.quote = q
        self.body = text[quote + len(q):len(text) - len(q)]
        self.start = quote + len(q)  # offset of the body in the token

    def parse(self):
        fmt, values, literal, i, body = [], [], "", 0, self.body
        while i < len(body):
            ch = body[i]
            if ch in "{}" and body[i:i + 2] == ch * 2:
                literal += ch * 2
                i += 2
            elif ch == "{":
                fmt.append(self._literal(literal))
                literal = ""
                end = self._field_end(i + 1)
                template, expr = self._field(i + 1, end)
                fmt.append(template)
                values.append(expr)
                i = end + 1
            elif ch == "}":
                return S.Unsupported(self._where(i), "a single '}' in an f-string")
            else:
                literal += ch
                i += 1
        fmt.append(self._literal(literal))
        return S.FString(_pos(self.tok), "".join(fmt), values)

    def _literal(self, text: str) -> str:
        if self.raw or "\\" not in text:
            return text
        return ast.literal_eval(self.quote + text + self.quote)

    def _field_end(self, i: int) -> int:
        """Index of the `}` closing the field that starts at `i`."""
        depth, quote = 0, None
        while i < len(self.body):
            ch = self.body[i]
            if quote:
                quote = None if ch == quote else quote
            elif ch in "'\"":
                quote = ch
            elif ch in "([{":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif ch == "}":
                if depth == 0:
                    return i
                depth -= 1
            i += 1
        raise self.builder.error("invalid f-string: a '{' is never closed", _pos(self.tok))

    def _field(self, start: int, end: int):
        """('{!r:spec}'-style template, expression) of the field body[start:end]. A field written
        `{expr=}` shows its text before the value, as in Python: `f"{x=}"` is "x=" + repr(x)."""
        text, depth, cut = self.body[start:end], 0, None
        for j, ch in enumerate(text):
            depth += ch in "([{"
            depth -= ch in ")]}"
            if depth == 0 and (ch == ":" or (ch == "!" and text[j + 1:j + 2] != "=")):
                cut = j
                break
        expr_text, rest = (text, "") if cut is None else (text[:cut], text[cut:])
        if "{" in rest:
            raise self.builder.error("nested fields in f-string format specs are not supported", self._where(start))
        if not re.fullmatch(r"(![sra])?(:.*)?", rest, re.S):
            raise self.builder.error(f"invalid f-string field: '{{{text}}}'", self._where(start))
        label = ""
        shown = re.fullmatch(r"(.*[^=!<>])=\s*", expr_text, re.S)
        if shown:
            label = expr_text.replace("{", "{{").replace("}", "}}")
            expr_text, rest = shown.group(1), rest or "!r"
        line, column = self._where(start)
        expr = self.builder.parse_field(expr_text.strip() or "_", line, column + len(expr_text) -
                                        len(expr_text.lstrip()))
        return label + "{" + rest + "}", expr

    def _where(self, offset: int) -> tuple:
        """(line, column) of body[offset] in the source."""
        before = self.body[:offset]
        line = self.tok.line + before.count("\n")
        if "\n" in before:
            return line, len(before) - before.rfind("\n")
        return line, self.tok.column + self.start + offset


def _flatten_starargs(items: list) -> list:
    """The call's arguments with the `*x` / `**m` group (and the arguments after it) in line."""
    out = []
    for a in items:
        if isinstance(a, tuple) and a and a[0] == "starargs":
            out.extend(a[1])
        else:
            out.append(a)
    return out
