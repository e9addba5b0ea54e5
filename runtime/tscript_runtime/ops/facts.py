"""Op facts: what fusion, autodiff's recompute rule and the native emitter ask of an op beyond its
meaning. One row per op, keyed like the op table; `ops/__init__.py` attaches each row to its OpDef
as `op.facts` (ops without a row get `NO_FACTS`).

- pointwise: computed element by element with broadcasting, so it can join a fusion group (and the
  emitter has a scalar lowering for it); `Pointwise` says which inputs are values, which dtype the
  arithmetic runs in and, for a few ops, when (e.g. integer `pow` only with a constant exponent >= 0).
- row_reduction: reduces the last dim (keepdim) inside a row group (softmax, layer_norm, ...).
- cheap: cheap enough to recompute in the backward instead of saving its result (pointwise ops).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .. import dtypes as dt
from ..types import TensorType
from .registry import TensorMeta


@dataclass(frozen=True)
class Pointwise:
    """How an op is pointwise: its first `n_values` inputs are values (the rest are attributes that
    must be constants); `compute` names the dtype its arithmetic runs in: "promote" (PyTorch
    promotion), "float" (ints lift to the default float), "where" (promotion of the two branches) or
    "self" (the first input's); `when(constants, compute dtype)` limits it (`constants` holds each
    input's constant value, or a placeholder object for the others); `condition` is the position of a
    bool input that selects (where's and masked_fill's), read as bool, not in the compute dtype."""
    n_values: int
    compute: str
    when: Callable | None = None
    condition: int | None = None


@dataclass(frozen=True)
class OpFacts:
    pointwise: Pointwise | None = None
    row_reduction: bool = False

    @property
    def cheap(self) -> bool:
        """Cheap to recompute (one pass over memory that is read anyway)."""
        return self.pointwise is not None


NO_FACTS = OpFacts()


def _pow_when(constants, cdt) -> bool:
    """Integer pow only with a constant exponent >= 0 (PyTorch raises for negative ones at run time)."""
    k = constants[1]
    return dt.is_float(cdt) or isinstance(k, int) and not isinstance(k, bool) and k >= 0


def _pw(n_values: int, compute: str, when=None, condition=None) -> OpFacts:
    return OpFacts(pointwise=Pointwise(n_values, compute, when, condition))


FACTS = {
    "aten::add": _pw(3, "promote"), "aten::sub": _pw(3, "promote"), "aten::mul": _pw(2, "promote"),
    "aten::div": _pw(2, "float", lambda c, cdt: c[2] is None),
    "aten::maximum": _pw(2, "promote"), "aten::minimum": _pw(2, "promote"),
    "aten::neg": _pw(1, "promote"), "aten::abs": _pw(1, "promote"), "aten::relu": _pw(1, "promote"),
    "aten::exp": _pw(1, "float"), "aten::log": _pw(1, "float"), "aten::tanh": _pw(1, "float"),
    "aten::sigmoid": _pw(1, "float"), "aten::erf": _pw(1, "float"), "aten::sqrt": _pw(1, "float"),
    "aten::rsqrt": _pw(1, "float"), "aten::reciprocal": _pw(1, "float"), "aten::sin": _pw(1, "float"),
    "aten::cos": _pw(1, "float"), "aten::log1p": _pw(1, "float"), "aten::expm1": _pw(1, "float"),
    "aten::floor": _pw(1, "promote"), "aten::ceil": _pw(1, "promote"), "aten::trunc": _pw(1, "promote"),
    "aten::round": _pw(1, "promote"),
    "aten::where": _pw(3, "where", condition=0), "aten::clamp": _pw(3, "promote"),
    "aten::masked_fill": _pw(3, "self", condition=1),
    # copies (as fused kernels: a transposed view made contiguous is one pass with a tiled read)
    "aten::contiguous": _pw(1, "self"), "aten::clone": _pw(1, "self"),
    "aten::eq": _pw(2, "promote"), "aten::ne": _pw(2, "promote"), "aten::lt": _pw(2, "promote"),
    "aten::le": _pw(2, "promote"), "aten::gt": _pw(2, "promote"), "aten::ge": _pw(2, "promote"),
    "aten::logical_and": _pw(2, "promote"), "aten::logical_or": _pw(2, "promote"),
    **{f"aten::bitwise_{n}": _pw(2, "promote", lambda c, cdt: dt.is_integral(cdt, include_bool=True))
       for n in ("and", "or", "xor")},
    "aten::logical_xor": _pw(2, "promote"),
    "aten::to": _pw(1, "self", lambda c, cdt: not c[2]),
    "aten::pow": _pw(2, "promote", _pow_when),
    # extra_math.py: classifiers (bool results), nan_to_num (floats only: its bounds are the dtype's)
    **{f"aten::{n}": _pw(1, "self") for n in ("isnan", "isinf", "isfinite", "isposinf", "isneginf")},
    "aten::nan_to_num": _pw(4, "self", lambda c, cdt: dt.is_float(cdt)),
    **{f"aten::{n}": _pw(1, "float") for n in ("log2", "tan", "asin", "acos", "atan")},
    "aten::copysign": _pw(2, "float"), "aten::fmod": _pw(2, "promote", lambda c, cdt: dt.is_float(cdt)),
    **{name: OpFacts(row_reduction=True) for name in ("aten::sum", "aten::mean", "aten::amax", "aten::amin",
                                                      "aten::var", "aten::all", "aten::any")},
}


def representative(value, constants: dict):
    """What a graph value looks like to the promotion rule (TensorMeta for tensors, Python values for
    scalars; a constant's own value). Works on the compiler's IR values and the runtime's alike."""
    if value in constants:
        return constants[value]
    t = value.type
    if isinstance(t, TensorType):
        return TensorMeta((1,) * (t.rank or 0), t.dtype)
    return {"int": 0, "float": 0.0, "bool": False}[t.name]


def compute_dtype(rule: str, values: list):
    """The dtype a pointwise op computes in, from the representatives of its value inputs (None:
    absent)."""
    reps = [v for v in values if v is not None]
    if rule == "self":
        return reps[0].dtype
    if rule == "where":
        reps = reps[1:3]
    out = dt.result_type(*reps)
    return dt.float_result(out) if rule == "float" else out


def node_compute_dtype(pointwise: Pointwise, node, constants: dict):
    """The compute dtype of `node` (an op with `pointwise` facts); `constants` maps constant scalar
    inputs to their values."""
    reps = [None if v in constants and constants[v] is None else representative(v, constants)
            for v in node.inputs[:pointwise.n_values]]
    return compute_dtype(pointwise.compute, reps)
