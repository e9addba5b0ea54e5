"""More movement ops: `roll`, and the index vector behind `repeat_interleave` with tensor repeats
(the values move with `index_select`, so their gradient is index_select's)."""
import numpy as np

from .. import dtypes as dt
from ..errors import OpNotImplementedError, OpRuntimeError
from .registry import register
from .rules import same_dtype, same_shape, wrap_dim


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _roll_dims(self, shifts, dims) -> tuple[list, list]:
    """Shifts and the dims they apply to (None for the flattened tensor), with PyTorch's checks."""
    shifts, dims = _as_list(shifts), _as_list(dims)
    if not shifts:
        raise OpRuntimeError("roll: `shifts` required")
    if not dims:
        if len(shifts) != 1:
            raise OpRuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return shifts, [None]
    if len(shifts) != len(dims):
        raise OpRuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    return shifts, [wrap_dim(d, self.ndim, "roll") for d in dims]


def _roll_shape(self, shifts, dims=()):
    _roll_dims(self, shifts, dims)
    return same_shape(self)


@register("aten::roll(Tensor self, int[] shifts, int[] dims=[]) -> Tensor", shape=_roll_shape, dtype=same_dtype)
def roll(self, shifts, dims=()):
    shifts, dims = _roll_dims(self, shifts, dims)
    if dims == [None]:
        return np.roll(self.reshape(-1), shifts[0]).reshape(self.shape)
    if self.ndim == 0:
        return self.copy()
    return np.roll(self, shifts, dims)


# How long `repeat_interleave(repeats)` is, when a rule sees only a TensorMeta of `repeats`.
REPEATED_SIZE = "repeated"


def _check_repeats(repeats) -> None:
    if repeats.ndim > 1:
        raise OpRuntimeError("repeat_interleave only accept 1D vector as repeat")
    if not dt.is_integral(repeats.dtype):
        raise OpNotImplementedError(f"\"repeat_interleave_cpu\" not implemented for "
                                    f"'{dt.TORCH_NAMES[repeats.dtype]}'")


def _repeat_index_shape(repeats, output_size=None):
    _check_repeats(repeats)
    if isinstance(repeats, np.ndarray):
        return (int(repeats.sum()),)
    return (REPEATED_SIZE if output_size is None else output_size,)


@register("aten::repeat_interleave.Tensor(Tensor repeats, *, int? output_size=None) -> Tensor",
          shape=_repeat_index_shape, dtype=lambda repeats, output_size=None: repeats.dtype)
def repeat_index(repeats, output_size=None):
    """`[0] * repeats[0] + [1] * repeats[1] + ...`: which input each output position copies."""
    _check_repeats(repeats)
    repeats = repeats.reshape(-1)
    if repeats.size and repeats.min() < 0:
        raise OpRuntimeError("repeats can not be negative")
    if output_size is not None and output_size != int(repeats.sum()):
        raise OpRuntimeError("allocated size does not match required size")
    return np.repeat(np.arange(repeats.size, dtype=repeats.dtype), repeats)

