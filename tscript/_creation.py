"""Creating tensors: from Python data and numpy arrays, and the factory functions."""
import warnings

import numpy as np

from tscript_runtime import dtypes as _dt
from tscript_runtime.ops import OPS
from tscript_runtime.ops.random import Generator, default_generator

from ._device import check_device
from ._dispatch import dispatch
from ._memory_format import check as check_memory_format
from ._size import size_args
from ._tensor import Tensor, _make

_SUPPORTED = set(_dt.ALL)
_COPY_WARNING = ("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                 "sourceTensor.detach().clone().requires_grad_(True), rather than tscript.tensor(sourceTensor).")


def _convertible(arr: np.ndarray) -> np.ndarray:
    """An array of a tscript dtype: arrays of one keep it (uint8 stays uint8, float16 float16); the
    integers tscript lacks (uint16, uint32, uint64) become int64, wider floats float64."""
    if arr.dtype in _SUPPORTED:
        return arr
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        return arr.astype(np.float64)
    raise TypeError(f"can't convert data of dtype {arr.dtype} to a tensor; supported: "
                    f"{', '.join(_dt.BY_NAME)}")


def _ragged_error(data, dim=0):
    """PyTorch's message for nested lists that are not rectangular."""
    if not isinstance(data, (list, tuple)) or not data:
        return None
    lengths = [len(x) if isinstance(x, (list, tuple)) else None for x in data]
    first = lengths[0]
    for x, n in zip(data, lengths):
        if n != first:
            return ValueError(f"expected sequence of length {first} at dim {dim + 1} (got {n})")
    for x in data:
        err = _ragged_error(x, dim + 1)
        if err:
            return err
    return None


def _from_python(data) -> np.ndarray:
    err = _ragged_error(data)
    if err:
        raise err
    try:
        arr = np.array(data)
    except (ValueError, TypeError) as e:
        raise TypeError(f"tensor(): could not convert data of type {type(data).__name__}: {e}") from None
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"tensor(): invalid data type '{type(_bad_leaf(data)).__name__}'")
    if arr.dtype.kind == "f" and not isinstance(data, (np.ndarray, np.generic)):
        return arr.astype(_dt.defaults.float_dtype)
    if arr.dtype.kind == "c" and not isinstance(data, (np.ndarray, np.generic)):
        return arr.astype(_dt.default_complex())
    return _convertible(arr)


def _bad_leaf(data):
    """The first element of nested `data` that is not a number."""
    if isinstance(data, (list, tuple)):
        for x in data:
            bad = _bad_leaf(x)
            if bad is not None:
                return bad
        return None
    return None if isinstance(data, (int, float, complex, bool, np.number, np.bool_, Tensor)) else data


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor holding a copy of `data` (nested lists, numbers, arrays or tensors)."""
    check_device(device)
    if isinstance(data, Tensor):
        warnings.warn(_COPY_WARNING, UserWarning, stacklevel=2)
        arr = data._data.copy()
    elif isinstance(data, np.ndarray):
        arr = _convertible(np.array(data))
    else:
        arr = _from_python(data)
    if dtype is not None:
        arr = arr.astype(_dt.resolve(dtype), copy=False)
    return _make(arr).requires_grad_(requires_grad) if requires_grad else _make(arr)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """`data` as a tensor, sharing memory with it when it already is a tensor or array of that dtype."""
    check_device(device)
    want = _dt.resolve(dtype)
    if isinstance(data, Tensor):
        return data if want is None or want == data._data.dtype else data.to(dtype)
    if isinstance(data, np.ndarray) and data.dtype in _SUPPORTED and want in (None, data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with `array` (changes to one show in the other)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    if array.dtype not in _SUPPORTED:
        raise TypeError(f"can't convert np.ndarray of type numpy.{array.dtype} to a tensor. The only "
                        f"supported types are: {', '.join('numpy.' + n for n in _dt.BY_NAME)}.")
    return _make(array)


def _sizes(name: str, args: tuple, size) -> tuple:
    """A factory's sizes, given as varargs, one sequence or the `size=` keyword (as PyTorch takes them)."""
    if size is not None:
        if args:
            raise TypeError(f"{name}() got multiple values for argument 'size'")
        args = (size,)
    return size_args(args, name)


