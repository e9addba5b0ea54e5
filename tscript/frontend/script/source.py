"""The source text of a Python function as the compiler sees it: dedented (methods are indented
in their class), with the file and offsets that turn positions in the parsed text back into
file lines and columns, and the names the function can see (its globals and closure cells)."""
from __future__ import annotations

import builtins
import inspect
from dataclasses import dataclass, field

from .errors import CompileError


@dataclass
class Source:
    """A function's source: `text` (dedented) and where it came from."""
    text: str
    file: str
    line_offset: int   # file line of the text's line 1, minus 1
    col_offset: int    # indentation removed from every line
    name: str          # qualified name, for messages
    lines: list = field(default_factory=list)

    def __post_init__(self):
        self.lines = self.text.splitlines()

    def error(self, message: str, pos, kind: str | None = None) -> CompileError:
        """A CompileError at `pos` (line, column in `text`), naming the file position."""
        if pos is None:
            return CompileError(f"{message}\n  in {self.name} ({self.file})", kind=kind)
        line, column = pos[0], pos[1]
        source_line = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        if source_line is not None:
            source_line = " " * self.col_offset + source_line
        return CompileError(message, self.file, line + self.line_offset, column + self.col_offset, source_line,
                            self.name.rsplit(".", 1)[-1], kind)


_sources: dict = {}


def get_source(fn) -> Source:
    """The dedented source of a function (or method), or a CompileError when Python has none."""
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code not in _sources:
        _sources[code] = _read_source(fn)
    return _sources[code]


def _read_source(fn) -> Source:
    try:
        lines, start = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError) as e:
        raise CompileError(f"Could not get the source code of {getattr(fn, '__qualname__', fn)!r}: {e}. "
                           f"tscript.jit.script needs functions defined in a file") from None
    indent = len(lines[0]) - len(lines[0].lstrip())
    prefix = lines[0][:indent]
    # lines indented less (blank lines, text inside a multi-line string) stay as they are
    text = "".join(line[indent:] if line.startswith(prefix) else line for line in lines)
    return Source(text, file, start - 1, indent, getattr(fn, "__qualname__", fn.__name__))


_MISSING = object()


def scope_of(fn) -> dict:
    """What names resolve to inside `fn`, outermost first: builtins, globals, closure cells."""
    fn = inspect.unwrap(fn)
    names = dict(vars(builtins))
    names.update(getattr(fn, "__globals__", {}))
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is not None:
        for name, cell in zip(code.co_freevars, cells):
            try:
                names[name] = cell.cell_contents
            except ValueError:  # an empty cell: the name is not bound yet
                pass
    return names
