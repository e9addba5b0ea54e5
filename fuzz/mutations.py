"""Structured mutations of checked archives (`.tsm` models, `tscript.save` files), shared by the
atheris harnesses (fuzz_tsm_loader.py, fuzz_tsd_loader.py) and the hypothesis tests
(tests/runtime/test_fuzz_loaders.py).

An archive is edited as `Contents` (format, version, manifest payload, members). A mutation
changes one thing: a field of the manifest or of a JSON member (set to an odd value, a nearby
number, a string of the document or of a pool, a copy of another part of the document; delete,
duplicate, swap, rename, nest), the header or bytes of an `.npy` member, any member's bytes, the
version, or the member list. `Contents.to_bytes` recomputes every checksum, so a mutated file
passes the archive checks and reaches the loaders' real parsing, as an attacker's file would.

Every decision comes from a `Choices`: `index(n)` (an int in 0..n-1) and `blob(limit)` (bytes).
The harnesses answer from atheris's FuzzedDataProvider, the tests from hypothesis's `data.draw`.
Nothing here iterates a set: the same choices always give the same file.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass

import numpy as np
from tscript_runtime import dtypes
from tscript_runtime.archive import read_archive, write_archive
from tscript_runtime.model import CONTROL_FLOW
from tscript_runtime.native_plan import KERNEL_TEMPLATES, STEP_FIELDS
from tscript_runtime.ops import OPS
from tscript_runtime.prims import PRIMS

RESERVED = ("format", "version", "members")  # manifest keys write_archive owns
NUMBERS = [-(1 << 64), -(1 << 63), -(1 << 31), -2, -1, 0, 1, 2, 3, 4, 7, 8, 16, 64, 65, 255, 1 << 16, 1 << 31,
           1 << 32, 1 << 53, 1 << 62, (1 << 63) - 1, 1 << 63, 1 << 64, 10 ** 30, 0.5, -0.0, 1e-300, 1e308,
           float("nan"), float("inf"), float("-inf")]
ODD = [None, True, False, "", "x", "\x00", "\u00e9\U0001f600", "a" * 4096, [], [0], [[]], [None], {}, {"": None},
       {"type": "tensor"}, ["x", "y"]]
DESCRS = ["<f4", "<f8", ">f4", "<f2", "<i8", ">i8", "<i4", "<i2", "|i1", "|u1", "<u8", "|b1", "<c8", "|O", "<U3",
          "|S4", "|V8", "<M8[s]", "<f16", "f4", "float32"]
VERSIONS = [0, 1, 2, 3, -1, 1 << 40]
TYPES = ["Tensor", "Float(2, 4)", "Float(batch, 4)", "Long(...)", "Bool()", "Double(*, 3)", "int", "float", "bool",
         "str", "NoneType", "Any", "List[int]", "List[Tensor]", "Tuple[Tensor, int]", "Optional[Tensor]",
         "Dict[str, Tensor]", "__module__.Linear", "ScalarType", "Device"]
# Strings worth trying in a `.tsm` besides its own: names of ops, types, plan templates and fields.
TSM_POOL = [*OPS, *PRIMS, *CONTROL_FLOW, *TYPES, *KERNEL_TEMPLATES, *STEP_FIELDS, *dtypes.BY_NAME, "batch", "tile",
            "split_min", "small_m", "node", "template", "kernel", "kernels", "entry", "subgraph"]
# ... and in a `tscript.save` file: node types and fields, dtypes (some tscript lacks).
TSD_POOL = ["tensor", "list", "tuple", "dict", "ordered_dict", "type", "items", "member", "dtype", "shape",
            "requires_grad", "float16", "uint8", "complex64", *dtypes.BY_NAME]


class Choices:
    """Where a mutation's decisions come from (see the module docstring)."""

    def index(self, n: int) -> int:
        raise NotImplementedError

    def blob(self, limit: int) -> bytes:
        raise NotImplementedError


def pick(choices: Choices, items):
    """One of `items` (a non-empty sequence)."""
    return items[choices.index(len(items))]


@dataclass
class Contents:
    """An archive opened for editing: the manifest without its reserved keys, and the members."""
    fmt: str
    version: int
    payload: dict
    members: dict  #: name -> bytes

    @classmethod
    def read(cls, path, fmt: str, versions) -> "Contents":
        archive = read_archive(path, fmt, versions)
        payload = {k: v for k, v in archive.manifest.items() if k not in RESERVED}
        members = {name: bytes(data) for name, data in archive.members.items()}
        return cls(fmt, archive.manifest["version"], payload, members)

    def copy(self) -> "Contents":
        return Contents(self.fmt, self.version, clone(self.payload), dict(self.members))

    def to_bytes(self) -> bytes:
        """The archive, checksums recomputed."""
        buf = io.BytesIO()
        write_archive(buf, self.fmt, self.version, self.payload, self.members)
        return buf.getvalue()


