"""Compiling object code in child processes, into the object cache, while this process does other work.

llvmlite serializes every LLVM call of a process behind one lock, so two compilations in one process
never overlap; two processes do. A child is `python -c` importing only this runtime (no `__main__` of
the user's is run again, unlike multiprocessing's spawn); it writes its result into the same
checksummed cache (TSCRIPT_CACHE_DIR) under a key the parent chose, where the parent's next lookup
of that key finds it (`wait_for(key)` first). A child that fails or cannot start costs nothing but
the time: the parent compiles the code itself when it does not find it. Set
TSCRIPT_BUILD_PROCESSES=0 to keep every compilation in-process.

    library parts:  build_library(keys, parts)       (parts.py; the child builds them)
    a model's code: build_object(key, ir_text, declared)   (the parent emitted the IR)
"""
from __future__ import annotations

import json
import os
import sys
import threading

_building: dict = {}  # cache key -> the Popen building it
WAIT_SECONDS = 600   # a child still compiling after this long is stopped (the GPT's backward takes ~1 s)
_lock = threading.Lock()

_LIBRARY = "import sys; from tscript_runtime.native.library.parts import build; build(sys.argv[1:])"
_OBJECT = "import sys; from tscript_runtime.native.child_builds import compile_stdin; compile_stdin(sys.argv[1])"


def enabled() -> bool:
    return bool(sys.executable) and os.environ.get("TSCRIPT_BUILD_PROCESSES", "1") != "0"


def building(key: str) -> bool:
    with _lock:
        return key in _building


def busy() -> bool:
    """Is a child still compiling (one core taken)?"""
    with _lock:
        return any(child.poll() is None for child in _building.values())


def build_library(keys: list[str], parts: list[str]) -> None:
    """A child compiling the library `parts` (their cache `keys`) into the cache."""
    _start(keys, [_LIBRARY, *parts], None)


def build_object(key: str, ir_text: str, declared: set[str]) -> None:
    """A child compiling `ir_text` (a module declaring the functions `declared`) into the cache as `key`."""
    payload = json.dumps({"declared": sorted(declared)}).encode() + b"\n" + ir_text.encode()
    _start([key], [_OBJECT, key], payload)


def wait_for(key: str) -> bool:
    """Wait for the child building `key`, if any; True if there was one."""
    with _lock:
        child = _building.get(key)
        exited = _exit_signal(child) if child is not None else None
    if child is None:
        return False
    import subprocess  # (here and below: a warm load starts no child, so it need not import subprocess)
    try:
        _wait(child, exited, WAIT_SECONDS)
    except subprocess.TimeoutExpired:  # stuck: the caller compiles the code itself
        child.kill()
        child.wait()
    with _lock:
        for k in [k for k, c in _building.items() if c is child]:
            del _building[k]
    return True


def _exit_signal(child):
    """A pidfd readable once `child` has exited (None where there is none, or it is reaped already);
    opened under _lock, where nothing reaps the child meanwhile (busy() polls under it)."""
    if child.poll() is not None or not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(child.pid)
    except OSError:
        return None


def _wait(child, exited, seconds: float) -> None:
    """Wait for `child` at most `seconds`, woken the moment it exits through its pidfd `exited`
    (Popen.wait polls, with sleeps of up to 50 ms; a cold load waits on a child or two)."""
    import select
    import subprocess
    if exited is None:
        child.wait(timeout=seconds)
        return
    try:
        if not select.select([exited], [], [], seconds)[0]:
            raise subprocess.TimeoutExpired(child.args, seconds)
    finally:
        os.close(exited)
    child.wait()


def _start(keys: list[str], argv: list[str], stdin: bytes | None) -> None:
    import subprocess
    from ..user_cache import cache_dir
    if not enabled():
        return
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "TSCRIPT_CACHE_DIR": cache_dir(), "TSCRIPT_BUILD_PROCESSES": "0",
           "PYTHONPATH": os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    try:
        child = subprocess.Popen([sys.executable, "-c", *argv], env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL)
    except OSError:
        return
    if stdin:
        threading.Thread(target=_feed, args=(child, stdin), daemon=True).start()
    with _lock:
        for key in keys:
            _building[key] = child


def _feed(child, data: bytes) -> None:
    try:
        child.stdin.write(data)
        child.stdin.close()
    except OSError:  # the child died: the parent compiles the code itself
        pass


def compile_stdin(key: str) -> None:
    """(In a child) compile the module read from stdin into the cache as `key`."""
    from .cache import cached_object
    from .link import imports_of_declared
    from .target import optimize_and_emit
    head, _, text = sys.stdin.buffer.read().partition(b"\n")
    declared = set(json.loads(head)["declared"])

    def emit():
        obj = optimize_and_emit(text.decode())
        return obj, imports_of_declared(declared, obj)
    cached_object(key, emit)


def _after_fork() -> None:
    """A forked child does not wait for its parent's children."""
    global _lock
    _lock = threading.Lock()
    _building.clear()


os.register_at_fork(after_in_child=_after_fork)
