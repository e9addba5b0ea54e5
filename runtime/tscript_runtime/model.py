"""Saved models (`.tsm`): reading and checking the file, and `Model`, which runs its entry points.
Needs only numpy and the standard library (and llvmlite for native code).

A `.tsm` file is a checked archive (archive.py) of format "tscript-model", version 2:

    manifest.json        {"format": "tscript-model", "version": 2, "producer": "tscript 0.1.0",
                          "kind": "module" | "function", "name": "<class or function name>",
                          "modules": {"": {"type": "Net", "training": false}, "fc1": {...}},  (modules)
                          "params": {"fc1.weight": {"member": "params/fc1.weight.npy",
                                                    "dtype": "float32", "shape": [8, 4],
                                                    "kind": "parameter" | "buffer",
                                                    "requires_grad": true, "persistent": true}, ...},
                          "entry_points": {"forward": {"graph": "forward.graph.json",
                                                       "ir": "forward.ir", "self": true,
                                                       "inputs": [...], "outputs": [...],
                                                       "constants": {"c0": "constants/c0.npy"},
                                                       "plan": "forward.plan.json" | null,
                                                       "dynamic": [[0, [0]]]}},
                          "members": {<name>: {"sha256": ..., "size": ...}, ...}}
    <entry>.graph.json   the executable graph (graph_json.py)
    <entry>.ir           the same graph as readable IR text
    <entry>.plan.json    the native plan of a compiled model (native_plan.py): data, never code
    params/<name>.npy    every parameter and buffer, by state_dict name
    constants/<name>.npy tensor constants of the forward graph (other entry points': constants/<entry>/<name>.npy;
                         each entry point lists its own)

Entry points with `"self": true` take the module as their first graph input: a tree of dicts
built from the dotted parameter names ("fc1.weight" -> {"fc1": {"weight": array}}), which is what
their `prim::GetAttr` chains read. "inputs"/"outputs" are signatures (signature.py). Later
versions of the writer may add entry points (`backward`, exported methods) without changing the
format version; the reader checks every member they name. "dynamic" records the dims given to
`tscript.jit.compile(..., dynamic=)` (for `tscript.jit.load`).

Nothing in a file is ever executed. An entry point with a plan is an Executable (executable.py): the
plan is checked against the graph and this runtime emits the native code itself. Version 1 files
stored LLVM IR and object code; they still load, their code members are never read, and their
fusion groups run on the reference kernels (save the model again for native code).
"""
from __future__ import annotations

import json
import warnings
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import dtypes as dt
from .archive import Archive, read_archive
from .errors import InputError, ModelError
from .executable import Executable
from .gc_paused import gc_paused
from .executor import check_constant
from .graph_json import all_nodes, check_graph
from .ops import OPS
from .prims import PRIMS
from .signature import MAX_EXAMPLE_ELEMENTS, Signature, TensorSpec, TupleSpec

FORMAT, VERSION = "tscript-model", 2
READABLE_VERSIONS = {1, 2}  # version 1: its native code members are never read (see the docstring)
CONTROL_FLOW = ("prim::If", "prim::Loop")
PARAM_KINDS = ("parameter", "buffer")


@dataclass
class EntryPoint:
    """One callable graph of a saved model."""
    name: str
    signature: Signature
    graph: dict                 #: the executable graph document
    ir: str                     #: the readable IR text
    constants: dict             #: tensor constants the graph refers to, by name
    takes_self: bool            #: is the first graph input the module (the attribute tree)?
    plan: dict | None = None    #: the native plan (checked when the Model builds its Executable)
    dynamic: list = field(default_factory=list)  #: [[input index, [dims]], ...] given to compile
    stale_code: bool = False    #: a version-1 entry point whose stored native code is ignored
    defaults: dict = field(default_factory=dict)  #: input name -> the value a call may leave out
    graph_text: bytes | None = None  #: the JSON text `graph` was read from (keys its native code in the cache)

    def bind(self, inputs: tuple, named: dict) -> list:
        """The inputs of a call: positional ones, then by name, then the saved defaults (the signature
        check then names any still missing)."""
        names = [n for n, _ in self.signature.inputs]
        unknown = sorted(set(named) - set(names[len(inputs):]))
        if unknown:
            raise InputError(f"{self.name}(): unexpected (or repeated) input '{unknown[0]}'")
        bound = list(inputs)
        for name in names[len(inputs):]:
            if name not in named and name not in self.defaults:
                if named or self.defaults:  # (else the signature check says how many it expects)
                    raise InputError(f"{self.name}(): missing input '{name}'")
                break
            bound.append(named[name] if name in named else self.defaults[name])
        return bound


