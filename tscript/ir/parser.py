"""Parse printed IR back into a `Graph`: the exact inverse of printer.py, so
`str(parse_ir(str(g))) == str(g)` (value names, types, attributes, comments, nested blocks and
`with <kind>_<n> = graph(...)` subgraph sections all survive).

The grammar is `ir.lark`; a LALR parser calls `_Builder`'s rule methods while it reads, so nodes
are created in text order and no parse tree is kept (linear time, one pass). Values must be
defined before they are used in the text, as in every printed graph. Tensor constants come back
as `TensorRef` attributes without data (the text does not hold it).

Limits: brackets (`[` and `(`: types, attribute lists and tuples) and blocks may each nest at most
`MAX_NESTING` (100) deep, far beyond what real code needs, so that the printer, the verifier and the
passes, which recurse over them, never exhaust Python's stack. Deeper text is an `IRParseError`
naming the limit. A `with` section is the subgraph of one node and may not contain itself: subgraphs
form a tree, as the printer writes them.
"""
from __future__ import annotations

import functools
import json
import re
import sys
import threading
from importlib import resources

import numpy as np
from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from tscript_runtime import dtypes as _dt
from tscript_runtime.graph_json import TensorRef

from .graph import Block, Graph, Node, Value
from .types import DTYPE_BY_NAME, SCALARS, DictType, ListType, ModuleType, OptionalType, TensorType, TupleType


MAX_NESTING = 100  # deepest bracket / block nesting the parser accepts (see the module docstring)


class IRParseError(ValueError):
    """Malformed IR text; the message names the line and column and what was expected."""


def parse_ir(text: str) -> Graph:
    """The Graph that `text` (as printed by `str(graph)`) describes."""
    with _LOCK:
        builder, parser = _parser()
        builder.reset()
        try:
            return parser.parse(text)
        except UnexpectedInput as e:
            raise IRParseError(_syntax_message(e, text, parser)) from None
        finally:
            builder.reset()


_LOCK = threading.Lock()  # the builder holds one parse's state, so parses take turns
_PARSER: tuple | None = None


def _parser() -> tuple["_Builder", Lark]:
    global _PARSER
    if _PARSER is None:
        builder = _Builder()
        grammar = resources.files(__package__).joinpath("ir.lark").read_text()
        brackets = {"LSQB": builder.open_bracket, "LPAR": builder.open_bracket, "RSQB": builder.close_bracket,
                    "RPAR": builder.close_bracket}
        _PARSER = builder, Lark(grammar, parser="lalr", transformer=builder, maybe_placeholders=True,
                                lexer_callbacks=brackets)
    return _PARSER


def _at(tok: Token) -> str:
    return f"line {tok.line}, column {tok.column}"


