"""How much of the PyTorch surface that real model code uses resolves in tscript.

    python -m benchmarks.coverage DIR [DIR ...] [--top N]

An AST walk over every `.py` file under the directories counts the references to PyTorch:
`torch.x.y` attribute chains (through any alias: `import torch.nn as nn`, `from torch.nn import
functional as F`, `from torch import nn`), names imported with `from torch... import name` (each use
of the name), and tensor methods and properties (`x.view(...)`, `x.shape`; any attribute whose name is
a public attribute of `torch.Tensor`, which needs torch importable to know those names). Each
reference is looked up in tscript (`torch.a.b` -> `tscript.a.b`, `x.m` -> `tscript.Tensor.m`); the
figure printed is the usage-weighted share that resolves, followed by the most used names that do not.

A name resolving does not prove it behaves as PyTorch's does: the tests do that. A method call on a
non-tensor object that shares a name with a tensor method counts as well, except for the names of
dict/list/str/set/tuple methods and `NOT_ONLY_TENSOR`, which are not counted at all.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path

ROOT = "torch"
# Tensor attribute names that model code mostly reads from other objects (named tuples, PIL images,
# argparse namespaces, enums): not counted as tensor references, like the methods of dict/list/str/set.
NOT_ONLY_TENSOR = {"values", "indices", "name", "mode", "resize", "names"}


def tensor_attribute_names() -> set[str]:
    """The public attribute names of `torch.Tensor` (empty without torch: methods are then not counted)."""
    try:
        import torch
    except ImportError:
        return set()
    shared = set().union(*(dir(t) for t in (dict, list, str, set, tuple))) | NOT_ONLY_TENSOR
    return {n for n in dir(torch.Tensor) if not n.startswith("_") and n not in shared}


class _Collector(ast.NodeVisitor):
    """The PyTorch references of one module: `refs` counts qualified names ("torch.nn.Linear") and
    `methods` tensor attribute names ("view")."""

    def __init__(self, tensor_names: set[str]):
        self.tensor_names = tensor_names
        self.aliases: dict[str, str] = {}     # local name -> qualified torch name
        self.shadowed: set[str] = set()       # names the module also assigns: never aliases
        self.refs: Counter = Counter()
        self.methods: Counter = Counter()

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name == ROOT or a.name.startswith(ROOT + "."):
                local = a.asname or ROOT
                if local not in self.shadowed:
                    self.aliases[local] = a.name if a.asname else ROOT

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if node.level or not (mod == ROOT or mod.startswith(ROOT + ".")):
            return
        for a in node.names:
            if a.name != "*" and (a.asname or a.name) not in self.shadowed:
                self.aliases[a.asname or a.name] = f"{mod}.{a.name}"

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = _chain(node)
        if chain and chain[0] in self.aliases:
            self.refs[".".join([self.aliases[chain[0]]] + chain[1:])] += 1
            return  # the whole chain is one reference
        if node.attr in self.tensor_names and not _is_module_path(node.value, self.aliases):
            self.methods[node.attr] += 1
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        qualified = self.aliases.get(node.id)
        if qualified is not None and isinstance(node.ctx, ast.Load) and "." in qualified \
                and not _is_module(qualified):
            self.refs[qualified] += 1


def _chain(node: ast.Attribute) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None when the root is not a plain name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id] + parts[::-1]


def _is_module_path(node, aliases) -> bool:
    return isinstance(node, ast.Name) and node.id in aliases


@lru_cache(maxsize=None)
def _is_module(qualified: str) -> bool:
    """Is `torch.x.y` a module (imported for attribute access, not a reference by itself)?"""
    try:
        importlib.import_module(qualified)
    except Exception:  # noqa: BLE001 (no torch, or not a module: a name)
        return qualified.count(".") <= 1 and qualified.split(".")[-1] in ("nn", "optim", "utils", "jit")
    return True


def collect(dirs: list[Path]) -> tuple[Counter, Counter, int]:
    """(qualified torch references, tensor attribute references, files read) under `dirs`."""
    names = tensor_attribute_names()
    refs, methods, files = Counter(), Counter(), 0
    for d in dirs:
        for path in sorted(Path(d).rglob("*.py")):
            try:
                tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
            except (SyntaxError, ValueError):
                continue
            c = _Collector(names)
            _visit_imports_first(c, tree)
            refs.update(c.refs)
            methods.update(c.methods)
            files += 1
    return refs, methods, files


def _visit_imports_first(c: _Collector, tree: ast.AST) -> None:
    """Aliases are known before the references that use them (imports may come later in a file); a
    name the file also assigns (`optim = optim.Adam(...)`) is not an alias anywhere in it."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            c.shadowed.add(node.id)
        elif isinstance(node, ast.arg):
            c.shadowed.add(node.arg)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            c.visit_Import(node)
        elif isinstance(node, ast.ImportFrom):
            c.visit_ImportFrom(node)
    c.visit(tree)


@lru_cache(maxsize=None)
def resolves(qualified: str) -> bool:
    """Does `torch.a.b` exist as `tscript.a.b` (an attribute chain, importing submodules on the way)?"""
    import tscript
    obj, path = tscript, "tscript"
    for part in qualified.split(".")[1:]:
        path += "." + part
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(path)
        except ImportError:
            return False
    return True


def kind(qualified: str) -> str:
    """'class', 'function', 'module' or 'value', as PyTorch has it ('?' without torch)."""
    import inspect
    try:
        obj = importlib.import_module(ROOT)
        for part in qualified.split(".")[1:]:
            obj = getattr(obj, part)
    except Exception:  # noqa: BLE001
        return "?"
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "class"
    return "function" if callable(obj) else "value"


def report(refs: Counter, methods: Counter, files: int, top: int) -> str:
    """The coverage figure and the most used missing names, as text."""
    import tscript
    missing = Counter({n: k for n, k in refs.items() if not resolves(n)})
    missing.update({f"Tensor.{n}": k for n, k in methods.items() if not hasattr(tscript.Tensor, n)})
    total = sum(refs.values()) + sum(methods.values())
    share = 1 - sum(missing.values()) / max(total, 1)
    lines = [f"{files} files, {total} references ({sum(refs.values())} torch names, {sum(methods.values())} "
             f"tensor attributes), {len(refs) + len(methods)} distinct",
             f"resolve in tscript: {100 * share:.1f}% of references "
             f"({len(refs) + len(methods) - len(missing)} of {len(refs) + len(methods)} distinct names)",
             f"most used missing ({len(missing)} names):"]
    for name, k in missing.most_common(top):
        lines.append(f"  {k:6d}  {name}  [{'method' if name.startswith('Tensor.') else kind(name)}]")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.coverage", description=__doc__.splitlines()[0])
    p.add_argument("dirs", nargs="+", type=Path, help="directories of Python model code")
    p.add_argument("--top", type=int, default=40, help="how many missing names to list")
    args = p.parse_args(argv)
    print(report(*collect(args.dirs), top=args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
