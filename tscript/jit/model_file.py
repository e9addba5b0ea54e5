"""`tscript.jit.save` / `tscript.jit.load`: ScriptModules and ScriptFunctions as `.tsm` saved
models, the one file the standalone runtime (`tscript_runtime.load`) runs. The format is defined
and read in `tscript_runtime/model.py`; this side writes it and rebuilds tscript objects from it.

What is saved is the inlined `forward` graph (after dead-code elimination, so no GetAttr of a
parameterless submodule is left), every parameter and persistent buffer under its state_dict
name, the non-persistent buffers the graph reads, and the graph's tensor constants. The input
signature takes dtypes and sizes from the trace: the first dim of every tensor input is the
symbolic size "batch", or, with `dynamic={input_index: dims}`, exactly the listed dims vary.
Output shapes are found by running the graph at the example sizes and at other sizes of the
symbolic dims: output dims that follow a symbol get its name, others that change are unknown.

A `CompiledModel` (tscript.jit.compile) is saved with its optimized graph (fusion groups and
their subgraphs included) and its native plan: the compiler's code-generation decisions as data,
from which the runtime emits the code itself (a file never holds code). Its signature is the
graph's: the dims named in `compile(..., dynamic=)` are symbolic, all others fixed (the optimizer
may have folded them into the code). Loading such a file gives a CompiledModel again.
"""
from __future__ import annotations

import json

import numpy as np

from tscript_runtime import dtypes as dt
from tscript_runtime.archive import array_bytes, write_archive
from tscript_runtime.errors import ModelError
from tscript_runtime.executor import ArrayDomain, Program
from tscript_runtime.graph_json import document_text
from tscript_runtime.model import FORMAT, VERSION, attribute_tree, is_plain_default, read_saved_model
from tscript_runtime.ops.random import default_generator
from tscript_runtime.signature import DictSpec, ListSpec, ScalarSpec, Signature, TensorSpec, TupleSpec

from .._tensor import _make
from ..codegen.plan import plan_native
from ..ir.graph import Graph
from ..ir.passes.dce import eliminate_dead_code
from ..ir.graph_json import graph_from_json, graph_to_json
from ..ir.types import DictType, ListType, ModuleType, ScalarType, TensorType, TupleType, Type
from ..frontend.modules import ScriptFunction, ScriptModule
from .binding import Binder, binder_of, with_binder
from .compiled import CompiledModel, CompiledTrainingModel

BATCH = "batch"
_SCALAR_KINDS = {"int": "int", "float": "float", "bool": "bool", "str": "str", "NoneType": "none"}


def save(obj, f, dynamic: dict | None = None) -> None:
    """Write `obj` (a ScriptModule or ScriptFunction) to `f` (a path, written atomically, or a
    binary file object) as a `.tsm` saved model. `dynamic` maps an input index to the dims of that
    input that may vary (a list of dims, or a dict dim -> symbol name); by default the first dim of
    every tensor input is the symbolic "batch" and the other dims are fixed. A CompiledModel is
    saved with its native plan; its symbolic dims were chosen by `compile(..., dynamic=)`."""
    if isinstance(obj, CompiledModel):
        _save_compiled(obj, f, dynamic)
        return
    if isinstance(obj, ScriptModule):
        module, fn = obj._module, obj._forward
    elif isinstance(obj, ScriptFunction):
        module, fn = None, obj
    else:
        raise TypeError(f"tscript.jit.save expects a ScriptModule or ScriptFunction (from tscript.jit.trace), "
                        f"got {type(obj).__name__}")
    graph = _entry_graph(fn)
    exported = {name: _entry_graph(m) for name, m in obj.exported_methods.items()} \
        if isinstance(obj, ScriptModule) else {}
    params = _params(module, graph, *exported.values()) if module is not None else {}
    signature = _signature(graph, module is not None, dynamic, params)
    members, param_entries = _param_members(params)
    entry = _entry("forward", graph, signature, module is not None, members)
    entry["defaults"] = _plain_defaults(obj)
    payload = _payload(module, fn.name, param_entries, entry)
    for name, g in exported.items():  # scripted `@tscript.jit.export` methods: more entry points
        payload["entry_points"][name] = _entry(name, g, _signature(g, True, None, params, name), True, members)
        payload["entry_points"][name]["defaults"] = _plain_defaults(obj.exported_methods[name])
    write_archive(f, FORMAT, VERSION, payload, members)


