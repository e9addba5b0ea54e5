"""A direct convolution for one input channel per group (depthwise: groups == in_channels, any channel
multiplier; also a single-channel image's convolution), in the kernel ABI `tscript_parallel2` runs:

    void tscript_depthwise2d_scratch_<f32|f64>(i64* planes, i8* ptrs, i64* dims, f64* scalars)

computes output planes planes[0] <= p < planes[1] of `out` (N, G*O, OH, OW) from `ptrs` = {x (N, G,
H, W), w (G*O, 1, kh, kw), bias (G*O) or null, out, scratch, epilogue or null, its context}: each plane,
once computed, goes through the epilogue (native/conv_epilogue.py) as one row of OH*OW values; `dims` a convolution step's CONV_SLOTS
(C is 1, O the channel multiplier). Output plane p reads input plane p // O with weights and bias
p % (G*O). `scratch` holds two padded planes (`scratch_bytes`); planes[2] (0 or 1) says which one
this call uses, so that two calls run at once. planes[3] is 0, or the address of an i64 (zero at
first) that two such calls share: each then computes the chunks of planes it claims through it
(loops.claimed), so that the thread that is free first takes the next chunk (the two halves of a
static cut waited on each other for up to 1/3 of a launch). The whole-graph entry calls it with arena scratch.

    void tscript_depthwise2d_<f32|f64>(i64* planes, i8* ptrs, i64* dims, f64* scalars)

is the same for planes[0] <= p < planes[1] and `ptrs` = {x, w, bias, out}, its padded plane from
malloc (for callers without scratch, eager code), without an epilogue.

im2col + a one-row GEMM per channel spent most of its time writing and reading the columns. Here each
input plane is first copied into the zero-padded plane (its padding then needs no masks or bounds
checks, and every output row can be computed, also past the last, whose rows are not stored), then
ROWS output rows at a time, in chunks of one vector along the row (conv.py's `_Chunks`: stride 2 loads a
span and keeps the even lanes, other strides gather), start at the bias and take one FMA per tap:
ROWS independent FMA chains hide the FMA's latency. 3x3 windows get code of their own (unrolled taps);
3x3 stride 2 (MobileNet's downsampling) copies each row split in its even and odd columns, so that every
tap reads one contiguous vector (1.03-1.36x the span-and-shuffle code, measured on MobileNetV2's layers).
"""
from __future__ import annotations

import functools
from collections import namedtuple

import numpy as np
from llvmlite import ir

from ...entry_steps import CONV_SLOTS, GEOMETRY
from .conv import FLOATS, VECTOR_BYTES, _Chunks, _Geometry, _interval, _numbers, _splat
from .gemm import _intrinsic
from .loops import carried, claimed, counted

I8, I32, I64, F64 = ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.DoubleType()
I8P = I8.as_pointer()
PREFIX = "tscript_depthwise2d"
SCRATCH_PREFIX = "tscript_depthwise2d_scratch"
POINTERS = ("x", "w", "bias", "out", "scratch", "epilogue", "context")  # the order of `ptrs`
FLOAT_POINTERS = 5  # (the first ones: arrays of the convolution's dtype)
ROWS = 4  # output rows computed together: independent FMA chains (an FMA's latency is 4 cycles)
CLAIMS = 16  # chunks a shared range of planes is claimed in (an imbalance is at most about one chunk)
_Window = namedtuple("_Window", "kh kw dh dw sh")  # Python ints (unrolled, constant offsets) or IR values


