"""Elementwise functions over a contiguous float32 array, for eager ops whose numpy form is slow:

    void tscript_erf_f32(float* x, float* y, i64 n)      y[i] = erf(x[i])

(mathlib's inline float32 erf, the one compiled kernels use, vectorized by LLVM; `x` and `y` may be the
same array). Eager `erf` (and so exact GELU) calls it through ops/accelerated.py: numpy has no erf, and
its float64 series took 20 passes over memory."""
from __future__ import annotations

from llvmlite import ir

from ..mathlib import float_function
from .loops import counted

I64, F32 = ir.IntType(64), ir.FloatType()


def define_erf(module: ir.Module, dtype=None) -> ir.Function:
    """Define `tscript_erf_f32` in `module` (once)."""
    return _define_map(module, "erf")


def _define_map(module: ir.Module, name: str) -> ir.Function:
    symbol = f"tscript_{name}_f32"
    try:
        return module.get_global(symbol)
    except KeyError:
        pass
    fp = F32.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [fp, fp, I64]), symbol)
    x, y, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    with counted(b, fn, I64(0), n, 1, "map") as i:
        b.store(float_function(b, name, b.load(b.gep(x, [i], inbounds=True))), b.gep(y, [i], inbounds=True))
    b.ret_void()
    return fn
