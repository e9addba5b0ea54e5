"""`tscript.linalg`, as `torch.linalg`: `vector_norm` (over the op table's `aten::norm`)."""
from tscript_runtime import dtypes as _dt
from tscript_runtime.errors import OpRuntimeError, OpTypeError
from tscript_runtime.ops import OPS

from ._dispatch import dispatch
from ._tensor import Tensor


def _check_dtypes(x: Tensor, dtype) -> None:
    """Float inputs only, and a `dtype` the input converts to without narrowing (PyTorch's checks)."""
    have = x._data.dtype
    if not _dt.is_float(have):
        raise OpRuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                             f"{_dt.TORCH_NAMES[have]}")
    want = _dt.resolve(dtype)
    if want is None:
        return
    if not _dt.is_float(want):
        raise OpRuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got "
                             f"{_dt.TORCH_NAMES[want]}")
    if _dt.promote_types(have, want) != want:
        raise OpRuntimeError(f"linalg.vector_norm: the dtype of the input ({_dt.TORCH_NAMES[have]}) should be "
                             f"convertible without narrowing to the specified dtype ({_dt.TORCH_NAMES[want]})")


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The vector `ord`-norm of `x` over `dim` (all dims when None or empty): `ord` is any number,
    `inf` (max |x|), `-inf` (min |x|) or 0 (the count of nonzeros); computed in `dtype` if given."""
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise OpTypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    if not isinstance(x, Tensor):
        raise OpTypeError(f"linalg_vector_norm(): argument 'x' (position 1) must be Tensor, not {type(x).__name__}")
    _check_dtypes(x, dtype)
    if isinstance(dim, (list, tuple)) and not dim:
        dim = None
    return dispatch(OPS["aten::norm"], (x, ord, dim, keepdim), {"dtype": dtype})
