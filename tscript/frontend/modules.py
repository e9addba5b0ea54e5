"""`ScriptFunction` and `ScriptModule`: compiled objects holding IR graphs, called through the one
executor (`tscript_runtime.executor`). Without autograd the graph runs on numpy arrays (fast);
when inputs or parameters require grad it runs on tensors through dispatch, so backward works.
"""
from __future__ import annotations

import numpy as np

from tscript_runtime.executor import ArrayDomain, Program
from tscript_runtime.graph_json import TensorRef

from .._dispatch import dispatch
from .._tensor import Tensor, _make
from ..autograd.grad_mode import state as grad_state
from ..ir.graph import Graph
from ..nn.modules.module import AttributeTable
from ..ir.passes.inline import inline_calls
from ..ir.graph_json import graph_to_json


class TensorDomain:
    """Executor domain of tscript tensors: ops go through dispatch (autograd records them)."""

    def __init__(self, constants: dict, python_functions: dict | None = None):
        self.constants = constants
        self.python_functions = python_functions or {}

    def python_op(self, name: str):
        """What a prim::PythonOp runs: a scripted function's @ignore'd Python callee."""
        return self.python_functions[name]

    def op_runner(self, op):
        return lambda *args: dispatch(op, args)

    def is_tensor_ref(self, value) -> bool:
        return isinstance(value, TensorRef)

    def constant_tensor(self, ref: TensorRef):
        return _make(self.constants[ref.name])


class PythonArrayDomain(ArrayDomain):
    """The array domain, plus the @ignore'd Python functions prim::PythonOp nodes call (they take
    and return tscript values)."""

    def __init__(self, constants: dict, python_functions: dict):
        super().__init__(constants)
        self.python_functions = python_functions

    def python_op(self, name: str):
        fn = self.python_functions[name]
        return lambda *args: to_arrays(fn(*to_tensors(args)))


def to_arrays(x):
    """Tensors inside nested containers as numpy arrays."""
    if isinstance(x, Tensor):
        return x._data
    if isinstance(x, (list, tuple)):
        return type(x)(to_arrays(v) for v in x) if not hasattr(x, "_fields") else type(x)(*map(to_arrays, x))
    if isinstance(x, dict):
        return {k: to_arrays(v) for k, v in x.items()}
    return x


def to_tensors(x):
    """Arrays inside nested containers as tscript tensors (numpy scalars as 0-dim tensors)."""
    if isinstance(x, np.ndarray):
        return _make(x)
    if isinstance(x, np.generic):
        return _make(np.asarray(x))
    if isinstance(x, (list, tuple)):
        return type(x)(to_tensors(v) for v in x)
    if isinstance(x, dict):
        return {k: to_tensors(v) for k, v in x.items()}
    return x


def _needs_grad(x) -> bool:
    if isinstance(x, Tensor):
        return x._requires_grad
    if isinstance(x, (list, tuple)):
        return any(_needs_grad(v) for v in x)
    if isinstance(x, dict):
        return any(_needs_grad(v) for v in x.values())
    return False


class ScriptFunction:
    """A compiled function: `.graph`, `.inlined_graph`, `.code`; calling runs the graph."""

    def __init__(self, graph: Graph, name: str = "forward"):
        self.graph = graph
        self.name = name
        self._inlined: Graph | None = None
        self._programs: dict[str, Program] = {}
        self.python_functions: dict = {}  # name -> callable, for prim::PythonOp (scripted @ignore calls)

    @property
    def inlined_graph(self) -> Graph:
        """The graph with every call replaced by the callee's nodes."""
        if self._inlined is None:
            self._inlined = self.graph.copy()
            inline_calls(self._inlined)
        return self._inlined

    @property
    def code(self) -> str:
        """Python-like source regenerated from the IR."""
        from ..ir.python_code import graph_to_code
        return graph_to_code(self.inlined_graph, self.name)

    def _program(self, domain_name: str) -> Program:
        if domain_name not in self._programs:
            g = self.inlined_graph
            if domain_name == "array":
                domain = PythonArrayDomain(g.constants, self.python_functions) if self.python_functions \
                    else ArrayDomain(g.constants)
            else:
                domain = TensorDomain(g.constants, self.python_functions)
            self._programs[domain_name] = Program(graph_to_json(g), domain)
        return self._programs[domain_name]

    def _run(self, args: tuple, module=None):
        """Run the graph on `args` (with `module` as %self for methods); tscript values out."""
        if grad_state.enabled and (_needs_grad(args) or (module is not None and _module_needs_grad(module))):
            inputs = ((ModuleView(module, arrays=False),) if module is not None else ()) + tuple(args)
            outs = self._program("tensor").run(inputs)
        else:
            inputs = ((ModuleView(module, arrays=True),) if module is not None else ()) + tuple(map(to_arrays, args))
            outs = to_tensors(self._program("array").run(inputs))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __call__(self, *args):
        return self._run(args)

    def __repr__(self) -> str:
        return f"<tscript.jit.ScriptFunction {self.name}>"


def _module_needs_grad(module) -> bool:
    return any(p._requires_grad for p in module.parameters())


def _attr_tree(module) -> "ModuleView":
    """`module` as the array domain's %self (what prim::GetAttr reads), for other callers of Program."""
    return ModuleView(module, arrays=True)