def mutate(contents: Contents, choices: Choices, pool=()) -> Contents:
    """A copy of `contents` with one to four mutations; `pool`: strings worth trying (op names, type
    strings, ...) besides those of the document being edited."""
    out = contents.copy()
    for _ in range(1 + choices.index(4)):
        pick(choices, MUTATIONS)(out, choices, list(pool))
    return out


# -- JSON documents -----------------------------------------------------------------------------------

# Documents may be nested deeply (see _nest): nothing here recurses once per level of a document.

def clone(doc):
    """A deep copy of a JSON document."""
    return json.loads(json.dumps(doc))


def _children(node):
    return node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()


def json_paths(doc) -> list:
    """Every key path into a JSON document (dict keys and list indices), in document order."""
    paths, stack = [], [((), doc)]
    while stack:
        path, node = stack.pop()
        if path:
            paths.append(path)
        stack.extend(reversed([(path + (k,), v) for k, v in _children(node)]))
    return paths


def strings(doc) -> list:
    """Every string of a document, keys included, in document order, each once."""
    found: dict = {}
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            found[node] = None
        elif isinstance(node, dict):
            found.update(dict.fromkeys(node))
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    return list(found)


def edit_json(doc, choices: Choices, pool: list, root: bool = True):
    """`doc` (edited in place where possible) with one field changed; the new document."""
    box = [doc]
    paths = [(0,) + p for p in json_paths(doc)] + ([(0,)] if root else [])
    if not paths:
        return doc
    path = pick(choices, paths)
    parent = box
    for key in path[:-1]:
        parent = parent[key]
    context = _Edit(box, parent, path[-1], paths, choices, strings(doc) or [""], pool)
    pick(choices, JSON_ACTIONS)(context)
    return box[0]


@dataclass
class _Edit:
    """One field being edited: `parent[key]`, inside the document `box[0]`."""
    box: list
    parent: object
    key: object
    paths: list
    choices: Choices
    own: list    # the document's strings
    pool: list   # strings from elsewhere

    def value(self):
        return self.parent[self.key]

    def set(self, value):
        self.parent[self.key] = value

    def string(self) -> str:
        return pick(self.choices, pick(self.choices, [self.own, self.pool or self.own]))

    def subtree(self):
        node = self.box
        for key in pick(self.choices, self.paths):
            node = node[key]
        return clone(node)