@dataclass
class SavedModel:
    """A verified `.tsm` file: manifest, parameters (name -> array) and entry points; `verify()`
    waits for checksums still being computed (read_saved_model's `defer`)."""
    source: str
    manifest: dict
    params: dict
    entry_points: dict
    verify: Callable[[], None] = lambda: None


# -- reading ----------------------------------------------------------------------------------------

def read_saved_model(source, defer: bool = False) -> SavedModel:
    """Open and check the saved model at `source` (a path or binary file object); every problem
    is a ModelError naming the file (and the member) and what is wrong. With `defer`, the
    parameters' checksums are still being computed when this returns: `verify()` the result before
    using or returning anything of it (read_archive)."""
    archive = read_archive(source, FORMAT, READABLE_VERSIONS, defer)
    try:
        return _saved_model(archive)
    except BaseException:
        archive.verify()  # a corrupt member explains what went wrong better than what it broke
        raise


def _saved_model(archive: Archive) -> SavedModel:
    params = _read_params(archive)
    entries = _field(archive, archive.manifest, "entry_points", dict, "the manifest")
    if "forward" not in entries:
        raise archive.error("the manifest has no 'forward' entry point")
    entry_points = {name: _read_entry_point(archive, name, e, params) for name, e in entries.items()}
    return SavedModel(archive.source, archive.manifest, params, entry_points, archive.verify)


def _field(archive: Archive, data: dict, key: str, kind, where: str):
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, kind):
        raise archive.error(f"{where}: field '{key}' is missing or not a {kind.__name__}")
    return value


def _read_params(archive: Archive) -> dict:
    """Every parameter and buffer as an array; parameters stored in one member share one array."""
    listing = _field(archive, archive.manifest, "params", dict, "the manifest")
    _check_param_names(archive, listing)
    loaded: dict = {}
    params = {}
    for name, entry in listing.items():
        where = f"parameter '{name}'"
        member = _field(archive, entry, "member", str, where)
        if _field(archive, entry, "kind", str, where) not in PARAM_KINDS:
            raise archive.error(f"{where}: kind must be one of {', '.join(PARAM_KINDS)}")
        _field(archive, entry, "requires_grad", bool, where)
        _field(archive, entry, "persistent", bool, where)
        if member not in loaded:
            loaded[member] = archive.array(member)
        params[name] = _checked_array(archive, loaded[member], entry, where, member)
    return params


def _check_param_names(archive: Archive, listing: dict) -> None:
    modules = set()
    for name in listing:
        parts = name.split(".")
        if not all(parts):
            raise archive.error(f"malformed parameter name '{name}'")
        modules.update(".".join(parts[:i]) for i in range(1, len(parts)))
    clash = sorted(modules & set(listing))
    if clash:
        raise archive.error(f"'{clash[0]}' is stored both as a parameter and as a module")


def _checked_array(archive: Archive, array: np.ndarray, entry: dict, where: str, member: str) -> np.ndarray:
    dtype, shape = entry.get("dtype"), entry.get("shape")
    if not isinstance(dtype, str) or dtype not in dt.BY_NAME or array.dtype != dt.BY_NAME[dtype]:
        raise archive.error(f"{where}: member '{member}' holds {array.dtype} data, the manifest says {dtype!r}")
    if not isinstance(shape, list) or list(array.shape) != shape:
        raise archive.error(f"{where}: member '{member}' has shape {list(array.shape)}, the manifest says {shape!r}")
    return array


