"""Saved models (`.tsm`): reading and checking the file, and `Model`, which runs its entry points
with the graph executor on numpy arrays. Needs only numpy and the standard library.

A `.tsm` file is a checked archive (archive.py) of format "tscript-model", version 1:

    manifest.json        {"format": "tscript-model", "version": 1, "producer": "tscript 0.1.0",
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
                                                       "native": null}},
                          "members": {<name>: {"sha256": ..., "size": ...}, ...}}
    <entry>.graph.json   the executable graph (graph_format.py)
    <entry>.ir           the same graph as readable IR text
    params/<name>.npy    every parameter and buffer, by state_dict name
    constants/<name>.npy tensor constants of the graphs

Entry points with `"self": true` take the module as their first graph input: a tree of dicts
built from the dotted parameter names ("fc1.weight" -> {"fc1": {"weight": array}}), which is what
their `prim::GetAttr` chains read. "inputs"/"outputs" are signatures (signature.py). Later
versions of the writer may add entry points (`backward`, exported methods) and native code
(`"native": {"target_triple": ..., "cpu_features": ..., "llvm_ir": "<entry>.ll", "object":
"<entry>.o"}`) without changing the format version; the reader checks every member they name.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from . import dtypes as dt
from .archive import Archive, read_archive
from .errors import ModelError
from .executor import ArrayDomain, Program
from .graph_format import check_graph
from .ops import OPS
from .prims import PRIMS
from .signature import Signature, TensorSpec, TupleSpec

FORMAT, VERSION = "tscript-model", 1
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
    native: dict | None = None  #: target triple, CPU features and members of native code, if any


@dataclass
class SavedModel:
    """A verified `.tsm` file: manifest, parameters (name -> array) and entry points."""
    source: str
    manifest: dict
    params: dict
    entry_points: dict


# -- reading ----------------------------------------------------------------------------------------

def read_saved_model(source) -> SavedModel:
    """Open and check the saved model at `source` (a path or binary file object); every problem
    is a ModelError naming the file (and the member) and what is wrong."""
    archive = read_archive(source, FORMAT, {VERSION})
    params = _read_params(archive)
    entries = _field(archive, archive.manifest, "entry_points", dict, "the manifest")
    if "forward" not in entries:
        raise archive.error("the manifest has no 'forward' entry point")
    entry_points = {name: _read_entry_point(archive, name, e, params) for name, e in entries.items()}
    return SavedModel(archive.source, archive.manifest, params, entry_points)


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
    graph = _read_graph(archive, graph_member)
    _check_graph_matches(archive, graph_member, graph, signature, takes_self)
    if takes_self:
        _check_attributes(archive, graph_member, graph, params)
    return EntryPoint(name, signature, graph, _read_text(archive, ir_member), constants, takes_self,
                      _read_native(archive, entry.get("native"), where))


def _member(archive: Archive, member: str) -> bytes:
    if member not in archive.members:
        raise archive.error(f"member '{member}' is not listed in the manifest")
    return archive.members[member]


def _read_text(archive: Archive, member: str) -> str:
    try:
        return _member(archive, member).decode("utf-8")
    except UnicodeDecodeError:
        raise archive.error(f"member '{member}' is not UTF-8 text") from None


def _read_graph(archive: Archive, member: str) -> dict:
    try:
        graph = check_graph(json.loads(_read_text(archive, member)))
    except (ValueError, RecursionError) as e:
        raise archive.error(f"member '{member}' is not valid JSON ({e})") from None
    except ModelError as e:
        raise archive.error(f"member '{member}': {e}") from None
    for node in _all_nodes(graph["nodes"]):
        kind = node["kind"]
        if kind not in OPS and kind not in PRIMS and kind not in CONTROL_FLOW:
            raise archive.error(f"member '{member}': the graph uses unknown op '{kind}' (not in this runtime's "
                                f"op table)")
    return graph


def _all_nodes(nodes: list):
    for node in nodes:
        yield node
        for block in node.get("blocks", []):
            yield from _all_nodes(block["nodes"])


def _check_graph_matches(archive: Archive, member: str, graph: dict, signature: Signature, takes_self: bool):
    n_in, n_out = len(signature.inputs) + takes_self, len(signature.outputs)
    if len(graph["inputs"]) != n_in or len(graph["outputs"]) != n_out:
        counting = " (counting the module input)" if takes_self else ""
        raise archive.error(f"member '{member}': the graph takes {len(graph['inputs'])} inputs and returns "
                            f"{len(graph['outputs'])} values, but the signature describes {n_in} and {n_out}"
                            f"{counting}")


def _check_attributes(archive: Archive, member: str, graph: dict, params: dict) -> None:
    """Every prim::GetAttr chain from the module input must end at a stored parameter, so a
    missing one is a load error rather than a failure in the middle of a run."""
    modules = {".".join(p.split(".")[:i]) for p in params for i in range(1, p.count(".") + 1)}
    paths = {graph["inputs"][0]["name"]: ""}
    for node in _all_nodes(graph["nodes"]):
        if node["kind"] != "prim::GetAttr":
            continue
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


def _read_native(archive: Archive, native, where: str) -> dict | None:
    if native is None:
        return None
    _field(archive, native, "target_triple", str, f"{where}, native code")
    for key in ("llvm_ir", "object"):
        if native.get(key) is not None:
            _member(archive, _field(archive, native, key, str, f"{where}, native code"))
    return native


def attribute_tree(params: dict) -> dict:
    """Parameters by dotted name as nested dicts sharing the arrays: what GetAttr chains read."""
    tree: dict = {}
    for name, array in params.items():
        *path, leaf = name.split(".")
        node = tree
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = array
    return tree


# -- running ----------------------------------------------------------------------------------------

class Model:
    """A saved model ready to run: `run`, `run_method`, `params`, `signature`, `entry_points`, `ir`.

    Every entry point is compiled into an executor Program when the model loads, so the first run
    costs what later ones do. A run keeps all its state local, so several threads may run at once.
    """

    def __init__(self, saved: SavedModel):
        self.source = saved.source
        self.manifest = saved.manifest
        self.params: dict = saved.params  #: name -> array; in-place writes change later runs
        self.entry_points: dict = saved.entry_points
        self._tree = attribute_tree(self.params)
        self._programs = {name: self._program(e) for name, e in self.entry_points.items()}

    def _program(self, entry: EntryPoint) -> Program:
        try:
            return Program(entry.graph, ArrayDomain(entry.constants))
        except ModelError as e:
            raise ModelError(f"{self.source}: entry point '{entry.name}': {e}") from None

    @property
    def signature(self) -> Signature:
        """The signature of `forward`."""
        return self.entry_points["forward"].signature

    def run(self, *inputs):
        """Run `forward`: numpy arrays or Python scalars in; one output as is (a single tensor output
        is an array), several as a tuple."""
        return self.run_method("forward", *inputs)

    def run_method(self, name: str, *inputs):
        """Run the entry point `name` (e.g. a method exported with `@tscript.jit.export`)."""
        entry = self.entry(name)
        args = entry.signature.check(inputs)
        if entry.takes_self:
            args.insert(0, self._tree)
        values = self._programs[name].run(args)
        outputs = [_output(spec, v) for spec, v in zip(entry.signature.outputs, values)]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def run_with_grad(self, *inputs, grad_outputs=None):
        """Outputs and gradients; needs a model saved with a backward entry point."""
        if "backward" not in self.entry_points:
            raise ModelError(f"{self.source}: this model was saved without a backward entry point")
        raise ModelError(f"{self.source}: running backward entry points needs a newer tscript_runtime")

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


def load(source) -> Model:
    """Load and check a saved model (`.tsm` path or binary file object) for running."""
    return Model(read_saved_model(source))
