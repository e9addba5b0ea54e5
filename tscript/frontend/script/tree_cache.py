"""Parsed source kept on disk (in the tscript cache directory), so a new process does not parse the
library code a model calls again: lark's parser runs at some 20 ms per function, and its lexer
compiles its expressions on the first parse of a process.

An entry is the syntax tree as JSON, named by the sha256 of the grammar, the parse's start rule and
line, and the source text. Reading one only rebuilds nodes of the classes of syntax.py, and any
entry that is not exactly such a tree (unreadable, truncated, tampered with) is ignored and
written again; the tree never holds code and is never executed."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile

from tscript_runtime.user_cache import cache_dir

from . import syntax as S

_NODES = {name: cls for name, cls in vars(S).items() if dataclasses.is_dataclass(cls) and isinstance(cls, type)}
_FIELDS = {name: len(dataclasses.fields(cls)) for name, cls in _NODES.items()}
_DIR = "script-trees"


class Malformed(ValueError):
    """A cache entry that is not a syntax tree."""


def worth_keeping(file: str) -> bool:
    """Is the source in a file that stays (not generated into the temporary directory)?"""
    return os.path.isfile(file) and not os.path.abspath(file).startswith(tempfile.gettempdir() + os.sep)


def key(grammar: bytes, start: str, line: int, text: str) -> str:
    """The name of the entry of one parse."""
    digest = hashlib.sha256(grammar)
    digest.update(f"\0{start}\0{line}\0".encode())
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def load(name: str):
    """The cached tree, or None (no entry, or one that is not a tree)."""
    try:
        with open(os.path.join(cache_dir(), _DIR, f"{name}.json"), encoding="utf-8") as f:
            return decode(json.load(f))
    except (OSError, ValueError, RecursionError):
        return None


def store(name: str, tree) -> None:
    """Write the tree (atomically; a cache that cannot be written only costs time)."""
    folder = os.path.join(cache_dir(), _DIR)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(encode(tree), f, separators=(",", ":"))
        os.replace(tmp, os.path.join(folder, f"{name}.json"))
    except (OSError, ValueError, RecursionError):
        pass


def encode(x):
    """A tree (nodes, lists, tuples, constants) as JSON data."""
    if dataclasses.is_dataclass(x):
        return {"n": type(x).__name__, "f": [encode(getattr(x, f.name)) for f in dataclasses.fields(x)]}
    if isinstance(x, list):
        return [encode(v) for v in x]
    if isinstance(x, tuple):
        return {"t": [encode(v) for v in x]}
    if x is Ellipsis:
        return {"e": 0}
    if x is None or type(x) in (bool, int, float, str):
        return x
    raise ValueError(f"cannot cache a syntax tree holding {type(x).__name__}")


def decode(x):
    """The tree of `encode`'s data; Malformed for anything else."""
    if isinstance(x, list):
        return [decode(v) for v in x]
    if isinstance(x, dict):
        if set(x) == {"t"} and isinstance(x["t"], list):
            return tuple(decode(v) for v in x["t"])
        if x == {"e": 0}:
            return Ellipsis
        name, fields = x.get("n"), x.get("f")
        if set(x) != {"n", "f"} or name not in _NODES or not isinstance(fields, list) or len(fields) != _FIELDS[name]:
            raise Malformed("not a syntax node")
        return _NODES[name](*(decode(v) for v in fields))
    if x is None or type(x) in (bool, int, float, str):
        return x
    raise Malformed("not a syntax tree")
