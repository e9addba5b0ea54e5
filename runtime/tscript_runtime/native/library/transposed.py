"""The overlap-add of a transposed convolution, in the kernel ABI `tscript_parallel2` runs, so that its
output channels can be cut in two and both halves summed at once (the whole-graph entry's
`native/conv_transpose.py`, eager `native/eager.py`):

    void tscript_conv_transpose_add_<f32|f64>(i64* part, i8* ptrs, i64* dims, f64* scalars)

writes output channels part[0] <= oc < part[1] of part[2] images of `out` (N, G*O, OH, OW) from their
columns `cols` (N*H*W, G*O*kh*kw + COLUMN_PAD): row (n*H + h)*W + w holds, for every output channel oc and tap
(i, j), at column (oc*kh + i)*kw + j, what input pixel (h, w) sends to output (h*sh - ph + i*dh,
w*sw - pw + j*dw). `ptrs` = {cols, out, bias or null}; `dims` the step's CONVT_SLOTS; `scalars` is
not read. An image's planes start at their bias; then input row by input row (the columns read in the
order they are stored), each channel's taps are added to the kh output rows they land on, tap column j
over the input columns whose outputs fall inside the row (those bounds computed once per call, not per
element). Rows of columns are COLUMN_PAD elements longer than the taps: a tap is read down the pixels,
and rows a power of two bytes apart would all fall into one L1 set (measured 1.7x slower).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ...entry_steps import CONVT_SLOTS
from .conv import FLOATS
from .depthwise import bias_of
from .loops import counted
from .parallel import kernel_abi

I8, I64 = ir.IntType(8), ir.IntType(64)
I8P = I8.as_pointer()
PREFIX = "tscript_conv_transpose_add"
POINTERS = ("cols", "out", "bias")  # the order of `ptrs`
# bytes of columns from which the entry computes a batch's images in groups: one product of more rows
# measured faster than several that fit a cache (DCGAN's generator at batch 8: 8.5 MB in one product)
COLUMN_BYTES = 1 << 24
COLUMN_PAD = 16  # elements after each pixel's row of columns (DCGAN's rows would be 4, 8, 16 KiB apart)


def images_per_product(images: int, image_bytes: int) -> int:
    """How many images' columns (`image_bytes` each) one product computes: all of them up to
    COLUMN_BYTES, else as many as fit (at least one)."""
    return max(1, min(images, COLUMN_BYTES // max(image_bytes, 1)))


def writes_output(pixels: int, kernel: tuple, padding: tuple, dilation: tuple, out: tuple) -> bool:
    """Are a transposed convolution's columns its output (one input pixel whose taps tile the output
    exactly, so there is nothing to add up)? The entry then computes them into the output."""
    return pixels == 1 and tuple(out) == tuple(kernel) and tuple(padding) == (0, 0) and tuple(dilation) == (1, 1)


def define_overlap_add(module: ir.Module, dtype) -> ir.Function:
    """Define (once per module; return the existing one if already defined) the function above."""
    fty, suffix = FLOATS[np.dtype(dtype)]
    name = f"{PREFIX}_{suffix}"
    fn, new = kernel_abi(module, name)
    if not new:
        return fn
    part, ptrs8, dims, _ = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    first, end, images = (b.load(b.gep(part, [I64(k)])) for k in range(3))
    d = {s: b.load(b.gep(dims, [I64(k)])) for k, s in enumerate(CONVT_SLOTS)}
    ptrs = b.bitcast(ptrs8, I8P.as_pointer())
    cols, out, bias8 = (b.load(b.gep(ptrs, [I64(k)])) for k in range(len(POINTERS)))
    cols, out, bias = (b.bitcast(p, fty.as_pointer()) for p in (cols, out, bias8))
    has_bias = b.icmp_unsigned("!=", bias8, ir.Constant(I8P, None))
    taps, channels = b.mul(d["kh"], d["kw"]), b.mul(d["G"], d["O"])
    ld, plane, pixels = b.add(b.mul(channels, taps), I64(COLUMN_PAD)), b.mul(d["OH"], d["OW"]), b.mul(d["H"], d["W"])
    spans = _spans(b, fn, d)
    with counted(b, fn, I64(0), images, 1, "image") as n:
        image_cols = b.gep(cols, [b.mul(b.mul(n, pixels), ld)])
        image_out = b.gep(out, [b.mul(b.mul(n, channels), plane)])
        with counted(b, fn, first, end, 1, "channel") as oc:
            start = bias_of(b, has_bias, bias, oc, fty)
            plane_out = b.gep(image_out, [b.mul(oc, plane)])
            with counted(b, fn, I64(0), plane, 1, "start") as at:
                b.store(start, b.gep(plane_out, [at], inbounds=True))
        # input row by input row, so that the columns are read in the order they are stored
        with counted(b, fn, I64(0), d["H"], 1, "in_row") as h:
            row_cols = b.gep(image_cols, [b.mul(b.mul(h, d["W"]), ld)])
            with counted(b, fn, first, end, 1, "add_channel") as oc:
                src = b.gep(row_cols, [b.mul(oc, taps)])
                _add_input_row(b, fn, d, [h, src, b.gep(image_out, [b.mul(oc, plane)]), ld], spans)
    b.ret_void()
    return fn


def _spans(b: ir.IRBuilder, fn, d: dict) -> list:
    """Per tap column j: its output column offset j*dw - pw, and [low, high), the input columns w with
    0 <= w*sw + offset < OW (and w < W): three stack arrays of kw values, computed once per call."""
    arrays = [b.alloca(I64, d["kw"]) for _ in range(3)]
    with counted(b, fn, I64(0), d["kw"], 1, "span") as j:
        offset = b.sub(b.mul(j, d["dw"]), d["pw"])
        for array, value in zip(arrays, (offset, *_inside(b, d, offset))):
            b.store(value, b.gep(array, [j]))
    return arrays


def _add_input_row(b: ir.IRBuilder, fn, d: dict, args: list, spans: list) -> None:
    """Input row h's taps into the output plane: tap (i, j) of pixel (h, w) to (h*sh - ph + i*dh,
    w*sw + offset[j]), for the rows inside the plane."""
    h, src, plane_out, ld = args
    offsets, lows, highs = spans
    with counted(b, fn, I64(0), d["kh"], 1, "tap_i") as i:
        oh = b.add(b.sub(b.mul(h, d["sh"]), d["ph"]), b.mul(i, d["dh"]))
        with b.if_then(b.and_(b.icmp_signed(">=", oh, I64(0)), b.icmp_signed("<", oh, d["OH"]))):
            row = b.gep(plane_out, [b.mul(oh, d["OW"])])
            tap_row = b.gep(src, [b.mul(i, d["kw"])])
            with counted(b, fn, I64(0), d["kw"], 1, "tap_j") as j:
                dst, tap = b.gep(row, [b.load(b.gep(offsets, [j]))]), b.gep(tap_row, [j])
                with counted(b, fn, b.load(b.gep(lows, [j])), b.load(b.gep(highs, [j])), 1, "col") as w:
                    at = b.gep(dst, [b.mul(w, d["sw"])])
                    b.store(b.fadd(b.load(at), b.load(b.gep(tap, [b.mul(w, ld)]))), at)


def _inside(b: ir.IRBuilder, d: dict, offset):
    """[low, high): the input columns w with 0 <= w*sw + offset < OW and w < W."""
    sw, before = d["sw"], b.sub(I64(0), offset)
    low = b.select(b.icmp_signed(">", before, I64(0)), b.sdiv(b.add(before, b.sub(sw, I64(1))), sw), I64(0))
    last = b.sub(b.sub(d["OW"], I64(1)), offset)
    high = b.select(b.icmp_signed(">=", last, I64(0)), b.add(b.sdiv(last, sw), I64(1)), I64(0))
    return low, b.select(b.icmp_signed("<", high, d["W"]), high, d["W"])

