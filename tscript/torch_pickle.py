"""The pickle of a PyTorch checkpoint (`data.pkl`), read with an allow-list: nothing it names is ever
imported or called, torch's own functions included.

`CheckpointUnpickler` (a `pickle.Unpickler`) resolves every global through `find_class` and the
ALLOWED table, which maps the names PyTorch's pickles use to small functions of ours; any other
name is refused (a ModelError naming it) before it is looked up. What these functions build is
inert: tensors, storages and dtypes come out as records (`_Inert`: no attributes, not callable, and
a BUILD opcode on one is refused), containers as plain dicts, lists, tuples and sets. Only after
the whole pickle was read does `materialize` turn the records into tscript tensors and copy every
container afresh, so no opcode can reach a live tscript object or leave attributes behind.

Allowed: `collections.OrderedDict`, `builtins.set` / `frozenset` / `bytearray`, `_codecs.encode`
(how protocol 2 stores bytes), `torch.Size`, `torch.device`, the dtypes tscript has
(`torch.float32`, ...), storage types (`torch.FloatStorage`, ..., `torch.UntypedStorage`; storages
arrive as persistent ids `('storage', type, key, location, numel)`), `torch.Tensor`,
`torch.nn.parameter.Parameter`, and `torch._utils._rebuild_tensor` / `_v2` / `_v3`,
`_rebuild_parameter`, `_rebuild_parameter_with_state`, `torch._tensor._rebuild_from_type_v2`.
"""
from __future__ import annotations

import io
import pickle
from collections import OrderedDict

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tscript_runtime.dtypes import is_inexact

from . import _dtype
from ._device import device
from ._size import Size
from ._tensor import _make

MAX_RANK = 64
UNPICKLE_ERRORS = (pickle.UnpicklingError, TypeError, ValueError, AttributeError, KeyError, IndexError, EOFError,
                   OverflowError, RecursionError, UnicodeError)

# PyTorch storage type -> numpy dtype, dtype names, and the dtypes tscript lacks (refused by name).
STORAGES = {"FloatStorage": _dtype.float32.np, "DoubleStorage": _dtype.float64.np, "HalfStorage": _dtype.float16.np,
            "BFloat16Storage": _dtype.bfloat16.np, "LongStorage": _dtype.int64.np, "IntStorage": _dtype.int32.np,
            "ShortStorage": _dtype.int16.np, "CharStorage": _dtype.int8.np, "ByteStorage": _dtype.uint8.np,
            "BoolStorage": _dtype.bool_.np, "ComplexFloatStorage": _dtype.complex64.np,
            "ComplexDoubleStorage": _dtype.complex128.np, "UntypedStorage": _dtype.uint8.np}
DTYPES = {"float32": _dtype.float32, "float": _dtype.float32, "float64": _dtype.float64, "double": _dtype.float64,
          "float16": _dtype.float16, "half": _dtype.float16, "bfloat16": _dtype.bfloat16,
          "int64": _dtype.int64, "long": _dtype.int64, "int32": _dtype.int32, "int": _dtype.int32,
          "int16": _dtype.int16, "short": _dtype.int16, "int8": _dtype.int8, "uint8": _dtype.uint8,
          "bool": _dtype.bool_, "complex64": _dtype.complex64, "cfloat": _dtype.complex64,
          "complex128": _dtype.complex128, "cdouble": _dtype.complex128}
UNSUPPORTED_DTYPES = ("uint16", "uint32", "uint64", "complex32", "chalf", "float8_e4m3fn", "float8_e5m2",
                      "float8_e4m3fnuz", "float8_e5m2fnuz", "ComplexHalfStorage", "QInt8Storage", "QUInt8Storage",
                      "QInt32Storage")


class Refused(pickle.UnpicklingError):
    """The pickle asks for something a checkpoint reader does not build."""


# -- what the pickle builds ---------------------------------------------------------------------------