def _entry_graph(fn: ScriptFunction) -> Graph:
    """What an entry point saves: the inlined graph without dead code; calls left to Python refused."""
    graph = fn.inlined_graph.copy()
    eliminate_dead_code(graph)
    python = sorted(n.attrs["name"] for n in graph.all_nodes() if n.kind == "prim::PythonOp")
    if python:
        raise ValueError(f"tscript.jit.save: '{fn.name}' calls the Python function {python[0].split('#')[0]} "
                         f"(marked @tscript.jit.ignore), which a saved model cannot run; mark it @unused or "
                         f"script it")
    return graph


def _payload(module, name: str, param_entries: dict, forward: dict) -> dict:
    """The manifest (without the archive's own fields) of a module or function with one entry point."""
    payload = {"producer": f"tscript {_version()}", "kind": "module" if module is not None else "function",
               "name": type(module).__name__ if module is not None else name,
               "params": param_entries, "entry_points": {"forward": forward}}
    if module is not None:
        payload["modules"] = {path: {"type": type(m).__name__, "training": m.training}
                              for path, m in _named_modules(module)}
    return payload


def _save_compiled(compiled: CompiledModel, f, dynamic) -> None:
    if dynamic is not None:
        raise ValueError("tscript.jit.save: the symbolic dims of a compiled model are chosen when it is compiled; "
                         "pass dynamic= to tscript.jit.compile instead")
    graph, module = compiled.graph, compiled.module
    training = isinstance(compiled, CompiledTrainingModel)
    if training:
        graph = _reread_parameters(graph.copy(), compiled.lifted)
    params = _params(module, graph) if module is not None else {}
    signature = _compiled_signature("forward", graph, module is not None, compiled.example_shapes)
    members, param_entries = _param_members(params)
    entry = _entry("forward", graph, signature, module is not None, members)
    entry["defaults"] = compiled.binder.plain_defaults() if compiled.binder is not None else {}
    # a training forward is saved reading its parameters again (not taking them as inputs): its own plan
    _add_plan(entry, "forward", plan_native(graph) if training else compiled.executable.plan.to_json(),
              compiled.dynamic, members)
    payload = _payload(module, compiled.name, param_entries, entry)
    if training:
        back = compiled.backward_graph
        payload["entry_points"]["backward"] = _entry("backward", back, _compiled_signature("backward", back, False),
                                                     False, members)
        _add_plan(payload["entry_points"]["backward"], "backward", compiled.backward_executable.plan.to_json(),
                  compiled.dynamic, members)
        payload["training"] = _training_section(compiled, graph)
    write_archive(f, FORMAT, VERSION, payload, members)


def _compiled_signature(name: str, graph: Graph, takes_self: bool, examples: list | None = None) -> Signature:
    """The graph's signature; tensor inputs carry the shapes of the examples they were compiled with."""
    inputs = graph.inputs[1:] if takes_self else graph.inputs
    specs = [_spec(v.type) for v in inputs]
    for i, shape in enumerate(examples or ()):
        spec = specs[i] if i < len(specs) else None
        if isinstance(spec, TensorSpec) and shape is not None and spec.shape is not None and len(shape) == len(spec.shape):
            specs[i] = TensorSpec(spec.dtype, spec.shape, shape)
    return Signature(name, tuple((v.name, s) for v, s in zip(inputs, specs)), tuple(_spec(v.type) for v in graph.outputs))


def _reread_parameters(graph: Graph, lifted: list) -> Graph:
    """A training forward graph whose lifted parameters are read from %self again (prim::GetAttr), so
    the saved entry point takes the same inputs as the model."""
    self_value = graph.inputs[0]
    by_name = {v.name: v for v in graph.inputs}
    first = graph.block.first
    for name, _, value in lifted:
        v = by_name[value.name]
        obj = self_value
        with graph.inserting_before(first) if first is not None else graph.inserting_at_end(graph.block):
            parts = name.split(".")
            for i, part in enumerate(parts):
                t = v.type if i == len(parts) - 1 else ModuleType(part)
                obj = graph.insert("prim::GetAttr", [obj], 1, {"name": part}, [t]).output
        v.replace_all_uses_with(obj)
        graph.block.remove_param(graph.inputs.index(v))
    return graph


