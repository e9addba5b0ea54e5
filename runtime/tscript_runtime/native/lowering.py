"""THE LLVM lowering table of pointwise ops: op name -> a function building the scalar expression
for one element. Values are computed in the op's compute dtype (its pointwise facts, ops/facts.py:
PyTorch promotion from the op library's dtype rules) and converted to the node's output dtype. Every
op whose facts say it is pointwise has a row here, and no other (a test checks).
"""
from __future__ import annotations

from llvmlite import ir

from .. import dtypes as dt
from ..ops.extra_math import nan_bounds
from .mathlib import DIV, FAST, float_function

LLVM_TYPES = {dt.float32: ir.FloatType(), dt.float64: ir.DoubleType(), dt.int64: ir.IntType(64),
              dt.int32: ir.IntType(32), dt.bool_: ir.IntType(1)}
MEMORY_TYPES = {**LLVM_TYPES, dt.bool_: ir.IntType(8)}  # numpy stores bools as bytes


class Emitter:
    """Typed scalar arithmetic on an IRBuilder (floats and ints alike)."""

    def __init__(self, builder: ir.IRBuilder):
        self.b = builder

    def const(self, x, dtype):
        t = LLVM_TYPES[dtype]
        if dtype == dt.bool_:
            return ir.Constant(t, int(bool(x)))
        return ir.Constant(t, float(x) if dt.is_float(dtype) else int(x))

    def cast(self, v, src, dst):
        """`v` of dtype `src` as `dst` (PyTorch's conversion rules: float->int truncates, x->bool is x != 0)."""
        if src == dst:
            return v
        b, t = self.b, LLVM_TYPES[dst]
        if dst == dt.bool_:
            return b.fcmp_unordered("!=", v, self.const(0, src)) if dt.is_float(src) else b.icmp_signed("!=", v, self.const(0, src))
        if src == dt.bool_:
            return b.uitofp(v, t) if dt.is_float(dst) else b.zext(v, t)
        if dt.is_float(src) and dt.is_float(dst):
            return b.fpext(v, t) if dst == dt.float64 else b.fptrunc(v, t)
        if dt.is_float(src):
            return b.fptosi(v, t)
        if dt.is_float(dst):
            return b.sitofp(v, t)
        return b.sext(v, t) if dst == dt.int64 else b.trunc(v, t)

    def arith(self, op: str, x, y, dtype):
        b = self.b
        if dt.is_float(dtype):
            return getattr(b, {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}[op])(
                x, y, flags=DIV if op == "div" else FAST)
        if dtype == dt.bool_:
            return {"add": b.or_, "mul": b.and_}[op](x, y)
        return getattr(b, {"add": "add", "sub": "sub", "mul": "mul"}[op])(x, y)

    def compare(self, op: str, x, y, dtype):
        sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
        if dt.is_float(dtype):
            return self.b.fcmp_unordered(sym, x, y) if op == "ne" else self.b.fcmp_ordered(sym, x, y)
        return self.b.icmp_signed(sym, x, y) if dtype != dt.bool_ else self.b.icmp_unsigned(sym, x, y)

    def intrinsic(self, name: str, *args):
        t = args[0].type
        fn = self.b.module.declare_intrinsic(name, [t], ir.FunctionType(t, [t] * len(args)))
        return self.b.call(fn, list(args))

    def select(self, c, x, y):
        return self.b.select(c, x, y)


def _float_fn(name):
    def lower(e: Emitter, args, cdt, node):
        return float_function(e.b, name, args[0])
    return lower


def _intrinsic_fn(name):
    return lambda e, args, cdt, node: e.intrinsic(name, args[0]) if dt.is_float(cdt) else args[0]


def _binary(name):
    def lower(e: Emitter, args, cdt, node):
        x, y = args[0], args[1]
        if name in ("add", "sub") and len(args) > 2:  # alpha
            y = e.arith("mul", y, args[2], cdt)
        return e.arith(name, x, y, cdt)
    return lower


def _div(e: Emitter, args, cdt, node):
    return e.arith("div", args[0], args[1], cdt)