def _read_entry_point(archive: Archive, name: str, entry: dict, params: dict) -> EntryPoint:
    where = f"entry point '{name}'"
    graph_member = _field(archive, entry, "graph", str, where)
    ir_member = _field(archive, entry, "ir", str, where)
    takes_self = _field(archive, entry, "self", bool, where)
    try:
        signature = Signature.from_json(name, entry.get("inputs"), entry.get("outputs"))
    except ModelError as e:
        raise archive.error(str(e)) from None
    listing = _field(archive, entry, "constants", dict, where)
    constants = {c: archive.array(_field(archive, listing, c, str, f"{where}, constants")) for c in listing}
    graph, graph_text = _read_graph(archive, graph_member)
    _check_graph_matches(archive, graph_member, graph, signature, takes_self)
    _check_nodes(archive, where, graph_member, graph, constants, params if takes_self else None)
    plan, stale = None, False
    if archive.manifest.get("version") == 1:
        stale = entry.get("native") is not None
    elif entry.get("plan") is not None:
        plan = _read_json(archive, _field(archive, entry, "plan", str, where))
    dynamic = _dynamic(archive, entry.get("dynamic", []), where)
    return EntryPoint(name, signature, graph, _read_text(archive, ir_member), constants, takes_self, plan, dynamic,
                      stale, _defaults(archive, entry.get("defaults", {}), signature, where), graph_text)


def is_plain_default(value) -> bool:
    """An argument default a manifest can hold: None, a bool, int, finite float or str."""
    return value is None or type(value) in (bool, int, str) or type(value) is float and abs(value) < float("inf")


def _defaults(archive: Archive, defaults, signature: Signature, where: str) -> dict:
    """Argument defaults: input names to None, bools, ints, finite floats or strings."""
    names = {n for n, _ in signature.inputs}
    if not isinstance(defaults, dict) or any(k not in names or not is_plain_default(v) for k, v in defaults.items()):
        raise archive.error(f"{where}: 'defaults' must map input names to plain values")
    return defaults


def _member(archive: Archive, member: str) -> bytes:
    if member not in archive.members:
        raise archive.error(f"member '{member}' is not listed in the manifest")
    return archive.members[member]


def _read_text(archive: Archive, member: str, data: bytes | None = None) -> str:
    try:
        return (bytes(_member(archive, member)) if data is None else data).decode("utf-8")
    except UnicodeDecodeError:
        raise archive.error(f"member '{member}' is not UTF-8 text") from None


def _read_json(archive: Archive, member: str, data: bytes | None = None):
    """The JSON document in `member` (parsed from `data`, its bytes copied out of the file, if given)."""
    try:
        return json.loads(_read_text(archive, member, data))
    except (ValueError, RecursionError) as e:
        raise archive.error(f"member '{member}' is not valid JSON ({e})") from None


def _read_graph(archive: Archive, member: str) -> tuple[dict, bytes]:
    """The checked graph document in `member`, and the bytes it was parsed from: a copy, not the file's
    memory map, so that the text the object cache keys its code by is the text this graph came from."""
    text = bytes(_member(archive, member))
    data = _read_json(archive, member, text)
    try:
        graph = check_graph(data)
    except ModelError as e:
        raise archive.error(f"member '{member}': {e}") from None
    return graph, text


def _check_nodes(archive: Archive, where: str, member: str, graph: dict, constants: dict, params: dict | None) -> None:
    """In one walk over every node (inside blocks and subgraphs too): each op is in this runtime's
    tables, none calls Python, the tensor constants named are stored, and (`params` given: the graph
    takes the module) every prim::GetAttr chain from the module input ends at a stored parameter, so
    that a missing one is a load error rather than a failure in the middle of a run."""
    paths = {graph["inputs"][0]["name"]: ""} if params is not None else None
    modules = {".".join(p.split(".")[:i]) for p in params for i in range(1, p.count(".") + 1)} if paths else None
    for node in all_nodes(graph["nodes"]):
        kind = node["kind"]
        if kind not in OPS and kind not in PRIMS and kind not in CONTROL_FLOW:
            raise archive.error(f"member '{member}': the graph uses unknown op '{kind}' (not in this runtime's "
                                f"op table)")
        if kind == "prim::PythonOp":  # tscript.jit.save refuses these: a file holding one is not tscript's
            raise archive.error(f"member '{member}': the graph calls the Python function '{node['attrs']['name']}', "
                                f"which a saved model cannot do (a model file holds no code)")
        try:
            check_constant(node, constants)
        except ModelError as e:
            raise archive.error(f"{where}: {e}") from None
        if kind == "prim::GetAttr" and paths is not None:
            _check_attribute(archive, member, node, paths, modules, params)


