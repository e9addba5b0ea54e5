"""What `tscript.jit.compile` returns (SPEC §5): `CompiledModel`, and `CompiledTrainingModel` whose
outputs backpropagate through a compiled backward. Each holds its optimized graph and the
tscript_runtime Executable running it (the same class a loaded `.tsm` runs on)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tscript_runtime.dtypes import is_inexact
from tscript_runtime.errors import InputError
from tscript_runtime.executable import compile_ahead
from tscript_runtime.gc_paused import gc_paused
from tscript_runtime.prims import CONV_GROUP

from .._tensor import Tensor
from ..autograd.graph import FREED_MESSAGE, Node, edge
from ..autograd.grad_mode import is_grad_enabled as grad_enabled
from ..frontend.modules import ParameterReader, _attr_tree, to_arrays, to_tensors
from ..ir.graph import Graph
from ..ir.graph_json import graph_to_json
from ..ir.types import TensorType
from .stages import executable, optimized_and_planned

if TYPE_CHECKING:
    from ..autodiff import Differentiated


class CompiledModel:
    """A model compiled to native code; calling it returns tensors equal to eager."""

    def __init__(self, graph: Graph, module=None, dynamic: dict | None = None, name: str = "forward",
                 plan: dict | None = None):
        self.graph = graph
        self.module = module
        self.dynamic = dynamic
        self.name = name
        self.executable = executable(graph, ParameterReader, plan)  #: the native plan, code and executor running it
        self.example_shapes: list | None = None  #: shapes of the example inputs (a saved model plans for them)
        self._tree = [_attr_tree(module)] if module is not None else []
        self._checked: set = set()  # input signatures _check accepted
        self._inputs = [v for v in graph.inputs if not str(v.type).startswith("__module__")]
        self.binder = None  #: a scripted original's parameter names and defaults (binding.py), if any

    @property
    def plan(self) -> dict | None:
        """The native plan (the code-generation decisions a saved model stores)."""
        return self.executable.plan.to_json() if self.executable.plan is not None else None

    def explain(self) -> str:
        """How the model runs natively: its kernels and the whole-graph entry's steps, or the first node
        that keeps the graph from running in one native call."""
        plan = self.plan
        if plan is None:
            return self.executable.describe()
        templates = ", ".join(f"{name}: {k['template']}" for name, k in plan["kernels"].items()) or "none"
        lines = [self.executable.describe(), f"kernels: {templates}"]
        nodes = list(self.graph.nodes)
        if plan["entry"] is not None:
            lines += [f"  {s['template']:<16} {_step_text(nodes[s['node']])}" for s in plan["entry"]]
        return "\n".join(lines)

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR the runtime emits for the model's kernels and entry (for inspection)."""
        from tscript_runtime.native.emit import emit_module
        return str(emit_module(self.executable.plan)) if self.executable.plan is not None else ""

    def _check(self, args: tuple) -> None:
        if len(args) != len(self._inputs):
            raise InputError(f"compiled model expects {len(self._inputs)} inputs, got {len(args)}")
        for i, (a, v) in enumerate(zip(args, self._inputs)):
            t = v.type
            if not isinstance(t, TensorType):
                continue
            if not isinstance(a, Tensor):
                raise InputError(f"input {i} ('{v.name}') must be a Tensor, got {type(a).__name__}")
            if t.dtype is not None and a._data.dtype != t.dtype:
                raise InputError(f"input {i} ('{v.name}') must have dtype {t.dtype.name}, got {a._data.dtype.name}")
            if t.shape is not None:
                _check_shape(i, v.name, t.shape, a._data.shape)

    def __call__(self, *args, **kwargs):
        if self.binder is not None and (kwargs or len(args) != len(self._inputs)):
            args = self.binder.bind(args, kwargs)
        try:
            signature = tuple([(a._data.shape, a._data.dtype) for a in args])
        except AttributeError:  # not all tensors
            signature = None
        if signature not in self._checked:
            self._check(args)
            if signature is not None and len(self._checked) < 256:
                self._checked.add(signature)
        inputs = self._tree + [a._data if a.__class__ is Tensor else to_arrays(a) for a in args]
        outs = self.executable.run(inputs)
        if len(outs) == 1:
            return to_tensors(outs[0])
        return tuple(to_tensors(outs))

    def __repr__(self) -> str:
        return f"<tscript.jit.CompiledModel {self.name}: {self.executable.describe()}>"


