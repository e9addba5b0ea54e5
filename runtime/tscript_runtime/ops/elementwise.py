"""Elementwise ops: unary, binary (with broadcasting and PyTorch type promotion) and ternary."""
import math

import numpy as np

from .. import dtypes as dt
from ..errors import OpRuntimeError
from . import accelerated
from ._cast import as_array, cast, common, ndarray, weak_scalar
from .registry import register
from .rules import (boolean, broadcast_args, check_float, float_of_self, promoted, promoted_float,
                    same_dtype, same_shape)

BINARY = "(Tensor|Scalar self, Tensor|Scalar other) -> Tensor"


def _binary_shape(self, other, *rest):
    return broadcast_args(self, other)


def _fast_pair(a, b):
    """True when numpy's promotion already is PyTorch's: two arrays of one dtype, or an array and a
    Python scalar numpy takes as PyTorch does (numpy sends `int array + 0.5` to float64, PyTorch to
    the default float; see weak_scalar)."""
    if a.__class__ is ndarray:
        if b.__class__ is ndarray:
            return a.dtype is b.dtype
        return weak_scalar(a.dtype, b)
    return b.__class__ is ndarray and weak_scalar(b.dtype, a)


def _binary_kernel(fn, name: str = ""):
    """The kernel of a binary op computing `fn` (the accelerated `name`'s when there is one for the case)."""
    def kernel(self, other):
        if _fast_pair(self, other):
            big = accelerated.MIN_ELEMENTWISE  # (inline: a function call would cost tiny tensors' ops ~5%)
            if name and (self.__class__ is ndarray and self.size >= big
                         or other.__class__ is ndarray and other.size >= big):
                fast = accelerated.call(name, self, other)
                if fast is not None:
                    return fast
            return as_array(fn(self, other))
        (a, b), _ = common(self, other)
        return as_array(fn(a, b))
    kernel.__name__ = fn.__name__
    return kernel


# -- arithmetic ---------------------------------------------------------------------------------

def _no_bool_sub(self, other, alpha=1):
    out = promoted(self, other)
    if out is dt.bool_:
        raise OpRuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                             "Use the `^` or `logical_xor()` operator instead.")
    return out


def _check_alpha(out, alpha):
    if not dt.is_float(out) and isinstance(alpha, float):
        raise OpRuntimeError("For integral input tensors, argument alpha must not be a floating point number.")


def _add_dtype(self, other, alpha=1):
    out = promoted(self, other)
    _check_alpha(out, alpha)
    return out


@register("aten::add(Tensor|Scalar self, Tensor|Scalar other, *, Scalar alpha=1) -> Tensor",
          shape=_binary_shape, dtype=_add_dtype, inplace=True)
def add(self, other, alpha=1):
    if alpha == 1 and _fast_pair(self, other):
        big = accelerated.MIN_ELEMENTWISE  # (inline: a function call would cost tiny tensors' ops ~5%)
        if self.__class__ is ndarray and self.size >= big or other.__class__ is ndarray and other.size >= big:
            fast = accelerated.call("add", self, other)
            if fast is not None:
                return fast
        return as_array(np.add(self, other))
    (a, b), out = common(self, other)
    _check_alpha(out, alpha)
    return as_array(np.add(a, b if alpha == 1 else b * cast(alpha, out)), out)


@register("aten::sub(Tensor|Scalar self, Tensor|Scalar other, *, Scalar alpha=1) -> Tensor",
          shape=_binary_shape, dtype=_no_bool_sub, inplace=True)
def sub(self, other, alpha=1):
    if alpha == 1 and _fast_pair(self, other) and getattr(self, "dtype", None) is not dt.bool_ \
            and getattr(other, "dtype", None) is not dt.bool_:
        return as_array(np.subtract(self, other))
    out = _no_bool_sub(self, other)
    _check_alpha(out, alpha)
    (a, b), out = common(self, other)
    return as_array(np.subtract(a, b if alpha == 1 else b * cast(alpha, out)), out)


@register("aten::rsub(Tensor self, Tensor|Scalar other, *, Scalar alpha=1) -> Tensor",
          shape=_binary_shape, dtype=_no_bool_sub)
def rsub(self, other, alpha=1):
    """`other - alpha * self` (what `2 - t` records)."""
    return sub(other, self, alpha)


register("aten::mul" + BINARY, shape=_binary_shape, dtype=promoted, inplace=True)(
    _binary_kernel(np.multiply, "mul"))


def _div_dtype(self, other, rounding_mode=None):
    if rounding_mode not in (None, "trunc", "floor"):
        raise OpRuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                             f"found '{rounding_mode}'")
    return promoted_float(self, other) if rounding_mode is None else promoted(self, other)


