"""`tscript.save` / `tscript.load`: tensors and nested containers in a file that loads without
running code.

What can be saved: tensors, `dict` / `OrderedDict` (keys: str, int, float, bool or None), `list`,
`tuple` (named tuples and `Size` load as plain tuples) and the scalars int, float, bool, str and
None, nested in any way (state dicts, optimizer state). Anything else is a TypeError at save time.

The file is a checked zip archive (`tscript_runtime.archive`), format "tscript.save", version 1:

    manifest.json   {"format": "tscript.save", "version": 1,
                     "object": <node>,
                     "members": {"tensors/0.npy": {"sha256": ..., "size": ...}, ...}}
    tensors/<i>.npy one C-contiguous `.npy` array per distinct tensor object

A <node> is a JSON null, boolean, integer, float (NaN and infinities as JSON's `NaN`/`Infinity`
extension) or string for a scalar, or an object tagged by "type":

    {"type": "tensor", "member": "tensors/0.npy", "dtype": "float32", "shape": [2, 3],
     "requires_grad": false}
    {"type": "list" | "tuple", "items": [<node>, ...]}
    {"type": "dict" | "ordered_dict", "items": [[<scalar key>, <node>], ...]}

A tensor object that occurs several times is stored once and loads as one tensor object again;
distinct tensors that are views of the same storage are stored as separate copies and load
without sharing memory. Loading never unpickles and never runs code from the file: every member
is checked against its sha256, arrays are read with `allow_pickle=False`, and the structure is
validated node by node; any problem is a `tscript_runtime.ModelError` naming the file.
"""
from __future__ import annotations

from collections import OrderedDict

from tscript_runtime import dtypes as dt
from tscript_runtime.archive import Archive, array_bytes, read_archive, write_archive

from ._device import check_device
from ._tensor import Tensor, _make

FORMAT = "tscript.save"
VERSION = 1
_SCALARS = (type(None), bool, int, float, str)
_SEQUENCES = {"list": list, "tuple": tuple}


def save(obj, f) -> None:
    """Save `obj` (tensors, scalars and nested dict/list/tuple of them) to `f`, a path or a binary
    file object. Writing to a path is atomic: on any error an existing file is left unchanged."""
    encoder = _Encoder()
    node = encoder.encode(obj)
    write_archive(f, FORMAT, VERSION, {"object": node}, encoder.members)


def load(f, map_location=None, weights_only=None):
    """Load what `save` wrote to `f` (a path or a binary file object). `map_location` may only name
    the CPU; `weights_only` is accepted for PyTorch compatibility (loading never runs code anyway)."""
    check_device(map_location)
    archive = read_archive(f, FORMAT, {VERSION})
    if "object" not in archive.manifest:
        raise archive.error("the manifest has no 'object' entry")
    return _Decoder(archive).decode(archive.manifest["object"])


class _Encoder:
    """Turns an object into a JSON node, collecting one `.npy` member per distinct tensor."""

    def __init__(self):
        self.members: dict = {}
        self._tensors: dict = {}   # id(tensor) -> its node
        self._open: set = set()    # ids of the containers being encoded (cycle check)

    def encode(self, obj):
        if isinstance(obj, Tensor):
            return self._tensor(obj)
        if obj.__class__ in _SCALARS:
            return obj
        if isinstance(obj, (list, tuple, dict)):
            return self._container(obj)
        raise TypeError(f"tscript.save: cannot save an object of type {type(obj).__name__} (supported: "
                        f"Tensor, dict, OrderedDict, list, tuple, int, float, bool, str, None)")

    def _tensor(self, t: Tensor) -> dict:
        node = self._tensors.get(id(t))
        if node is None:
            name = f"tensors/{len(self.members)}.npy"
            self.members[name] = array_bytes(t._data)
            node = {"type": "tensor", "member": name, "dtype": dt.NAMES[t._data.dtype],
                    "shape": list(t._data.shape), "requires_grad": t.requires_grad}
            self._tensors[id(t)] = node
        return node

    def _container(self, obj) -> dict:
        if id(obj) in self._open:
            raise ValueError("tscript.save: cannot save a container that contains itself")
        self._open.add(id(obj))
        try:
            if isinstance(obj, dict):
                kind = "ordered_dict" if isinstance(obj, OrderedDict) else "dict"
                return {"type": kind, "items": [[self._key(k), self.encode(v)] for k, v in obj.items()]}
            kind = "list" if isinstance(obj, list) else "tuple"
            return {"type": kind, "items": [self.encode(v) for v in obj]}
        finally:
            self._open.discard(id(obj))

    @staticmethod
    def _key(key):
        if key.__class__ not in _SCALARS:
            raise TypeError(f"tscript.save: cannot save a dict key of type {type(key).__name__} (supported: "
                            f"int, float, bool, str, None)")
        return key


class _Decoder:
    """Rebuilds the saved object from its node, validating each node against the format."""

    def __init__(self, archive: Archive):
        self.archive = archive
        self._tensors: dict = {}   # member name -> the Tensor loaded from it

    def decode(self, node):
        try:
            return self._node(node)
        except RecursionError:
            raise self.archive.error("the saved object is nested too deeply") from None

    def _node(self, node):
        if node.__class__ in _SCALARS:
            return node
        kind = node.get("type") if isinstance(node, dict) else None
        kind = kind if isinstance(kind, str) else None  # a list or dict "type" is no node (nor hashable)
        if kind == "tensor":
            return self._tensor(node)
        if kind in _SEQUENCES:
            items = self._field(node, "items", list)
            return _SEQUENCES[kind](self._node(v) for v in items)
        if kind in ("dict", "ordered_dict"):
            return self._dict(node, OrderedDict if kind == "ordered_dict" else dict)
        raise self.archive.error(f"malformed structure: unexpected node {_brief(node)}")

    def _dict(self, node, cls):
        out = cls()
        for item in self._field(node, "items", list):
            if not (isinstance(item, list) and len(item) == 2 and item[0].__class__ in _SCALARS):
                raise self.archive.error(f"malformed structure: bad dict item {_brief(item)}")
            out[item[0]] = self._node(item[1])
        return out

    def _tensor(self, node) -> Tensor:
        name = self._field(node, "member", str)
        if name not in self._tensors:
            array = self.archive.array(name)
            if dt.NAMES[array.dtype] != node.get("dtype") or list(array.shape) != node.get("shape"):
                raise self.archive.error(f"member '{name}' holds a {dt.NAMES[array.dtype]} array of shape "
                                         f"{list(array.shape)}, the manifest says {node.get('dtype')} "
                                         f"{node.get('shape')}")
            t = _make(array)
            if node.get("requires_grad") is True and dt.is_float(array.dtype):
                t.requires_grad_(True)
            self._tensors[name] = t
        return self._tensors[name]

    def _field(self, node: dict, key: str, kind: type):
        value = node.get(key)
        if not isinstance(value, kind):
            raise self.archive.error(f"malformed structure: '{node.get('type')}' node without a valid "
                                     f"'{key}' ({_brief(node)})")
        return value


def _brief(node) -> str:
    text = repr(node)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = ["save", "load"]