class _Inert:
    """A value the unpickler made; `materialize` turns it into the tscript object it stands for."""
    __slots__ = ()

    def __setstate__(self, state):
        raise Refused(f"the pickle sets the state of a {type(self).__name__[1:]} (BUILD), which no checkpoint does")


class _Constant(_Inert):
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _StorageType(_Inert):
    """`torch.FloatStorage` and friends: a storage's dtype in a persistent id."""
    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype):
        self.name, self.dtype = name, dtype


class _Type(_Inert):
    """`torch.Tensor` or `torch.nn.parameter.Parameter` as the type argument of `_rebuild_from_type_v2`."""
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class Storage(_Inert):
    """A storage: its elements as a 1-D array (shared by every tensor on it)."""
    __slots__ = ("key", "array")

    def __init__(self, key: str, array: np.ndarray):
        self.key, self.array = key, array


class _TensorRecord(_Inert):
    """A tensor as `array` (a view of its storage's array) and whether it requires grad."""
    __slots__ = ("array", "requires_grad")

    def __init__(self, array: np.ndarray, requires_grad: bool):
        self.array, self.requires_grad = array, requires_grad


class _ParameterRecord(_Inert):
    __slots__ = ("tensor", "requires_grad")

    def __init__(self, tensor: _TensorRecord, requires_grad: bool):
        self.tensor, self.requires_grad = tensor, requires_grad


# -- the allow-listed functions -----------------------------------------------------------------------

def _rebuild_tensor(storage, storage_offset, size, stride):
    return _tensor(storage, storage_offset, size, stride, False)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    _check_empty(backward_hooks, "backward hooks")
    _check_empty(metadata, "tensor metadata")
    return _tensor(storage, storage_offset, size, stride, requires_grad)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    _check_empty(backward_hooks, "backward hooks")
    _check_empty(metadata, "tensor metadata")
    if not isinstance(dtype, _Constant) or not isinstance(dtype.value, _dtype.dtype):
        raise Refused(f"_rebuild_tensor_v3: expected a dtype, got {_describe(dtype)}")
    return _tensor(storage, storage_offset, size, stride, requires_grad, dtype.value.np)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    _check_empty(backward_hooks, "backward hooks")
    if not isinstance(data, _TensorRecord) or not isinstance(requires_grad, bool):
        raise Refused(f"_rebuild_parameter: expected a tensor and a bool, got {_describe(data)}, "
                      f"{_describe(requires_grad)}")
    return _ParameterRecord(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    _check_empty(state, "parameter state (attributes set on a Parameter)")
    return _rebuild_parameter(data, requires_grad, backward_hooks)


def _rebuild_from_type_v2(func, new_type, args, state):
    _check_empty(state, "tensor state (attributes set on a tensor)")
    if func not in _REBUILDERS or not isinstance(new_type, _Type) or type(args) is not tuple:
        raise Refused(f"_rebuild_from_type_v2: expected a tensor rebuild function, a tensor type and arguments, "
                      f"got {_describe(func)}, {_describe(new_type)}, {_describe(args)}")
    value = func(*args)
    if new_type.name == "Parameter" and isinstance(value, _TensorRecord):
        return _ParameterRecord(value, value.requires_grad)
    return value


def _size(dims=()):
    if type(dims) is not tuple or not all(type(d) is int for d in dims):
        raise Refused(f"torch.Size: expected a tuple of ints, got {_describe(dims)}")
    return Size(dims)


def _device(*args):
    try:
        return _Constant(device(*args))
    except (TypeError, ValueError, RuntimeError) as e:
        raise Refused(f"torch.device{args!r}: {e}") from None


def _encode(text, encoding="latin1"):
    """`_codecs.encode`, as protocol 2 stores bytes: latin-1 text only."""
    if type(text) is not str or encoding not in ("latin1", "latin-1"):
        raise Refused(f"_codecs.encode: expected text and 'latin1', got {_describe(text)}, {encoding!r}")
    return text.encode("latin-1")


def _bytearray(*args):
    if args and type(args[0]) is str:
        return bytearray(_encode(*args))
    if len(args) > 1 or (args and type(args[0]) is not bytes):
        raise Refused(f"bytearray: expected bytes, got {_describe(args)}")
    return bytearray(*args)


_REBUILDERS = (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3)

ALLOWED = {
    "collections.OrderedDict": OrderedDict,
    "_codecs.encode": _encode,
    "torch.Size": _size,
    "torch.device": _device,
    "torch.Tensor": _Type("Tensor"),
    "torch.nn.parameter.Parameter": _Type("Parameter"),
    "torch._utils._rebuild_tensor": _rebuild_tensor,
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
    "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    **{f"{module}.{name}": cls for module in ("builtins", "__builtin__")
       for name, cls in (("set", set), ("frozenset", frozenset), ("bytearray", _bytearray))},
    **{f"torch.{name}": _Constant(dtype) for name, dtype in DTYPES.items()},
    **{f"torch.{name}": _StorageType(name, dtype) for name, dtype in STORAGES.items()},
    # (PyTorch names the untyped storage by its defining module too, e.g. for tensors of uint16)
    "torch.storage.UntypedStorage": _StorageType("UntypedStorage", STORAGES["UntypedStorage"]),
}