class _Builder:
    """Rule callbacks (named after the rules in ir.lark) that build the graph as the parser reduces."""

    def reset(self) -> None:
        """Forget the previous parse."""
        self.graph: Graph | None = None
        self.values: dict[str, tuple[Value, Token]] = {}  # name -> (value, where it was defined)
        self.blocks: list[list] = []        # open blocks, innermost last: [block, last node in it]
        self.sections: dict[str, Graph] = {}
        self.graph_refs: list[tuple[Node, str, Token]] = []  # attributes naming a subgraph section
        self.depth = 0                      # brackets open at the current token

    # -- nesting (lexer callbacks: the parser itself does not recurse, the graph's users do) ---------------
    def open_bracket(self, tok: Token) -> Token:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise IRParseError(f"{_at(tok)}: brackets nested more than {MAX_NESTING} deep (MAX_NESTING)")
        return tok

    def close_bracket(self, tok: Token) -> Token:
        self.depth -= 1
        return tok

    # -- graphs and sections ----------------------------------------------------------------------------
    def graph_head(self, children) -> None:
        self.graph, self.values = Graph(), {}
        for tok, type_ in children[0] or ():
            self._define(tok, type_, self.graph.block.add_param)
        self.blocks = [[self.graph.block, None]]

    def graph(self, children) -> Graph:
        for v in children[-1] or ():
            self.graph.add_output(v)
        return self.graph

    def section(self, children) -> None:
        label, graph = children
        if label in self.sections:
            raise IRParseError(f"{_at(label)}: subgraph {label} is defined twice")
        self.sections[str(label)] = graph

    def start(self, children) -> Graph:
        for node, key, label in self.graph_refs:
            if label not in self.sections:
                raise IRParseError(f"{_at(label)}: attribute {key} names subgraph {label}, "
                                   f"but there is no `with {label} = graph(...)` section")
            node.attrs[key] = self.sections[label]
        _refuse_cycles(self.sections, self.graph_refs)
        _refuse_shared(self.graph_refs)
        return children[0]

    # -- nodes and blocks ---------------------------------------------------------------------------------
    def node(self, children) -> None:
        """A node with its blocks: everything happened in node_head and block_head already."""

    def node_head(self, children) -> None:
        outputs, kind, attrs, inputs, comment = children
        node = Node(self.graph, str(kind), inputs or (), 0, self._attrs(node_kind=kind, pairs=attrs or ()))
        for tok, type_ in outputs or ():
            self._define(tok, type_, node.add_output)
        if comment is not None:
            node.scope, node.source = _parse_comment(comment)
        self.graph_refs.extend((node, key, v.tok) for key, v in node.attrs.items() if isinstance(v, _Label))
        open_block = self.blocks[-1]
        open_block[0].append(node)
        open_block[1] = node

    def block_head(self, children) -> None:
        tok, params = children
        owner = self.blocks[-1][1]
        if len(self.blocks) > MAX_NESTING:
            raise IRParseError(f"{_at(tok)}: blocks nested more than {MAX_NESTING} deep (MAX_NESTING)")
        if tok != f"block{len(owner.blocks)}":
            raise IRParseError(f"{_at(tok)}: expected block{len(owner.blocks)} of {owner.kind}, got {tok}")
        block = owner.add_block()
        for ptok, type_ in params or ():
            self._define(ptok, type_, block.add_param)
        self.blocks.append([block, None])

    def block(self, children) -> None:
        block: Block = self.blocks.pop()[0]
        for v in children[-1] or ():
            block.add_return(v)

    # -- values -------------------------------------------------------------------------------------------
    def typed_values(self, children) -> list:
        return children

    def typed_value(self, children) -> tuple:
        return children[0], children[1]

    def values(self, children) -> list[Value]:
        found = []
        for tok in children:
            entry = self.values.get(tok[1:])
            if entry is None:
                raise IRParseError(f"{_at(tok)}: use of undefined value {tok}")
            found.append(entry[0])
        return found

    def _define(self, tok: Token, type_, make) -> None:
        name = tok[1:]
        if name in self.values:
            raise IRParseError(f"{_at(tok)}: value {tok} is defined twice "
                               f"(first at line {self.values[name][1].line})")
        self.values[name] = make(type_, name), tok

    # -- types --------------------------------------------------------------------------------------------
    def named_type(self, children):
        (name,) = children
        if name in SCALARS:
            return SCALARS[name]
        if name == "Tensor":
            return TensorType()
        if name.startswith("__module__."):
            return ModuleType(name[len("__module__."):])
        raise IRParseError(f"{_at(name)}: unknown type {name}")

    def tensor_type(self, children):
        (tok,) = children
        try:
            return _tensor_type(str(tok))
        except ValueError as e:
            raise IRParseError(f"{_at(tok)}: {e}") from None

    def generic_type(self, children):
        name, *args = children
        arity, make = _GENERICS.get(str(name), (0, None))
        if make is None or arity not in (None, len(args)):
            raise IRParseError(f"{_at(name)}: unknown type {name}[{', '.join(map(str, args))}]")
        return make(*args)

    def empty_tuple_type(self, children):
        if children[0] != "Tuple":
            raise IRParseError(f"{_at(children[0])}: unknown type {children[0]}[()]")
        return TupleType(())

    # -- attributes ---------------------------------------------------------------------------------------
    def attrs(self, children) -> list:
        return children

    def attr(self, children) -> tuple:
        return children[0], children[1]

    @staticmethod
    def _attrs(node_kind: Token, pairs) -> dict:
        out = {}
        for key, value in pairs:
            if key in out:
                raise IRParseError(f"{_at(key)}: attribute {key} of {node_kind} is given twice")
            out[str(key)] = value
        return out

    def int_attr(self, children):
        (tok,) = children
        try:
            return int(tok)
        except ValueError:  # more digits than int() converts
            raise IRParseError(f"{_at(tok)}: integer of {len(tok.lstrip('-'))} digits "
                               f"(at most {sys.get_int_max_str_digits()})") from None

    def float_attr(self, children):
        return float(children[0])

    def str_attr(self, children):
        (tok,) = children
        try:
            return json.loads(tok)
        except json.JSONDecodeError as e:  # a raw control character or a bad escape, on the token's line
            raise IRParseError(f"line {tok.line}, column {tok.column + e.pos}: "  # (a raw newline is one)
                               f"{e.msg.removesuffix(' at').lower()} in string") from None

    def true_attr(self, children):
        return True

    def false_attr(self, children):
        return False

    def none_attr(self, children):
        return None

    def dtype_attr(self, children):
        (tok,) = children
        dtype = _dt.BY_NAME.get(tok[len("tscript."):])
        if dtype is None:
            raise IRParseError(f"{_at(tok)}: unknown dtype {tok}")
        return np.dtype(dtype)

    def tensor_attr(self, children):
        return TensorRef(children[0][len("<Tensor "):-1])

    def graph_attr(self, children):
        return _Label(children[0])

    def list_attr(self, children):
        return _no_labels(children)

    def tuple_attr(self, children):
        return tuple(_no_labels(children))


