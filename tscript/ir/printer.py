"""Print a Graph in TorchScript's text format (`parse_ir` is its exact inverse):

    graph(%x.1 : Float(8, 784),
          %w : Tensor):
      %3 : int = prim::Constant[value=1]()
      %5 : Float(8, 10) = aten::linear(%x.1, %w, %b) # scope: fc1, model.py:12
      %6 : Tensor = prim::If(%cond)
        block0():
          -> (%5)
        block1():
          -> (%x.1)
      return (%6)

Graph-valued attributes (fusion groups' subgraphs) print after the graph as
`with <kind>_<n> = graph(...)` sections, as TorchScript does.
"""
from __future__ import annotations

import json
import math

import numpy as np

from tscript_runtime import dtypes as _dt
from tscript_runtime.graph_json import TensorRef


def format_attr(value) -> str:
    """An attribute value as it appears inside `[...]`."""
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)  # numpy 2 reprs np.float64(1.5) as "np.float64(1.5)"
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, np.dtype):
        return f"tscript.{_dt.NAMES[value]}"
    if isinstance(value, TensorRef):
        return f"<Tensor {value.name}>"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(format_attr(v) for v in value)
        if isinstance(value, tuple):
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        return f"[{inner}]"
    if value is None:
        return "None"
    raise TypeError(f"cannot print attribute value {value!r}")


def _typed(values) -> str:
    return ", ".join(f"%{v.name} : {v.type}" for v in values)


def _names(values) -> str:
    return ", ".join(f"%{v.name}" for v in values)


class _Printer:
    def __init__(self):
        self.lines: list[str] = []
        self.subgraphs: list[tuple[str, object]] = []

    def node(self, node, indent: str) -> None:
        attrs = ""
        if node.attrs:
            parts = []
            for k, v in node.attrs.items():
                if _is_graph(v):
                    label = f"{node.kind}_{len(self.subgraphs)}"
                    self.subgraphs.append((label, v))
                    v = _GraphLabel(label)
                parts.append(f"{k}={v.label if isinstance(v, _GraphLabel) else format_attr(v)}")
            attrs = "[" + ", ".join(parts) + "]"
        lhs = _typed(node.outputs)
        comment = _comment(node)
        self.lines.append(f"{indent}{lhs + ' ' if lhs else ''}= {node.kind}{attrs}({_names(node.inputs)})"
                          f"{comment}")
        for i, block in enumerate(node.blocks):
            self.lines.append(f"{indent}  block{i}({_typed(block.params)}):")
            self.block(block, indent + "    ")
            self.lines.append(f"{indent}    -> ({_names(block.returns)})")

    def block(self, block, indent: str) -> None:
        for n in block.nodes:
            self.node(n, indent)

    def graph(self, graph, header: str = "graph") -> None:
        params = graph.inputs
        if params:
            pad = " " * (len(header) + 1)
            joined = f",\n{pad}".join(f"%{v.name} : {v.type}" for v in params)
            self.lines.append(f"{header}({joined}):")
        else:
            self.lines.append(f"{header}():")
        self.block(graph.block, "  ")
        self.lines.append(f"  return ({_names(graph.outputs)})")


class _GraphLabel:
    def __init__(self, label: str):
        self.label = label


def _is_graph(v) -> bool:
    return type(v).__name__ == "Graph"


def _comment(node) -> str:
    parts = []
    if node.scope:
        parts.append("scope: " + _quoted(node.scope, ", " in node.scope))
    if node.source:
        parts.append(_quoted(node.source, node.source.startswith("scope: ")))
    return (" # " + ", ".join(parts)) if parts else ""


def _quoted(text: str, ambiguous: bool) -> str:
    """`text` as is, or JSON-quoted when the parser could not tell where it ends (it has the ", "
    separating scope from source, a newline, a leading quote...)."""
    if ambiguous or text.startswith('"') or not text.isprintable():
        return json.dumps(text)
    return text


def print_graph(graph) -> str:
    """The text of `graph` (and of the subgraphs its nodes hold)."""
    p = _Printer()
    p.graph(graph)
    done = 0
    while done < len(p.subgraphs):  # subgraphs may hold subgraphs of their own
        label, sub = p.subgraphs[done]
        done += 1
        p.graph(sub, f"with {label} = graph")
    return "\n".join(p.lines) + "\n"
