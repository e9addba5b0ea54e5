"""Bringing kernel operands to PyTorch's common dtype before calling numpy (numpy's own promotion
differs: it sends `int64 + float32` to float64)."""
import numpy as np

from .. import dtypes as dt

ndarray = np.ndarray


def as_array(x, dtype=None):
    """A kernel result as an ndarray (numpy returns scalars for zero-dim results)."""
    if x.__class__ is ndarray and (dtype is None or x.dtype == dtype):
        return x
    return np.asarray(x, dtype=dtype)


def cast(x, dtype):
    """`x` (array or Python scalar) in `dtype`; Python scalars stay weak unless they must change."""
    if x.__class__ is ndarray or isinstance(x, np.generic):
        return x if x.dtype == dtype else x.astype(dtype)
    if dt.is_float(dtype) or dtype is dt.bool_:
        return x
    return int(x)


def common(*xs):
    """Operands cast to their PyTorch result dtype, and that dtype."""
    out = dt.result_type(*xs)
    return [cast(x, out) for x in xs], out
