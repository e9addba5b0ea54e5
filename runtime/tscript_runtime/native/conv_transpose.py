"""The whole-graph entry's transposed convolution (`aten::conv_transpose2d`, planned in entry_plan.py):

    void tscript_conv_transpose2d_<f32|f64>(i64* dims, i8* x, i8* w, i8* bias, i8* out, i8* scratch, i8* pack)

with CONVT_SLOTS at `dims`. The images go `images` at a time (the plan's number: their columns fit
library.transposed.COLUMN_BYTES): their input as pixel rows xt (images*H*W, G*C) (a 1x1 image is its
own row: read in place), then per group one product of all their pixels, the columns
cols (images*H*W, G*O*kh*kw) = xt @ W, the weights read as they are stored ((C, O*kh*kw) per group),
then the overlap-add into the output (library.transposed), its two halves of output channels at once
when big enough. The product has as many rows as the images have pixels and a wide row of taps, the
shape the kernel library's packed GEMM runs fastest (it splits over both cores itself); the other way
round (W^T @ x per image, as PyTorch's slow_conv_transpose2d) has few columns and a transposed A and
measured up to 3.4x slower on DCGAN's layers. float64 (and float32 where the packed GEMM is not tuned for the CPU) by BLAS.

A 1x1 input whose taps tile its output exactly (DCGAN's first layer: a latent vector to kh x kw
planes, no padding) has its columns as its output: one product of all images into `out`, whose rows
hold the bias first.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..entry_steps import CONVT_SLOTS, NO_TRANS
from . import library
from .blas import blas_function
from .library.loops import counted
from .library.transposed import COLUMN_PAD

I1, I8, I32, I64, F64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.DoubleType()
I8P = I8.as_pointer()
ROW_MAJOR = 101
PIXEL_BLOCK = 32  # pixels whose rows the input's transposition writes together
OVERLAP_SPLIT = 1 << 15  # column elements from which the overlap-add runs its two halves of channels at once


def conv_transpose_function(module: ir.Module, dtype) -> ir.Function:
    """The function above, defined once per module."""
    suffix = "f32" if np.dtype(dtype) == np.float32 else "f64"
    name = f"tscript_conv_transpose2d_{suffix}"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fty = ir.FloatType() if suffix == "f32" else F64
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer()] + [I8P] * 6), name)
    fn.linkage = "internal"
    dims, x8, w8, bias8, out8, scratch8, pack8 = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    d = {s: b.load(b.gep(dims, [I64(k)])) for k, s in enumerate(CONVT_SLOTS) if s not in ("scratch", "pack")}
    x, w, bias, out, scratch = (b.bitcast(p, fty.as_pointer()) for p in (x8, w8, bias8, out8, scratch8))
    has_bias = b.icmp_unsigned("!=", bias8, ir.Constant(I8P, None))
    args = _Args(module, fn, b, dtype, fty, d, dims, b.bitcast(pack8, fty.as_pointer()))
    elements = b.mul(b.mul(d["N"], args.channels), b.mul(d["OH"], d["OW"]))
    with b.if_then(b.icmp_signed(">", elements, I64(0))):
        with b.if_else(_writes_output(b, d)) as (direct, columns):
            with direct:
                _into_output(b, args, x, w, bias, has_bias, out)
            with columns:
                _by_columns(b, args, x, w, bias8, out, scratch)
    b.ret_void()
    return fn


class _Args:
    """What the parts of the function share: the module, function, dtype, the plan's numbers and the
    sizes derived from them."""

    def __init__(self, module, fn, b: ir.IRBuilder, dtype, fty, d: dict, dims, pack):
        self.module, self.fn, self.dtype, self.fty, self.d, self.dims, self.pack = module, fn, dtype, fty, d, dims, pack
        self.taps = b.mul(d["kh"], d["kw"])
        self.width = b.mul(d["O"], self.taps)           # one group's columns
        self.channels = b.mul(d["G"], d["O"])           # output channels
        self.ld = b.mul(d["G"], self.width)             # a pixel's columns, all groups
        self.inputs = b.mul(d["G"], d["C"])             # input channels
        self.pixels = b.mul(d["H"], d["W"])


def _writes_output(b: ir.IRBuilder, d: dict):
    """library.transposed.writes_output in IR."""
    tests = [b.icmp_signed("==", b.mul(d["H"], d["W"]), I64(1)), b.icmp_signed("==", d["OH"], d["kh"]),
             b.icmp_signed("==", d["OW"], d["kw"])]
    tests += [b.icmp_signed("==", d[s], I64(v)) for s, v in (("ph", 0), ("pw", 0), ("dh", 1), ("dw", 1))]
    result = tests[0]
    for t in tests[1:]:
        result = b.and_(result, t)
    return result


def _into_output(b: ir.IRBuilder, a: _Args, x, w, bias, has_bias, out) -> None:
    """out (N, G*O*kh*kw) = [bias rows +] x (N, G*C) @ W, per group."""
    d, fn = a.d, a.fn
    with b.if_then(has_bias):
        with counted(b, fn, I64(0), d["N"], 1, "image") as n:
            with counted(b, fn, I64(0), a.channels, 1, "channel") as oc:
                value = b.load(b.gep(bias, [oc]))
                plane = b.gep(out, [b.mul(b.add(b.mul(n, a.channels), oc), a.taps)])
                with counted(b, fn, I64(0), a.taps, 1, "tap") as t:
                    b.store(value, b.gep(plane, [t], inbounds=True))
    beta = b.select(has_bias, a.fty(1.0), a.fty(0.0))
    _products(b, a, [d["N"], x, w, beta, out, a.ld])


def _by_columns(b: ir.IRBuilder, a: _Args, x, w, bias8, out, scratch) -> None:
    """Columns of `images` images at a time, then their overlap-add."""
    d, fn = a.d, a.fn
    images = b.select(b.icmp_signed(">", d["images"], I64(0)), d["images"], I64(1))
    cols, ld = scratch, b.add(a.ld, I64(COLUMN_PAD))
    rows_at = b.gep(scratch, [b.mul(b.mul(images, a.pixels), ld)])
    one_pixel = b.icmp_signed("==", a.pixels, I64(1))
    image_in, image_out = b.mul(a.inputs, a.pixels), b.mul(a.channels, b.mul(d["OH"], d["OW"]))
    chunks = b.sdiv(b.add(d["N"], b.sub(images, I64(1))), images)
    call = [b.alloca(I8P, I64(3)), b.alloca(I64, I64(3)), b.alloca(I64, I64(3))]  # (outside the loop)
    with counted(b, fn, I64(0), chunks, 1, "images") as chunk:
        first = b.mul(chunk, images)
        left = b.sub(d["N"], first)
        count = b.select(b.icmp_signed("<", left, images), left, images)
        source = b.gep(x, [b.mul(first, image_in)])
        with b.if_then(b.not_(one_pixel)):
            b.call(_pixel_rows(a.module, a.fty), [count, a.inputs, a.pixels, source, rows_at])
        rows = b.select(one_pixel, source, rows_at)
        _products(b, a, [b.mul(count, a.pixels), rows, w, a.fty(0.0), cols, ld])
        pointers = [b.bitcast(cols, I8P), b.bitcast(b.gep(out, [b.mul(first, image_out)]), I8P), bias8]
        _overlap_add(b, a, count, pointers, call)


def _products(b: ir.IRBuilder, a: _Args, args: list) -> None:
    """Per group g: C[:, g's columns] (m rows, ldc apart) = rows[:, g's channels] @ W_g (+ beta C)."""
    m, rows, w, beta, c, ldc = args
    d = a.d
    lda = b.select(b.icmp_signed(">", a.inputs, I64(0)), a.inputs, I64(1))  # (BLAS wants lda >= 1)
    with counted(b, a.fn, I64(0), d["G"], 1, "group") as g:
        _product(b, a, [m, a.width, d["C"], b.gep(rows, [b.mul(g, d["C"])]), lda,
                        b.gep(w, [b.mul(b.mul(g, d["C"]), a.width)]), a.width, beta,
                        b.gep(c, [b.mul(g, a.width)]), ldc])


def _product(b: ir.IRBuilder, a: _Args, args: list) -> None:
    """C (M, N) = A (M, K) @ B (K, N) + beta C, all row-major (`args`: M, N, K, A, lda, B, ldb, beta, C,
    ldc): float32 by the kernel library's packed GEMM where it is tuned for the CPU, else BLAS."""
    from .entry import packed_gemm_here  # (entry.py imports this module)
    m, n, k, am, lda, bm, ldb, beta, c, ldc = args
    if a.dtype == np.float32 and packed_gemm_here():
        b.call(library.declare(a.module, "tscript_sgemm_f32"),
               [I32(NO_TRANS), I32(NO_TRANS), m, n, k, am, lda, bm, ldb, beta, c, ldc, a.pack])
        return
    gemm = blas_function(a.module, "cblas_sgemm" if a.dtype == np.float32 else "cblas_dgemm", a.fty)
    b.call(gemm, [I32(ROW_MAJOR), I32(NO_TRANS), I32(NO_TRANS), m, n, k, a.fty(1.0), am, lda, bm, ldb, beta, c, ldc])