def _check_attribute(archive: Archive, member: str, node: dict, paths: dict, modules: set, params: dict) -> None:
    """A prim::GetAttr of the module (or a submodule) reads a submodule or a stored parameter."""
    name = node.get("attrs", {}).get("name")
    base = paths.get(node["inputs"][0]) if len(node["inputs"]) == 1 else None
    if base is None or not isinstance(name, str) or len(node["outputs"]) != 1:
        raise archive.error(f"member '{member}': malformed prim::GetAttr node {node!r}")
    path = f"{base}.{name}" if base else name
    if path in modules:
        paths[node["outputs"][0]["name"]] = path
    elif path not in params:
        raise archive.error(f"member '{member}': the graph reads attribute '{path}', which the file "
                            f"does not store")


def _check_graph_matches(archive: Archive, member: str, graph: dict, signature: Signature, takes_self: bool):
    n_in, n_out = len(signature.inputs) + takes_self, len(signature.outputs)
    if len(graph["inputs"]) != n_in or len(graph["outputs"]) != n_out:
        counting = " (counting the module input)" if takes_self else ""
        raise archive.error(f"member '{member}': the graph takes {len(graph['inputs'])} inputs and returns "
                            f"{len(graph['outputs'])} values, but the signature describes {n_in} and {n_out}"
                            f"{counting}")


def _dynamic(archive: Archive, data, where: str) -> list:
    ok = isinstance(data, list) and all(
        isinstance(p, list) and len(p) == 2 and type(p[0]) is int and isinstance(p[1], list)
        and all(type(d) is int for d in p[1]) for p in data)
    if not ok:
        raise archive.error(f"{where}: 'dynamic' must be a list of [input index, [dims]] pairs, got {data!r}")
    return data


class AttributeTree(dict):
    """The root of an attribute tree; `version` counts its arrays replaced since load (a whole-graph entry
    reads the arrays again only then: graph_entry.TreeReader)."""
    version = 0


def attribute_tree(params: dict) -> AttributeTree:
    """Parameters by dotted name as nested dicts sharing the arrays: what GetAttr chains read."""
    tree = AttributeTree()
    for name, array in params.items():
        _place(tree, name, array)
    return tree


def _place(tree: dict, name: str, array: np.ndarray) -> None:
    """`array` at the dotted `name` of `tree` (its modules' dicts made where missing)."""
    *path, leaf = name.split(".")
    node = tree
    for part in path:
        node = node.setdefault(part, {})
    node[leaf] = array


class Params(MutableMapping):
    """A loaded model's parameters and buffers by state_dict name (`Model.params`). Writes into an array
    change later runs; assigning an array replaces it (and every name tied to it) for later runs, if it
    has the shape and dtype of the one it replaces (a copy where it is not C-contiguous); none can be
    added or removed."""

    def __init__(self, arrays: dict, tree: AttributeTree, source: str):
        self._arrays, self._tree, self._source = arrays, tree, source

    def __getitem__(self, name: str) -> np.ndarray:
        return self._arrays[name]

    def __iter__(self):
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def __setitem__(self, name: str, value) -> None:
        if name not in self._arrays:
            known = ", ".join(list(self._arrays)[:8]) + (", ..." if len(self._arrays) > 8 else "")
            raise KeyError(f"{self._source}: the model has no parameter or buffer '{name}' (it has: {known})")
        old, new = self._arrays[name], np.asarray(value)
        if new is old:  # (`params[name] -= g` writes in place, then assigns the same array back)
            return
        if new.shape != old.shape or new.dtype != old.dtype:
            raise ValueError(f"{self._source}: parameter '{name}' is {old.dtype}{list(old.shape)}, got "
                             f"{new.dtype}{list(new.shape)}")
        new = np.ascontiguousarray(new)
        for tied in [n for n, a in self._arrays.items() if a is old]:  # (tied weights stay tied)
            self._arrays[tied] = new
            _place(self._tree, tied, new)
        self._tree.version += 1

    def __delitem__(self, name: str) -> None:
        raise TypeError(f"{self._source}: a loaded model's parameters cannot be removed ('{name}')")

    def __repr__(self) -> str:
        return f"Params({', '.join(f'{n}: {a.dtype}{list(a.shape)}' for n, a in self._arrays.items())})"