class ModuleView:
    """An nn.Module as the executor sees %self: a mapping from attribute name to value, read when
    the graph's prim::GetAttr runs (so a reassigned parameter is always seen, and only what the graph
    reads costs anything). Submodules are views too; with `arrays`, parameters and buffers are their
    numpy arrays (shared, so in-place updates such as BatchNorm's statistics stick), else tensors."""
    __slots__ = ("module", "arrays")

    def __init__(self, module, arrays: bool):
        self.module, self.arrays = module, arrays

    def __getitem__(self, name: str):
        m = self.module
        if name in m._modules:
            return ModuleView(m._modules[name], self.arrays)
        value = _attribute(m, name)
        return value._data if self.arrays and isinstance(value, Tensor) else value


def _attribute(m, name: str):
    """What %self.name is for module `m`: a submodule, parameter, buffer or other attribute."""
    if name in m._modules:
        return m._modules[name]
    if name in m._parameters:
        return m._parameters[name]
    if name in m._buffers:
        return m._buffers[name]
    return getattr(m, name)


class ParameterReader:
    """Reads the parameters and buffers a compiled graph uses from its module, for the whole-graph
    entry (tscript_runtime.graph_entry): the module tree is walked again only when some module's
    table of parameters, buffers or submodules changed since the last call; otherwise the same
    tensors' arrays are read (so `p.data = ...` and in-place updates are seen either way)."""

    def __init__(self, trie: tuple, n: int):
        self.trie, self.n = trie, n
        self._state = (None, None, (), ())  # (table version, module, [(fixed index, tensor)], their arrays)
        self._fixed = None

    def __call__(self, view: ModuleView) -> list | None:
        version, module, leaves, last = self._state
        if version == AttributeTable.version and module is view.module:
            for (_, t), a in zip(leaves, last):
                if t._data is not a:
                    break
            else:
                return self._fixed  # nothing changed: the very list of the last call
        version, leaves = AttributeTable.version, []
        if not _find_tensors(view.module, self.trie, leaves):
            return None
        fixed = [None] * self.n
        for index, t in leaves:
            fixed[index] = t._data
        self._fixed = fixed
        self._state = (version, view.module, leaves, [t._data for _, t in leaves])
        return fixed


def _find_tensors(m, trie: tuple, leaves: list) -> bool:
    for name, index, children in trie:
        x = _attribute(m, name)
        if index is not None:
            if not isinstance(x, Tensor):
                return False
            leaves.append((index, x))
        if children and not _find_tensors(x, children, leaves):
            return False
    return True


class ScriptModule:
    """A compiled module: wraps the original `nn.Module` (its parameters and buffers) and the graph
    of its `forward`; submodules are ScriptModules too, each with the graph of its own call."""

    def __init__(self, module, graph: Graph | None, method_graphs: dict | None = None):
        self.__dict__["_module"] = module
        self.__dict__["_forward_fn"] = ScriptFunction(graph, "forward") if graph is not None else None
        self.__dict__["_method_graphs"] = method_graphs or {}

    @property
    def original_name(self) -> str:
        return type(self._module).__name__

    @property
    def _forward(self) -> ScriptFunction:
        if self._forward_fn is None:
            raise RuntimeError(f"Method 'forward' is not defined: the submodule {self.original_name} was not "
                               f"called while tracing, so it has no graph")
        return self._forward_fn

    @property
    def graph(self) -> Graph:
        return self._forward.graph

    @property
    def exported_methods(self) -> dict:
        """Entry points besides forward that `save` keeps (scripted `@tscript.jit.export` methods):
        name -> ScriptFunction whose graph takes the module first."""
        return {}

    @property
    def inlined_graph(self) -> Graph:
        return self._forward.inlined_graph

    @property
    def code(self) -> str:
        return self._forward.code

    def forward(self, *args):
        return self._forward._run(args, self._module)

    def __call__(self, *args):
        return self.forward(*args)

    def __getattr__(self, name: str):
        return self._wrap(getattr(self._module, name))

    def _wrap(self, value):
        """Submodules are ScriptModules too (with the graph of their first traced call, if any)."""
        from ..nn.modules.module import Module
        if isinstance(value, Module):
            return ScriptModule(value, self._method_graphs.get(id(value)), self._method_graphs)
        return value

    # Containers (Sequential, ModuleList, ModuleDict) index and iterate as the original does.
    def __getitem__(self, index):
        return self._wrap(self._module[index])

    def __len__(self) -> int:
        return len(self._module)

    def __iter__(self):
        return (self._wrap(m) for m in self._module)

    def __setattr__(self, name: str, value) -> None:
        setattr(self._module, name, value)

    # The module API a ScriptModule keeps (SPEC §5).
    def parameters(self, recurse: bool = True):
        return self._module.parameters(recurse)

    def named_parameters(self, *args, **kwargs):
        return self._module.named_parameters(*args, **kwargs)

    def buffers(self, recurse: bool = True):
        return self._module.buffers(recurse)

    def named_buffers(self, *args, **kwargs):
        return self._module.named_buffers(*args, **kwargs)

    def state_dict(self, *args, **kwargs):
        return self._module.state_dict(*args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        return self._module.load_state_dict(*args, **kwargs)

    def train(self, mode: bool = True) -> "ScriptModule":
        self._module.train(mode)
        return self

    def eval(self) -> "ScriptModule":
        return self.train(False)

    @property
    def training(self) -> bool:
        return self._module.training

    def children(self):
        return (getattr(self, name) for name, _ in self._module.named_children())

    def named_children(self):
        return ((name, getattr(self, name)) for name, _ in self._module.named_children())

    def modules(self):
        return self._module.modules()

    def zero_grad(self, set_to_none: bool = True) -> None:
        self._module.zero_grad(set_to_none)

    def __repr__(self) -> str:
        return f"RecursiveScriptModule(original_name={self.original_name})"
