"""THE graph interpreter: runs a graph document (see graph_json.py) node by node, with prim::If
and prim::Loop, releasing each intermediate after its last use.

It is generic over a *domain*, the kind of values it moves around: `ArrayDomain` runs op kernels on
numpy arrays (the standalone runtime); tscript passes a domain that dispatches on tensors, so
autograd records through a scripted model. A domain provides `op_runner(op)`, `is_tensor_ref(value)`
and `constant_tensor(ref)`; it may set `array_outputs = True` to have single tensor results of ops
normalized to ndarrays (kernels may return numpy scalars for 0-dim results).

Compiling a graph once into a `Program` keeps the per-node cost below eager dispatch: values live in
integer slots of one list, each node becomes a `Step` that reads its inputs with a C-level getter,
constant nodes are evaluated once at compile time, and the slots to clear after each step are planned
in advance.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from operator import itemgetter
from typing import Callable, NamedTuple

import numpy as np

from .errors import ModelError, OpError, OpIndexError, OpRuntimeError, OpTypeError, OpValueError
from .graph_json import TensorRef, all_nodes, decode_attr
from .ops import OPS
from .ops.registry import TensorMeta
from .prims import COMPILE_TIME, PRIMS, SPREAD

_ONE, _ARRAY, _SPREAD, _NONE, _IF, _LOOP, _HOOKED = range(7)  # Step.mode
_ndarray = np.ndarray
_asarray = np.asarray
_CLEAN = ((IndexError, OpIndexError), (TypeError, OpTypeError), (ValueError, OpValueError))


class CompiledBlock(NamedTuple):
    """A nested block (of prim::If or prim::Loop) compiled into the enclosing program's slots."""

    params: list[int]
    """Slots of the block's parameters (a loop body's iteration count and carried values)."""
    steps: list[Step]
    """The block's steps, run in order."""
    returns: list[int]
    """Slots of the values the block returns."""
    local_returns: list[int]
    """The returns defined in the block: a loop clears them between iterations."""


# A class with __slots__, not a NamedTuple: CPython's fast unpacking is for exact tuples only, so
# unpacking NamedTuple steps in `_run_steps` cost ~5% per node; reading slots costs no measurable time.
@dataclass(slots=True)
class Step:
    """One compiled node."""

    mode: int
    """How the result reaches `out`: _ONE, _ARRAY (made an ndarray), _SPREAD, _NONE, _IF, _LOOP or
    _HOOKED (a profiling hook around another step: `Program.with_hooks`)."""
    fn: Callable | list[CompiledBlock] | CompiledBlock | tuple
    """What runs: the op's runner; for _IF the [then, else] blocks, for _LOOP the body block, for
    _HOOKED (hook, [the step])."""
    args: Callable
    """env -> the node's input values (a C-level getter)."""
    out: int | list[int] | None
    """The output slot; the list of output slots for _SPREAD, _IF and _LOOP; None for _NONE."""
    where: tuple
    """(kind, source line or None): names the node in errors."""
    ins: list[int]
    """The input slots (to plan `frees`)."""
    frees: tuple = ()
    """Slots cleared after the step: those read or defined for the last time by it."""


class ArrayDomain:
    """Values are numpy arrays and Python values; ops run their reference kernels directly."""

    array_outputs = True

    def __init__(self, constants: dict | None = None, native: dict | None = None):
        self.constants = constants or {}
        self.native = native or {}  # fusion-group kernel name -> native launcher (kernels.FusedKernel)

    def op_runner(self, op):
        return op.kernel

    def native_kernel(self, name: str):
        """The compiled kernel of a fusion group, or None (then the group's subgraph is interpreted)."""
        return self.native.get(name)

    def is_tensor_ref(self, value) -> bool:
        return isinstance(value, TensorRef)

    def constant_tensor(self, ref: TensorRef):
        if ref.name not in self.constants:
            raise ModelError(f"graph refers to tensor constant '{ref.name}', which is not stored")
        return self.constants[ref.name]


