"""tscript.utils.dlpack: tensors in and out through DLPack, sharing memory (as `torch.utils.dlpack`).

numpy does the protocol work: `Tensor.__dlpack__` exports the tensor's array, and `from_dlpack`
imports with `numpy.from_dlpack`, so `np.from_dlpack(t)`, `tscript.from_dlpack(array)` and
`torch.from_dlpack(t)` all alias one buffer.
"""
import ctypes

import numpy as np

from .. import _dtype
from .._tensor import Tensor, _make

__all__ = ["from_dlpack", "to_dlpack"]

_is_capsule = ctypes.pythonapi.PyCapsule_IsValid
_is_capsule.restype = ctypes.c_int
_is_capsule.argtypes = [ctypes.py_object, ctypes.c_char_p]


def to_dlpack(tensor: Tensor):
    """A DLPack capsule (the unversioned "dltensor" kind) sharing `tensor`'s memory; it can be consumed once."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): expected a Tensor, got {type(tensor).__name__}")
    return tensor.__dlpack__()


def from_dlpack(ext_tensor) -> Tensor:
    """A tensor sharing memory with `ext_tensor`: an object with `__dlpack__` (a numpy array, a tscript
    or PyTorch tensor, ...) or a DLPack capsule. Writes through either side show in the other."""
    legacy = False
    if type(ext_tensor).__name__ == "PyCapsule":
        legacy = bool(_is_capsule(ext_tensor, b"dltensor"))
        if not (legacy or _is_capsule(ext_tensor, b"dltensor_versioned")):
            raise RuntimeError("from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed "
                               "only once, so you might have already constructed a tensor from it once.")
        ext_tensor = _Capsule(ext_tensor)
    elif not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack(): expected an object with __dlpack__ or a DLPack capsule, got "
                        f"{type(ext_tensor).__name__}")
    arr = np.from_dlpack(ext_tensor)
    if arr.dtype not in _dtype.FROM_NP:
        raise TypeError(f"from_dlpack(): tensors of dtype {arr.dtype} are not supported (supported: "
                        f"{', '.join(d.name for d in _dtype.FROM_NP.values())})")
    if legacy and not arr.flags.writeable:
        arr = _writable(arr)
    return _make(arr)


class _Capsule:
    """A bare capsule behind the `__dlpack__` protocol numpy consumes."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self) -> tuple:
        return (1, 0)


class _Alias:
    """Describes an existing buffer to numpy (`__array_interface__`) and keeps its owner alive."""

    def __init__(self, arr: np.ndarray):
        self.owner = arr
        self.__array_interface__ = {"data": (arr.ctypes.data, False), "shape": arr.shape, "strides": arr.strides,
                                    "typestr": arr.dtype.str, "version": 3}


def _writable(arr: np.ndarray) -> np.ndarray:
    """A writable alias of an array numpy imported read-only: an unversioned capsule cannot say whether
    its memory may be written, and numpy assumes not; DLPack consumers such as PyTorch write to it."""
    return np.asarray(_Alias(arr))