def _training_section(compiled: CompiledTrainingModel, graph: Graph) -> dict:
    """How run_with_grad pairs the entry points: user outputs, saved values, gradient names."""
    n_saved = compiled.n_saved
    n_outputs = len(graph.outputs) - n_saved
    args = graph.inputs[1:] if compiled.module is not None else graph.inputs
    inputs = [v.name for v in args if isinstance(v.type, TensorType) and v.type.dtype is not None
              and dt.is_float(v.type.dtype)]
    return {"outputs": n_outputs, "saved": n_saved, "backward": "backward",
            "gradients": [name for name, _, _ in compiled.lifted] + inputs}


def _add_plan(entry: dict, name: str, plan: dict, dynamic, members: dict) -> None:
    """Add an entry point's native plan (a member) and the compile option `dynamic` to its manifest entry."""
    members[f"{name}.plan.json"] = json.dumps(plan, allow_nan=False).encode()
    entry["plan"] = f"{name}.plan.json"
    entry["dynamic"] = [[int(i), [int(d) for d in dims]] for i, dims in (dynamic or {}).items()]


def _version() -> str:
    from .. import __version__
    return __version__


def _entry(name: str, graph: Graph, signature: Signature, takes_self: bool, members: dict) -> dict:
    """The manifest entry of one entry point; adds its graph, IR and constants to `members`."""
    members[f"{name}.graph.json"] = document_text(graph_to_json(graph)).encode()
    members[f"{name}.ir"] = str(graph).encode()
    # each entry point's own names: two graphs (a forward and its backward) may both have a "c0"
    folder = "constants" if name == "forward" else f"constants/{name}"
    constants = {c: f"{folder}/{c}.npy" for c in graph.constants}
    for c, member in constants.items():
        members[member] = array_bytes(graph.constants[c])
    return {"graph": f"{name}.graph.json", "ir": f"{name}.ir", "self": takes_self, **signature.to_json(),
            "constants": constants, "plan": None}


# -- parameters and buffers -------------------------------------------------------------------------

def _named_modules(module, prefix: str = ""):
    """(dotted path, module) for `module` and every submodule, shared ones under each path."""
    yield prefix, module
    for name, child in module._modules.items():
        if child is not None:
            yield from _named_modules(child, f"{prefix}.{name}" if prefix else name)


def _params(module, graph: Graph, *more: Graph) -> dict:
    """name -> (tensor, kind, persistent) in state_dict order, plus the non-persistent buffers the
    graphs read; everything they read must be among them (or be a submodule)."""
    read = set().union(*(_attribute_paths(g) for g in (graph, *more)))
    out = {}
    for path, m in _named_modules(module):
        prefix = f"{path}." if path else ""
        for name, p in m._parameters.items():
            if p is not None:
                out[prefix + name] = (p, "parameter", True)
        for name, b in m._buffers.items():
            persistent = name not in m._non_persistent_buffers
            if b is not None and (persistent or prefix + name in read):
                out[prefix + name] = (b, "buffer", persistent)
    _check_attributes(read, out)
    return out


def _param_members(params: dict) -> tuple[dict, dict]:
    """The `.npy` members and manifest entries of the parameters; a tensor stored under several
    names (tied weights) is one member, so loading shares it again."""
    members, entries, stored = {}, {}, {}
    for name, (t, kind, persistent) in params.items():
        member = stored.setdefault(id(t), f"params/{name}.npy")
        if member not in members:
            members[member] = array_bytes(t._data)
        entries[name] = {"member": member, "dtype": dt.NAMES[t._data.dtype], "shape": list(t._data.shape),
                         "kind": kind, "requires_grad": t._requires_grad, "persistent": persistent}
    return members, entries


def _attribute_paths(graph: Graph) -> set:
    """The dotted paths of everything the graph's prim::GetAttr chains read from %self."""
    paths = {graph.inputs[0]: ""} if graph.inputs else {}
    for node in graph.all_nodes():
        if node.kind == "prim::GetAttr" and node.inputs[0] in paths:
            base = paths[node.inputs[0]]
            paths[node.output] = f"{base}.{node.attrs['name']}" if base else node.attrs["name"]
    return set(paths.values()) - {""}


