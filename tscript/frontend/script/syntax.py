"""The syntax tree of the TorchScript language, as the parser builds it from `tscript.lark`.

Every node carries `pos`, its (line, column) in the parsed text (1-based), which `CompileError`
maps back to the file. Expressions and statements are plain dataclasses; the compiler
dispatches on their class.
"""
from __future__ import annotations

from dataclasses import dataclass, field

Pos = tuple  # (line, column), 1-based, in the dedented source


# -- expressions ----------------------------------------------------------------------------------
@dataclass
class Expr:
    pos: Pos


@dataclass
class Name(Expr):
    id: str


@dataclass
class Const(Expr):
    """A literal: int, float, bool, str, None or Ellipsis."""
    value: object


@dataclass
class FString(Expr):
    """f"...": literal text with `{}` fields, and the fields' expressions with their format specs
    (`format` is the text given to `str.format`, e.g. "x = {} ({:.2f})")."""
    format: str
    values: list


@dataclass
class Attribute(Expr):
    value: Expr
    attr: str


@dataclass
class Subscript(Expr):
    value: Expr
    index: Expr  # a TupleExpr for x[a, b]


@dataclass
class Slice(Expr):
    lower: Expr | None
    upper: Expr | None
    step: Expr | None


@dataclass
class Call(Expr):
    func: Expr
    args: list      # Exprs, and Starred for `*x`
    keywords: list  # (name, Expr); (None, Expr) for `**mapping`


@dataclass
class Starred(Expr):
    """`*value` among the arguments of a call."""
    value: Expr


@dataclass
class BinOp(Expr):
    op: str  # "+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>"
    left: Expr
    right: Expr


@dataclass
class UnaryOp(Expr):
    op: str  # "-", "+", "~", "not"
    operand: Expr


@dataclass
class BoolOp(Expr):
    op: str  # "and" | "or"
    values: list


@dataclass
class Compare(Expr):
    """a < b < c: `ops` and `comparators` pair up after `left`."""
    left: Expr
    ops: list
    comparators: list


@dataclass
class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr


@dataclass
class TupleExpr(Expr):
    elts: list


@dataclass
class ListExpr(Expr):
    elts: list


@dataclass
class DictExpr(Expr):
    keys: list
    values: list


@dataclass
class Comprehension(Expr):
    """[elt for target in iter if cond] (kind "list"), (elt for ...) (kind "generator"), or
    {key: elt ...} (kind "dict")."""
    kind: str
    elt: Expr
    key: Expr | None
    generators: list  # (target, iter, conditions)


@dataclass
class Lambda(Expr):
    params: list  # names
    body: Expr


@dataclass
class Unsupported(Expr):
    """A construct the language does not have (lambda, *args, set literals...)."""
    what: str


# -- statements ----------------------------------------------------------------------------------------
@dataclass
class Stmt:
    pos: Pos


@dataclass
class Param:
    pos: Pos
    name: str
    annotation: Expr | None
    default: Expr | None
    kind: str = "positional"  # "positional" | "keyword" (after *) | "varargs" | "varkw"


@dataclass
class FunctionDef(Stmt):
    name: str
    params: list
    returns: Expr | None
    body: list
    decorators: list = field(default_factory=list)


@dataclass
class ExprStmt(Stmt):
    value: Expr


@dataclass
class Assign(Stmt):
    targets: list  # a = b = value: [a, b]
    value: Expr


@dataclass
class AnnAssign(Stmt):
    target: Expr
    annotation: Expr
    value: Expr | None


@dataclass
class AugAssign(Stmt):
    target: Expr
    op: str  # "+", "-", ... (without "=")
    value: Expr


@dataclass
class Return(Stmt):
    value: Expr | None


@dataclass
class Pass(Stmt):
    pass


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


@dataclass
class If(Stmt):
    test: Expr
    body: list
    orelse: list


@dataclass
class While(Stmt):
    test: Expr
    body: list
    orelse: list


@dataclass
class For(Stmt):
    target: Expr
    iter: Expr
    body: list
    orelse: list


@dataclass
class Raise(Stmt):
    exc: Expr | None


@dataclass
class Assert(Stmt):
    test: Expr
    msg: Expr | None


@dataclass
class UnsupportedStmt(Stmt):
    """A statement the language does not have (try, with, class, import, del...)."""
    what: str


def assigned_names(stmts: list) -> set:
    """Every variable name a list of statements may (re)bind, nested blocks included."""
    names: set = set()
    for s in stmts:
        _collect_assigned(s, names)
    return names


def _collect_assigned(s: Stmt, names: set) -> None:
    if isinstance(s, Assign):
        for t in s.targets:
            target_names(t, names)
    elif isinstance(s, (AnnAssign, AugAssign)):
        target_names(s.target, names)
    elif isinstance(s, For):
        target_names(s.target, names)
    for block in _blocks(s):
        for inner in block:
            _collect_assigned(inner, names)


def _blocks(s: Stmt) -> list:
    if isinstance(s, If):
        return [s.body, s.orelse]
    if isinstance(s, (While, For)):
        return [s.body, s.orelse]
    return []


def target_names(t: Expr, names: set) -> set:
    """`names` plus the variables an assignment target binds (`a`, `(a, b)`...)."""
    if isinstance(t, Name):
        names.add(t.id)
    elif isinstance(t, (TupleExpr, ListExpr)):
        for e in t.elts:
            target_names(e, names)
    return names


def contains(stmts: list, kinds: tuple, into_loops: bool = True) -> bool:
    """Does any statement (nested blocks included; loops only if `into_loops`) have one of `kinds`?"""
    for s in stmts:
        if isinstance(s, kinds):
            return True
        if isinstance(s, (While, For)) and not into_loops:
            continue
        if any(contains(b, kinds, into_loops) for b in _blocks(s)):
            return True
    return False


def walk_exprs(node):
    """Every expression inside a statement or expression (pre-order)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Expr):
            yield n
        if isinstance(n, (Expr, Stmt)):
            for value in vars(n).values():
                stack.extend(_children(value))


def _children(value) -> list:
    if isinstance(value, (Expr, Stmt)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [c for v in value for c in _children(v)]
    return []
