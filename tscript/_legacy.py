"""The legacy tensor types (`tscript.FloatTensor`, `LongTensor`, ...), as PyTorch keeps them.

Calling one makes a tensor of its dtype: `FloatTensor(2, 3)` or `FloatTensor(Size([2, 3]))` an
uninitialized one of that size, `FloatTensor([1, 2])` one holding the data, `FloatTensor()` an empty
one, `FloatTensor(t)` a tensor sharing `t`'s memory (`t` must have the type's dtype). They are not
subclasses of `Tensor`, but `isinstance(t, FloatTensor)` is true for every float32 tensor, and
`t.type(LongTensor)` / `t.type("torch.LongTensor")` convert.
"""
import numpy as np

from . import _dtype
from ._device import check_device
from ._size import Size
from ._tensor import Tensor

# Legacy type name -> the name of its dtype in `_dtype` (types whose dtype tscript lacks are left out).
TYPES = {"FloatTensor": "float32", "DoubleTensor": "float64", "LongTensor": "int64", "IntTensor": "int32",
         "BoolTensor": "bool_", "HalfTensor": "float16", "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8",
         "CharTensor": "int8", "ShortTensor": "int16"}


class LegacyTensorType(type):
    """The class of `FloatTensor` & co.: instance checks by dtype, calls construct tensors."""
    dtype: "_dtype.dtype"

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __call__(cls, *args, device=None) -> Tensor:
        check_device(device)
        if not args:
            return _new_empty((0,), cls.dtype)
        if len(args) == 1:
            return _from_one(cls, args[0])
        if all(_is_size(a) for a in args):
            return _new_empty(args, cls.dtype)
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"({', '.join(type(a).__name__ for a in args)}); expected sizes (ints) or one sequence of data")

    def __repr__(cls) -> str:
        return f"<class 'tscript.{cls.__name__}'>"


def _is_size(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _new_empty(size, dtype) -> Tensor:
    from ._creation import empty
    return empty(tuple(size), dtype=dtype)


def _from_one(cls, arg) -> Tensor:
    from ._creation import tensor
    if isinstance(arg, Tensor):
        if arg.dtype is not cls.dtype:
            raise TypeError(f"expected {cls.dtype} (got {arg.dtype})")
        return arg.detach()
    if isinstance(arg, Size) or _is_size(arg):
        return _new_empty(arg if isinstance(arg, Size) else (arg,), cls.dtype)
    if isinstance(arg, (list, tuple, np.ndarray)):
        return tensor(arg, dtype=cls.dtype)
    raise TypeError(f"new(): data must be a sequence (got {type(arg).__name__})")


def _make_types() -> dict:
    out = {}
    for name, dtype_name in TYPES.items():
        d = getattr(_dtype, dtype_name, None)
        if isinstance(d, _dtype.dtype):
            out[name] = LegacyTensorType(name, (), {"dtype": d, "__module__": "tscript",
                                                   "__doc__": f"The legacy tensor type of {d}."})
    return out


LEGACY_TYPES = _make_types()
_BY_NAME = {**LEGACY_TYPES, **{f"torch.{n}": t for n, t in LEGACY_TYPES.items()},
            **{f"tscript.{n}": t for n, t in LEGACY_TYPES.items()}}


def as_dtype(x):
    """A `Tensor.type(...)` argument as a dtype: legacy types and their names ("torch.LongTensor")
    become their dtype; anything else is passed on as it is."""
    if isinstance(x, LegacyTensorType):
        return x.dtype
    if isinstance(x, str) and x in _BY_NAME:
        return _BY_NAME[x].dtype
    return x