def _check_attributes(read: set, params: dict) -> None:
    modules = {".".join(p.split(".")[:i]) for p in params for i in range(1, p.count(".") + 1)}
    missing = sorted(read - set(params) - modules)
    if missing:
        raise ValueError(f"tscript.jit.save: the graph reads attribute '{missing[0]}', which is neither a "
                         f"parameter nor a buffer (only tensors can be saved)")


# -- signature --------------------------------------------------------------------------------------

def _signature(graph: Graph, takes_self: bool, dynamic, params: dict, name: str = "forward") -> Signature:
    inputs = graph.inputs[1:] if takes_self else graph.inputs
    specs = _input_specs(inputs, dynamic)
    outputs = _output_specs(graph, takes_self, specs, params)
    return Signature(name, tuple((v.name, s) for v, s in zip(inputs, specs)), tuple(outputs))


def _input_specs(inputs: list, dynamic) -> list:
    """Specs of the inputs with their symbolic dims (see the module docstring)."""
    if dynamic is None:
        specs = [_spec(v.type) for v in inputs]
        firsts = [t.shape[0] for s in specs for t in _tensor_specs(s) if t.shape and isinstance(t.shape[0], int)]
        return [_batch(s, firsts[0]) for s in specs] if firsts else specs
    if not isinstance(dynamic, dict):
        raise TypeError(f"tscript.jit.save: dynamic must be a dict {{input index: dims}}, got "
                        f"{type(dynamic).__name__}")
    symbols = {i: _dims(inputs[_input_index(i, inputs)], dims) for i, dims in dynamic.items()}
    return [_spec(v.type, symbols.get(i, {})) for i, v in enumerate(inputs)]


def _batch(spec, size: int):
    """Every tensor in `spec` whose dim 0 has the batch size gets the symbolic "batch" there."""
    if isinstance(spec, TensorSpec):
        if not spec.shape or spec.shape[0] != size:
            return spec
        return TensorSpec(spec.dtype, (BATCH,) + spec.shape[1:], spec.example_shape)
    if isinstance(spec, TupleSpec):
        return TupleSpec(tuple(_batch(s, size) for s in spec.items))
    if isinstance(spec, ListSpec):
        return ListSpec(_batch(spec.item, size))
    if isinstance(spec, DictSpec):
        return DictSpec(spec.key, _batch(spec.value, size))
    return spec


def _tensor_specs(spec):
    """The tensor specs inside `spec`, depth first."""
    if isinstance(spec, TensorSpec):
        yield spec
    elif isinstance(spec, TupleSpec):
        for s in spec.items:
            yield from _tensor_specs(s)
    elif isinstance(spec, ListSpec):
        yield from _tensor_specs(spec.item)
    elif isinstance(spec, DictSpec):
        yield from _tensor_specs(spec.value)


def _input_index(i, inputs: list) -> int:
    if type(i) is not int or not 0 <= i < len(inputs):
        raise ValueError(f"tscript.jit.save: dynamic refers to input {i!r}, but the model takes {len(inputs)} "
                         f"inputs (indices 0..{len(inputs) - 1})")
    return i


def _dims(value, dims) -> dict:
    """dim -> symbol for one input of `dynamic` (a list of dims, or a dict dim -> symbol name)."""
    t = value.type
    if not isinstance(t, TensorType) or t.shape is None:
        raise ValueError(f"tscript.jit.save: dynamic names dims of input '{value.name}', which is not a tensor of "
                         f"known rank ({t})")
    named = dims if isinstance(dims, dict) else {d: None for d in dims}
    out = {}
    for d, symbol in named.items():
        if type(d) is not int or not -len(t.shape) <= d < len(t.shape):
            raise ValueError(f"tscript.jit.save: dynamic dim {d!r} is out of range for input '{value.name}' of "
                             f"rank {len(t.shape)}")
        d %= len(t.shape)
        out[d] = symbol or (BATCH if d == 0 else f"{value.name}_{d}")
    return out


def _spec(t: Type, symbols: dict | None = None):
    """The signature spec of an IR type; `symbols` (dim -> name) makes dims of a tensor symbolic."""
    if isinstance(t, TensorType):
        example = t.shape if t.shape is not None and all(isinstance(d, int) for d in t.shape) else None
        shape = None if t.shape is None else tuple((symbols or {}).get(d, s) for d, s in enumerate(t.shape))
        return TensorSpec(t.dtype, shape, example)
    if isinstance(t, TupleType):
        return TupleSpec(tuple(_spec(e) for e in t.elems))
    if isinstance(t, ListType):
        return ListSpec(_spec(t.elem))
    if isinstance(t, DictType) and str(t.key) in ("str", "int"):
        return DictSpec(str(t.key), _spec(t.value))
    if isinstance(t, ScalarType) and t.name in _SCALAR_KINDS:
        return ScalarSpec(_SCALAR_KINDS[t.name])
    return ScalarSpec("any")


