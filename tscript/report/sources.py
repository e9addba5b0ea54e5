"""The source files a compiled graph came from. Nodes record "file.py:line" (the file's name only), so
the files are found among those that define the model: the classes of its modules, its forward
methods, a traced or scripted function, then a loaded module of that name: tscript's own first (a
scripted model's calls into tscript.nn), then the user's, never an installed package's (whose
`library.py` is some other file)."""
from __future__ import annotations

import inspect
import os
import sys


def source_files(obj, names: set) -> dict:
    """File name -> text, for each of `names` found among the files defining `obj`."""
    paths: dict = {}
    for path in _candidates(obj):
        paths.setdefault(os.path.basename(path), path)
    found = {}
    for name in sorted(names):
        path = paths.get(name) or _loaded_module_file(name)
        if path and os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                found[name] = f.read()
    return found


def _candidates(obj):
    """Paths of the files defining `obj`: a module's classes (its submodules' too), a function."""
    inner = getattr(obj, "_module", None) or obj  # a ScriptModule holds the nn.Module it was made from
    modules = inner.modules() if hasattr(inner, "modules") and callable(inner.modules) else [inner]
    for item in modules:
        for target in (type(item), getattr(item, "forward", None), item):
            path = _file_of(target)
            if path:
                yield path
    for attr in ("fn", "_fn", "__wrapped__"):
        path = _file_of(getattr(obj, attr, None))
        if path:
            yield path


def _file_of(target) -> str | None:
    if target is None:
        return None
    try:
        return inspect.getsourcefile(target)
    except (TypeError, OSError):
        return None


def _loaded_module_file(name: str) -> str | None:
    """The file of a loaded module called `name`: tscript's, else one outside the installed packages
    and the standard library (the first in import order), else None."""
    found = [(key, module.__file__) for key, module in list(sys.modules.items())
             if isinstance(getattr(module, "__file__", None), str) and os.path.basename(module.__file__) == name]
    ours = [path for key, path in found if key == "tscript" or key.startswith("tscript.")]
    users = [path for key, path in found if not _installed(path)]
    return (ours or users or [None])[0]


def _installed(path: str) -> bool:
    """Is `path` in an installed package or the standard library (not the user's code)?"""
    parts = os.path.normpath(path).split(os.sep)
    return "site-packages" in parts or "dist-packages" in parts or path.startswith(_STDLIB)


_STDLIB = os.path.dirname(os.__file__)
