"""Limits on what the compiler computes while compiling. Constant expressions are folded as
Python would compute them (`2 ** 10`, `"-" * 80`, `(0,) * 4`) and loops over a constant range
that index a module list are unrolled; without bounds a line as short as `9 ** 9 ** 9` or
`(x,) * 10**11` would hang the compiler or exhaust its memory. Past a limit `tscript.jit.script`
raises a CompileError that names it; anything within the limits folds as before.

    MAX_INT_BITS = 1024            bits of an integer made by folding (run-time ints have 64; any
                                   float's integer part, e.g. int(1e308), fits in 1024)
    MAX_SEQUENCE_LENGTH = 65_536   items of a string or tuple made at compile time (by `*`, `+`,
                                   `%` or an f-string), nested tuples counting all their items
    MAX_UNROLL = 10_000            iterations of a loop over a constant range unrolled at compile
                                   time (each iteration compiles the loop body again)

Oversized results are refused before they are computed. A loop over a range of more than
INT_MAX = 2**63 - 1 items (range(10**30)) is refused too: a loop's trip count is an int64.

Nesting has no limit of its own: the parser and the lowering of expressions walk them without
recursion, so a 3000-term sum or a chain of 1000 method calls compiles, as in CPython. Nested
blocks (`if`/`elif` chains, loops; a chain of conditional expressions nests blocks too), lambdas
and calls between scripted functions are compiled recursively, and the IR passes walk blocks
recursively: past Python's recursion limit (some hundreds of levels) the CompileError says so.
"""
from __future__ import annotations

import re
import string

from .values import ConstValue, TupleSugar

MAX_INT_BITS = 1024
MAX_SEQUENCE_LENGTH = 65_536
MAX_UNROLL = 10_000


def check_fold(em, op: str, a, b, pos) -> None:
    """Refuse the fold `a op b` of two constants, before computing it, if its result would pass a limit."""
    if op == "**" and _is_int(a) and _is_int(b) and b > 0 and b * (abs(a).bit_length() - 1) > MAX_INT_BITS:
        raise _int_error(em, pos)
    if op == "*":
        seq, n = (b, a) if _is_int(a) else (a, b)
        if _is_int(n) and n > 0 and size(seq) * n > MAX_SEQUENCE_LENGTH:
            raise _sequence_error(em, pos)
    if op == "%" and isinstance(a, str):  # "%05d" % n: widths and precisions, `*` taking them from the values
        widths = [w for group in re.findall(r"%[-+ #0]*(\d*|\*)(?:\.(\d*|\*))?", a) for w in group]
        if "*" in widths:
            widths += [str(abs(v)) for v in (b if isinstance(b, tuple) else (b,)) if _is_int(v)]
        _check_widths(em, widths, pos)


def check_format(em, template: str, pos) -> None:
    """Refuse folding `template.format(...)` if a field's width or precision passes the limit."""
    try:
        specs = [spec or "" for _, field, spec, _ in string.Formatter().parse(template) if field is not None]
    except ValueError:
        return  # a malformed template does not fold
    _check_widths(em, [d for spec in specs for d in re.findall(r"\d+", spec)], pos)


def checked(em, value, pos):
    """A folded constant, refused if it passes a limit."""
    if _is_int(value) and value.bit_length() > MAX_INT_BITS:
        raise _int_error(em, pos)
    if size(value) > MAX_SEQUENCE_LENGTH:
        raise _sequence_error(em, pos)
    return value


def check_unroll(em, n: int, pos) -> None:
    """Refuse unrolling a loop of `n` iterations past MAX_UNROLL."""
    if n > MAX_UNROLL:
        raise em.error(f"a loop of {n} iterations is too long to unroll at compile time (the limit is "
                       f"MAX_UNROLL = {MAX_UNROLL})", pos)


def size(value) -> int:
    """The items of a string or tuple (a constant, a tuple of values, or a Python one), nested
    tuples counting all their items; 0 for anything else."""
    if isinstance(value, (ConstValue, TupleSugar)):
        value = value.value if isinstance(value, ConstValue) else value.items
    if isinstance(value, str):
        return len(value)
    if isinstance(value, (tuple, list)):
        return len(value) + sum(size(v) for v in value)
    return 0


def _check_widths(em, widths: list, pos) -> None:
    """Refuse field widths or precisions (digit strings) that would make too long a string."""
    if any(w.isdecimal() and (len(w.lstrip("0")) > 6 or int(w) > MAX_SEQUENCE_LENGTH) for w in widths):
        raise _sequence_error(em, pos)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_error(em, pos):
    return em.error(f"this constant would be an integer of more than MAX_INT_BITS = {MAX_INT_BITS} bits, the "
                    f"limit of constant folding", pos)


def _sequence_error(em, pos):
    return em.error(f"this constant would be a string or tuple of more than MAX_SEQUENCE_LENGTH = "
                    f"{MAX_SEQUENCE_LENGTH} items, the limit of constant folding", pos)
