"""Tensor methods with PyTorch's signatures over the op table or the tensor's storage: `contiguous`
and `clone` taking `memory_format=` (a hint, see _memory_format.py), `resize_`/`resize_as_`, and the
constructors `new_empty` and legacy `new`, and `random_` (PyTorch's three overloads)."""
import numpy as np

from tscript_runtime.errors import OpRuntimeError
from tscript_runtime.ops import OPS

from . import _memory_format
from ._dispatch import dispatch
from ._size import size_args
from ._tensor import Tensor


def contiguous(self: Tensor, memory_format=_memory_format.contiguous_format) -> Tensor:
    """This tensor if its memory is row-major, else a row-major copy."""
    _memory_format.check(memory_format, self.dim(), "contiguous")
    return dispatch(OPS["aten::contiguous"], (self,))


def clone(input: Tensor, *, memory_format=_memory_format.preserve_format) -> Tensor:
    """A copy with its own memory (recorded by autograd: gradients flow back to `input`)."""
    _memory_format.check(memory_format, input.dim(), "clone")
    return dispatch(OPS["aten::clone"], (input,))


def resize_(self: Tensor, *sizes, memory_format=None) -> Tensor:
    """Give this tensor the shape `sizes` in place, keeping its first elements (in row-major order);
    elements beyond the old ones are zero (PyTorch leaves them uninitialized)."""
    sizes = size_args(sizes, "resize_")
    for s in sizes:
        if s < 0:
            raise OpRuntimeError(f"Trying to create tensor with negative dimension {s}: {list(sizes)}")
    _memory_format.check(memory_format, len(sizes), "resize_")
    if self._requires_grad:
        raise OpRuntimeError("cannot resize variables that require grad")
    if sizes == self._data.shape:
        return self
    n = int(np.prod(sizes, dtype=np.int64))
    flat = self._data.reshape(-1)
    if n <= flat.size and self._data.flags.c_contiguous:
        self._data = flat[:n].reshape(sizes)  # shrinking keeps the memory, as PyTorch keeps the storage
    else:
        grown = np.zeros(n, self._data.dtype)
        kept = min(n, flat.size)
        grown[:kept] = flat[:kept]
        self._data = grown.reshape(sizes)
    self._vc[0] += 1
    return self


def resize_as_(self: Tensor, the_template: Tensor, *, memory_format=None) -> Tensor:
    """`resize_` to the shape of `the_template`."""
    return resize_(self, tuple(the_template.shape), memory_format=memory_format)


def new_empty(self: Tensor, *sizes, size=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """An uninitialized tensor of `size`, of this tensor's dtype unless `dtype` is given."""
    from ._creation import empty
    return empty(*sizes, size=size, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)


def new(self: Tensor, *args, device=None) -> Tensor:
    """The legacy constructor of this tensor's type: sizes, data, or nothing (an empty tensor)."""
    from ._legacy import LegacyTensorType
    return LegacyTensorType.__call__(_legacy_type(self), *args, device=device)


def _legacy_type(t: Tensor):
    from ._legacy import LEGACY_TYPES
    for cls in LEGACY_TYPES.values():
        if cls.dtype is t.dtype:
            return cls
    raise TypeError(f"new(): no legacy tensor type for {t.dtype}")


def random_(self: Tensor, *args, generator=None, **kwargs) -> Tensor:
    """Fill with integers drawn uniformly: `random_()` over every integer the dtype holds exactly,
    `random_(to)` from [0, to), `random_(from, to)` from [from, to) (`to=None`: up to that limit)."""
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments ({len(args)} given)")
    if "to" in kwargs:
        low, high = (args[0] if args else kwargs.pop("from", 0)), kwargs.pop("to")
    elif len(args) == 1:
        low, high = 0, args[0]
    else:
        low, high = args if len(args) == 2 else (kwargs.pop("from", 0), None)
    if kwargs:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return dispatch(OPS["aten::random_"], (self, low, high), {"generator": generator})


METHODS: dict = {"contiguous": contiguous, "clone": clone, "resize_": resize_, "resize_as_": resize_as_,
                 "new_empty": new_empty, "new": new, "random_": random_}
FUNCTIONS: dict = {"clone": clone}
