"""`Tensor.__getitem__` / `__setitem__`: a Python index decomposed into core ops, as PyTorch does.

The index items are applied left to right to a view of the tensor: an int selects
(`aten::select`), a slice narrows (`aten::slice`), None inserts a dimension (`aten::unsqueeze`),
`...` skips the dimensions no other item names. Advanced items (integer and bool tensors, lists,
numpy arrays, Python bools) are collected per dimension of that view and applied at the end by
one `aten::index`. So ints are never advanced indices here (unlike NumPy): `x[0, :, [1, 2]]` has
shape `(x.shape[1], 2)`, as in PyTorch.

Assignment walks the same views, then writes with `aten::copy_` / `aten::fill_`, or with
`aten::index_put_` when there are advanced items. Every step goes through `dispatch`, so the
views share memory and the version counter with the tensor, and a tracer records each op.
"""
import operator
import warnings

import numpy as np

from tscript_runtime.errors import OpIndexError, OpTypeError, OpValueError
from tscript_runtime.ops import OPS

from ._creation import tensor
from ._dispatch import dispatch
from ._tensor import Tensor

_OP = {name: OPS[f"aten::{name}"] for name in (
    "select", "slice", "unsqueeze", "alias", "index", "index_put_", "copy_", "fill_", "expand", "view", "full")}
_NUMBERS = (bool, int, float, np.integer)  # what PyTorch assigns (np.float64 is a float)
# PyTorch reads a list this short holding one of these as a tuple of indices (NumPy's old rule).
_TUPLE_LIKE = (Tensor, list, tuple, np.ndarray, slice, type(None), type(Ellipsis))
_MAX_TUPLE_LIKE = 32


def getitem(t: Tensor, index) -> Tensor:
    """`t[index]`: a view for ints, slices, None and `...`; a new tensor with advanced items."""
    view, advanced = _apply_basic(t, _items(t, index))
    if advanced:
        return dispatch(_OP["index"], (view, _index_list(advanced)))
    return dispatch(_OP["alias"], (t,)) if view is t else view


def setitem(t: Tensor, index, value) -> None:
    """`t[index] = value`: writes into `t` (a scalar is converted to `t`'s dtype first)."""
    value = _value_tensor(t, value)
    view, advanced = _apply_basic(t, _items(t, index))
    if advanced:
        dispatch(_OP["index_put_"], (view, _index_list(advanced), _strip_leading_ones(value)))
    else:
        _copy_to(view, value)


# -- reading the index ---------------------------------------------------------------------------------

def _items(t: Tensor, index) -> list:
    """The index as a list of (kind, value); `...` carries the number of dimensions it skips."""
    items = [_classify(x) for x in _as_tuple(index)]
    specified = sum(_dims_named(kind, value) for kind, value in items)
    if specified > t.ndim:
        if t.ndim == 0 and any(kind == "int" for kind, _ in items):
            raise OpIndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                               "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise OpIndexError(f"too many indices for tensor of dimension {t.ndim}")
    skip = t.ndim - specified
    return [(kind, skip if kind == "ellipsis" else value) for kind, value in items]


def _as_tuple(index) -> tuple:
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and len(index) < _MAX_TUPLE_LIKE and any(isinstance(x, _TUPLE_LIKE)
                                                                        for x in index):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated; use "
                      "x[tuple(seq)] instead of x[seq]", UserWarning, stacklevel=5)
        return tuple(index)
    return (index,)


def _classify(x) -> tuple:
    """(kind, value) of one index item; kinds: int, slice, none, ellipsis, bool, tensor."""
    if x is None:
        return "none", None
    if x is Ellipsis:
        return "ellipsis", None
    if isinstance(x, bool):
        return "bool", x
    if isinstance(x, (int, np.integer)):
        return "int", int(x)
    if isinstance(x, slice):
        return "slice", x
    if isinstance(x, Tensor):
        return _classify_tensor(x)
    if isinstance(x, np.ndarray):
        return _classify_tensor(tensor(x))
    if isinstance(x, (list, tuple)):  # an empty list picks nothing (with an integer index)
        return _classify_tensor(tensor(x if x else np.zeros(0, np.int64)))
    raise OpIndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                       f"valid indices (got {_type_name(x)})")