def _int_div_check(b):
    if np.any(np.asarray(b) == 0):
        raise OpRuntimeError("ZeroDivisionError: integer division by zero")


@register("aten::div(Tensor|Scalar self, Tensor|Scalar other, *, str? rounding_mode=None) -> Tensor",
          shape=_binary_shape, dtype=_div_dtype, inplace=True)
def div(self, other, rounding_mode=None):
    if rounding_mode is None and _fast_pair(self, other) \
            and (self if self.__class__ is ndarray else other).dtype.kind == "f":
        return as_array(np.true_divide(self, other))
    out = _div_dtype(self, other, rounding_mode)
    if rounding_mode is None:
        return as_array(np.true_divide(cast(self, out), cast(other, out)), out)
    (a, b), out = common(self, other)
    if not dt.is_float(out):
        _int_div_check(b)
        q = np.floor_divide(a, b)
        if rounding_mode == "trunc":  # floor -> trunc where the exact quotient is negative and inexact
            q = q + ((np.remainder(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0)))
        return as_array(q, out)
    q = np.true_divide(a, b)
    return as_array(np.trunc(q) if rounding_mode == "trunc" else np.floor_divide(a, b), out)


@register("aten::floor_divide" + BINARY, shape=_binary_shape, dtype=promoted, inplace=True)
def floor_divide(self, other):
    return div(self, other, "floor")


@register("aten::remainder" + BINARY, shape=_binary_shape, dtype=promoted, inplace=True)
def remainder(self, other):
    (a, b), out = common(self, other)
    if not dt.is_float(out):
        _int_div_check(b)
    return as_array(np.remainder(a, b), out)


def _pow_dtype(self, exponent):
    return promoted(self, exponent)


@register("aten::pow(Tensor|Scalar self, Tensor|Scalar exponent) -> Tensor",
          shape=_binary_shape, dtype=_pow_dtype, inplace=True)
def pow(self, exponent):
    (a, b), out = common(self, exponent)
    if not dt.is_float(out) and np.any(np.asarray(b) < 0):
        raise OpRuntimeError("Integers to negative integer powers are not allowed.")
    return as_array(np.power(a, b), out)


register("aten::maximum(Tensor self, Tensor other) -> Tensor", shape=_binary_shape,
         dtype=promoted)(_binary_kernel(np.maximum))
register("aten::minimum(Tensor self, Tensor other) -> Tensor", shape=_binary_shape,
         dtype=promoted)(_binary_kernel(np.minimum))

# -- comparisons and logic: computed in the promoted dtype, bool result ------------------------

for _name, _fn in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                   ("gt", np.greater), ("ge", np.greater_equal), ("logical_and", np.logical_and),
                   ("logical_or", np.logical_or), ("logical_xor", np.logical_xor)]:
    register(f"aten::{_name}" + BINARY, shape=_binary_shape, dtype=boolean)(_binary_kernel(_fn))


def _bitwise_dtype(self, other=None):
    out = promoted(self) if other is None else promoted(self, other)
    if dt.is_float(out):
        raise OpRuntimeError(f"bitwise ops are only defined for bool and integer tensors, got "
                             f"{dt.NAMES[out]} (not implemented for '{dt.TORCH_NAMES[out]}')")
    return out


for _name, _fn in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                   ("bitwise_xor", np.bitwise_xor)]:
    register(f"aten::{_name}" + BINARY, shape=_binary_shape, dtype=_bitwise_dtype,
             inplace=True)(_binary_kernel(_fn))

# -- unary ---------------------------------------------------------------------------------------


def _erf(x):
    """erf: exact (libm) in float64; for float32 the kernel library's (ops/accelerated.py) or a numpy
    series/Chebyshev form, |error| < 3e-7."""
    fast = accelerated.call("erf", x)
    if fast is not None:
        return fast
    if x.dtype == np.float64:
        return np.frompyfunc(math.erf, 1, 1)(x).astype(np.float64)
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    far = np.sign(x) * (1.0 - t * np.exp(poly))
    z2 = z * z
    series = x * (2 / math.sqrt(math.pi)) * (1 - z2 / 3 + z2 ** 2 / 10 - z2 ** 3 / 42 + z2 ** 4 / 216
                                             - z2 ** 5 / 1320 + z2 ** 6 / 9360)
    return np.where(z < 0.5, series, far).astype(x.dtype)


def _sigmoid(x):
    out = np.negative(x, out=np.empty_like(x))  # one buffer, updated in place (an array even when 0-dim)
    np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


def _rsqrt(x):
    out = np.sqrt(x, out=np.empty_like(x))  # an array even when 0-dim, so it can be updated in place
    return np.reciprocal(out, out=out)


