"""Fuzz `tscript.jit.script` with function source text (the input, as UTF-8; seeds: the programs
of tests/script/).

The text is the body of a Python module holding only `def`s; the last one is scripted, the others
are functions it may call. Text that Python refuses, or whose definition would run code (decorators,
defaults that are not literals; annotations are never evaluated), is skipped: fuzzed code is
never run, only compiled. Allowed: a ScriptFunction whose graph `verify` accepts, or
tscript.jit.CompileError. Anything else is a finding (harness.py), as are a hang and a crash.

    python fuzz/fuzz_script.py fuzz/corpus/script -dict=fuzz/script.dict -max_total_time=600 -timeout=10
"""
import __future__
import ast
import io
import linecache
import math
import typing

import atheris

with atheris.instrument_imports(include=["tscript.frontend.script"]):
    import tscript
    import tscript.nn.functional as F
    from tscript.frontend.script import parser, source
    from tscript.ir import verify

from harness import finding, main

FILE = "/fuzz/scripted.py"  # served from linecache: where CompileErrors point
GLOBALS = {"__name__": "fuzzed", "torch": tscript, "tscript": tscript, "ts": tscript, "nn": tscript.nn,
           "F": F, "math": math, "Tensor": tscript.Tensor, "Final": tscript.jit.Final, "List": typing.List,
           "Tuple": typing.Tuple, "Dict": typing.Dict, "Optional": typing.Optional}


def _inert(tree: ast.Module) -> bool:
    """Does defining the module's functions run none of the text? (Only `def`s, no decorators,
    literal defaults; annotations stay strings under `from __future__ import annotations`.)"""
    for node in tree.body:
        if type(node) is not ast.FunctionDef or node.decorator_list:
            return False
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            try:
                ast.literal_eval(default)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return False
    return bool(tree.body)


def define(text: str):
    """The last function `text` defines, or None when Python refuses the text or defining it would
    run any of it."""
    try:
        tree = ast.parse(text, FILE)
        if not _inert(tree):
            return None
        code = compile(tree, FILE, "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    namespace = dict(GLOBALS)
    exec(code, namespace)  # only binds functions (checked by _inert)
    linecache.cache[FILE] = (len(text), None, _lines(text), FILE)
    return namespace[tree.body[-1].name]


def _lines(text: str) -> list:
    """`text` split as linecache splits a file: at line feeds and carriage returns only, the last line ended too."""
    lines = io.StringIO(text, newline=None).readlines()
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines


def exercise(fn) -> None:
    """Script `fn` and verify its graph; allowed outcomes return, anything else raises."""
    try:
        scripted = tscript.jit.script(fn)
    except tscript.jit.CompileError:
        return
    verify(scripted.graph)


def test_one_input(data: bytes) -> None:
    fn = define(data.decode("utf-8", "replace"))
    if fn is None:
        return
    # The frontend keeps every function's source and parse for the life of the process; a fuzzer
    # makes millions of functions, so forget them between inputs.
    source._sources.clear()
    parser._functions.clear()
    with finding("script", data, data, ".py"):
        exercise(fn)


if __name__ == "__main__":
    main("script", test_one_input)