def _step_text(node) -> str:
    """A step's node for people; a ConvGroup names the ops its epilogue runs."""
    if node.kind != CONV_GROUP:
        return node.kind
    ops = [n.kind.split("::")[-1] for n in node.attrs["subgraph"].nodes if n.kind != "prim::Constant"]
    return f"{node.kind} ({ops[0]}, then {', '.join(ops[1:]) or 'nothing'} in its epilogue)"


def _check_shape(i: int, name: str, expected: tuple, got: tuple) -> None:
    """Only dims named in `dynamic` (symbolic in the graph) may vary: the optimizer may have folded
    the other sizes into the code."""
    if len(expected) != len(got):
        raise InputError(f"input {i} ('{name}') must have {len(expected)} dimensions, got shape {list(got)}")
    for d, (e, g) in enumerate(zip(expected, got)):
        if isinstance(e, int) and e != g:
            raise InputError(f"input {i} ('{name}'): dimension {d} must be {e} (not declared dynamic), got "
                             f"shape {list(got)}")


class CompiledTrainingModel(CompiledModel):
    """A compiled model with a compiled backward: called with inputs or parameters that require grad,
    its outputs get a `grad_fn` running the compiled backward, so `loss.backward()`, `autograd.grad`
    and optimizers work unchanged.

    The backward graph computes gradients for every parameter and float input (`backward_graph`, what
    a saved model stores); each call runs a variant computing only those required (compiled on first
    use), and a call that needs no gradient runs a forward that saves nothing."""

    def __init__(self, d: "Differentiated", module, lifted: list, float_inputs: list, dynamic):
        forward, plan = optimized_and_planned(d.forward.copy())
        # the backward of a training step, planned now and compiled with the forward (one of them in a child)
        self._speculated = _speculate(d, (True,) * len(lifted) + (False,) * len(float_inputs), (forward, plan))
        super().__init__(forward, module, dynamic, plan=plan)
        self.lifted = lifted
        self.float_inputs = float_inputs  # indices of the float tensor inputs: gradients after the parameters'
        self.n_saved = len(d.saved)
        self.n_outputs = len(d.outputs)   # gradient inputs of the backward (tensor outputs, flattened)
        self.reached = d.reached          # per parameter / float input: do the outputs depend on it?
        self.reaches = d.reaches          # per output: the parameters / float inputs it depends on
        self._inputs = self._inputs[:len(self._inputs) - len(lifted)]
        self._differentiated = d
        self._variants: dict = {}
        self._inference = None

    def __call__(self, *args, **kwargs):
        from ..autograd.grad_mode import state as grad_state
        if self.binder is not None and (kwargs or len(args) != len(self._inputs)):
            args = self.binder.bind(args, kwargs)
        self._check(args)
        params = [p for _, p, _ in self.lifted]
        wrt = params + [args[i] for i in self.float_inputs]
        if not (grad_state.enabled and any(t._requires_grad for t in wrt)):
            return self._forward_only(args)
        outs = self.executable.run(self._arrays(args))
        n_out = len(outs) - self.n_saved
        results = to_tensors(outs[:n_out])
        flat = _leaves(results)
        _attach(flat, _CompiledBackward(self, outs[n_out:], wrt, [(t._data.shape, t._data.dtype) for t in flat]))
        return results[0] if n_out == 1 else tuple(results)

    def _forward_only(self, args: tuple):
        """The outputs without saving anything (no gradient needed)."""
        if self._inference is None:
            g = self._differentiated.forward.copy()
            for _ in range(self.n_saved):
                g.block.remove_return(len(g.outputs) - 1)
            optimized, plan = optimized_and_planned(g)
            self._inference = CompiledModel(optimized, self.module, self.dynamic, plan=plan)
        return self._inference(*args, *[p for _, p, _ in self.lifted])

    @property
    def backward_graph(self):
        """The backward computing every gradient (what a saved model stores; compiled on first use)."""
        return self._full().graph

    @property
    def backward_executable(self):
        """The native plan, code and executor of `backward_graph` (compiled on first use)."""
        return self._full().executable

    def _full(self) -> "_BackwardVariant":
        return self._variant((True,) * (len(self.lifted) + len(self.float_inputs)))

    @gc_paused
    def _variant(self, mask: tuple) -> "_BackwardVariant":
        """The backward computing the gradients of the `wrt` values selected by `mask` (compiled once)."""
        if mask not in self._variants:
            if self._speculated is not None and self._speculated[0] == mask:
                _, g, plan = self._speculated
            else:
                g, plan = _backward_graph(self._differentiated, mask)
            self._speculated = None
            read = [bool(v.uses) for v in g.inputs[:self.n_outputs]]
            self._variants[mask] = _BackwardVariant(g, executable(g, plan=plan), read)
        return self._variants[mask]

    def saved_bytes(self, *args) -> dict:
        """Bytes the forward keeps for the backward on `args`: {"activations": values the forward
        computed, "inputs": (views of) inputs and parameters it keeps references to}."""
        arrays = self._arrays(args)
        saved = self.executable.program.run(arrays)[len(self.graph.outputs) - self.n_saved:]
        held = {id(x) for x in arrays if isinstance(x, np.ndarray)}
        sizes = {"activations": 0, "inputs": 0}
        for x in saved:
            if isinstance(x, np.ndarray):
                sizes["inputs" if id(_root(x)) in held else "activations"] += x.nbytes
        return sizes

    def _arrays(self, args: tuple) -> list:
        """The forward program's inputs: the module, the arguments, the parameters."""
        return ([_attr_tree(self.module)] if self.module is not None else []) + [to_arrays(a) for a in args] + \
            [p._data for _, p, _ in self.lifted]


