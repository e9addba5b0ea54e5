"""A one-line progress display on stderr for work a person waits on (`tscript report`, compiling a large
model from the CLI, the benchmark suites): each step replaces the line, with the time so far, and the
line is cleared at the end. It writes nothing when stderr is not a terminal (logs, pipes, tests)."""
from __future__ import annotations

import sys
import time


class Progress:
    """`with Progress("tscript report") as p: p.step("tracing"); ...; p.step("passes", 3, 16)`."""

    def __init__(self, title: str, stream=None, enabled: bool | None = None):
        self.title = title
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self.start = time.perf_counter()
        self.last = 0.0

    def __enter__(self) -> "Progress":
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.clear()

    def step(self, text: str, done: int | None = None, total: int | None = None) -> None:
        """Show `text` (and `done`/`total` when given) as the current step."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if done is not None and 0 < done < (total or 0) and now - self.last < 0.05:
            return  # counting steps: at most 20 redraws a second
        self.last = now
        count = f" [{done}/{total}]" if done is not None and total else ""
        line = f"{self.title}: {text}{count} ({now - self.start:.1f} s)"
        self.stream.write(f"\r\x1b[K{line[:_width() - 1]}")
        self.stream.flush()

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


def _width() -> int:
    import shutil
    return shutil.get_terminal_size((100, 20)).columns