def _overlap_add(b: ir.IRBuilder, a: _Args, count, pointers: list, call: list) -> None:
    """The library's overlap-add of `count` images (`pointers`: cols, out, bias); with OVERLAP_SPLIT
    column elements or more, its two halves of output channels at once (`call`: the stack arrays
    of its arguments: pointers and both halves' parts)."""
    suffix = "f32" if a.dtype == np.float32 else "f64"
    kernel = library.declare(a.module, f"tscript_conv_transpose_add_{suffix}")
    ptrs, first, second = call
    work = b.mul(b.mul(count, a.pixels), a.ld)  # (columns, not counting the padding)
    split = b.and_(b.icmp_signed(">=", work, I64(OVERLAP_SPLIT)), b.icmp_signed(">=", a.channels, I64(2)))
    cut = b.select(split, b.sdiv(a.channels, I64(2)), a.channels)
    _store(b, ptrs, pointers)
    _store(b, first, [I64(0), cut, count])
    _store(b, second, [cut, a.channels, count])
    ptrs8, null = b.bitcast(ptrs, I8P), ir.Constant(F64.as_pointer(), None)
    with b.if_else(split) as (halves, whole):
        with halves:
            b.call(library.declare(a.module, "tscript_parallel2"),
                   [b.bitcast(kernel, I8P), first, ptrs8, second, ptrs8, a.dims, null])
        with whole:
            b.call(kernel, [first, ptrs8, a.dims, null])


