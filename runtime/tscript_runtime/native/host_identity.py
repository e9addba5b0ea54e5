"""The host CPU as LLVM names it (triple, CPU name, features), remembered per CPU identity in the cache
directory: a file `host-<identity>.json`, the identity a hash of what the kernel reports of the CPU
(vendor, family, model, stepping and every feature flag of /proc/cpuinfo) and the llvmlite version.
A CPU with other features, or another LLVM, has another identity, so LLVM is asked again. Where
/proc/cpuinfo is absent, nothing is remembered."""
from __future__ import annotations

import hashlib
import json
import os
import platform

from ..user_cache import cache_dir

_FIELDS = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags")


def identity() -> str | None:
    """A hash of the first CPU's description in /proc/cpuinfo and the llvmlite version, or None."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    first = text.split("\n\n", 1)[0]
    lines = sorted(line.strip() for line in first.splitlines() if line.split(":", 1)[0].strip() in _FIELDS)
    if not any(line.startswith("flags") for line in lines):
        return None
    import llvmlite
    h = hashlib.sha256("\n".join([platform.machine(), llvmlite.__version__, *lines]).encode())
    return h.hexdigest()[:32]


def _path() -> str | None:
    key = identity()
    return None if key is None else os.path.join(cache_dir(), f"host-{key}.json")


def remembered() -> dict | None:
    """The remembered description for this CPU, or None."""
    path = _path()
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            found = json.load(f)
    except (OSError, ValueError):
        return None
    keys = {"triple", "cpu", "features"}
    if not isinstance(found, dict) or set(found) != keys or not all(isinstance(found[k], str) for k in keys):
        return None
    return found


def remember(description: dict) -> None:
    """Write the description for this CPU (atomically; an unwritable cache directory is no error)."""
    from .cache import write_atomically
    path = _path()
    if path is not None:
        write_atomically(path, json.dumps(description).encode())
