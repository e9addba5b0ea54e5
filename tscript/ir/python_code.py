"""`.code`: readable Python-like source regenerated from a graph (constants inlined, attribute
reads as `self.a.b`, ops as `torch.<name>(...)`, If/Loop as if/while)."""
from __future__ import annotations

from .graph import Block, Graph, Node
from .printer import format_attr
from .types import is_tensor


class _Writer:
    def __init__(self):
        self.lines: list[str] = []
        self.expr: dict = {}  # Value -> inline expression (constants, attribute paths)

    def name(self, v) -> str:
        return self.expr.get(v) or ("_" + v.name.replace(".", "_") if v.name[0].isdigit() else v.name.replace(".", "_"))

    def block(self, block: Block, indent: str) -> None:
        for n in block.nodes:
            self.node(n, indent)

    def node(self, n: Node, indent: str) -> None:
        args = ", ".join(self.name(v) for v in n.inputs)
        if n.kind == "prim::Constant":
            self.expr[n.output] = format_attr(n.attrs["value"]) if "value" in n.attrs else "None"
            return
        if n.kind == "prim::GetAttr":
            self.expr[n.output] = _attribute(self.name(n.inputs[0]), n.attrs["name"])
            return
        lhs = ", ".join(self.name(o) for o in n.outputs)
        if n.kind == "prim::If":
            self._if(n, lhs, indent)
        elif n.kind == "prim::Loop":
            self._loop(n, indent)
        else:
            call = _CALLS.get(n.kind, lambda a, n: f"torch.{n.kind.split('::')[1].split('.')[0]}({a})")(args, n)
            self.lines.append(f"{indent}{lhs + ' = ' if lhs else ''}{call}")

    def _if(self, n: Node, lhs: str, indent: str) -> None:
        self.lines.append(f"{indent}if {self.name(n.inputs[0])}:")
        for i, b in enumerate(n.blocks):
            if i == 1:
                self.lines.append(f"{indent}else:")
            self.block(b, indent + "    ")
            rets = ", ".join(self.name(r) for r in b.returns)
            self.lines.append(f"{indent}    {lhs + ' = ' + rets if lhs else 'pass'}")

    def _loop(self, n: Node, indent: str) -> None:
        body = n.blocks[0]
        carried = body.params[1:]
        for p, init in zip(carried, n.inputs[2:]):
            self.lines.append(f"{indent}{self.name(p)} = {self.name(init)}")
        i, cond = self.name(body.params[0]), self.name(n.inputs[1])
        self.lines.append(f"{indent}{i} = 0")
        self.lines.append(f"{indent}while {cond} and {i} < {self.name(n.inputs[0])}:")
        self.block(body, indent + "    ")
        rets = [self.name(r) for r in body.returns]
        targets = [cond] + [self.name(p) for p in carried]
        self.lines.append(f"{indent}    {', '.join(targets)} = {', '.join(rets)}")
        self.lines.append(f"{indent}    {i} = {i} + 1")
        for p, out in zip(carried, n.outputs):
            self.lines.append(f"{indent}{self.name(out)} = {self.name(p)}")


_CALLS = {
    "prim::ListConstruct": lambda a, n: f"[{a}]",
    "prim::TupleConstruct": lambda a, n: f"({a}{',' if len(n.inputs) == 1 else ''})",
    "prim::DictConstruct": lambda a, n: "{" + ", ".join(f"{k}: {v}" for k, v in zip(a.split(", ")[::2],
                                                                                      a.split(", ")[1::2])) + "}",
    "prim::ListUnpack": lambda a, n: a,
    "prim::TupleUnpack": lambda a, n: a,
    "aten::__getitem__": lambda a, n: "{}[{}]".format(*a.split(", ")),
    "prim::CallMethod": lambda a, n: f"{a.split(', ')[0]}.{n.attrs['name']}({', '.join(a.split(', ')[1:])})",
    "prim::RaiseException": lambda a, n: f"raise Exception({a})",
}


def _attribute(obj: str, name: str) -> str:
    """`obj.name`, or `getattr(obj, "0")` for names that are no identifiers (Sequential items)."""
    return f"{obj}.{name}" if name.isidentifier() else f"getattr({obj}, {format_attr(name)})"


def _annotation(t) -> str:
    return "Tensor" if is_tensor(t) else str(t)


def graph_to_code(graph: Graph, name: str = "forward") -> str:
    """The source of `graph` as a Python function called `name`."""
    w = _Writer()
    params = ", ".join(f"{w.name(v)}: {_annotation(v.type)}" for v in graph.inputs)
    w.lines.append(f"def {name}({params}):")
    w.block(graph.block, "    ")
    outs = ", ".join(w.name(v) for v in graph.outputs)
    w.lines.append(f"    return {outs}")
    return "\n".join(w.lines) + "\n"
