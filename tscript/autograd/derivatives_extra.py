"""Derivative rows for the ops of extra_math.py, extra_movement.py, extra_random.py and
extra_sorting.py (same table and conventions as derivatives.py)."""
import math

from .derivatives import NOT_DIFFERENTIABLE, call, derivative

NOT_DIFFERENTIABLE |= {f"aten::{n}" for n in ("isnan", "isinf", "isfinite", "isposinf", "isneginf",
                                              "multinomial", "repeat_interleave.Tensor", "searchsorted",
                                              "bucketize")}

_LN2 = math.log(2.0)

UNARY = {
    "log2": lambda grad, self: grad / (self * _LN2),
    "tan": lambda grad, result: grad * (1 + result * result),
    "asin": lambda grad, self: grad * (1 - self * self).rsqrt(),
    "acos": lambda grad, self: -grad * (1 - self * self).rsqrt(),
    "atan": lambda grad, self: grad / (1 + self * self),
}

for _name, _rule in UNARY.items():
    derivative(f"aten::{_name}")(_rule)


@derivative("aten::nan_to_num")
def _nan_to_num(grad, self):
    return call("aten::where", call("aten::isfinite", self), grad, 0.0)


@derivative("aten::copysign")
def _copysign(grad, self, result):
    g_self = call("aten::where", self == 0, 0.0, grad * result / self)
    return g_self, call("aten::zeros_like", grad)


@derivative("aten::fmod")
def _fmod(grad, self, other):
    return grad, -grad * call("aten::div", self, other, rounding_mode="trunc")


@derivative("aten::roll")
def _roll(grad, shifts, dims):
    shifts = [-s for s in shifts] if isinstance(shifts, (list, tuple)) else -shifts
    return call("aten::roll", grad, shifts, dims)


@derivative("aten::random_")
def _random(grad):
    return None