# -- running ----------------------------------------------------------------------------------------

class Model:
    """A saved model ready to run: `run`, `run_method`, `params`, `signature`, `entry_points`, `ir`.

    Every entry point becomes an Executable when the model loads (its native code emitted or found
    in the cache and linked then, and its whole-graph entry planned for the signature's example
    shapes), so the first run costs what later ones do. A run keeps all its state local and native
    code releases the GIL, so several threads may run at once. A Model pickles (travel.py): it loads
    again in the receiving process from its file's bytes.
    """

    def __init__(self, saved: SavedModel, origin=None):
        self.source = saved.source
        self.origin = origin  #: the file's path, or its bytes (what pickling sends; see travel.py)
        self.manifest = saved.manifest
        self._tree = attribute_tree(saved.params)
        self.params = Params(saved.params, self._tree, self.source)  #: name -> array (see Params)
        self.entry_points: dict = saved.entry_points
        self.executables: dict = {name: self._executable(e) for name, e in self.entry_points.items()}
        self._training = _training_section(saved)

    def _executable(self, entry: EntryPoint) -> Executable:
        where = f"{self.source}: entry point '{entry.name}'"
        if entry.stale_code:
            warnings.warn(f"{where}: saved by an older tscript (format version 1) with native code this runtime "
                          f"never runs; it runs on the reference kernels. Save the model again with "
                          f"tscript.jit.save for native code", RuntimeWarning, stacklevel=3)
        try:
            executable = Executable(entry.graph, entry.constants, entry.plan, where=where, checked=True,
                                    text=entry.graph_text)
        except ModelError as e:
            raise ModelError(f"{where}: {e}") from None
        self._prepare(entry, executable)
        return executable

    def _prepare(self, entry: EntryPoint, executable: Executable) -> None:
        """Plan the whole-graph entry for the signature's example shapes now, so that a first run
        with inputs of those shapes costs what later ones do; not for examples of more than
        MAX_EXAMPLE_ELEMENTS elements (the file chose them: loading must not allocate at its word)."""
        if executable.entry is None or entry.signature.example_elements() > MAX_EXAMPLE_ELEMENTS:
            return
        try:
            args = entry.signature.check(entry.signature.example_inputs())
            executable.prepare([self._tree] + args if entry.takes_self else args)
        except Exception:  # a signature without usable examples: the first run plans instead
            pass

    @property
    def signature(self) -> Signature:
        """The signature of `forward`."""
        return self.entry_points["forward"].signature

    def run(self, *inputs, **named):
        """Run `forward`: numpy arrays or Python scalars in (by position or name; inputs with a saved
        default may be left out); one output as is (a single tensor output is an array), several as a
        tuple."""
        return self.run_method("forward", *inputs, **named)

    def run_method(self, name: str, *inputs, **named):
        """Run the entry point `name` (e.g. a method exported with `@tscript.jit.export`)."""
        outputs = self._run_entry(name, self.entry(name).bind(inputs, named))
        if name == "forward" and self._training is not None:  # a training forward also returns saved values
            outputs = outputs[:self._training["outputs"]]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _run_entry(self, name: str, inputs) -> list:
        entry = self.entry(name)
        args = entry.signature.check(inputs)
        if entry.takes_self:
            args.insert(0, self._tree)
        values = self.executables[name].run(args)
        return [_output(spec, v) for spec, v in zip(entry.signature.outputs, values)]

    def run_with_grad(self, *inputs, grad_outputs=None):
        """`(outputs, grads)`: the forward outputs and, by name, the gradient of every parameter and
        float input (a dict); `grad_outputs` defaults to 1 for a scalar output. Needs a model saved
        from `tscript.jit.compile(..., backward=True)`."""
        t = self._training
        if t is None or t.get("backward") not in self.entry_points:
            raise ModelError(f"{self.source}: this model was saved without a backward entry point (compile it "
                             f"with tscript.jit.compile(..., backward=True) before saving)")
        values = self._run_entry("forward", inputs)
        outputs, saved = values[:t["outputs"]], values[t["outputs"]:]
        grads = self._run_entry(t["backward"], _seed_gradients(outputs, grad_outputs, self.source) + saved)
        result = outputs[0] if len(outputs) == 1 else tuple(outputs)
        return result, dict(zip(t["gradients"], grads))

    def profile(self, *inputs, runs: int = 10, entry: str = "forward"):
        """A `profile.Profile` of `runs` runs of entry point `entry` on `inputs`: the time of every
        executor node (GFLOP/s of GEMMs and convolutions against this CPU's measured peak), the
        whole-graph native call's time or why there is none, memory; `.table()` prints it sorted."""
        from .profile import profile_executable
        from .threads import get_num_threads
        point = self.entry(entry)
        args = point.signature.check(inputs)
        if point.takes_self:
            args.insert(0, self._tree)
        return profile_executable(self.executables[entry], args, runs, get_num_threads())

    def ir(self, entry: str = "forward") -> str:
        """The readable IR text of an entry point."""
        return self.entry(entry).ir

    def entry(self, name: str) -> EntryPoint:
        """The entry point `name`, or a ModelError listing those the model has."""
        if name not in self.entry_points:
            raise ModelError(f"{self.source}: the model has no entry point '{name}' (it has: "
                             f"{', '.join(self.entry_points)})")
        return self.entry_points[name]

    def __repr__(self) -> str:
        return f"<tscript_runtime.Model {self.signature} from {self.source}>"

    def __reduce__(self):
        from .travel import reduce_model
        return reduce_model(self)


