"""`repr` of tensors in PyTorch's style: `tensor([1., 2.], dtype=tscript.float64, requires_grad=True)`."""
import numpy as np

from tscript_runtime import dtypes as _dt

_PLAIN = {_dt.int64, _dt.bool_}


def _float_mode(arr: np.ndarray) -> str:
    """Integer-valued floats print as `1.`, others with 4 decimals (numpy picks sci notation
    for wide ranges, as PyTorch does)."""
    finite = arr[np.isfinite(arr)]
    return "maxprec" if finite.size == 0 or np.all(finite == np.round(finite)) else "fixed"


def tensor_repr(t) -> str:
    arr = t._data
    extras = []
    if arr.size == 0 and arr.ndim != 1:
        body = "[]"
        extras.append(f"size={tuple(arr.shape)}")
    else:
        shown = arr.astype(_dt.float32) if _dt.is_narrow(arr.dtype) else arr  # numpy prints bfloat16 poorly
        mode = _float_mode(shown) if _dt.is_inexact(arr.dtype) else "maxprec"
        body = np.array2string(shown, separator=", ", prefix="tensor(", precision=4, floatmode=mode,
                               threshold=1000, edgeitems=3)
    if arr.dtype not in _PLAIN and arr.dtype != _dt.defaults.float_dtype and arr.dtype != _dt.default_complex():
        extras.append(f"dtype=tscript.{_dt.NAMES[arr.dtype]}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return f"tensor({body}{''.join(', ' + e for e in extras)})"
