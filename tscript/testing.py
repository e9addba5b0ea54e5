"""`tscript.testing`, as `torch.testing`: `assert_close` (and the deprecated `assert_allclose`)."""
import math
import warnings

import numpy as np

from tscript_runtime import dtypes as _dt

from ._tensor import Tensor

# dtype -> (rtol, atol) when neither is given, as PyTorch's defaults; integers and bools compare exactly.
DEFAULT_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
                      "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


def _tolerances(np_dtype, rtol, atol) -> tuple:
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    return DEFAULT_TOLERANCES.get(np.dtype(np_dtype).name, (0.0, 0.0))


def _torch_dtype(np_dtype) -> str:
    return f"torch.{np.dtype(np_dtype).name}"


def _where(item: str) -> str:
    return f"\n\nThe failure occurred for item {item}" if item else ""


def _compare_arrays(a: np.ndarray, b: np.ndarray, rtol, atol, equal_nan, item, msg) -> None:
    """Raise AssertionError with PyTorch's report when `a` and `b` are not close elementwise."""
    # differences in the inputs' float dtype, as PyTorch reports them (integers: float64, and equality
    # is tested on the integers themselves, which no float holds exactly beyond 2**53)
    common = _dt.promote_types(a.dtype, b.dtype)
    is_float = _dt.is_inexact(common)  # (complex too: |a - b| is the distance of the complex numbers)
    a64, b64 = (a.astype(common), b.astype(common)) if is_float else (a.astype(np.float64), b.astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = np.abs(a64 - b64) if is_float else np.abs(a.astype(np.int64) - b.astype(np.int64)).astype(np.float64)
        ok = (a == b) | (np.isfinite(diff) & (diff <= atol + rtol * np.abs(b64)) & (rtol > 0 or atol > 0))
        if equal_nan:
            ok |= np.isnan(a64) & np.isnan(b64)
        if ok.all():
            return
        rel = diff / np.abs(b64)
    exact = rtol == 0 and atol == 0
    bad = ~ok
    i_abs, i_rel = (np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(d, nan=np.inf), -1))), a.shape)
                    for d in (diff, rel))
    fmt = (lambda x: str(int(x))) if a.dtype.kind in "iub" and b.dtype.kind in "iub" else repr
    allowed = lambda t: "" if exact else f" (up to {t} allowed)"  # noqa: E731
    text = (f"Tensor-likes are not {'equal' if exact else 'close'}!\n\n"
            f"Mismatched elements: {int(bad.sum())} / {bad.size} ({100 * bad.sum() / bad.size:.1f}%)\n"
            f"Greatest absolute difference: {fmt(float(diff[i_abs]))} at index {tuple(int(i) for i in i_abs)}"
            f"{allowed(atol)}\n"
            f"Greatest relative difference: {float(rel[i_rel])!r} at index {tuple(int(i) for i in i_rel)}"
            f"{allowed(rtol)}")
    raise AssertionError(_message(msg, text + _where(item)))


def _message(msg, default: str) -> str:
    if msg is None:
        return default
    return msg(default) if callable(msg) else msg


def _compare_tensors(actual: Tensor, expected: Tensor, rtol, atol, equal_nan, check_dtype, item, msg) -> None:
    a, b = actual._data, expected._data
    if a.shape != b.shape:
        raise AssertionError(_message(msg, f"The values for attribute 'shape' do not match: "
                                           f"torch.Size({list(a.shape)}) != torch.Size({list(b.shape)}).{_where(item)}"))
    if check_dtype and a.dtype != b.dtype:
        raise AssertionError(_message(msg, f"The values for attribute 'dtype' do not match: {_torch_dtype(a.dtype)} != "
                                           f"{_torch_dtype(b.dtype)}.{_where(item)}"))
    rtol, atol = _tolerances(_dt.promote_types(a.dtype, b.dtype), rtol, atol)
    _compare_arrays(a, b, rtol, atol, equal_nan, item, msg)


def _compare_numbers(actual, expected, rtol, atol, equal_nan, item, msg) -> None:
    rtol, atol = _tolerances(np.float64 if isinstance(actual, float) or isinstance(expected, float) else np.int64,
                             rtol, atol)
    if actual == expected or (equal_nan and math.isnan(actual) and math.isnan(expected)):
        return
    diff = abs(actual - expected)
    if math.isfinite(diff) and diff <= atol + rtol * abs(expected):
        return
    rel = diff / abs(expected) if expected else math.inf
    raise AssertionError(_message(msg, f"Scalars are not close!\n\nExpected {expected} but got {actual}.\n"
                                       f"Absolute difference: {diff} (up to {atol} allowed)\n"
                                       f"Relative difference: {rel} (up to {rtol} allowed){_where(item)}"))


def _is_number(x) -> bool:
    return isinstance(x, (int, float, bool)) and not isinstance(x, complex)


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol=None, atol=None, equal_nan: bool = False,
                 check_device: bool = True, check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg=None, _item: str = "") -> None:
    """Raise AssertionError unless `actual` and `expected` (tensors, numbers, or sequences / mappings
    of them) are close: `|actual - expected| <= atol + rtol * |expected|`, with PyTorch's default
    tolerances for the dtype, equal shapes and (with `check_dtype`) equal dtypes."""
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=check_dtype, msg=msg)
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        return _compare_tensors(actual, expected, rtol, atol, equal_nan, check_dtype, _item, msg)
    if _is_number(actual) and _is_number(expected):
        return _compare_numbers(actual, expected, rtol, atol, equal_nan, _item, msg)
    if isinstance(actual, dict) and isinstance(expected, dict):
        if set(actual) != set(expected):
            raise AssertionError(f"The keys of the mappings do not match: {sorted(map(str, actual))} != "
                                 f"{sorted(map(str, expected))}{_where(_item)}")
        for key in actual:
            assert_close(actual[key], expected[key], _item=f"{_item}[{key!r}]", **options)
        return None
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            raise AssertionError(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}"
                                 f"{_where(_item)}")
        for i, (a, b) in enumerate(zip(actual, expected)):
            assert_close(a, b, _item=f"{_item}[{i}]", **options)
        return None
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated form of `assert_close` (inputs become tensors; dtypes may differ)."""
    from ._creation import tensor
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future release. "
                  "Please use `torch.testing.assert_close()` instead.", FutureWarning, stacklevel=2)
    actual = actual if isinstance(actual, Tensor) else tensor(actual)
    expected = expected if isinstance(expected, Tensor) else tensor(expected, dtype=actual.dtype)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False, msg=msg or None)