# -- output shapes ----------------------------------------------------------------------------------

def _output_specs(graph: Graph, takes_self: bool, inputs: list, params: dict) -> list:
    """Output specs with symbolic dims found by running the graph at two sets of symbol sizes."""
    outputs = [_spec(v.type) for v in graph.outputs]
    sizes = _symbol_sizes(inputs)
    if not sizes:
        return outputs
    other = {s: 2 * n + 3 + i for i, (s, n) in enumerate(sizes.items())}  # distinct (n, m) pairs per symbol
    names = {(sizes[s], other[s]): s for s in sizes}
    program = Program(graph_to_json(graph), ArrayDomain(graph.constants))
    tree = attribute_tree({name: t._data.copy() for name, (t, _, _) in params.items()}) if takes_self else None
    first, second = _probe(program, tree, inputs, sizes), _probe(program, tree, inputs, other)
    if first is None or second is None:
        return [_unknown_dims(s) for s in outputs]
    return [_refine(s, a, b, names) for s, a, b in zip(outputs, first, second)]


def _symbol_sizes(specs: list) -> dict:
    sizes: dict = {}
    for spec in specs:
        for t in _tensor_specs(spec):
            for d, n in zip(t.shape or (), t.example_shape or ()):
                if isinstance(d, str):
                    sizes.setdefault(d, n)
    return sizes


def _probe(program: Program, tree: dict | None, inputs: list, sizes: dict):
    """The outputs on zero inputs with the symbolic dims at `sizes`, or None if the run fails. The
    module `tree` holds copies of the parameters and the random stream is restored afterwards, so
    saving changes nothing."""
    args = [_zeros(s, sizes) for s in inputs]
    state = default_generator.get_state()
    try:
        return program.run(args if tree is None else [tree, *args])
    except Exception:  # a graph that cannot run at other sizes simply has outputs of unknown size
        return None
    finally:
        default_generator.set_state(state)


def _zeros(spec, sizes: dict):
    if isinstance(spec, TensorSpec):
        shape = tuple(sizes[d] if isinstance(d, str) else (1 if d is None else d) for d in spec.shape or ())
        return np.zeros(shape, spec.dtype or np.float32)
    if isinstance(spec, TupleSpec):
        return tuple(_zeros(s, sizes) for s in spec.items)
    if isinstance(spec, ListSpec):
        return [_zeros(spec.item, sizes)]
    if isinstance(spec, DictSpec):
        return {}
    return {"int": 1, "float": 1.0, "bool": False, "str": ""}.get(spec.kind)


def _refine(spec, a, b, names: dict):
    """`spec` with the shapes seen in two runs: equal sizes stay, sizes that follow a symbol get
    its name, other changing sizes become unknown."""
    if isinstance(spec, TensorSpec) and isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.ndim == b.ndim:
        shape = tuple(x if x == y else names.get((x, y)) for x, y in zip(a.shape, b.shape))
        return TensorSpec(a.dtype, shape, a.shape)  # the dtype a run gives is the one that counts
    if isinstance(spec, TupleSpec) and isinstance(a, tuple) and isinstance(b, tuple):
        return TupleSpec(tuple(_refine(s, x, y, names) for s, x, y in zip(spec.items, a, b)))
    if isinstance(spec, ListSpec) and a and b:
        return ListSpec(_refine(spec.item, a[0], b[0], names))
    if isinstance(spec, DictSpec) and a and b and list(a) == list(b):
        key = next(iter(a))
        return DictSpec(spec.key, _refine(spec.value, a[key], b[key], names))
    return _unknown_dims(spec)


def _unknown_dims(spec):
    if isinstance(spec, TensorSpec):
        return TensorSpec(spec.dtype, None if spec.shape is None else (None,) * len(spec.shape))
    if isinstance(spec, TupleSpec):
        return TupleSpec(tuple(_unknown_dims(s) for s in spec.items))
    if isinstance(spec, ListSpec):
        return ListSpec(_unknown_dims(spec.item))
    if isinstance(spec, DictSpec):
        return DictSpec(spec.key, _unknown_dims(spec.value))
    return spec