def refusal(name: str) -> str | None:
    """Why the global `name` ("module.qualname") may not be loaded, or None when it is allowed."""
    if name in ALLOWED:
        return None
    module, _, attr = name.rpartition(".")
    if module == "torch" and attr in UNSUPPORTED_DTYPES:
        kind = attr[:-len("Storage")] if attr.endswith("Storage") else attr
        have = ", ".join(d.name for d in _dtype.FROM_NP.values())
        return f"it holds tensors of dtype {kind}, which tscript does not have (it has {have}): convert them in " \
               f"PyTorch first (e.g. `.float()`)"
    return (f"its pickle names '{name}', which is not on tscript's allow-list (tensors, storages, dtypes, "
            f"torch.Size, OrderedDict, dict, list, tuple, set, numbers, strings, bytes): refusing to load it, "
            f"as loading could run code")


def _tensor(storage, offset, size, stride, requires_grad, dtype=None) -> _TensorRecord:
    """A tensor record viewing `storage` (as `dtype` when given) at `offset` with `size` and `stride`,
    every element inside the storage."""
    if not isinstance(storage, Storage):
        raise Refused(f"a tensor's storage must be a storage (a persistent id), got {_describe(storage)}")
    ok = (_ints(size) and _ints(stride) and len(size) == len(stride) <= MAX_RANK and type(offset) is int
          and offset >= 0 and isinstance(requires_grad, bool))
    if not ok:
        raise Refused(f"bad tensor arguments: offset {offset!r}, size {size!r}, stride {stride!r}, "
                      f"requires_grad {requires_grad!r}")
    array = storage.array if dtype is None else _reinterpret(storage, dtype)
    if array.dtype not in _dtype.FROM_NP:
        raise Refused(f"storage '{storage.key}' holds untyped bytes, and the tensor names no dtype")
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if (0 in size and offset > array.size) or (0 not in size and last >= array.size):
        raise Refused(f"a tensor of size {list(size)}, stride {list(stride)} at offset {offset} reaches beyond its "
                      f"storage '{storage.key}' of {array.size} elements")
    view = as_strided(array[offset:], shape=tuple(size), strides=tuple(s * array.itemsize for s in stride))
    return _TensorRecord(view, requires_grad)


def _reinterpret(storage: Storage, dtype) -> np.ndarray:
    if storage.array.dtype != np.uint8 or storage.array.size % np.dtype(dtype).itemsize:
        raise Refused(f"storage '{storage.key}' cannot be read as {np.dtype(dtype)}")
    return storage.array.view(dtype)


def _ints(values) -> bool:
    return isinstance(values, tuple) and all(type(v) is int and v >= 0 for v in values)