def scratch_bytes(geometry: dict, itemsize: int) -> int:
    """Bytes of `scratch` for a convolution of GEOMETRY `geometry` (name -> int): two padded planes
    (rows as long as the padded input's, or a split row's two halves, whichever is longer)."""
    g = geometry
    lanes = VECTOR_BYTES // itemsize
    rows_read = (-(-g["OH"] // ROWS) * ROWS - 1) * g["sh"] + (g["kh"] - 1) * g["dh"] + 1
    width = g["W"] + 2 * g["pw"]
    area = max(g["H"] + 2 * g["ph"], rows_read) * max(width, 2 * _half(width, g["OW"], lanes))
    return 2 * -(-(area + 2 * lanes) // lanes) * lanes * itemsize


def _half(width, out_width, lanes: int, b: ir.IRBuilder | None = None):
    """Elements of each half of a split row (stride 2: even columns, then odd ones) of a padded row of
    `width`: the even columns and slack for the full-vector stores of the copy, and every chunk's loads
    (up to the rounded-up output row and one more column); a whole number of vectors. Python ints, or
    IR values with `b`."""
    if b is None:
        need = max(-(-width // 2), out_width + 1)
        return -(-need // lanes) * lanes + lanes
    need = b.sdiv(b.add(width, I64(1)), I64(2))
    need = b.select(b.icmp_signed(">", need, b.add(out_width, I64(1))), need, b.add(out_width, I64(1)))
    return b.add(b.mul(b.sdiv(b.add(need, I64(lanes - 1)), I64(lanes)), I64(lanes)), I64(lanes))


def _padded(b: ir.IRBuilder, g, lanes: int, split: bool = False) -> tuple:
    """`scratch_bytes` in IR, per plane: (rows, row length, elements) of a padded plane: the input with
    its padding and the rows the last block of ROWS output rows reads; slack for the span loads that
    reach past a row's end (2 vectors for stride 2); a whole number of vectors. `split`: rows of two
    halves (`_half`)."""
    def round_up(v, m: int):
        return b.mul(b.sdiv(b.add(v, I64(m - 1)), I64(m)), I64(m))
    last_top = b.mul(b.sub(round_up(g.OH, ROWS), I64(1)), g.sh)
    rows_read = b.add(b.add(last_top, b.mul(b.sub(g.kh, I64(1)), g.dh)), I64(1))
    rows = b.add(g.H, b.mul(g.ph, I64(2)))
    rows = b.select(b.icmp_signed(">", rows_read, rows), rows_read, rows)
    width = b.add(g.W, b.mul(g.pw, I64(2)))
    if split:
        width = b.mul(_half(width, g.OW, lanes, b), I64(2))
    return rows, width, round_up(b.add(b.mul(rows, width), I64(2 * lanes)), lanes)


def define_depthwise(module: ir.Module, dtype) -> ir.Function:
    """Define (once per module; return the existing ones if already defined) both kernels above for
    `dtype` (float32 or float64); returns the one with scratch."""
    dtype = np.dtype(dtype)
    suffix = FLOATS[dtype][1]
    try:
        return module.get_global(f"{SCRATCH_PREFIX}_{suffix}")
    except KeyError:
        pass
    kernel = _define_kernel(module, dtype)
    _define_allocating(module, dtype, kernel)
    return kernel


def _define_allocating(module: ir.Module, dtype, kernel: ir.Function) -> None:
    """`tscript_depthwise2d_<f32|f64>`: the kernel with a padded plane of its own, from malloc."""
    lanes = VECTOR_BYTES // dtype.itemsize
    fn = ir.Function(module, kernel.function_type, f"{PREFIX}_{FLOATS[dtype][1]}")
    planes, ptrs8, dims, scalars = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    g = _Geometry(*(b.load(b.gep(dims, [I64(CONV_SLOTS.index(s))])) for s in GEOMETRY))
    plain, split = _padded(b, g, lanes)[2], _padded(b, g, lanes, split=True)[2]
    elements = b.select(b.icmp_signed(">", plain, split), plain, split)  # (either layout's plane)
    malloc = _intrinsic(module, "malloc", I8P, [I64])
    free = _intrinsic(module, "free", ir.VoidType(), [I8P])
    scratch = b.call(malloc, [b.add(b.mul(elements, I64(dtype.itemsize)), I64(VECTOR_BYTES))])
    with b.if_then(b.icmp_unsigned("!=", scratch, ir.Constant(I8P, None))):  # (no memory: nothing computed)
        src = b.bitcast(ptrs8, I8P.as_pointer())
        ptrs = b.alloca(I8P, I64(len(POINTERS)))
        for i in range(FLOAT_POINTERS - 1):
            b.store(b.load(b.gep(src, [I64(i)])), b.gep(ptrs, [I64(i)]))
        b.store(scratch, b.gep(ptrs, [I64(FLOAT_POINTERS - 1)]))
        for i in range(FLOAT_POINTERS, len(POINTERS)):
            b.store(ir.Constant(I8P, None), b.gep(ptrs, [I64(i)]))
        ours = b.alloca(I64, I64(4))
        for i, value in enumerate((b.load(planes), b.load(b.gep(planes, [I64(1)])), I64(0), I64(0))):
            b.store(value, b.gep(ours, [I64(i)]))
        b.call(kernel, [ours, b.bitcast(ptrs, I8P), dims, scalars])
        b.call(free, [scratch])
    b.ret_void()


def _define_kernel(module: ir.Module, dtype) -> ir.Function:
    """The kernel with scratch."""
    fty, suffix = FLOATS[dtype]
    name = f"{SCRATCH_PREFIX}_{suffix}"
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I8P, I64.as_pointer(),
                                                             F64.as_pointer()]), name)
    planes, ptrs8, dims, _ = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ptrs = b.bitcast(ptrs8, I8P.as_pointer())
    x, w, bias, out, scratch = (b.bitcast(b.load(b.gep(ptrs, [I64(i)])), fty.as_pointer())
                                for i in range(FLOAT_POINTERS))
    finish = tuple(b.load(b.gep(ptrs, [I64(i)])) for i in range(FLOAT_POINTERS, len(POINTERS)))
    d = {s: b.load(b.gep(dims, [I64(i)])) for i, s in enumerate(CONV_SLOTS) if s in GEOMETRY or s in ("N", "O", "G")}
    g = _Geometry(*(d[s] for s in GEOMETRY))
    lanes = VECTOR_BYTES // dtype.itemsize
    first, last = b.load(planes), b.load(b.gep(planes, [I64(1)]))
    shared = b.inttoptr(b.load(b.gep(planes, [I64(3)])), I64.as_pointer())
    has_bias = b.icmp_unsigned("!=", b.bitcast(bias, I8P), ir.Constant(I8P, None))

    def padded_plane(split: bool):
        """The padded plane (zeros) and its geometry: no padding left, rows `width` long."""
        height, width, elements = _padded(b, g, lanes, split)
        padded = b.gep(scratch, [b.mul(elements, b.load(b.gep(planes, [I64(2)])))])
        memset = module.declare_intrinsic("llvm.memset", [I8P, I64])
        b.call(memset, [b.bitcast(padded, I8P), I8(0), b.mul(elements, I64(dtype.itemsize)), ir.IntType(1)(0)])
        return padded, g._replace(C=I64(1), H=height, W=width, ph=I64(0), pw=I64(0))

    def planes_of(stride):
        padded, gp = padded_plane(False)
        _planes(_Chunks(fn, b, dtype, stride, gp, padded), g, d, first, last,
                (x, w, bias, has_bias, out, padded), finish, shared)
    # 3x3 undilated windows of stride 2 both ways (MobileNet's): rows split in even and odd columns
    split = functools.reduce(b.and_, [b.icmp_signed("==", v, I64(n)) for v, n in
                                      ((g.sw, 2), (g.sh, 2), (g.kh, 3), (g.kw, 3), (g.dh, 1), (g.dw, 1))])
    with b.if_else(split) as (halves, other):
        with halves:
            padded, gp = padded_plane(True)
            _planes(_SplitChunks(fn, b, dtype, gp, padded), g, d, first, last,
                    (x, w, bias, has_bias, out, padded), finish, shared)
        with other:
            with b.if_else(b.icmp_signed("==", g.sw, I64(1))) as (unit, strided):
                with unit:
                    planes_of(1)
                with strided:
                    with b.if_else(b.icmp_signed("==", g.sw, I64(2))) as (two, any_stride):
                        with two:
                            planes_of(2)
                        with any_stride:
                            planes_of(g.sw)
    b.ret_void()
    return fn


class _SplitChunks(_Chunks):
    """Chunks of a stride-2 convolution reading a padded plane whose rows hold their even columns, then
    (`_half` elements on) their odd ones: column 2*ow + j is element ow + j // 2 of half j % 2, so every
    tap's lanes are one contiguous load (no span twice as long, no shuffle to keep its even lanes)."""

    def __init__(self, fn, b, dtype, g: _Geometry, x):
        super().__init__(fn, b, dtype, 1, g, x)
        self.half = b.sdiv(g.W, I64(2))

    def load_inside(self, row, ow0, offset):
        j = offset.constant  # (the unrolled 3x3 window's column offsets are constants)
        b = self.b
        at = b.add(b.add(row, ow0), I64(j // 2))
        if j % 2:
            at = b.add(at, self.half)
        at = b.gep(self.x, [at], inbounds=True)
        return b.load(b.bitcast(at, self.vec.as_pointer()), align=self.align)

    def copy_row(self, src, width, pw, dst) -> None:
        """An input row of `width` elements into a split row at `dst` (its padded column pw + w): spans of
        2 vectors, starting where pw + w is even, their even lanes to the first half, odd ones to the
        second (lanes outside the row are zeros)."""
        b, fn, n = self.b, self.fn, 2 * self.lanes
        vec = ir.VectorType(self.fty, n)
        mask_type = ir.VectorType(ir.IntType(1), n)
        load = self._intrinsic("llvm.masked.load", vec, [self.fty.as_pointer(), I32, mask_type, vec], f".v{n}", "")
        start = b.neg(b.srem(pw, I64(2)))
        with counted(b, fn, start, width, n, "split_copy") as w0:
            mask = _interval(b, b.neg(w0), b.sub(width, w0), n)
            span = b.call(load, [b.gep(src, [w0]), I32(self.align), mask, ir.Constant(vec, None)])
            q = b.sdiv(b.add(pw, w0), I64(2))
            for parity in (0, 1):
                lanes_of = b.shuffle_vector(span, ir.Constant(vec, None), _numbers(range(parity, n, 2)))
                at = b.gep(dst, [b.add(q, self.half) if parity else q])
                b.store(lanes_of, b.bitcast(at, self.vec.as_pointer()), align=self.align)


def _planes(chunks: _Chunks, g: _Geometry, d: dict, first, last, operands, finish: tuple, shared) -> None:
    """Output planes first..last (those claimed through `shared`, or all when it is null): each one's
    input plane copied into the padded plane, then blocks of ROWS output rows, then the plane through
    the epilogue (`finish`: function and context; or null)."""
    b, fn = chunks.b, chunks.fn
    x, w, bias, has_bias, out, padded = operands
    channels = b.mul(d["G"], d["O"])
    grain = b.sdiv(b.sub(last, first), I64(CLAIMS))
    with claimed(b, fn, first, last, grain, shared, "planes") as (start, stop), counted(b, fn, start, stop, 1, "plane") as p:
        source, channel = b.sdiv(p, d["O"]), b.srem(p, channels)
        with b.if_then(b.or_(b.icmp_signed("==", p, start), b.icmp_signed("==", b.srem(p, d["O"]), I64(0)))):
            _copy_plane(chunks, g, b.gep(x, [b.mul(b.mul(source, g.H), g.W)]), padded)
        weights = b.gep(w, [b.mul(channel, b.mul(g.kh, g.kw))])
        start = _splat(b, bias_of(b, has_bias, bias, channel, chunks.fty), chunks.lanes)
        plane_out = b.gep(out, [b.mul(b.mul(p, g.OH), g.OW)])
        _plane(chunks, g, (weights, start, plane_out))
        epilogue, context = finish
        with b.if_then(b.icmp_unsigned("!=", epilogue, ir.Constant(I8P, None))):
            ftype = ir.FunctionType(ir.VoidType(), [I8P, chunks.fty.as_pointer(), I64, I64, I64])
            area = b.mul(g.OH, g.OW)
            b.call(b.bitcast(epilogue, ftype.as_pointer()), [context, plane_out, I64(1), area, area])


def _plane(chunks: _Chunks, g: _Geometry, operands) -> None:
    """One output plane (`operands`: its weights, its start vector, where it goes) in blocks of ROWS rows,
    by the code for its window."""
    b, fn = chunks.b, chunks.fn

    def blocks(window: _Window):
        with counted(b, fn, I64(0), g.OH, ROWS, "oh") as oh:
            _rows(chunks, window, operands, oh)
    if isinstance(chunks, _SplitChunks):  # 3x3, stride 2 (the caller checked)
        blocks(_Window(3, 3, 1, 1, 2))
        return
    if chunks.span is None:  # any stride (gathers): one variant
        blocks(_Window(g.kh, g.kw, g.dh, g.dw, g.sh))
        return
    # 3x3, undilated, the same stride down as across: every tap's address a constant offset
    common = [b.icmp_signed("==", v, I64(n)) for v, n in ((g.kh, 3), (g.kw, 3), (g.dh, 1), (g.dw, 1),
                                                          (g.sh, chunks.stride))]
    with b.if_else(functools.reduce(b.and_, common)) as (three, other):
        with three:
            blocks(_Window(3, 3, 1, 1, chunks.stride))
        with other:
            blocks(_Window(g.kh, g.kw, g.dh, g.dw, g.sh))



def _copy_plane(chunks: _Chunks, g: _Geometry, plane, padded) -> None:
    """The input plane's rows into the padded plane (at row ph, column pw), a vector at a time (or
    split in even and odd columns, for `_SplitChunks`)."""
    b, fn, gp, lanes = chunks.b, chunks.fn, chunks.g, chunks.lanes
    vec, fp = chunks.vec, chunks.fty.as_pointer()
    mask_type = ir.VectorType(ir.IntType(1), lanes)
    load = chunks._intrinsic("llvm.masked.load", vec, [fp, I32, mask_type, vec], f".v{lanes}", "")
    store = chunks._intrinsic("llvm.masked.store", ir.VoidType(), [vec, fp, I32, mask_type], f".v{lanes}", "")
    with counted(b, fn, I64(0), g.H, 1, "copy_row") as h:
        src = b.gep(plane, [b.mul(h, g.W)])
        if isinstance(chunks, _SplitChunks):  # (rows split in even and odd columns)
            chunks.copy_row(src, g.W, g.pw, b.gep(padded, [b.mul(b.add(h, g.ph), gp.W)]))
        else:
            dst = b.gep(padded, [b.add(b.mul(b.add(h, g.ph), gp.W), g.pw)])
            with counted(b, fn, I64(0), g.W, lanes, "copy") as c0:
                mask = _interval(b, I64(0), b.sub(g.W, c0), lanes)
                value = b.call(load, [b.gep(src, [c0]), I32(chunks.align), mask, ir.Constant(vec, None)])
                b.call(store, [value, b.gep(dst, [c0]), I32(chunks.align), mask])


def _rows(chunks: _Chunks, window: _Window, operands, oh) -> None:
    """Output rows oh..oh+ROWS-1 of one plane, chunk by chunk (rows past OH computed, not stored)."""
    b, g = chunks.b, chunks.g
    weights, start, plane_out = operands
    top = b.mul(b.mul(oh, _value(window.sh)), g.W)  # the block's first row in the padded plane
    with chunks.starts() as ow0:
        if chunks.span is None:  # gathers (masked to the row)
            def load(row, offset):
                return chunks.load(b.add(top, row), ow0, offset, ir.Constant(ir.IntType(1), 1), 0.0)
        else:
            def load(row, offset):
                return chunks.load_inside(b.add(top, row), ow0, offset)
        taps = _unrolled if isinstance(window.kh, int) else _taps
        accs = taps(chunks, window, weights, [start] * ROWS, load)
        for r, acc in enumerate(accs):
            row = b.add(oh, I64(r))
            with b.if_then(b.icmp_signed("<", row, g.OH)):
                chunks.store(acc, b.gep(plane_out, [b.mul(row, g.OW)], inbounds=True), ow0)


def _value(v):
    return I64(v) if isinstance(v, int) else v


def _unrolled(chunks: _Chunks, window: _Window, weights, starts, load) -> list:
    """`_taps` for a window of constant size, dilation and stride: every tap's load at a constant row
    (times the row length) and column offset from the chunk."""
    b = chunks.b
    fma = _intrinsic(chunks.fn.module, f"llvm.fma.v{chunks.lanes}{chunks.suffix}", chunks.vec, [chunks.vec] * 3)
    rows = {}
    accs = list(starts)
    for i in range(window.kh):
        for j in range(window.kw):
            weight = _splat(b, b.load(b.gep(weights, [I64(i * window.kw + j)])), chunks.lanes)
            for r in range(len(accs)):
                k = r * window.sh + i * window.dh
                if k not in rows:
                    rows[k] = b.mul(I64(k), chunks.g.W)
                accs[r] = b.call(fma, [load(rows[k], I64(j * window.dw)), weight, accs[r]])
    return accs


def _taps(chunks: _Chunks, window: _Window, weights, starts, load) -> list:
    """For each of the block's output rows: start + the sum over taps (i, j) of weights[i*kw + j] times
    `load(row, offset)` (row: from the block's first row in the padded plane)."""
    b, fn, g = chunks.b, chunks.fn, chunks.g
    fma = _intrinsic(fn.module, f"llvm.fma.v{chunks.lanes}{chunks.suffix}", chunks.vec, [chunks.vec] * 3)

    def tap_row(i, accs):
        rows = [b.mul(b.add(b.mul(I64(r), window.sh), b.mul(i, window.dh)), g.W) for r in range(len(accs))]
        tap_weights = b.gep(weights, [b.mul(i, window.kw)])

        def tap(j, accs):
            weight = _splat(b, b.load(b.gep(tap_weights, [j])), chunks.lanes)
            offset = b.mul(j, window.dw)
            return [b.call(fma, [load(row, offset), weight, acc]) for row, acc in zip(rows, accs)]
        return carried(b, fn, I64(0), window.kw, 1, "j", accs, tap)
    return carried(b, fn, I64(0), window.kh, 1, "i", starts, tap_row)


def bias_of(b: ir.IRBuilder, has_bias, bias, channel, fty):
    """bias[channel], or 0 without a bias (the load only runs with one: `bias` may be null)."""
    before = b.block
    with b.if_then(has_bias):
        loaded, inside = b.load(b.gep(bias, [channel])), b.block
    value = b.phi(fty)
    value.add_incoming(loaded, inside)
    value.add_incoming(fty(0.0), before)
    return value
