"""Printed IR text read back for the report: its lines, which value each line defines, which user
source line each came from, and which subgraph section (`with tscript::FusionGroup_0 = graph(...)`)
each line is in. The report links graph nodes, source lines and profile rows to IR lines with it."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_SECTION = re.compile(r"^with (\S+) = graph\(")
_DEFINES = re.compile(r"%([^\s:,()]+) :")
_SUBGRAPH = re.compile(r"subgraph=(\S+?)[,\]]")
_SOURCE = re.compile(r'([^\s,"#]+:\d+)"?$')


@dataclass
class IRText:
    """IR text split into lines, with what each line defines and where it came from."""
    lines: list
    section: list = field(default_factory=list)   #: per line: "" (the graph) or the subgraph's label
    source: list = field(default_factory=list)    #: per line: "file.py:12" or None
    defines: dict = field(default_factory=dict)   #: (section, value name) -> line index
    subgraph: dict = field(default_factory=dict)  #: line index of a group node -> its subgraph's label

    def line_of(self, name: str, section: str = "") -> int | None:
        """The line defining value `name` in `section` (None for graph inputs or unknown names)."""
        return self.defines.get((section, name))


def read_ir(text: str) -> IRText:
    """Split printed IR (tscript.ir's printer) into an IRText."""
    ir = IRText(text.rstrip("\n").split("\n"))
    section = ""
    for i, line in enumerate(ir.lines):
        head = _SECTION.match(line)
        if head:
            section = head.group(1)
        ir.section.append(section)
        code, _, comment = line.partition(" # ")
        found = _SOURCE.search(comment) if comment else None
        ir.source.append(found.group(1) if found else None)
        lhs, eq, rhs = code.partition(" = ")
        if not eq or head or not lhs.lstrip().startswith("%"):
            continue
        for name in _DEFINES.findall(lhs + " "):
            ir.defines.setdefault((section, name), i)
        group = _SUBGRAPH.search(rhs)
        if group:
            ir.subgraph[i] = group.group(1)
    return ir
