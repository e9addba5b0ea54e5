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
    """`x` (array or Python scalar) in `dtype`; Python scalars stay weak unless they must change (an
    int for an integer dtype wraps around into its range, as PyTorch converts: uint8 tensor * 300
    multiplies by 44)."""
    if x.__class__ is ndarray or isinstance(x, np.generic):
        return x if x.dtype == dtype else x.astype(dtype)
    if not dt.is_integral(dtype):
        return x
    return wrap_int(int(x), dtype)


def wrap_int(x: int, dtype) -> int:
    """The Python int `x` wrapped into the range of the integer `dtype` (two's complement)."""
    bits = dtype.itemsize * 8
    if dtype.kind == "u":
        return x % (1 << bits)
    half = 1 << (bits - 1)
    return x if -half <= x < half else (x + half) % (1 << bits) - half


def weak_scalar(array_dtype, x) -> bool:
    """Does numpy combine an array of `array_dtype` with the Python scalar `x` as PyTorch does
    (result dtype, and the scalar taken as is)? Not for floats with ints (numpy: float64), complex
    with non-complex-able arrays, or ints outside a narrow integer dtype's range (numpy: an error)."""
    cls = x.__class__
    kind = array_dtype.kind
    if cls is int:
        return kind not in "iu" or array_dtype.itemsize == 8 or wrap_int(x, array_dtype) == x
    if cls is float or cls is complex:
        return kind in "fc"
    return cls is bool


def common(*xs):
    """Operands cast to their PyTorch result dtype, and that dtype."""
    out = dt.result_type(*xs)
    return [cast(x, out) for x in xs], out
