"""THE graph interpreter: runs a graph document (see graph_format.py) node by node, with prim::If
and prim::Loop, releasing each intermediate after its last use.

It is generic over a *domain*, the kind of values it moves around: `ArrayDomain` runs op kernels on
numpy arrays (the standalone runtime); tscript passes a domain that dispatches on tensors, so
autograd records through a scripted model. Compiling a graph once into a `Program` (steps with
integer slots) keeps the per-node cost below eager dispatch.
"""
from __future__ import annotations

import numpy as np

from .errors import ModelError, OpError, OpRuntimeError
from .graph_format import TensorRef, check_graph, decode_attr
from .ops import OPS
from .prims import PRIMS, SPREAD

_ONE, _SPREAD, _NONE, _IF, _LOOP = range(5)
_ndarray = np.ndarray


class ArrayDomain:
    """Values are numpy arrays and Python values; ops run their reference kernels directly."""

    def __init__(self, constants: dict | None = None):
        self.constants = constants or {}

    def op_runner(self, op):
        kernel = op.kernel
        tensor_out = len(op.schema.returns) == 1 and op.schema.returns[0].type == "Tensor"

        def run(*args):
            out = kernel(*args)
            return np.asarray(out) if tensor_out and out.__class__ is not _ndarray else out
        return run

    def is_tensor_ref(self, value) -> bool:
        return isinstance(value, TensorRef)

    def constant_tensor(self, ref: TensorRef):
        if ref.name not in self.constants:
            raise ModelError(f"graph refers to tensor constant '{ref.name}', which is not stored")
        return self.constants[ref.name]


class Program:
    """A graph compiled for repeated execution in one domain."""

    def __init__(self, graph: dict, domain):
        check_graph(graph)
        self.domain = domain
        self.slots: dict[str, int] = {}
        self.inputs = [self._slot(i["name"]) for i in graph["inputs"]]
        self.steps = self._compile_block(graph["nodes"], graph["outputs"])
        self.outputs = [self.slots[o] for o in graph["outputs"]]

    def _slot(self, name: str) -> int:
        if name not in self.slots:
            self.slots[name] = len(self.slots)
        return self.slots[name]

    def _compile_block(self, nodes: list, returns: list) -> list:
        steps = [self._compile_node(n) for n in nodes]
        _plan_frees(steps, {self.slots[r] for r in returns})
        return steps

    def _compile_node(self, node: dict) -> list:
        kind, attrs = node["kind"], {k: decode_attr(v) for k, v in node.get("attrs", {}).items()}
        ins = [self.slots[v] for v in node["inputs"]]
        outs = [self._slot(o["name"]) for o in node["outputs"]]
        if kind == "prim::If":
            blocks = [(self._compile_block(b["nodes"], b["returns"]), [self.slots[r] for r in b["returns"]])
                      for b in node["blocks"]]
            return [blocks, ins, outs, _IF, (), kind]
        if kind == "prim::Loop":
            (body,) = node["blocks"]
            params = [self._slot(p["name"]) for p in body["params"]]
            steps = self._compile_block(body["nodes"], body["returns"])
            return [(params, steps, [self.slots[r] for r in body["returns"]]), ins, outs, _LOOP, (), kind]
        if kind in PRIMS:
            fn = PRIMS[kind](attrs, self.domain)
        elif kind in OPS:
            fn = self.domain.op_runner(OPS[kind])
        else:
            raise ModelError(f"graph uses unknown op '{kind}'")
        mode = _SPREAD if (kind in SPREAD or len(outs) > 1) else (_ONE if outs else _NONE)
        return [fn, ins, outs, mode, (), kind]

    def run(self, inputs, env_size_hint: int = 0):
        """Run with `inputs` (one per graph input); returns the list of outputs."""
        if len(inputs) != len(self.inputs):
            raise OpRuntimeError(f"graph expects {len(self.inputs)} inputs, got {len(inputs)}")
        env = [None] * len(self.slots)
        for s, v in zip(self.inputs, inputs):
            env[s] = v
        _run_steps(self.steps, env)
        return [env[s] for s in self.outputs]


def _plan_frees(steps: list, keep: set) -> None:
    """After each step, the slots read for the last time in this block (returns are kept)."""
    last: dict[int, int] = {}
    for i, step in enumerate(steps):
        for s in _reads(step):
            last[s] = i
    frees = [[] for _ in steps]
    for s, i in last.items():
        if s not in keep:
            frees[i].append(s)
    for step, f in zip(steps, frees):
        step[4] = tuple(f)


def _reads(step) -> set:
    """Slots a step reads, including those read inside its nested blocks (from enclosing scopes)."""
    reads = set(step[1])
    if step[3] == _IF:
        for steps, rets in step[0]:
            reads |= set(rets)
            for st in steps:
                reads |= _reads(st)
    elif step[3] == _LOOP:
        params, steps, rets = step[0]
        reads |= set(rets)
        for st in steps:
            reads |= _reads(st)
        reads -= set(params)
    return reads


def _run_steps(steps: list, env: list) -> None:
    for fn, ins, outs, mode, frees, kind in steps:
        try:
            if mode == _ONE:
                env[outs[0]] = fn(*[env[i] for i in ins])
            elif mode == _SPREAD:
                for s, v in zip(outs, fn(*[env[i] for i in ins])):
                    env[s] = v
            elif mode == _NONE:
                fn(*[env[i] for i in ins])
            elif mode == _IF:
                _run_if(fn, env[ins[0]], outs, env)
            else:
                _run_loop(fn, [env[i] for i in ins], outs, env)
        except OpError as e:
            if not getattr(e, "_tscript_node", False):
                e.args = (f"{e.args[0] if e.args else ''}\n  (while running {kind})",) + e.args[1:]
                e._tscript_node = True
            raise
        for s in frees:
            env[s] = None


def _run_if(blocks, cond, outs, env) -> None:
    steps, rets = blocks[0] if bool(cond) else blocks[1]
    _run_steps(steps, env)
    for s, r in zip(outs, rets):
        env[s] = env[r]


def _run_loop(body, args, outs, env) -> None:
    params, steps, rets = body
    max_trip, cond, carried = args[0], args[1], args[2:]
    i = 0
    while bool(cond) and (max_trip is None or i < int(max_trip)):
        env[params[0]] = i
        for s, v in zip(params[1:], carried):
            env[s] = v
        _run_steps(steps, env)
        cond, carried = env[rets[0]], [env[r] for r in rets[1:]]
        i += 1
    for s, v in zip(outs, carried):
        env[s] = v