_DIM = re.compile(r"[0-9]+|\*|[^\W\d]\w*")


@functools.lru_cache(maxsize=4096)  # a graph repeats a few tensor types many times
def _tensor_type(text: str) -> TensorType:
    """`Float(8, batch, *)` / `Tensor(2, 3)` / `Double(...)` / `Long()` as a TensorType."""
    name, _, rest = text.partition("(")
    if name != "Tensor" and name not in DTYPE_BY_NAME:
        raise ValueError(f"unknown tensor type {name} (expected Tensor or one of {', '.join(DTYPE_BY_NAME)})")
    inner = rest[:-1].strip()
    if inner == "...":
        return TensorType(DTYPE_BY_NAME.get(name), None)
    dims = [d.strip() for d in inner.split(",")] if inner else []
    for d in dims:
        if not _DIM.fullmatch(d):
            raise ValueError(f"bad size {d!r} in tensor type {text} (sizes are integers, names or *)")
    return TensorType(DTYPE_BY_NAME.get(name),
                      tuple(int(d) if d.isdigit() else None if d == "*" else d for d in dims))


class _Label:
    """A subgraph attribute until its `with` section has been read."""
    __slots__ = ("tok",)

    def __init__(self, tok: Token):
        self.tok = tok


def _no_labels(items: list) -> list:
    """List and tuple attributes hold plain values: only a whole attribute may name a subgraph."""
    for item in items:
        if isinstance(item, _Label):
            raise IRParseError(f"{_at(item.tok)}: subgraph {item.tok} inside a list or tuple attribute "
                               f"(only a whole attribute may name a subgraph)")
    return items


def _refuse_cycles(sections: dict[str, Graph], graph_refs: list) -> None:
    """A subgraph that contains itself (directly or through others) is an error naming the cycle.
    Depth-first over the sections without recursion: a chain of sections may be long."""
    named: dict[Graph, list[Token]] = {}  # graph -> the section labels its nodes name
    for node, _, label in graph_refs:
        named.setdefault(node.graph, []).append(label)
    done: set[str] = set()
    for root in sections:
        if root in done:
            continue
        path = {root: iter(named.get(sections[root], ()))}  # open sections (in order) -> what is left
        while path:
            open_label, todo = next(reversed(path.items()))
            label = next(todo, None)
            if label is None:
                done.add(open_label)
                del path[open_label]
            elif label in path:
                open_labels = list(path)
                cycle = " -> ".join(open_labels[open_labels.index(label):] + [label])
                raise IRParseError(f"{_at(label)}: subgraph {label} contains itself ({cycle})")
            elif label not in done:
                path[str(label)] = iter(named.get(sections[label], ()))