def check_constants(graph: dict, constants: dict) -> None:
    """Every tensor constant `graph` (a checked document) names is in `constants`: what building its
    Program in an ArrayDomain checks, for a caller that builds it later or never."""
    for node in all_nodes(graph["nodes"]):
        check_constant(node, constants)


def check_constant(node: dict, constants: dict) -> None:
    """A prim::Constant node naming a tensor constant names one in `constants` (ModelError if not)."""
    if node["kind"] == "prim::Constant":
        value = node.get("attrs", {}).get("value")
        name = value.get("tensor") if isinstance(value, dict) and value.keys() == {"tensor"} else None
        if name is not None and (not isinstance(name, str) or name not in constants):
            raise ModelError(f"graph refers to tensor constant '{name}', which is not stored")


class Program:
    """A graph compiled for repeated execution in one domain."""

    def __init__(self, graph: dict, domain, release: bool = True):
        """`graph`: a document check_graph accepted (the compiler's, or a file's once checked)."""
        self.domain = domain
        self.release = release  # clear each intermediate after its last reader (False: keep all, to measure)
        self.slots: dict[str, int] = {}
        self.fixed: dict[int, object] = {}  # slot -> value known at compile time (constants)
        self.inputs = [self._slot(i["name"]) for i in graph["inputs"]]
        self.steps = self._compile_block(graph["nodes"], graph["outputs"], self.inputs)
        self.outputs = [self.slots[o] for o in graph["outputs"]]
        self._initial = [None] * len(self.slots)
        for s, v in self.fixed.items():
            self._initial[s] = v

    def run(self, inputs) -> list:
        """Run with `inputs` (one per graph input); returns the list of outputs."""
        if len(inputs) != len(self.inputs):
            raise OpRuntimeError(f"graph expects {len(self.inputs)} inputs, got {len(inputs)}")
        env = self._initial.copy()
        for s, v in zip(self.inputs, inputs):
            env[s] = v
        outputs = self.outputs
        _run_steps(self.steps, env)
        return [env[s] for s in outputs]

    def with_hooks(self, make_hook: Callable) -> "Program":
        """A copy of this program whose every step (those in If/Loop blocks too) runs through
        `make_hook(step, names, depth)`: a callable `(steps, env)` that must call `run_steps(steps, env)`;
        `names` are the step's output value names, `depth` its number of enclosing blocks. Hooks are
        made in graph order. For profiling: the plain program pays nothing."""
        names = {slot: name for name, slot in self.slots.items()}
        program = copy.copy(self)
        program.steps = _hooked(self.steps, make_hook, names, 0)
        return program

    # -- compiling --------------------------------------------------------------------------------------
    def _slot(self, name: str) -> int:
        if name not in self.slots:
            self.slots[name] = len(self.slots)
        return self.slots[name]

    def _compile_block(self, nodes: list, returns: list, params: list) -> list:
        """Steps of one block; values defined in it are cleared after their last read in it."""
        steps = [step for step in map(self._compile_node, nodes) if step is not None]
        if self.release:
            _plan_frees(steps, params, {self.slots[r] for r in returns} | set(self.fixed))
        return steps

    def _compile_node(self, node: dict):
        kind = node["kind"]
        attrs = {k: decode_attr(v) for k, v in node.get("attrs", {}).items()}
        ins = [self.slots[v] for v in node["inputs"]]
        outs = [self._slot(o["name"]) for o in node["outputs"]]
        where = _where(node)
        if kind == "prim::If":
            blocks = [self._compile_nested(b) for b in node["blocks"]]
            return Step(_IF, blocks, itemgetter(ins[0]), outs, where, ins)
        if kind == "prim::Loop":
            (body,) = node["blocks"]
            return Step(_LOOP, self._compile_nested(body), _getter(ins), outs, where, ins)
        fn = self._runner(kind, attrs)
        if kind in COMPILE_TIME:
            self.fixed[outs[0]] = fn()
            return None
        if kind in SPREAD or len(outs) > 1:
            mode, out = _SPREAD, outs
        elif not outs:
            mode, out = _NONE, None
        else:
            array = kind in OPS and getattr(self.domain, "array_outputs", False) and _tensor_result(OPS[kind])
            mode, out = (_ARRAY if array else _ONE), outs[0]
        return Step(mode, fn, _getter(ins), out, where, ins)

    def _compile_nested(self, block: dict) -> CompiledBlock:
        params = [self._slot(p["name"]) for p in block["params"]]
        steps = self._compile_block(block["nodes"], block["returns"], params)
        rets = [self.slots[r] for r in block["returns"]]
        local = set(params).union(*map(_defines, steps)) - set(self.fixed)
        return CompiledBlock(params, steps, rets, [r for r in rets if r in local])

    def _runner(self, kind: str, attrs: dict):
        if kind in PRIMS:
            return PRIMS[kind](attrs, self.domain)
        if kind in OPS:
            return self.domain.op_runner(OPS[kind])
        raise ModelError(f"graph uses unknown op '{kind}'")


