"""The per-user on-disk cache of emitted object code (TSCRIPT_CACHE_DIR, default ~/.cache/tscript).

An entry is keyed by a hash of everything its code depends on (for a model: the graph, the native
plan, this runtime's version and the host CPU) and holds the object code with the external
functions it imports, behind a SHA-256 of both. Entries are written atomically (temp file + rename);
one whose checksum does not match (a torn write, a flipped bit) is emitted again and replaced,
never linked.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading

from ..user_cache import cache_dir

MAGIC = b"tscript-object 1\n"


def code_digest() -> str:
    """A hash of this runtime's code (every module of the package): part of every key, so that code
    emitted by another version of the emitter is never taken for this one's."""
    return package_digest(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def package_digest(package: str) -> str:
    """A hash of the code of the Python package in directory `package` (every module). Remembered in
    the cache directory under the files' identities (path, inode, size, modification and change times:
    any write changes the change time), so a process reads the package's files only when one changed."""
    if package not in _digests:
        files = _sources(package)
        stamp = hashlib.sha256(repr([(name, _identity(path)) for name, path in files]).encode()).hexdigest()
        remembered = os.path.join(cache_dir(), f"code-{stamp}.sha256")
        try:
            with open(remembered, encoding="ascii") as f:
                digest = f.read(64)
        except OSError:
            digest = ""
        if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
            digest = _hash_sources(files)
            write_atomically(remembered, digest.encode())
        _digests[package] = digest
    return _digests[package]


def _sources(package: str) -> list[tuple[str, str]]:
    """(name relative to the package, path) of every module, in a fixed order."""
    out = []
    for root, dirs, files in os.walk(package):
        dirs.sort()
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(root, name)
            out.append((os.path.relpath(path, package), path))
    return out


def _identity(path: str) -> tuple:
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _hash_sources(files: list) -> str:
    h = hashlib.sha256()
    for name, path in files:
        with open(path, "rb") as f:
            h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()


_digests: dict = {}  # package directory -> its code's digest


def cache_key(*parts: str | bytes) -> str:
    """The key of an entry: a SHA-256 of `parts` (the text its code depends on; bytes are UTF-8 text
    already encoded), this runtime's code and the host CPU."""
    from .target import host
    h = hashlib.sha256()
    hc = host()
    parts = (code_digest(), hc["triple"], hc["cpu"], hc["features"]) + parts
    for part in parts:
        h.update(part if isinstance(part, bytes) else part.encode())
        h.update(b"\0")
    return h.hexdigest()


def lookup(key: str) -> tuple[bytes, set[str]] | None:
    """(object code, imported functions) of an intact entry for `key`, or None."""
    return _read(os.path.join(cache_dir(), key + ".o"))


def cached_object(key: str, emit) -> tuple[bytes, set[str]]:
    """(object code, imported functions) for `key`: from the cache when an intact entry is there,
    else `emit()` (which returns the same pair), stored for next time."""
    found = lookup(key)
    if found is not None:
        return found
    obj, imports = emit()
    _write(os.path.join(cache_dir(), key + ".o"), obj, imports)
    return obj, imports


def _read(path: str):
    payload = read_checked(path, MAGIC)
    if payload is None:
        return None
    listing, _, obj = payload.partition(b"\n")
    try:
        imports = json.loads(listing)
    except ValueError:
        return None
    return obj, set(imports)


def _write(path: str, obj: bytes, imports: set[str]) -> None:
    write_checked(path, MAGIC, json.dumps(sorted(imports)).encode() + b"\n" + obj)


def read_checked(path: str, magic: bytes) -> bytes | None:
    """The payload of the entry at `path` written by `write_checked` with `magic`, or None when there
    is none or it does not check out (a torn write, a flipped bit, another kind of entry)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    head, digest, payload = data[:len(magic)], data[len(magic):len(magic) + 64], data[len(magic) + 64:]
    if head != magic or digest != hashlib.sha256(payload).hexdigest().encode():
        return None
    return payload


def write_checked(path: str, magic: bytes, payload: bytes) -> None:
    """`payload` into `path` behind `magic` and its SHA-256, atomically (write_atomically)."""
    write_atomically(path, magic + hashlib.sha256(payload).hexdigest().encode() + payload)


def write_atomically(path: str, data: bytes) -> None:
    """`data` into `path` by a temporary file and a rename (a reader never sees half of it); a read-only
    cache directory is no reason to fail: then nothing is written."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        pass