def _extremum(name):
    def lower(e: Emitter, args, cdt, node):
        x, y = args
        if dt.is_float(cdt):  # NaN-propagating, as PyTorch's maximum/minimum
            return e.intrinsic("llvm.maximum" if name == "max" else "llvm.minimum", x, y)
        icmp = e.b.icmp_unsigned if cdt == dt.bool_ else e.b.icmp_signed  # i1 true is -1 when signed
        cmp = icmp(">" if name == "max" else "<", x, y)
        return e.select(cmp, x, y)
    return lower


def _relu(e: Emitter, args, cdt, node):
    x = args[0]
    zero = e.const(0, cdt)
    if dt.is_float(cdt):  # keeps NaN (x > 0 is false for NaN, so pick x when x is not < 0)
        return e.select(e.b.fcmp_ordered("<", x, zero), zero, x)
    return e.select(e.b.icmp_signed("<", x, zero), zero, x)


def _neg(e, args, cdt, node):
    return e.b.fneg(args[0]) if dt.is_float(cdt) else e.b.neg(args[0])


def _abs(e, args, cdt, node):
    if dt.is_float(cdt):
        return e.intrinsic("llvm.fabs", args[0])
    return e.select(e.b.icmp_signed("<", args[0], e.const(0, cdt)), e.b.neg(args[0]), args[0])


def _sqrt(e, args, cdt, node):
    return e.intrinsic("llvm.sqrt", args[0])


def _rsqrt(e, args, cdt, node):
    # no fast-math flags: with them x86 uses its approximate rsqrt (wrong at 0, inf and denormals)
    return e.b.fdiv(e.const(1, cdt), e.intrinsic("llvm.sqrt", args[0]))


def _reciprocal(e, args, cdt, node):
    return e.b.fdiv(e.const(1, cdt), args[0], flags=DIV)


def _where(e, args, cdt, node):
    return e.select(args[0], args[1], args[2])


def _masked_fill(e, args, cdt, node):
    return e.select(args[1], args[2], args[0])


def _clamp(e, args, cdt, node):
    x = args[0]
    lo, hi = args[1], args[2]
    if lo is not None:
        x = _extremum("max")(e, [x, lo], cdt, node)
    if hi is not None:
        x = _extremum("min")(e, [x, hi], cdt, node)
    return x


def _compare(name):
    return lambda e, args, cdt, node: e.compare(name, args[0], args[1], cdt)


def _logical(name):
    def lower(e, args, cdt, node):
        x, y = (e.cast(a, cdt, dt.bool_) for a in args)
        return {"and": e.b.and_, "or": e.b.or_, "xor": e.b.xor}[name](x, y)
    return lower


def _bitwise(name):
    def lower(e, args, cdt, node):  # bools or integers, already in the compute dtype
        x, y = args
        return {"and": e.b.and_, "or": e.b.or_, "xor": e.b.xor}[name](x, y)
    return lower


def _to(e, args, cdt, node):
    return args[0]  # the conversion to the output dtype happens after every op (a copy: the value itself)


def _pow(e, args, cdt, node):
    x, y = args
    k = y.constant if isinstance(y, ir.Constant) else None
    if not dt.is_float(cdt):  # a constant exponent >= 0 (the op's facts require it): repeated squaring, wrapping
        return _int_pow(e, x, int(k), cdt)
    if k in _POW_SPECIAL:  # as PyTorch's pow with these scalar exponents: exact products, sqrt, 1/x
        return _POW_SPECIAL[k](e, x, cdt)
    return e.b.call(_pow_fn(e, cdt), [x, y])


def _int_pow(e: Emitter, x, k: int, cdt):
    result, base = e.const(1, cdt), x
    while k:
        if k & 1:
            result = e.arith("mul", result, base, cdt)
        k >>= 1
        if k:
            base = e.arith("mul", base, base, cdt)
    return result


def _square(e, x, cdt):
    return e.arith("mul", x, x, cdt)


_POW_SPECIAL = {
    0: lambda e, x, cdt: e.const(1, cdt), 1: lambda e, x, cdt: x, 2: _square,
    3: lambda e, x, cdt: e.arith("mul", _square(e, x, cdt), x, cdt),
    0.5: lambda e, x, cdt: _sqrt(e, [x], cdt, None), -0.5: lambda e, x, cdt: _rsqrt(e, [x], cdt, None),
    -1: lambda e, x, cdt: _reciprocal(e, [x], cdt, None),
    -2: lambda e, x, cdt: _reciprocal(e, [_square(e, x, cdt)], cdt, None),
}