def _check_empty(value, what: str) -> None:
    if value is not None and not (type(value) in (dict, OrderedDict, tuple, list) and not value):
        raise Refused(f"the checkpoint holds {what} ({_describe(value)}), which tscript cannot load")


def _describe(value) -> str:
    text = repr(value) if isinstance(value, (bool, int, float, str, tuple)) else type(value).__name__.lstrip("_")
    return text if len(text) <= 60 else text[:57] + "..."


# -- the unpickler ------------------------------------------------------------------------------------

class CheckpointUnpickler(pickle.Unpickler):
    """Reads `data.pkl` building only the allow-listed things; `storage(key, dtype, numel)` gives
    the Storage of a persistent id (the caller reads it from the checkpoint's zip)."""

    def __init__(self, data, storage):
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self.storage = storage

    def find_class(self, module: str, name: str):
        full = f"{module}.{name}"
        reason = refusal(full)
        if reason is not None:
            raise Refused(reason)
        return ALLOWED[full]

    def persistent_load(self, pid):
        ok = (type(pid) is tuple and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _StorageType)
              and type(pid[2]) is str and type(pid[3]) is str and type(pid[4]) is int and pid[4] >= 0)
        if not ok:
            raise Refused(f"unexpected persistent id {pid!r} (expected ('storage', type, key, location, numel))")
        return self.storage(pid[2], pid[1].dtype, pid[4])


# -- records -> tscript objects -----------------------------------------------------------------------

def materialize(obj):
    """The tscript object `obj` (what CheckpointUnpickler returned) stands for: tensors for tensor
    records (those of one storage sharing memory), fresh containers, the same object for the same
    record."""
    return _Materializer().build(obj)


_ATOMS = (type(None), bool, int, float, str, bytes)


class _Materializer:
    def __init__(self):
        self.memo: dict = {}

    def build(self, obj):
        kind = type(obj)
        if kind in _ATOMS:
            return obj
        if id(obj) not in self.memo:
            make = self.MAKERS.get(kind)
            if make is None:
                raise Refused(f"the checkpoint holds a {_describe(obj)} as a value, which tscript cannot load")
            make(self, obj)
        return self.memo[id(obj)]

    def _list(self, obj):
        out = self.memo[id(obj)] = []
        out.extend(self.build(v) for v in list.__iter__(obj))

    def _dict(self, obj):
        out = self.memo[id(obj)] = type(obj)()
        for k, v in list(dict.items(obj)):
            out[self.build(k)] = self.build(v)
        metadata = vars(obj).get("_metadata") if type(obj) is OrderedDict else None
        if metadata is not None:  # what PyTorch's state dicts carry (module versions)
            out._metadata = self.build(metadata)

    def _tuple(self, obj):
        self.memo[id(obj)] = type(obj)(self.build(v) for v in tuple.__iter__(obj))

    def _set(self, obj):
        self.memo[id(obj)] = type(obj)(self.build(v) for v in list(obj))

    def _bytearray(self, obj):
        self.memo[id(obj)] = bytearray(obj)

    def _constant(self, obj):
        self.memo[id(obj)] = obj.value

    def _tensor(self, obj):
        t = self.memo[id(obj)] = _make(obj.array)
        if obj.requires_grad and is_inexact(obj.array.dtype):
            t.requires_grad_(True)

    def _parameter(self, obj):
        from .nn.parameter import Parameter
        self.memo[id(obj)] = Parameter(self.build(obj.tensor), obj.requires_grad)

    MAKERS = {list: _list, dict: _dict, OrderedDict: _dict, tuple: _tuple, Size: _tuple, set: _set,
              frozenset: _set, bytearray: _bytearray, _Constant: _constant, _TensorRecord: _tensor,
              _ParameterRecord: _parameter}


__all__ = ["ALLOWED", "CheckpointUnpickler", "Refused", "Storage", "materialize", "refusal"]
