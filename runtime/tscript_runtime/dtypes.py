"""The dtypes and PyTorch's type-promotion rules, on numpy dtypes.

Kernels, shape/dtype rules and the executor all speak numpy dtypes; `tscript` wraps them in
`tscript.dtype` objects for users. Promotion follows PyTorch, not numpy: `int64 + float32 ->
float32`, `uint8 + int8 -> int16`, `float16 + bfloat16 -> float32`, and Python scalars (and zero-dim
tensors) only promote across categories (bool < integer < floating < complex).

bfloat16 is `ml_dtypes.bfloat16` (the numpy bfloat16 JAX uses). float16 and bfloat16 are *narrow*:
kernels compute them in float32 and round each result to the narrow type, as PyTorch does on the CPU.
"""
import ml_dtypes
import numpy as np

bool_ = np.dtype(np.bool_)
uint8 = np.dtype(np.uint8)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128)
NAMES = {bool_: "bool", uint8: "uint8", int8: "int8", int16: "int16", int32: "int32", int64: "int64",
         float16: "float16", bfloat16: "bfloat16", float32: "float32", float64: "float64",
         complex64: "complex64", complex128: "complex128"}
BY_NAME = {name: dt for dt, name in NAMES.items()}
# PyTorch's short names, used in its error messages ("result type Float can't be cast ...").
TORCH_NAMES = {bool_: "Bool", uint8: "Byte", int8: "Char", int16: "Short", int32: "Int", int64: "Long",
               float16: "Half", bfloat16: "BFloat16", float32: "Float", float64: "Double",
               complex64: "ComplexFloat", complex128: "ComplexDouble"}
# C++ type names, as PyTorch prints them in some messages ("expected m1 and m2 to have the same dtype").
C_NAMES = {bool_: "bool", uint8: "unsigned char", int8: "signed char", int16: "short int", int32: "int",
           int64: "long int", float16: "c10::Half", bfloat16: "c10::BFloat16", float32: "float", float64: "double",
           complex64: "c10::complex<float>", complex128: "c10::complex<double>"}
NARROW_FLOATS = (float16, bfloat16)  # computed in float32, stored narrow

_CATEGORY = {bool_: 0, uint8: 1, int8: 1, int16: 1, int32: 1, int64: 1, float16: 2, bfloat16: 2, float32: 2,
             float64: 2, complex64: 3, complex128: 3}
_COMPLEX_OF = {float32: complex64, float64: complex128, bfloat16: complex64}  # float16's would be complex32
_REAL_OF = {complex64: float32, complex128: float64}


class _Defaults:
    """The default floating dtype (PyTorch's `get_default_dtype`), shared by eager and runtime."""
    float_dtype = float32


defaults = _Defaults()


def is_float(dt) -> bool:
    """A real floating dtype (float16, bfloat16, float32, float64): PyTorch's `is_floating_point`."""
    return _CATEGORY[dt] == 2


def is_complex(dt) -> bool:
    return _CATEGORY[dt] == 3


def is_inexact(dt) -> bool:
    """Floating or complex: the dtypes whose tensors can require gradients."""
    return _CATEGORY[dt] >= 2


def is_narrow(dt) -> bool:
    """float16 or bfloat16: computed in float32, rounded to the narrow type."""
    return dt in NARROW_FLOATS


def is_integral(dt, include_bool=False) -> bool:
    c = _CATEGORY[dt]
    return c == 1 or (include_bool and c == 0)


def category(dt) -> int:
    """0 bool, 1 integer, 2 floating, 3 complex."""
    return _CATEGORY[dt]


def to_complex(dt):
    """The complex dtype of a real floating `dt` (PyTorch's toComplexType); float16's, complex32, is
    not a tscript dtype."""
    if dt in _COMPLEX_OF:
        return _COMPLEX_OF[dt]
    from .errors import OpRuntimeError
    raise OpRuntimeError(f"the complex counterpart of {NAMES[dt]} is complex32 (ComplexHalf), which tscript "
                         f"does not have (use float32 values for complex math)")


def to_real(dt):
    """The real dtype of a complex `dt` (complex64 -> float32); other dtypes unchanged."""
    return _REAL_OF.get(dt, dt)


def _promote_pair(a, b):
    """PyTorch's promotion lattice for two different dtypes."""
    ca, cb = _CATEGORY[a], _CATEGORY[b]
    if ca != cb:
        lo, hi = (a, b) if ca < cb else (b, a)
        if _CATEGORY[hi] == 3 and _CATEGORY[lo] == 2:  # complex with float: complex of the wider real
            return _COMPLEX_OF[_promote_pair(to_real(hi), lo) if to_real(hi) != lo else lo]
        return hi
    if ca == 1 and uint8 in (a, b):  # uint8 with a signed int: the next signed type holding both ranges
        other = b if a == uint8 else a
        return int16 if other == int8 else other
    if ca == 2 and {a, b} == set(NARROW_FLOATS):
        return float32
    return a if a.itemsize >= b.itemsize else b


_PROMOTE = {(a, b): a if a == b else _promote_pair(a, b) for a in ALL for b in ALL}


def promote_types(a, b):
    """The smallest dtype both `a` and `b` convert to (PyTorch's `promote_types`)."""
    if a is b:
        return a
    return _PROMOTE[a, b]


def default_complex():
    """The complex dtype Python complex numbers stand for (complex128 when the default float is float64)."""
    return _COMPLEX_OF[defaults.float_dtype] if defaults.float_dtype in _COMPLEX_OF else complex64


def scalar_dtype(x):
    """The dtype a Python scalar stands for when it takes part in promotion."""
    if isinstance(x, (bool, np.bool_)):
        return bool_
    if isinstance(x, (int, np.integer)):
        return int64
    if isinstance(x, (float, np.floating)):
        return defaults.float_dtype
    if isinstance(x, (complex, np.complexfloating)):
        return default_complex()
    raise TypeError(f"expected a Tensor or a number, got {type(x).__name__}")


def _combine(higher, lower):
    """PyTorch's combine_categories: `lower` matters only when it is of a higher category (a complex
    `lower` keeps a floating `higher`'s precision: float64 tensor * 1j -> complex128)."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    ch, cl = _CATEGORY[higher], _CATEGORY[lower]
    if ch == 3:
        return higher
    if cl == 3:
        return to_complex(higher) if ch == 2 else lower
    if ch == 2:
        return higher
    if higher is bool_ or cl == 2:
        return promote_types(higher, lower)
    return higher


def result_type(*operands):
    """The dtype of an elementwise op over tensors (anything with `.dtype`/`.ndim`) and scalars.

    Tensors with dimensions outrank zero-dim tensors, which outrank Python scalars; a lower rank
    only takes part when its category (bool < int < float < complex) is higher.
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
    return dt if _CATEGORY[dt] >= 2 else defaults.float_dtype


def compute_dtype(dt):
    """The dtype a kernel computes `dt` values in: float32 for the narrow floats, else `dt` itself."""
    return float32 if dt in NARROW_FLOATS else dt


def can_cast(src, dst) -> bool:
    """PyTorch's `can_cast`: no complex -> real, no float -> integer and no non-bool -> bool."""
    return _CATEGORY[src] <= _CATEGORY[dst]


_PY_TYPES = {float: float64, int: int64, bool: bool_, complex: complex128}


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