def _classify_tensor(x: Tensor) -> tuple:
    """A 0-dim integer tensor indexes like an int, a 0-dim bool one like a Python bool; a uint8 one
    with dims is a mask, as in PyTorch (which warns that this is deprecated)."""
    if x.ndim == 0 and x._data.dtype.kind in "iub":
        return ("bool", bool(x)) if _is_mask(x) else ("int", operator.index(x))
    if x._data.dtype == np.uint8:
        warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.",
                      UserWarning, stacklevel=7)
        return "tensor", x.bool()
    return "tensor", x


def _dims_named(kind: str, value) -> int:
    """How many dimensions of the indexed tensor an item consumes."""
    if kind in ("int", "slice"):
        return 1
    if kind == "tensor":
        return value.ndim if _is_mask(value) else 1
    return 0


def _is_mask(x: Tensor) -> bool:
    return x._data.dtype == np.bool_


def _type_name(x) -> str:
    cls = type(x)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


# -- applying it -------------------------------------------------------------------------------------------

def _apply_basic(t: Tensor, items) -> tuple:
    """Apply the basic items as views of `t`; returns the view and {view dim: advanced index}.

    `dim` counts dimensions of the view, `real` those of `t` (for error messages)."""
    view, dim, real, advanced = t, 0, 0, {}
    for kind, value in items:
        if kind == "int":
            view = _select(view, dim, real, value)
            real += 1
        elif kind == "slice":
            view = _slice(view, dim, value)
            dim, real = dim + 1, real + 1
        elif kind == "ellipsis":
            dim, real = dim + value, real + value
        elif kind == "tensor":
            advanced[dim] = value
            step = _dims_named(kind, value)
            dim, real = dim + step, real + step
        else:  # None, or a Python bool: a new dimension, picked (True) or emptied (False) by a mask
            view = dispatch(_OP["unsqueeze"], (view, dim))
            if kind == "bool":
                advanced[dim] = tensor([value])
            dim += 1
    return view, advanced


def _select(view: Tensor, dim: int, real: int, i: int) -> Tensor:
    size = view.shape[dim]
    if not -size <= i < size:
        raise OpIndexError(f"index {i} is out of bounds for dimension {real} with size {size}")
    return dispatch(_OP["select"], (view, dim, i))


def _slice(view: Tensor, dim: int, s: slice) -> Tensor:
    start, stop, step = (_slice_bound(b) for b in (s.start, s.stop, s.step))
    step = 1 if step is None else step
    if step == 0:
        raise OpValueError("slice step cannot be zero")
    if step < 0:
        raise OpValueError("step must be greater than zero")
    if start is None and stop is None and step == 1:
        return view
    return dispatch(_OP["slice"], (view, dim, start, stop, step))


def _slice_bound(b):
    if b is None:
        return None
    try:
        return operator.index(b)
    except TypeError:
        raise OpTypeError("slice indices must be integers or None or have an __index__ method") from None


def _index_list(advanced: dict) -> list:
    """The `Tensor?[]` list of `aten::index`: one entry per view dimension up to the last indexed
    one (a mask's entry covers as many dimensions as it has)."""
    out, dim, last = [], 0, max(advanced)
    while dim <= last:
        idx = advanced.get(dim)
        out.append(idx)
        dim += idx.ndim if idx is not None and _is_mask(idx) else 1
    return out


# -- assignment -----------------------------------------------------------------------------------------

def _value_tensor(t: Tensor, value) -> Tensor:
    """The assigned value as a tensor; a Python number becomes a 0-dim tensor of `t`'s dtype."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, _NUMBERS):
        return dispatch(_OP["full"], ([], value), {"dtype": t.dtype})
    raise OpTypeError(f"can't assign a {_type_name(value)} to a {t.type()}")


def _strip_leading_ones(value: Tensor) -> Tensor:
    """PyTorch drops leading size-1 dimensions of an assigned value: `x[0] = ones(1, 1, 4)` works."""
    shape = value.shape
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return dispatch(_OP["view"], (value, list(shape[k:]))) if k else value


def _copy_to(dst: Tensor, src: Tensor) -> None:
    if dst.shape == src.shape:
        dispatch(_OP["copy_"], (dst, src))
    elif src.ndim == 0:
        dispatch(_OP["fill_"], (dst, src))
    else:
        src = dispatch(_OP["expand"], (_strip_leading_ones(src), list(dst.shape)))
        dispatch(_OP["copy_"], (dst, src))