def _output(spec, value):
    """A graph output for the caller, as its spec describes it: tensors as arrays, scalars as
    Python numbers, containers rebuilt around them."""
    if isinstance(spec, TensorSpec):
        return np.asarray(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        fits = isinstance(spec, TupleSpec) and len(spec.items) == len(value)
        specs = spec.items if fits else [getattr(spec, "item", None)] * len(value)
        return type(value)(_output(s, v) for s, v in zip(specs, value))
    if isinstance(value, dict):
        return {k: _output(getattr(spec, "value", None), v) for k, v in value.items()}
    return value


def _training_section(saved: SavedModel) -> dict | None:
    """The manifest's `training` section (how forward and backward pair up), checked."""
    t = saved.manifest.get("training")
    if t is None:
        return None
    ok = (isinstance(t, dict) and isinstance(t.get("outputs"), int) and isinstance(t.get("saved"), int)
          and isinstance(t.get("backward"), str) and isinstance(t.get("gradients"), list)
          and all(isinstance(g, str) for g in t["gradients"]))
    if not ok:
        raise ModelError(f"{saved.source}: malformed 'training' section in the manifest")
    return t


def _seed_gradients(outputs: list, grad_outputs, source: str) -> list:
    """The output gradients backward starts from (1 for a scalar output when none are given)."""
    if grad_outputs is None:
        for o in outputs:
            if np.asarray(o).size != 1:
                raise InputError(f"{source}: grad_outputs must be given for non-scalar outputs "
                                 f"(output shape {list(np.shape(o))})")
        return [np.ones_like(np.asarray(o)) for o in outputs]
    grads = list(grad_outputs) if isinstance(grad_outputs, (list, tuple)) else [grad_outputs]
    if len(grads) != len(outputs):
        raise InputError(f"{source}: expected {len(outputs)} grad_outputs, got {len(grads)}")
    out = []
    for i, (g, o) in enumerate(zip(grads, outputs)):
        g, o = np.asarray(g, dtype=np.asarray(o).dtype), np.asarray(o)
        if g.shape != o.shape:
            raise InputError(f"{source}: grad_outputs[{i}] has shape {list(g.shape)}, output {i} has shape "
                             f"{list(o.shape)}")
        out.append(g)
    return out


@gc_paused
def load(source) -> Model:
    """Load and check a saved model (`.tsm` path or binary file object) for running."""
    from .travel import origin_of
    readable, origin = origin_of(source)
    saved = read_saved_model(readable, defer=True)  # its weights are hashed while the model is prepared
    try:
        model = Model(saved, origin)
    except BaseException:
        saved.verify()
        raise
    saved.verify()
    return model
