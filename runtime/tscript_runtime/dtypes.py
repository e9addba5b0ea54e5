"""The five dtypes and PyTorch's type-promotion rules, on numpy dtypes.

Kernels, shape/dtype rules and the executor all speak numpy dtypes; `tscript` wraps them in
`tscript.dtype` objects for users. Promotion follows PyTorch, not numpy: `int64 + float32 ->
float32`, and Python scalars (and zero-dim tensors) only promote across categories.
"""
import numpy as np

bool_ = np.dtype(np.bool_)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)

ALL = (bool_, int32, int64, float32, float64)
NAMES = {bool_: "bool", int32: "int32", int64: "int64", float32: "float32", float64: "float64"}
BY_NAME = {name: dt for dt, name in NAMES.items()}
# PyTorch's short names, used in its error messages ("result type Float can't be cast ...").
TORCH_NAMES = {bool_: "Bool", int32: "Int", int64: "Long", float32: "Float", float64: "Double"}

_CATEGORY = {bool_: 0, int32: 1, int64: 1, float32: 2, float64: 2}
_RANK = {bool_: 0, int32: 1, int64: 2, float32: 3, float64: 4}


class _Defaults:
    """The default floating dtype (PyTorch's `get_default_dtype`), shared by eager and runtime."""
    float_dtype = float32


defaults = _Defaults()


def is_float(dt) -> bool:
    return _CATEGORY[dt] == 2


def is_integral(dt, include_bool=False) -> bool:
    c = _CATEGORY[dt]
    return c == 1 or (include_bool and c == 0)


def category(dt) -> int:
    """0 bool, 1 integer, 2 floating."""
    return _CATEGORY[dt]


def promote_types(a, b):
    """The smallest dtype both `a` and `b` convert to (PyTorch's `promote_types`)."""
    if a is b or a == b:
        return a
    return a if _RANK[a] >= _RANK[b] else b


def scalar_dtype(x):
    """The dtype a Python scalar stands for when it takes part in promotion."""
    if isinstance(x, (bool, np.bool_)):
        return bool_
    if isinstance(x, (int, np.integer)):
        return int64
    if isinstance(x, (float, np.floating)):
        return defaults.float_dtype
    raise TypeError(f"expected a Tensor or a number, got {type(x).__name__}")


def _combine(higher, lower):
    """PyTorch's combine_categories: `lower` matters only when it is of a higher category."""
    if higher is None:
        return lower
    if lower is None or _CATEGORY[higher] == 2:
        return higher
    if higher is bool_ or _CATEGORY[lower] > _CATEGORY[higher]:
        return promote_types(higher, lower)
    return higher


def result_type(*operands):
    """The dtype of an elementwise op over tensors (anything with `.dtype`/`.ndim`) and scalars.

    Tensors with dimensions outrank zero-dim tensors, which outrank Python scalars; a lower rank
    only takes part when its category (bool < int < float) is higher.
    """
    dim = zero = scalar = None
    for x in operands:
        dt = getattr(x, "dtype", None)
        if dt is None:
            if x is None:
                continue
            dt = scalar_dtype(x)
            scalar = dt if scalar is None else promote_types(scalar, dt)
        elif x.ndim:
            dim = dt if dim is None else promote_types(dim, dt)
        else:
            zero = dt if zero is None else promote_types(zero, dt)
    out = _combine(dim, _combine(zero, scalar))
    assert out is not None, "result_type needs at least one operand"
    return out


def float_result(dt):
    """The dtype a float-valued op (exp, sqrt, mean, true division) returns for input dtype `dt`."""
    return dt if _CATEGORY[dt] == 2 else defaults.float_dtype


def can_cast(src, dst) -> bool:
    """PyTorch's `can_cast`: no float -> integer and no non-bool -> bool."""
    return _CATEGORY[src] <= _CATEGORY[dst]


_PY_TYPES = {float: float64, int: int64, bool: bool_}


def resolve(x):
    """A dtype argument as a numpy dtype: accepts numpy dtypes, `tscript.dtype`s (anything with
    `.np`), the Python types float/int/bool (as PyTorch does) and dtype names. None stays None."""
    if x is None or x.__class__ is np.dtype:
        return x
    np_dt = getattr(x, "np", None)
    if np_dt is not None:
        return np_dt
    if x in _PY_TYPES:
        return _PY_TYPES[x]
    if isinstance(x, str) and x in BY_NAME:
        return BY_NAME[x]
    try:
        cand = np.dtype(x)
    except TypeError:
        cand = None
    if cand in _CATEGORY and not isinstance(x, str):
        return cand
    from .errors import OpTypeError
    raise OpTypeError(f"unknown dtype {x!r} (expected one of {', '.join(BY_NAME)})")