def _hooked(steps: list, make_hook: Callable, names: dict, depth: int) -> list:
    """Each of `steps` wrapped in a _HOOKED step (nested blocks' steps wrapped as well)."""
    wrapped = []
    for step in steps:
        out = step.out if isinstance(step.out, list) else [step.out] if step.out is not None else []
        hook = make_hook(step, [names[s] for s in out], depth)
        inner = step
        if step.mode in (_IF, _LOOP):
            blocks = [b._replace(steps=_hooked(b.steps, make_hook, names, depth + 1)) for b in _nested(step)]
            inner = replace(step, fn=blocks if step.mode == _IF else blocks[0])
        wrapped.append(Step(_HOOKED, (hook, [inner]), step.args, None, step.where, step.ins))
    return wrapped


def _getter(ins: list):
    """A C-level function env -> the sequence of input values (works for 0, 1 or many inputs)."""
    if len(ins) <= 1:
        return itemgetter(slice(ins[0], ins[0] + 1) if ins else slice(0, 0))
    return itemgetter(*ins)


def _tensor_result(op) -> bool:
    returns = op.schema.returns
    return len(returns) == 1 and returns[0].type == "Tensor"


def _where(node: dict) -> tuple:
    """What an error says about the node: its kind and the user's source line when recorded."""
    source = node.get("source")
    return node["kind"], (source if isinstance(source, str) else None)


# -- memory: which slots each step clears ----------------------------------------------------------------
def _plan_frees(steps: list, params: list, keep: set) -> None:
    """Give each step the slots read (or defined) for the last time by it. Only slots defined in
    this block or its nested blocks are cleared here: an enclosing block's value read inside a loop
    body is still needed by the next iteration and after the loop."""
    local = set(params)
    last: dict[int, int] = {}
    for i, step in enumerate(steps):
        defined = _defines(step)
        local |= defined
        for s in defined | _reads(step):
            last[s] = i
    frees = [[] for _ in steps]
    for s, i in last.items():
        if s in local and s not in keep:
            frees[i].append(s)
    for step, f in zip(steps, frees):
        step.frees = tuple(f)


def _defines(step: Step) -> set:
    """Slots a step defines, including everything defined inside its nested blocks."""
    out = step.out
    defined = set(out) if isinstance(out, list) else ({out} if out is not None else set())
    for block in _nested(step):
        defined |= set(block.params)
        for st in block.steps:
            defined |= _defines(st)
    return defined


def _reads(step: Step) -> set:
    """Slots a step reads, including those read inside its nested blocks and their block params
    (cleared by the enclosing block once the If/Loop is done)."""
    reads = set(step.ins)
    for block in _nested(step):
        reads |= set(block.params) | set(block.returns)
        for st in block.steps:
            reads |= _reads(st)
    return reads


def _nested(step: Step) -> list[CompiledBlock]:
    if step.mode == _IF:
        return step.fn
    if step.mode == _LOOP:
        return [step.fn]
    return []