def _factory(name: str):
    op = OPS[f"aten::{name}"]

    def make(*sizes, size=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False, **options):
        check_device(device)
        shape = _sizes(name, sizes, size)
        _memory_format_kwarg(name, options, len(shape))
        t = dispatch(op, (shape,), {"dtype": dtype} if dtype is not None else None)
        return t.requires_grad_() if requires_grad else t
    make.__name__ = name
    make.__doc__ = f"A tensor of the given size filled by `{name}` (varargs, one sequence or `size=`)."
    return make


def _memory_format_kwarg(name: str, kwargs: dict, ndim: int) -> None:
    """`empty` alone takes `memory_format=` (a hint: tensors are row-major); other keywords are refused."""
    fmt = kwargs.pop("memory_format", None)
    if kwargs or (fmt is not None and name != "empty"):
        bad = next(iter(kwargs)) if kwargs else "memory_format"
        raise TypeError(f"{name}() got an unexpected keyword argument '{bad}'")
    check_memory_format(fmt, ndim, name)


zeros, ones, empty = _factory("zeros"), _factory("ones"), _factory("empty")


def _random_factory(name: str):
    op = OPS[f"aten::{name}"]

    def make(*sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False, out=None,
             layout=None, pin_memory=False):
        check_device(device)
        t = dispatch(op, (_sizes(name, sizes, size),), {"generator": generator, "dtype": dtype})
        return t.requires_grad_() if requires_grad else t
    make.__name__ = name
    make.__doc__ = f"A tensor of the given size filled by `{name}` from `generator` (default: the global one)."
    return make


rand, randn = _random_factory("rand"), _random_factory("randn")


def _with_grad(t: Tensor, requires_grad: bool) -> Tensor:
    return t.requires_grad_() if requires_grad else t


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of `size` filled with `fill_value` (dtype inferred from the value)."""
    check_device(device)
    return _with_grad(dispatch(OPS["aten::full"], (size_args((size,), "full"), fill_value), {"dtype": dtype}),
                      requires_grad)


def _like(name: str):
    op = OPS[f"aten::{name}"]

    def make(input, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
             pin_memory=False):
        check_device(device)
        check_memory_format(memory_format, input.dim(), name)
        return _with_grad(dispatch(op, (input,), {"dtype": dtype}), requires_grad)
    make.__name__ = name
    make.__doc__ = f"`{name[:-5]}` with the shape (and, unless given, dtype) of `input`."
    return make


zeros_like, ones_like, empty_like = _like("zeros_like"), _like("ones_like"), _like("empty_like")


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    check_device(device)
    check_memory_format(memory_format, input.dim(), "full_like")
    return _with_grad(dispatch(OPS["aten::full_like"], (input, fill_value), {"dtype": dtype}), requires_grad)


def rand_like(input, dtype=None, device=None, requires_grad=False, generator=None, memory_format=None) -> Tensor:
    check_memory_format(memory_format, input.dim(), "rand_like")
    return rand(input.shape, dtype=dtype or input.dtype, generator=generator, requires_grad=requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False, generator=None, memory_format=None) -> Tensor:
    check_memory_format(memory_format, input.dim(), "randn_like")
    return randn(input.shape, dtype=dtype or input.dtype, generator=generator, requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values from `start` (default 0) up to but excluding `end`, `step` apart."""
    check_device(device)
    return _with_grad(dispatch(OPS["aten::arange"], (start, end, step), {"dtype": dtype}), requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False) -> Tensor:
    check_device(device)
    return _with_grad(dispatch(OPS["aten::linspace"], (start, end, steps), {"dtype": dtype}), requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    check_device(device)
    return _with_grad(dispatch(OPS["aten::eye"], (n, m), {"dtype": dtype}), requires_grad)


def randint(low, high=None, size=None, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """`randint(high, size)` or `randint(low, high, size)`: integers in [low, high)."""
    check_device(device)
    if size is None:
        if high is None or not isinstance(high, (tuple, list)):
            raise TypeError("randint() missing required argument 'size'")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    return dispatch(OPS["aten::randint"], (low, high, size_args((size,), "randint")),
                    {"generator": generator, "dtype": dtype})


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    check_device(device)
    return dispatch(OPS["aten::randperm"], (n,), {"generator": generator, "dtype": dtype})


def manual_seed(seed) -> Generator:
    """Seed the default generator (what rand/randn/randint/randperm/dropout use)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()
