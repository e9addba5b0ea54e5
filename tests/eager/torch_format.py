"""Writes checkpoints in the zip format of `torch.save` without torch: the tests (and the fuzzer's
seeds) make PyTorch-shaped files, hostile ones included, on machines without PyTorch.

    write_checkpoint({"w": SavedTensor(np.arange(6.0, dtype=np.float32), size=(2, 3))}, path)

`Global("module", "name")` stands for a global the pickle names (written as a GLOBAL opcode, or
STACK_GLOBAL from protocol 4, without importing anything), `Call(Global(...), args)` for calling
one (REDUCE). A `SavedTensor` is a view of a 1-D numpy `storage`: tensors on the same array object
share one storage in the file, as torch.save writes tensors of one storage.
"""
from __future__ import annotations

import io
import pickle
import zipfile
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

STORAGE_TYPES = {np.dtype(np.float32): "FloatStorage", np.dtype(np.float64): "DoubleStorage",
                 np.dtype(np.int64): "LongStorage", np.dtype(np.int32): "IntStorage",
                 np.dtype(np.bool_): "BoolStorage", np.dtype(np.float16): "HalfStorage",
                 np.dtype(np.uint8): "ByteStorage"}


@dataclass(frozen=True, eq=False)
class Global:
    """A global a pickle names (it is never looked up)."""
    module: str
    name: str

    def __call__(self, *args):  # (the pickler wants REDUCE callables to be callable)
        raise TypeError(f"{self.module}.{self.name} is a name, not a function")


@dataclass(eq=False)
class Call:
    """`func(*args)` when unpickled: GLOBAL func, the args tuple, REDUCE; then BUILD `state` if given."""
    func: Global
    args: tuple = ()
    state: object = None


@dataclass(eq=False)
class SavedTensor:
    """A tensor on `storage` (a 1-D array) at `offset`, of `size` and `stride` (contiguous when None)."""
    storage: np.ndarray
    offset: int = 0
    size: tuple | None = None
    stride: tuple | None = None
    requires_grad: bool = False
    parameter: bool = False

    def args(self) -> tuple:
        size = tuple(self.size if self.size is not None else self.storage.shape)
        stride = self.stride if self.stride is not None else tuple(int(np.prod(size[i + 1:])) for i in range(len(size)))
        return tuple(size), tuple(stride)


REBUILD_V2 = Global("torch._utils", "_rebuild_tensor_v2")
REBUILD_PARAMETER = Global("torch._utils", "_rebuild_parameter")


class _Storage:
    def __init__(self, key: str, array: np.ndarray):
        self.key, self.array = key, array


class _Writer(pickle._Pickler):
    """The pure-Python pickler, writing Globals as names and SavedTensors as torch.save does."""

    def __init__(self, file, protocol: int):
        super().__init__(file, protocol=protocol)
        self.storages: dict[int, _Storage] = {}
        self.globals: dict[tuple, Global] = {}

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, Global):
            self._global(obj)
        else:
            super().save(obj, save_persistent_id)

    def _global(self, g: Global) -> None:
        if id(g) in self.memo:
            self.write(self.get(self.memo[id(g)][0]))
            return
        if self.proto >= 4:
            self.save(g.module)
            self.save(g.name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{g.module}\n{g.name}\n".encode())
        self.memoize(g)

    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            kind = self._name("torch", STORAGE_TYPES[obj.array.dtype])
            return ("storage", kind, obj.key, "cpu", int(obj.array.size))
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Call):
            return (obj.func, tuple(obj.args), obj.state)
        if isinstance(obj, SavedTensor):
            size, stride = obj.args()
            tensor = (REBUILD_V2, (self._storage(obj.storage), obj.offset, size, stride, obj.requires_grad,
                                   OrderedDict()))
            if obj.parameter:
                return (REBUILD_PARAMETER, (Call(*tensor), obj.requires_grad, OrderedDict()))
            return tensor
        return NotImplemented

    def _storage(self, array: np.ndarray) -> _Storage:
        if id(array) not in self.storages:
            self.storages[id(array)] = _Storage(str(len(self.storages)), array)
        return self.storages[id(array)]

    def _name(self, module: str, name: str) -> Global:
        return self.globals.setdefault((module, name), Global(module, name))


def pickle_bytes(obj, protocol: int = 2) -> tuple[bytes, dict]:
    """(the pickle of `obj`, storage key -> array of the storages it refers to)."""
    buf = io.BytesIO()
    writer = _Writer(buf, protocol)
    writer.dump(obj)
    return buf.getvalue(), {s.key: s.array for s in writer.storages.values()}


def write_checkpoint(obj, f, archive: str = "archive", byteorder: str = "little", protocol: int = 2,
                     version: bytes = b"3", pickled: bytes | None = None, extra: dict | None = None) -> None:
    """Write `obj` (or the ready pickle `pickled`) as a torch.save zip to `f` (a path or file
    object); `extra` adds or replaces members (name inside the archive directory -> bytes)."""
    data, storages = pickle_bytes(obj, protocol) if pickled is None else (pickled, {})
    members = {"data.pkl": data, "byteorder": byteorder.encode(), "version": version}
    order = "<" if byteorder == "little" else ">"
    for key, array in storages.items():
        members[f"data/{key}"] = array.astype(array.dtype.newbyteorder(order)).tobytes()
    members.update(extra or {})
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as zf:
        for name, content in members.items():
            zf.writestr(f"{archive}/{name}", content)


def state_dict_checkpoint(state_dict: dict, f, **options) -> None:
    """A tscript state dict written as torch.save(state_dict) would write it (an OrderedDict of
    tensors, each on a storage of its own)."""
    saved = OrderedDict((k, SavedTensor(np.ascontiguousarray(v.numpy()).reshape(-1), size=tuple(v.shape)))
                        for k, v in state_dict.items())
    write_checkpoint(saved, f, **options)