# -- running -------------------------------------------------------------------------------------------
def _run_steps(steps: list[Step], env: list) -> None:
    for step in steps:
        mode = step.mode
        fn = step.fn
        args = step.args
        out = step.out
        try:
            if mode == _ARRAY:  # (no local variable: it would keep the value alive after its slot is freed)
                env[out] = fn(*args(env))
                if env[out].__class__ is not _ndarray:
                    env[out] = _asarray(env[out])
            elif mode == _ONE:
                env[out] = fn(*args(env))
            elif mode == _SPREAD:
                _spread(fn(*args(env)), out, env)
            elif mode == _NONE:
                fn(*args(env))
            elif mode == _IF:
                _run_if(fn, args(env), out, env)
            elif mode == _LOOP:
                _run_loop(fn, args(env), out, env)
            else:
                fn[0](fn[1], env)
        except Exception as e:
            if isinstance(e, OpError):
                _name_node(e, step.where)
                raise
            raise _clean(e, step.where, args(env)) from e
        if step.frees:
            for s in step.frees:
                env[s] = None


run_steps = _run_steps  # what a profiling hook (Program.with_hooks) calls to run its step


def _spread(values, outs: list, env: list) -> None:
    """A multi-output node's results into its slots; a count other than the graph's is an error
    (e.g. a trace unrolled for 4 time steps given a sequence of 6), never a silent truncation."""
    if len(values) != len(outs):
        raise OpRuntimeError(f"expected {len(outs)} values but got {len(values)}: the graph was made for "
                             f"another input size")
    for s, v in zip(outs, values):
        env[s] = v


def _run_if(blocks: list[CompiledBlock], cond, outs: list, env: list) -> None:
    block = blocks[0] if bool(cond) else blocks[1]
    _run_steps(block.steps, env)
    for s, r in zip(outs, block.returns):
        env[s] = env[r]


def _run_loop(body: CompiledBlock, args, outs: list, env: list) -> None:
    """prim::Loop(max_trip_count, condition, *carried) with body (i, *carried) -> (condition, *carried)."""
    params, rets = body.params, body.returns
    max_trip, cond, carried = args[0], args[1], list(args[2:])
    max_trip = None if max_trip is None else int(max_trip)
    i = 0
    while bool(cond) and (max_trip is None or i < max_trip):
        env[params[0]] = i
        _assign(env, params[1:], carried)
        carried = None  # the body frees its params after their last use: hold no other reference
        _run_steps(body.steps, env)
        cond, carried = env[rets[0]], [env[r] for r in rets[1:]]
        for r in body.local_returns:
            env[r] = None
        i += 1
    _assign(env, outs, carried)


def _assign(env: list, slots: list, values) -> None:
    # a function, so that no loop variable keeps the last value alive in the caller's frame
    for s, v in zip(slots, values):
        env[s] = v


def _name_node(error: OpError, where: tuple) -> None:
    """Append the failing node to a clear error's message, once (the innermost node wins)."""
    if not getattr(error, "_tscript_node", False):
        kind, source = where
        head = error.args[0] if error.args else ""
        error.args = (f"{head}\n  (while running {kind}{' at ' + source if source else ''})",) + error.args[1:]
        error._tscript_node = True


def _clean(error: Exception, where: tuple, values) -> OpError:
    """A numpy (or other) exception from a kernel as a clean Op* error naming the node: the op's
    shape/dtype rules say what is wrong with its inputs, else the matching class keeps numpy's words."""
    op = OPS.get(where[0])
    located = _explain(op, values) if op is not None else None
    if located is None:
        clean = next((c for builtin, c in _CLEAN if isinstance(error, builtin)), OpRuntimeError)
        located = clean(f"{type(error).__name__}: {error}")
    _name_node(located, where)
    return located


def _explain(op, values):
    metas = [[_meta(v) for v in x] if isinstance(x, list) else _meta(x) for x in values]
    try:
        if op.dtype is not None:
            op.dtype(*metas)
        if op.shape is not None:
            op.shape(*metas)
    except OpError as rule_error:
        return rule_error
    except Exception:  # a rule that cannot judge these values explains nothing
        return None
    return None


def _meta(x):
    return TensorMeta(x.shape, x.dtype) if x.__class__ is _ndarray else x