# -- loading ----------------------------------------------------------------------------------------

def load(f):
    """Read a `.tsm` saved model back as a ScriptModule or ScriptFunction (every member checked)."""
    saved = read_saved_model(f)
    manifest, entry = saved.manifest, saved.entry_points["forward"]
    try:
        graph = graph_from_json(entry.graph)
    except (KeyError, ValueError, TypeError) as e:
        raise ModelError(f"{saved.source}: member '{manifest['entry_points']['forward']['graph']}': cannot "
                         f"rebuild the graph ({e})") from None
    graph.constants = dict(entry.constants)
    kind, name = manifest.get("kind"), manifest.get("name")
    name = name if isinstance(name, str) else "forward"
    if kind not in ("function", "module"):
        raise ModelError(f"{saved.source}: the manifest describes an unknown object kind {kind!r}")
    module = None
    if kind == "module":
        try:
            module = _rebuild_module(saved)
        except (KeyError, TypeError, ValueError) as e:  # names or flags the module API refuses
            raise ModelError(f"{saved.source}: cannot rebuild the module tree ({e})") from None
    binder = Binder(name, [n for n, _ in entry.signature.inputs], _saved_defaults(saved, manifest))
    if entry.plan is not None:
        dynamic = {i: dims for i, dims in entry.dynamic} or None
        try:
            compiled = CompiledModel(graph, module, dynamic, "forward" if module is not None else name, entry.plan)
        except ModelError as e:  # the plan checked against the graph: name the file as the runtime does
            raise ModelError(f"{saved.source}: entry point 'forward': {e}") from None
        compiled.binder = binder
        return compiled
    return with_binder(ScriptModule(module, graph) if module is not None else ScriptFunction(graph, name), binder)


def _plain_defaults(obj) -> dict:
    """The argument defaults of a scripted entry point that a manifest holds."""
    binder = binder_of(obj)
    return binder.plain_defaults() if binder is not None else {}


def _saved_defaults(saved, manifest) -> dict:
    defaults = manifest["entry_points"]["forward"].get("defaults", {})
    if not isinstance(defaults, dict) or not all(is_plain_default(v) for v in defaults.values()):
        raise ModelError(f"{saved.source}: entry point 'forward': malformed argument defaults")
    return defaults


def _rebuild_module(saved):
    """An nn.Module tree with the saved parameters and buffers (same names, dtypes, sharing)."""
    from ..nn.parameter import Parameter
    info = saved.manifest.get("modules")
    if not isinstance(info, dict) or not all(isinstance(v, dict) for v in info.values()) or "" not in info:
        raise ModelError(f"{saved.source}: the manifest has a malformed 'modules' listing")
    root = _new_module(info[""])
    for path in sorted((p for p in info if p), key=lambda p: p.count(".")):
        parent, _, leaf = path.rpartition(".")
        _submodule(root, parent).add_module(leaf, _new_module(info[path]))
    tensors: dict = {}
    for name, entry in saved.manifest["params"].items():
        parent, _, leaf = name.rpartition(".")
        owner, array = _submodule(root, parent), saved.params[name]
        if id(array) not in tensors:
            tensors[id(array)] = Parameter(_make(array), entry["requires_grad"]) if entry["kind"] == "parameter" \
                else _make(array)
        t = tensors[id(array)]
        if entry["kind"] == "parameter":
            owner.register_parameter(leaf, t)
        else:
            owner.register_buffer(leaf, t, persistent=entry["persistent"])
    return root


def _submodule(root, path: str):
    module = root
    for part in filter(None, path.split(".")):
        if part not in module._modules:
            module.add_module(part, _new_module({}))
        module = module._modules[part]
    return module


_CLASSES: dict = {}


def _new_module(info: dict):
    """An empty module whose class carries the saved class name (ScriptModule.original_name)."""
    from ..nn.modules.module import Module
    name = info.get("type")
    name = name if isinstance(name, str) and name.isidentifier() else "Module"
    if name not in _CLASSES:
        _CLASSES[name] = type(name, (Module,), {"__doc__": f"A module of class {name} loaded from a saved model."})
    module = _CLASSES[name]()
    module.training = bool(info.get("training", True))
    return module