def _near(v, choices: Choices):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return pick(choices, NUMBERS)
    step = pick(choices, [1, -1, 2, -2, 8, -8])
    return pick(choices, [v + step, -v, v * 2, v + (1 << 32), v / 2 if isinstance(v, float) else v // 2])


def _delete(e: _Edit):
    if e.parent is e.box:  # the whole document
        e.set(None)
    else:
        del e.parent[e.key]


def _duplicate(e: _Edit):
    if isinstance(e.parent, list) and e.parent is not e.box:
        e.parent.insert(e.key, clone(e.value()))
    elif isinstance(e.parent, dict):
        e.parent[e.string()] = clone(e.value())


def _swap(e: _Edit):
    if isinstance(e.parent, list) and len(e.parent) > 1:
        other = (e.key + 1) % len(e.parent)
        e.parent[e.key], e.parent[other] = e.parent[other], e.parent[e.key]


def _rename(e: _Edit):
    if isinstance(e.parent, dict):
        e.parent[e.string()] = e.parent.pop(e.key)


def _nest(e: _Edit):
    value = e.value()
    for _ in range(pick(e.choices, [1, 2, 50, 200])):  # four of these stay below json's recursion limit
        value = [value]
    e.set(value)


JSON_ACTIONS = [
    lambda e: e.set(clone(pick(e.choices, ODD + NUMBERS))),
    lambda e: e.set(_near(e.value(), e.choices)),
    lambda e: e.set(e.string()),
    lambda e: e.set(e.string()),
    lambda e: e.set(e.subtree()),
    lambda e: e.set(e.subtree()),
    _delete, _duplicate, _swap, _rename, _nest,
]


# -- the mutations ------------------------------------------------------------------------------------

def _members(contents: Contents, suffixes: tuple) -> list:
    return [name for name in contents.members if name.endswith(suffixes)]


def mutate_manifest(contents: Contents, choices: Choices, pool: list) -> None:
    """Change one field of the manifest (its reserved keys stay write_archive's)."""
    contents.payload = edit_json(contents.payload, choices, pool, root=False)
    for key in RESERVED:
        contents.payload.pop(key, None)


def mutate_json_member(contents: Contents, choices: Choices, pool: list) -> None:
    """Change one field of a JSON member (graph, plan); the manifest when there is none."""
    names = _members(contents, (".json",))
    if not names:
        return mutate_manifest(contents, choices, pool)
    name = pick(choices, names)
    try:
        doc = json.loads(contents.members[name])
    except (ValueError, RecursionError):  # an earlier byte mutation broke it
        return mutate_bytes(contents, choices, pool)
    contents.members[name] = json.dumps(edit_json(doc, choices, pool)).encode()


def mutate_npy(contents: Contents, choices: Choices, pool: list) -> None:
    """Rewrite one field of an `.npy` member's header (dtype, shape, order; the payload resized to
    match, so the change reaches the checks beyond the size check), or change its bytes."""
    names = _members(contents, (".npy",))
    name = pick(choices, names) if names else None
    parsed = _npy_header(contents.members[name]) if name else None
    if parsed is None:  # none, or an earlier mutation broke it
        return mutate_bytes(contents, choices, pool)
    header, payload = parsed
    field = pick(choices, ["descr", "shape", "shape", "fortran_order"])
    if field == "descr":
        header["descr"] = pick(choices, DESCRS)
    elif field == "fortran_order":
        header["fortran_order"] = not header["fortran_order"]
    else:
        header["shape"] = _shape(list(header["shape"]), choices)
    contents.members[name] = _npy_bytes(header, payload, choices)


def _npy_header(data: bytes):
    """({descr, fortran_order, shape}, payload) of a numpy-written `.npy`, or None."""
    stream = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(stream)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read(stream)
    except Exception:  # anything numpy's reader refuses: mutate bytes instead
        return None
    return {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": fortran, "shape": shape}, \
        data[stream.tell():]


def _shape(shape: list, choices: Choices) -> tuple:
    action = pick(choices, ["set", "set", "add", "drop", "empty"])
    if action == "set" and shape:
        i = choices.index(len(shape))
        shape[i] = pick(choices, [0, 1, 2, 3, -1, shape[i] + 1, shape[i] * 2, 1 << 31, 1 << 62, 1 << 63])
    elif action == "add":
        shape.insert(choices.index(len(shape) + 1), pick(choices, [0, 1, 2, 1 << 40]))
    elif action == "drop" and shape:
        shape.pop(choices.index(len(shape)))
    elif action == "empty":
        shape = []
    return tuple(shape)


def _npy_bytes(header: dict, payload: bytes, choices: Choices) -> bytes:
    """An `.npy` file with `header` (format 1.0, 2.0 or 3.0) and the payload cut or repeated to the size
    the header names, when that is small."""
    text = "{{'descr': {!r}, 'fortran_order': {!r}, 'shape': {!r}, }}".format(  # as numpy writes it
        header["descr"], header["fortran_order"], header["shape"]).encode()
    major = pick(choices, [1, 1, 1, 2, 3])
    head = b"\x93NUMPY" + bytes([major, 0])
    size_bytes = 2 if major == 1 else 4
    pad = -(len(head) + size_bytes + len(text) + 1) % 64
    text += b" " * pad + b"\n"
    head += len(text).to_bytes(size_bytes, "little") + text
    try:
        count = 1
        for d in header["shape"]:
            count *= d
        want = count * np.dtype(header["descr"]).itemsize
    except (TypeError, ValueError):
        want = len(payload)
    if 0 <= want <= 1 << 20 and choices.index(4):
        payload = (payload * (want // max(len(payload), 1) + 1))[:want] if payload else bytes(want)
    return head + payload


def mutate_bytes(contents: Contents, choices: Choices, pool: list) -> None:
    """Overwrite, insert, delete, truncate or replace bytes of one member."""
    name = pick(choices, sorted(contents.members)) if contents.members else None
    if name is None:
        return
    data = contents.members[name]
    at = choices.index(len(data) + 1)
    action = pick(choices, ["overwrite", "overwrite", "insert", "delete", "truncate", "replace"])
    blob = choices.blob(64)
    if action == "overwrite":
        data = data[:at] + blob + data[at + len(blob):]
    elif action == "insert":
        data = data[:at] + blob + data[at:]
    elif action == "delete":
        data = data[:at] + data[at + 1 + choices.index(64):]
    elif action == "truncate":
        data = data[:at]
    else:
        data = blob
    contents.members[name] = data


def mutate_listing(contents: Contents, choices: Choices, pool: list) -> None:
    """Change the format version, or drop, add or rename a member."""
    action = pick(choices, ["version", "drop", "add", "rename"])
    names = sorted(contents.members)
    if action == "version":
        contents.version = pick(choices, VERSIONS)
    elif action == "drop" and names:
        del contents.members[pick(choices, names)]
    elif action in ("add", "rename") and names:
        source = pick(choices, names)
        target = pick(choices, strings(contents.payload) + pool + ["forward.ll", "forward.o", "../x.npy"])
        if target == "manifest.json":
            return
        data = contents.members.pop(source) if action == "rename" else contents.members[source]
        contents.members[target] = data


MUTATIONS = [mutate_manifest, mutate_manifest, mutate_manifest, mutate_json_member, mutate_json_member,
             mutate_json_member, mutate_npy, mutate_npy, mutate_bytes, mutate_listing]
