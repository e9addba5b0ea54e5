"""Branch-free float32 transcendental functions emitted inline as LLVM IR, so the loop vectorizer
keeps them in SIMD registers (libm's expf is not vectorized here, LLVM_NOTES.md). float64 uses libm
for full double accuracy. Each function takes an IRBuilder and an LLVM float value.

Accuracy (float32, against float64 over wide ranges; tests/codegen/test_mathlib.py): max error
exp 0.9 ulp, log 2.1, tanh 4.3, sigmoid 2.3, erf 2.5 (relative error at most 3e-7).
"""
from __future__ import annotations

import math

from llvmlite import ir

F32, F64, I32 = ir.FloatType(), ir.DoubleType(), ir.IntType(32)
FAST = ("contract", "nsz", "arcp", "afn")
# Divisions are exact: with `arcp` x86 turns x / sqrt(y) into its approximate rsqrt plus a Newton step
# (NaN at y = 0 and y = inf, a few ulp off elsewhere).
DIV = ("contract", "nsz")


def _c(x: float) -> ir.Constant:
    return ir.Constant(F32, x)


def _poly(b: ir.IRBuilder, x, coeffs):
    """Horner evaluation of sum(coeffs[i] * x**i)."""
    acc = _c(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = b.fadd(b.fmul(acc, x, flags=FAST), _c(c), flags=FAST)
    return acc


def _intrinsic(b: ir.IRBuilder, name: str, x):
    fn = b.module.declare_intrinsic(name, [x.type], ir.FunctionType(x.type, [x.type]))
    return b.call(fn, [x])


def _clamp(b: ir.IRBuilder, x, lo: float, hi: float):
    """x limited to [lo, hi]; NaN stays NaN (each select is one SIMD min/max)."""
    x = b.select(b.fcmp_ordered("<", x, _c(lo)), _c(lo), x)
    return b.select(b.fcmp_ordered(">", x, _c(hi)), _c(hi), x)


def exp_f32(b: ir.IRBuilder, x):
    """e**x: x = n*ln2 + r with |r| <= ln2/2, e**r by a degree-7 polynomial, 2**n as the product of two
    exponent-bit powers (so results reach the denormals and overflow to inf exactly where float32
    does); NaN passes through."""
    xc = _clamp(b, x, -104.0, 88.8)
    n = _intrinsic(b, "llvm.rint", b.fmul(xc, _c(1.0 / math.log(2.0)), flags=FAST))
    r = b.fsub(xc, b.fmul(n, _c(0.693145751953125), flags=FAST), flags=FAST)
    r = b.fsub(r, b.fmul(n, _c(1.428606765330187e-06), flags=FAST), flags=FAST)
    p = _poly(b, r, [1.0, 1.0, 0.5, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040])
    ni = b.fptosi(n, I32)
    if has_scalef():  # one vscalefps (rounding once, so denormal results are exact too)
        ldexp = b.module.declare_intrinsic("llvm.ldexp", [F32, I32], ir.FunctionType(F32, [F32, I32]))
        p = b.call(ldexp, [p, ni])
    else:
        half = b.ashr(ni, I32(1))
        for k in (half, b.sub(ni, half)):  # each power is a normal float for n in [-150, 128]
            p = b.fmul(p, b.bitcast(b.shl(b.add(k, I32(127)), I32(23)), F32), flags=FAST)
    return b.select(b.fcmp_unordered("uno", x, x), x, p)  # fptosi(NaN) is poison: never pick it


def has_scalef() -> bool:
    """Does the host have AVX-512F? Its vscalefps is what vectorized `llvm.ldexp` becomes; elsewhere
    LLVM calls libm's ldexpf once per element (a stored model recompiled for such a CPU still runs,
    at that cost), so the two-multiply form is used there instead."""
    from .target import host
    return "+avx512f" in host()["features"].split(",")


def log_f32(b: ir.IRBuilder, x):
    """log(x): denormals rescaled by 2**24 first, then `_log_normal`; log(0) = -inf, log(<0) = nan,
    log(inf) = inf."""
    tiny = b.and_(b.fcmp_ordered("<", x, _c(1.1754944e-38)), b.fcmp_ordered(">", x, _c(0.0)))
    xs = b.select(tiny, b.fmul(x, _c(16777216.0), flags=FAST), x)
    out = b.fsub(_log_normal(b, xs), b.select(tiny, _c(24 * math.log(2.0)), _c(0.0)), flags=FAST)
    out = b.select(b.fcmp_ordered("==", x, _c(0.0)), _c(float("-inf")), out)
    out = b.select(b.fcmp_unordered("<", x, _c(0.0)), _c(float("nan")), out)
    return b.select(b.fcmp_ordered("==", x, _c(float("inf"))), _c(float("inf")), out)


def _log_normal(b: ir.IRBuilder, x):
    """log of a normal positive float: x = m * 2**e, m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s)."""
    bits = b.bitcast(x, I32)
    e = b.sub(b.ashr(bits, I32(23)), I32(127))
    m = b.bitcast(b.or_(b.and_(bits, I32(0x007FFFFF)), I32(0x3F800000)), F32)  # m in [1, 2)
    big = b.fcmp_ordered(">", m, _c(math.sqrt(2.0)))
    m = b.select(big, b.fmul(m, _c(0.5), flags=FAST), m)
    e = b.select(big, b.add(e, I32(1)), e)
    s = b.fdiv(b.fsub(m, _c(1.0), flags=FAST), b.fadd(m, _c(1.0), flags=FAST), flags=DIV)
    s2 = b.fmul(s, s, flags=FAST)
    series = b.fmul(s, _poly(b, s2, [2.0, 2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11]), flags=FAST)
    return b.fadd(series, b.fmul(b.sitofp(e, F32), _c(math.log(2.0)), flags=FAST), flags=FAST)


def sigmoid_f32(b: ir.IRBuilder, x):
    """1 / (1 + e**-x), accurate for all x (e**-x saturates to 0 or inf cleanly)."""
    return b.fdiv(_c(1.0), b.fadd(_c(1.0), exp_f32(b, b.fneg(x)), flags=FAST), flags=DIV)


def tanh_f32(b: ir.IRBuilder, x):
    """tanh: x * P(x**2) / Q(x**2) on x clamped to [-c, c] (beyond, tanh is 1 in float32), a rational
    minimax approximation (Eigen's fast tanh); x itself where |x| < 4e-4."""
    xc = _clamp(b, x, -7.99881172180175781, 7.99881172180175781)
    x2 = b.fmul(xc, xc, flags=FAST)
    p = b.fmul(xc, _poly(b, x2, [4.89352455891786e-03, 6.37261928875436e-04, 1.48572235717979e-05,
                                 5.12229709037114e-08, -8.60467152213735e-11, 2.00018790482477e-13,
                                 -2.76076847742355e-16]), flags=FAST)
    q = _poly(b, x2, [4.89352518554385e-03, 2.26843463243900e-03, 1.18534705686654e-04, 1.19825839466702e-06])
    tiny = b.fcmp_ordered("<", _intrinsic(b, "llvm.fabs", x), _c(0.0004))
    return b.select(tiny, x, b.fdiv(p, q, flags=DIV))


def erf_f32(b: ir.IRBuilder, x):
    """erf: Taylor series for |x| < 0.5, 1 - t*exp(poly(t)) (Numerical Recipes' erfc) beyond."""
    ax = _intrinsic(b, "llvm.fabs", x)
    x2 = b.fmul(x, x, flags=FAST)
    series = b.fmul(b.fmul(x, _c(2 / math.sqrt(math.pi)), flags=FAST),
                    _poly(b, x2, [1.0, -1.0 / 3, 1.0 / 10, -1.0 / 42, 1.0 / 216, -1.0 / 1320, 1.0 / 9360]), flags=FAST)
    t = b.fdiv(_c(1.0), b.fadd(_c(1.0), b.fmul(_c(0.5), ax, flags=FAST), flags=FAST), flags=DIV)
    poly = _poly(b, t, [-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
                        -1.13520398, 1.48851587, -0.82215223, 0.17087277])
    arg = b.fsub(poly, b.fmul(ax, ax, flags=FAST), flags=FAST)
    far = b.fsub(_c(1.0), b.fmul(t, exp_f32(b, arg), flags=FAST), flags=FAST)
    far = b.select(b.fcmp_ordered("<", x, _c(0.0)), b.fneg(far), far)
    return b.select(b.fcmp_ordered("<", ax, _c(0.5)), series, far)


def libm(b: ir.IRBuilder, name: str, x):
    """A call to the C math library (float64 accuracy; `name` is the double version)."""
    fn_name = name if x.type == F64 else name + "f"
    fn = b.module.globals.get(fn_name) or ir.Function(b.module, ir.FunctionType(x.type, [x.type]), fn_name)
    return b.call(fn, [x])


def sigmoid_libm(b: ir.IRBuilder, x):
    """1 / (1 + e**-x) with libm's exp (C has no sigmoid)."""
    one = ir.Constant(x.type, 1.0)
    return b.fdiv(one, b.fadd(one, libm(b, "exp", b.fneg(x)), flags=FAST), flags=DIV)


# op -> float32 inline implementation; float64 goes to libm under the same name (or to F64_FUNCTIONS).
F32_FUNCTIONS = {"exp": exp_f32, "log": log_f32, "tanh": tanh_f32, "sigmoid": sigmoid_f32, "erf": erf_f32}
F64_FUNCTIONS = {"sigmoid": sigmoid_libm}


def float_function(b: ir.IRBuilder, name: str, x):
    """`name`(x) for a float32 or float64 value: inline code, or libm."""
    table = F32_FUNCTIONS if x.type == F32 else F64_FUNCTIONS
    return table[name](b, x) if name in table else libm(b, name, x)
