"""im2col in the kernel ABI `tscript_parallel2` runs, so that a convolution's columns can be cut by
channels and both halves copied at once (eager conv2d, `native/eager.py`):

    void tscript_im2col_part_<f32|f64>(i64* channels, i8* ptrs, i64* geo, f64* scalars)

copies channels channels[0] <= c < channels[1] of the (C, H, W) image ptrs[0] into their rows of the
columns ptrs[1] (C*kh*kw, OH*OW), `geo` the GEOMETRY of the whole image; `scalars` is not read. It is
conv.py's `tscript_im2col` with geo's C replaced by the part's channel count and both pointers moved
to the part's first channel.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ...entry_steps import GEOMETRY
from .conv import FLOATS, define_im2col
from .parallel import kernel_abi

I8, I64 = ir.IntType(8), ir.IntType(64)
I8P = I8.as_pointer()
PREFIX = "tscript_im2col_part"


def define_im2col_part(module: ir.Module, dtype) -> ir.Function:
    """Define (once per module; return the existing one if already defined) the function above."""
    fty, suffix = FLOATS[np.dtype(dtype)]
    name = f"{PREFIX}_{suffix}"
    fn, new = kernel_abi(module, name)
    if not new:
        return fn
    im2col = define_im2col(module, dtype)
    channels, ptrs8, geo, _ = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    first, last = b.load(channels), b.load(b.gep(channels, [I64(1)]))
    g = {s: b.load(b.gep(geo, [I64(k)])) for k, s in enumerate(GEOMETRY)}
    part = b.alloca(I64, len(GEOMETRY))
    for k, s in enumerate(GEOMETRY):
        b.store(b.sub(last, first) if s == "C" else g[s], b.gep(part, [I64(k)]))
    ptrs = b.bitcast(ptrs8, I8P.as_pointer())
    x, col = (b.bitcast(b.load(b.gep(ptrs, [I64(i)])), fty.as_pointer()) for i in range(2))
    plane, rows = b.mul(g["H"], g["W"]), b.mul(b.mul(g["kh"], g["kw"]), b.mul(g["OH"], g["OW"]))
    b.call(im2col, [part, b.gep(x, [b.mul(first, plane)]), b.gep(col, [b.mul(first, rows)])])
    b.ret_void()
    return fn
