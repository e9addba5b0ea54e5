"""`CompileError`: what `tscript.jit.script` raises for code it cannot compile. The message has a
one-line explanation, then the file, line and column, the source line and a caret under the
column, like TorchScript's:

    Expected a value of type 'int' for argument 'dim' but instead found type 'str'.
      File "model.py", line 12, column 20, in forward
            return x.sum(dim="a")
                         ^
"""
from __future__ import annotations


class CompileError(RuntimeError):
    """Unsupported syntax, an unknown name or a type error in scripted code."""

    def __init__(self, explanation: str, file: str | None = None, line: int | None = None,
                 column: int | None = None, source_line: str | None = None, function: str | None = None,
                 kind: str | None = None):
        self.explanation = explanation  #: the one-line reason
        self.kind = kind                #: "type" for a value of the wrong type (else None)
        self.file = file                #: path of the source file (None if unknown)
        self.line = line                #: 1-based line in that file
        self.column = column            #: 1-based column in that line
        self.source_line = source_line
        self.function = function
        super().__init__(self._render())

    def _render(self) -> str:
        if self.file is None or self.line is None:
            return self.explanation
        where = f'  File "{self.file}", line {self.line}, column {self.column}'
        if self.function:
            where += f", in {self.function}"
        if self.source_line is None:
            return f"{self.explanation}\n{where}"
        text = self.source_line.rstrip("\n")
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        caret = " " * max(self.column - 1 - indent, 0) + "^"
        return f"{self.explanation}\n{where}\n        {stripped}\n        {caret}"