def _refuse_shared(graph_refs: list) -> None:
    """Each `with` section is one node's subgraph, as the printer writes them (two nodes naming one
    section would also let a few lines of text print as exponentially many)."""
    first: dict[str, Token] = {}
    for _, _, label in graph_refs:
        if label in first:
            raise IRParseError(f"{_at(label)}: subgraph {label} is already the subgraph of the node at "
                               f"line {first[label].line} (each node has its own section)")
        first[label] = label


# Parametrised types: how many arguments each takes (None: any number) and its constructor.
_GENERICS = {
    "List": (1, ListType),
    "Optional": (1, OptionalType),
    "Dict": (2, DictType),
    "Tuple": (None, lambda *elems: TupleType(elems)),
}


def _parse_comment(tok: Token) -> tuple[str, str | None]:
    """`# scope: fc1, model.py:12` -> ("fc1", "model.py:12"); see printer._comment for the quoting."""
    text = tok[1:].rstrip("\r")
    text = text[1:] if text.startswith(" ") else text
    scope, rest = "", text
    if text.startswith("scope: "):
        scope, rest = _split_scope(text[len("scope: "):], tok)
    if not rest:
        return scope, None
    return scope, _unquote(rest, tok)


def _split_scope(text: str, tok: Token) -> tuple[str, str]:
    if text.startswith('"'):
        try:
            scope, end = json.JSONDecoder().raw_decode(text)
        except ValueError:
            raise IRParseError(f"{_at(tok)}: bad quoted scope in comment {tok}") from None
        rest = text[end:]
        if rest and not rest.startswith(", "):
            raise IRParseError(f"{_at(tok)}: expected ', <source>' after the scope in comment {tok}")
        return scope, rest[2:]
    scope, _, rest = text.partition(", ")
    return scope, rest


def _unquote(text: str, tok: Token) -> str:
    if not text.startswith('"'):
        return text
    try:
        return json.loads(text)
    except ValueError:
        raise IRParseError(f"{_at(tok)}: bad quoted source in comment {tok}") from None


# What the syntax error says was expected, for terminals whose name alone does not tell.
_TERMINAL_NAMES = {
    "VALUE": "a value (%name)", "KIND": "an op kind (ns::name)", "BLOCK": "blockN", "TYPE_NAME": "a type",
    "TENSOR_TYPE": "a tensor type", "SYMBOL": "a name", "INT": "an integer", "FLOAT": "a float",
    "STRING": "a string", "DTYPE": "a dtype (tscript.float32)", "TENSOR_REF": "<Tensor name>",
    "COMMENT": "a comment", "$END": "end of input",
}


def _describe_terminal(name: str, parser: Lark) -> str:
    if name in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[name]
    try:
        pattern = parser.get_terminal(name).pattern
    except KeyError:
        return name
    return repr(pattern.value) if pattern.type == "str" else name


def _syntax_message(e: UnexpectedInput, text: str, parser: Lark) -> str:
    """`line L, column C: unexpected X; expected A, B` and the line with a caret under the spot."""
    line, column = e.line, e.column
    if isinstance(e, UnexpectedCharacters):
        found, expected = f"unexpected character {text[e.pos_in_stream]!r}", e.allowed
    elif isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END"):
        found, expected = "unexpected end of input", e.expected
        line, column = _end_position(text)
    else:
        found, expected = f"unexpected {str(e.token)!r}", e.expected
    wanted = ", ".join(sorted({_describe_terminal(t, parser) for t in expected}))
    context = e.get_context(text).rstrip("\n") if e.pos_in_stream is not None else ""
    return f"line {line}, column {column}: {found}; expected {wanted}" + (f"\n{context}" if context else "")


def _end_position(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1
