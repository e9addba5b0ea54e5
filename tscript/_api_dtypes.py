"""Dtype questions PyTorch answers at the top level: `promote_types`, `result_type`, `can_cast` and
`is_complex` / `is_floating_point` (the rules are tscript_runtime/dtypes.py's, shared with every op)."""
from tscript_runtime import dtypes as _dt

from . import _dtype
from ._tensor import Tensor


def _check_dtype(fn: str, arg: str, d) -> None:
    if not isinstance(d, _dtype.dtype):
        raise TypeError(f"{fn}(): argument '{arg}' must be torch.dtype, not {type(d).__name__}")


def promote_types(type1: _dtype.dtype, type2: _dtype.dtype) -> _dtype.dtype:
    """The smallest dtype both dtypes convert to without losing their category (uint8, int8 -> int16)."""
    _check_dtype("promote_types", "type1", type1)
    _check_dtype("promote_types", "type2", type2)
    return _dtype.FROM_NP[_dt.promote_types(type1.np, type2.np)]


def _operand(x):
    if isinstance(x, Tensor):
        return x._data
    if isinstance(x, (bool, int, float, complex)):
        return x
    raise TypeError(f"result_type(): expected a Tensor or a number, got {type(x).__name__}")


def result_type(tensor1, tensor2) -> _dtype.dtype:
    """The dtype an elementwise op over `tensor1` and `tensor2` (tensors or numbers) gives."""
    return _dtype.FROM_NP[_dt.result_type(_operand(tensor1), _operand(tensor2))]


def can_cast(from_: _dtype.dtype, to: _dtype.dtype) -> bool:
    """Whether PyTorch's casting rules allow `from_` -> `to` (no complex -> real, float -> int, x -> bool)."""
    _check_dtype("can_cast", "from_", from_)
    _check_dtype("can_cast", "to", to)
    return _dt.can_cast(from_.np, to.np)


def is_complex(input: Tensor) -> bool:
    """True for tensors of a complex dtype."""
    return input.is_complex()


def is_floating_point(input: Tensor) -> bool:
    """True for tensors of a floating dtype (float16, bfloat16, float32, float64)."""
    return input.is_floating_point()


FUNCTIONS: dict = {"promote_types": promote_types, "result_type": result_type, "can_cast": can_cast,
                   "is_complex": is_complex, "is_floating_point": is_floating_point}
METHODS: dict = {}