def _pixel_rows(module: ir.Module, fty) -> ir.Function:
    """`void tscript_pixel_rows_<f32|f64>(i64 images, i64 channels, i64 pixels, T* x, T* rows)`, once per
    module: rows[(n*pixels + p)*channels + c] = x[(n*channels + c)*pixels + p] (NCHW to pixel rows),
    PIXEL_BLOCK pixels at a time (their rows stay in L1 while every channel is written into them)."""
    name = f"tscript_pixel_rows_{'f32' if fty == ir.FloatType() else 'f64'}"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fp = fty.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, I64, I64, fp, fp]), name)
    fn.linkage = "internal"
    images, channels, pixels, x, rows = fn.args
    for arg in (x, rows):
        arg.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    with counted(b, fn, I64(0), images, 1, "image") as n:
        image_x = b.gep(x, [b.mul(b.mul(n, channels), pixels)])
        image_rows = b.gep(rows, [b.mul(b.mul(n, channels), pixels)])
        with counted(b, fn, I64(0), pixels, PIXEL_BLOCK, "block") as p0:
            p1 = b.add(p0, I64(PIXEL_BLOCK))
            p1 = b.select(b.icmp_signed("<", p1, pixels), p1, pixels)
            with counted(b, fn, I64(0), channels, 1, "channel") as c:
                plane, column = b.gep(image_x, [b.mul(c, pixels)]), b.gep(image_rows, [c])
                with counted(b, fn, p0, p1, 1, "pixel") as p:
                    b.store(b.load(b.gep(plane, [p], inbounds=True)), b.gep(column, [b.mul(p, channels)]))
    b.ret_void()
    return fn


def _store(b: ir.IRBuilder, array, values: list) -> None:
    for i, v in enumerate(values):
        b.store(v, b.gep(array, [I64(i)]))