def _pow_fn(e, cdt):
    name = "pow" if cdt == dt.float64 else "powf"
    t = LLVM_TYPES[cdt]
    return e.b.module.globals.get(name) or ir.Function(e.b.module, ir.FunctionType(t, [t, t]), name)


def _classifier(test, on_integers: bool):
    """isnan & co.: `test(emitter, x, inf)` on floats (an i1); integers are all finite."""
    def lower(e: Emitter, args, cdt, node):
        if not dt.is_float(cdt):
            return e.const(on_integers, dt.bool_)
        return test(e, args[0], e.const(float("inf"), cdt))
    return lower


CLASSIFIERS = {
    "isnan": (lambda e, x, inf: e.b.fcmp_unordered("uno", x, x), False),
    "isinf": (lambda e, x, inf: e.b.fcmp_ordered("==", e.intrinsic("llvm.fabs", x), inf), False),
    "isfinite": (lambda e, x, inf: e.b.fcmp_ordered("<", e.intrinsic("llvm.fabs", x), inf), True),
    "isposinf": (lambda e, x, inf: e.b.fcmp_ordered("==", x, inf), False),
    "isneginf": (lambda e, x, inf: e.b.fcmp_ordered("==", x, e.b.fneg(inf)), False),
}


def _nan_to_num(e: Emitter, args, cdt, node):
    x = args[0]
    defaults = nan_bounds(cdt)
    nan, posinf, neginf = (a if a is not None else e.const(d, cdt) for a, d in zip(args[1:], defaults))
    inf = e.const(float("inf"), cdt)
    x = e.select(e.b.fcmp_unordered("uno", x, x), nan, x)
    x = e.select(e.b.fcmp_ordered("==", x, inf), posinf, x)
    return e.select(e.b.fcmp_ordered("==", x, e.b.fneg(inf)), neginf, x)


# op name -> fn(emitter, values, compute dtype, node) building the op's scalar result
LOWERINGS = {
    "aten::add": _binary("add"), "aten::sub": _binary("sub"), "aten::mul": _binary("mul"), "aten::div": _div,
    "aten::maximum": _extremum("max"), "aten::minimum": _extremum("min"),
    "aten::neg": _neg, "aten::abs": _abs, "aten::relu": _relu,
    "aten::exp": _float_fn("exp"), "aten::log": _float_fn("log"), "aten::tanh": _float_fn("tanh"),
    "aten::sigmoid": _float_fn("sigmoid"), "aten::erf": _float_fn("erf"), "aten::sqrt": _sqrt,
    "aten::rsqrt": _rsqrt, "aten::reciprocal": _reciprocal, "aten::sin": _float_fn("sin"),
    "aten::cos": _float_fn("cos"), "aten::log1p": _float_fn("log1p"), "aten::expm1": _float_fn("expm1"),
    "aten::floor": _intrinsic_fn("llvm.floor"), "aten::ceil": _intrinsic_fn("llvm.ceil"),
    "aten::trunc": _intrinsic_fn("llvm.trunc"), "aten::round": _intrinsic_fn("llvm.roundeven"),
    "aten::where": _where, "aten::clamp": _clamp,
    "aten::eq": _compare("eq"), "aten::ne": _compare("ne"), "aten::lt": _compare("lt"), "aten::le": _compare("le"),
    "aten::gt": _compare("gt"), "aten::ge": _compare("ge"),
    "aten::logical_and": _logical("and"), "aten::logical_or": _logical("or"), "aten::logical_xor": _logical("xor"),
    "aten::bitwise_and": _bitwise("and"), "aten::bitwise_or": _bitwise("or"), "aten::bitwise_xor": _bitwise("xor"),
    "aten::to": _to, "aten::pow": _pow, "aten::masked_fill": _masked_fill, "aten::contiguous": _to, "aten::clone": _to,
    **{f"aten::{n}": _classifier(*row) for n, row in CLASSIFIERS.items()}, "aten::nan_to_num": _nan_to_num,
    **{f"aten::{n}": _float_fn(n) for n in ("log2", "tan", "asin", "acos", "atan")},
    "aten::copysign": lambda e, args, cdt, node: e.intrinsic("llvm.copysign", *args),
    "aten::fmod": lambda e, args, cdt, node: e.b.frem(*args),  # LLVM's frem is C's fmod
}