def _backward_graph(d: "Differentiated", mask: tuple) -> tuple[Graph, dict]:
    """The optimized backward computing the gradients `mask` selects, and its native plan."""
    g = d.backward.copy()
    for i in reversed(range(len(mask))):
        if not mask[i]:
            g.block.remove_return(i)
    return optimized_and_planned(g)


def _speculate(d: "Differentiated", mask: tuple, forward: tuple) -> tuple:
    """(mask, graph, plan) of the backward variant `mask`, planned now; its native code and the
    `forward` (graph, plan)'s are compiled at once, the smaller one in a child process
    (tscript_runtime.executable.compile_ahead): a training step's first backward then finds its code in
    the object cache."""
    g, plan = _backward_graph(d, mask)
    compile_ahead([(graph_to_json(forward[0]), forward[1]), (graph_to_json(g), plan)])
    return mask, g, plan


def _root(x: np.ndarray) -> np.ndarray:
    while isinstance(x.base, np.ndarray):
        x = x.base
    return x


class _BackwardVariant:
    """One compiled backward: its graph, its Executable, and which output gradients it reads."""

    def __init__(self, graph: Graph, executable, reads: list):
        self.graph, self.executable, self.reads = graph, executable, reads


def _leaves(x) -> list:
    """The tensors in nested tuples/lists, depth first (the order of autodiff's flat outputs)."""
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for item in x for t in _leaves(item)]
    return []


def _attach(outputs: list, node) -> None:
    for nr, o in enumerate(outputs):
        if is_inexact(o._data.dtype):
            o._requires_grad, o.grad_fn, o._output_nr = True, node, nr


class _CompiledBackward(Node):
    """The autograd node of one compiled forward call: runs the compiled backward graph (the variant
    computing just the gradients the inputs and parameters of this call require)."""

    def __init__(self, model: CompiledTrainingModel, saved: list, wrt: list, metas: list):
        super().__init__([edge(t) for t in wrt], len(metas))
        self.model, self.saved, self.metas = model, saved, metas
        self.required = tuple(t._requires_grad and r for t, r in zip(wrt, model.reached))

    def name(self) -> str:
        return "CompiledBackward"

    def apply(self, grads: list) -> list:
        """Gradients for the parameters, then the float tensor inputs (None for those not required)."""
        if self.saved is None:
            raise RuntimeError(FREED_MESSAGE)
        if grad_enabled() and any(g is not None and g._requires_grad for g in grads):
            raise RuntimeError("the backward of a compiled model is not differentiable (create_graph=True "
                               "through tscript.jit.compile(..., backward=True) is not supported)")
        mask = self._mask(grads)
        if not any(mask):
            return [None] * len(mask)
        variant = self.model._variant(mask)
        arrays = [None if not read else g._data if g is not None else np.zeros(*meta)
                  for g, meta, read in zip(grads, self.metas, variant.reads)]
        results = iter(to_tensors(variant.executable.run(arrays + list(self.saved))))
        return [next(results) if m else None for m in mask]

    def _mask(self, grads: list) -> tuple:
        """Which gradients to compute: those required that an output with a gradient depends on (as
        in eager autograd, the others stay None, e.g. the parameters of a head the loss does not use)."""
        reached = set()
        for g, wrt in zip(grads, self.model.reaches):
            if g is not None:
                reached |= wrt
        return tuple(r and i in reached for i, r in enumerate(self.required))

    def release(self) -> None:
        self.saved = None
