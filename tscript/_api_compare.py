"""Comparing tensors as PyTorch does: `isclose`, `allclose`, `equal`, and `_assert` (the assert that
symbolic tracing keeps). Composites of elementwise ops and `all`."""
import numpy as np

from tscript_runtime import dtypes as _dt
from tscript_runtime.errors import OpRuntimeError, OpTypeError
from tscript_runtime.ops import OPS

from ._dispatch import dispatch
from ._tensor import Tensor


def _op(name: str, *args, **kwargs):
    return dispatch(OPS[name], args, kwargs or None)


def _tensors(name: str, input, other) -> None:
    for arg, value in (("input", input), ("other", other)):
        if not isinstance(value, Tensor):
            raise OpTypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(value).__name__}")


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """Elementwise `|input - other| <= atol + rtol * |other|` (or equal, or both NaN with
    `equal_nan`), broadcasting; both tensors must have the same dtype."""
    _tensors("isclose", input, other)
    if input.dtype != other.dtype:
        raise OpRuntimeError(f"{_dt.TORCH_NAMES[input._data.dtype]} did not match "
                             f"{_dt.TORCH_NAMES[other._data.dtype]}")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if tol < 0:
            raise OpRuntimeError(f"{name} must be greater than or equal to zero, but got {tol}")
    close = input == other
    if equal_nan and input.is_floating_point():
        close = close | (_op("aten::isnan", input) & _op("aten::isnan", other))
    if rtol == 0 and atol == 0:
        return close
    a, b = (t.to(_dt.defaults.float_dtype) if t._data.dtype == _dt.bool_ else t for t in (input, other))
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN here, and not close: no warning
        allowed = atol + (rtol * b).abs()
        actual = (a - b).abs()
        return close | (_op("aten::isfinite", actual) & (actual <= allowed))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True when `isclose` holds for every element (after broadcasting)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and elements (NaN is never equal)."""
    _tensors("equal", input, other)
    if input._data.shape != other._data.shape:
        return False
    return bool((input == other).all())


def _assert(condition, message: str) -> None:
    """`assert condition, message` as a function (what `torch._assert` is: symbolic tracers keep it)."""
    assert condition, message


FUNCTIONS: dict = {"isclose": isclose, "allclose": allclose, "equal": equal, "_assert": _assert}
METHODS: dict = {"isclose": isclose, "allclose": allclose, "equal": equal}
