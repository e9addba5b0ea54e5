"""What the atheris harnesses share: `Choices` over a FuzzedDataProvider, and findings.

A finding is any exception that escapes a harness's `exercise` (its allowed outcomes are caught
there). It is saved under $FUZZ_FINDINGS/<target>/ (default /tmp/fuzz-findings): the file or text
the target was given (e.g. `ValueError-3f2a9c1b04de.tsm`), the raw fuzzer input (`.input`, which
the harness replays: `python fuzz/<harness>.py <that file>`) and the traceback (`.txt`). Then it is
raised, so libFuzzer stops and writes its own crash file there, or with FUZZ_KEEP_GOING=1 the run goes
on (each distinct finding, by exception type and innermost tscript frame, is saved once).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import traceback

import atheris

from mutations import Choices

FINDINGS = os.environ.get("FUZZ_FINDINGS", "/tmp/fuzz-findings")
KEEP_GOING = os.environ.get("FUZZ_KEEP_GOING") == "1"
_seen: set = set()


class FdpChoices(Choices):
    """Choices read from the fuzzer's input; an exhausted input answers 0 and b""."""

    def __init__(self, data: bytes):
        self.fdp = atheris.FuzzedDataProvider(data)

    def index(self, n: int) -> int:
        return self.fdp.ConsumeIntInRange(0, n - 1) if n > 1 else 0

    def blob(self, limit: int) -> bytes:
        return self.fdp.ConsumeBytes(self.index(limit + 1))


class Finding(Exception):
    """An outcome the target's contract forbids that is not an exception of its own (a printed
    graph that does not parse back to itself, native code silently replaced by a fallback)."""


def findings_dir(target: str) -> str:
    path = os.path.join(FINDINGS, target)
    os.makedirs(path, exist_ok=True)
    return path


@contextlib.contextmanager
def finding(target: str, data: bytes, given: bytes, suffix: str):
    """Save any exception raised inside as a finding of `target` (`given`: what the target read)."""
    try:
        yield
    except Exception as e:
        detail = str(e)[:60] if isinstance(e, Finding) else ""  # raised by the harness: no tscript frame
        signature = (type(e).__name__, _innermost(e.__traceback__), detail)
        if signature not in _seen:
            _seen.add(signature)
            _save(target, data, given, suffix, e)
        if not KEEP_GOING:
            raise


def _innermost(tb) -> str:
    """file:line of the innermost frame in tscript's code (where the finding happens)."""
    where = "?"
    for frame, line in traceback.walk_tb(tb):
        if "tscript" in frame.f_code.co_filename:
            where = f"{frame.f_code.co_filename}:{line}"
    return where


def _save(target: str, data: bytes, given: bytes, suffix: str, e: Exception) -> None:
    stem = os.path.join(findings_dir(target), f"{type(e).__name__}-{hashlib.sha1(data).hexdigest()[:12]}")
    for path, content in ((stem + suffix, given), (stem + ".input", data),
                          (stem + ".txt", "".join(traceback.format_exception(e)).encode())):
        with open(path, "wb") as f:
            f.write(content)
    print(f"FINDING {type(e).__name__}: {str(e)[:200]!r} -> {stem}{suffix}", file=sys.stderr, flush=True)


def main(target: str, test_one_input) -> None:
    """Run libFuzzer on `test_one_input` with the command line's options and corpus; its own crash,
    timeout and out-of-memory files go to the target's findings directory unless told otherwise."""
    argv = list(sys.argv)
    if not any(arg.startswith("-artifact_prefix=") for arg in argv):
        argv.append(f"-artifact_prefix={findings_dir(target)}/")
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()
