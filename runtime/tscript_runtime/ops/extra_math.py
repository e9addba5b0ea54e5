"""More elementwise ops: the float classifiers (`isnan`, `isinf`, `isfinite`, `isposinf`, `isneginf`),
`nan_to_num`, the unary functions `log2`, `tan`, `asin`, `acos`, `atan`, and the binary `copysign` and
`fmod`."""
import numpy as np

from .. import dtypes as dt
from ..errors import OpNotImplementedError, OpRuntimeError
from ._cast import as_array, cast, common
from .elementwise import BINARY, _binary_shape, _unary_kernel
from .registry import register
from .rules import boolean, float_of_self, promoted, promoted_float, same_dtype, same_shape


def _classifier(test, on_integers: bool):
    """A float classifier; integer and bool tensors are never NaN or infinite (all finite)."""
    def kernel(self):
        if dt.is_float(self.dtype):
            return as_array(test(self))
        return np.full(self.shape, on_integers)
    return kernel


CLASSIFIERS = {
    "isnan": (np.isnan, False), "isinf": (np.isinf, False), "isfinite": (np.isfinite, True),
    "isposinf": (np.isposinf, False), "isneginf": (np.isneginf, False),
}

for _name, (_test, _on_integers) in CLASSIFIERS.items():
    register(f"aten::{_name}(Tensor self) -> Tensor", shape=same_shape, dtype=boolean)(
        _classifier(_test, _on_integers))


def nan_bounds(dtype, nan=None, posinf=None, neginf=None) -> tuple:
    """The replacements of nan_to_num: 0, and the largest / lowest finite value of `dtype` by default."""
    info = np.finfo(dtype)
    return (0.0 if nan is None else nan, float(info.max) if posinf is None else posinf,
            float(info.min) if neginf is None else neginf)


@register("aten::nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor",
          shape=same_shape, dtype=same_dtype, inplace=True)
def nan_to_num(self, nan=None, posinf=None, neginf=None):
    if not dt.is_float(self.dtype):
        return self.copy()
    nan, posinf, neginf = nan_bounds(self.dtype, nan, posinf, neginf)
    with np.errstate(over="ignore"):  # a replacement beyond the dtype's range becomes inf, as in PyTorch
        return as_array(np.nan_to_num(self, nan=nan, posinf=posinf, neginf=neginf))


# name -> numpy function; integer inputs give the default float dtype, as for exp and sin.
UNARY = {"log2": np.log2, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan}

for _name, _fn in UNARY.items():
    register(f"aten::{_name}(Tensor self) -> Tensor", shape=same_shape, dtype=float_of_self,
             inplace=True)(_unary_kernel(_fn, "float"))


@register("aten::copysign" + BINARY, shape=_binary_shape, dtype=promoted_float, inplace=True)
def copysign(self, other):
    """|self| with the sign of `other` (of -0.0 too); integer inputs give the default float dtype."""
    out = promoted_float(self, other)
    return as_array(np.copysign(cast(self, out), cast(other, out)), out)


def _fmod_dtype(self, other):
    out = promoted(self, other)
    if out == dt.bool_:
        raise OpNotImplementedError("\"fmod_cpu\" not implemented for 'Bool'")
    return out


@register("aten::fmod" + BINARY, shape=_binary_shape, dtype=_fmod_dtype, inplace=True)
def fmod(self, other):
    """The remainder of division rounded toward zero (C's fmod: the sign of `self`), unlike `remainder`."""
    (a, b), out = common(self, other)
    _fmod_dtype(self, other)
    if not dt.is_float(out) and np.any(np.asarray(b) == 0):
        raise OpRuntimeError("ZeroDivisionError")
    with np.errstate(invalid="ignore", divide="ignore"):
        return as_array(np.fmod(a, b), out)