def _relu(x):
    fast = accelerated.call("relu", x) if x.size >= accelerated.MIN_ELEMENTWISE else None
    return np.maximum(x, x.dtype.type(0)) if fast is None else fast


def _neg(x):
    if x.dtype == dt.bool_:
        raise OpRuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                             "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return np.negative(x)


def _sign(x):
    return x.copy() if x.dtype == dt.bool_ else np.sign(x)


def _integral_identity(fn):
    """floor/ceil/round/trunc leave integer tensors unchanged (as a copy)."""
    return lambda x: fn(x) if dt.is_float(x.dtype) else x.copy()


# name -> (numpy function, result kind): "float" ops send integer inputs to the default float dtype;
# "real" ones give complex inputs' real dtype (abs).
UNARY = {
    "exp": (np.exp, "float"), "log": (np.log, "float"), "log1p": (np.log1p, "float"),
    "expm1": (np.expm1, "float"), "sqrt": (np.sqrt, "float"), "rsqrt": (_rsqrt, "float"),
    "sin": (np.sin, "float"), "cos": (np.cos, "float"), "tanh": (np.tanh, "float"),
    "sigmoid": (_sigmoid, "float"), "erf": (_erf, "float"), "reciprocal": (np.reciprocal, "float"),
    "neg": (_neg, "same"), "abs": (np.abs, "real"), "sign": (_sign, "same"), "relu": (_relu, "same"),
    "floor": (_integral_identity(np.floor), "same"), "ceil": (_integral_identity(np.ceil), "same"),
    "round": (_integral_identity(np.round), "same"), "trunc": (_integral_identity(np.trunc), "same"),
}


def _unary_kernel(fn, kind):
    if kind != "float":
        return lambda self: as_array(fn(self))

    def kernel(self):
        if dt.is_inexact(self.dtype):
            return as_array(fn(self))
        return as_array(fn(self.astype(dt.defaults.float_dtype)))
    return kernel


_UNARY_DTYPES = {"float": float_of_self, "same": same_dtype, "real": lambda self: dt.to_real(self.dtype)}
for _name, (_fn, _kind) in UNARY.items():
    register(f"aten::{_name}(Tensor self) -> Tensor", shape=same_shape,
             dtype=_UNARY_DTYPES[_kind], inplace=True)(_unary_kernel(_fn, _kind))

register("aten::logical_not(Tensor self) -> Tensor", shape=same_shape, dtype=boolean,
         inplace=False)(lambda self: as_array(np.logical_not(self)))
register("aten::bitwise_not(Tensor self) -> Tensor", shape=same_shape, dtype=_bitwise_dtype,
         inplace=True)(lambda self: as_array(np.logical_not(self) if self.dtype == dt.bool_ else np.invert(self)))

# -- ternary -------------------------------------------------------------------------------------


def _where_dtype(condition, self, other):
    if condition.dtype != dt.bool_:
        raise OpRuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with "
                             f"dtype {dt.TORCH_NAMES[condition.dtype]}")
    return promoted(self, other)


@register("aten::where(Tensor condition, Tensor|Scalar self, Tensor|Scalar other) -> Tensor",
          shape=lambda c, s, o: broadcast_args(c, s, o), dtype=_where_dtype)
def where(condition, self, other):
    out = _where_dtype(condition, self, other)
    return as_array(np.where(condition, cast(self, out), cast(other, out)), out)


def _clamp_dtype(self, min=None, max=None):
    if min is None and max is None:
        raise OpRuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return promoted(*(x for x in (self, min, max) if x is not None))


@register("aten::clamp(Tensor self, Tensor|Scalar? min=None, Tensor|Scalar? max=None) -> Tensor",
          shape=lambda s, lo=None, hi=None: broadcast_args(*(x for x in (s, lo, hi) if x is not None)),
          dtype=_clamp_dtype, inplace=True)
def clamp(self, min=None, max=None):
    out = _clamp_dtype(self, min, max)
    x = cast(self, out)
    if min is not None:
        x = np.maximum(x, cast(min, out))
    if max is not None:
        x = np.minimum(x, cast(max, out))
    return as_array(x, out)


def _lerp_dtype(self, end, weight):
    check_float("lerp", self.dtype)
    return promoted(self, end)


@register("aten::lerp(Tensor self, Tensor end, Tensor|Scalar weight) -> Tensor",
          shape=lambda s, e, w: broadcast_args(s, e, w), dtype=_lerp_dtype, inplace=True)
def lerp(self, end, weight):
    out = _lerp_dtype(self, end, weight)
    s, e, w = cast(self, out), cast(end, out), cast(weight, out)
    diff = e - s
    return as_array(np.where(np.abs(w) < 0.5, s + w * diff, e - diff * (1 - w)), out)
