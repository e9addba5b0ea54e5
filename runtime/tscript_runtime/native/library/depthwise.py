"""A direct convolution for one input channel per group (depthwise: groups == in_channels, any channel
multiplier; also a single-channel image's convolution), in the kernel ABI `tscript_parallel2` runs:

    void tscript_depthwise2d_scratch_<f32|f64>(i64* planes, i8* ptrs, i64* dims, f64* scalars)

computes output planes planes[0] <= p < planes[1] of `out` (N, G*O, OH, OW) from `ptrs` = {x (N, G, H, W),
w (G*O, 1, kh, kw), bias (G*O) or null, out, scratch, epilogue or null, its context}: each plane, once
computed, goes through the epilogue (native/conv_epilogue.py) as one row of OH*OW values; `dims` a
convolution step's CONV_SLOTS (C is 1, O the channel multiplier). Output plane p reads input plane p // O
with weights and bias p % (G*O). `scratch` holds two rows of zeros (`scratch_bytes`); planes[2] (0 or 1)
says which one this call writes and reads, so that two calls run at once. planes[3] is 0, or the address
of an i64 (zero at first) that two such calls share: each then computes the chunks of planes it claims
through it (loops.claimed), so that the thread that is free first takes the next chunk (the two halves of
a static cut waited on each other for up to 1/3 of a launch). The whole-graph entry calls it with arena
scratch.

    void tscript_depthwise2d_<f32|f64>(i64* planes, i8* ptrs, i64* dims, f64* scalars)

is the same for planes[0] <= p < planes[1] and `ptrs` = {x, w, bias, out}, its row of zeros from malloc
(for callers without scratch, eager code), without an epilogue.

im2col + a one-row GEMM per channel spent most of its time writing and reading the columns. Here ROWS
output rows at a time, in chunks of one vector along the row (conv.py's `_Chunks`: stride 2 loads a span
and keeps the even lanes, other strides gather), start at the bias and take one FMA per tap: ROWS
independent FMA chains hide the FMA's latency. The taps read the input in place (each input plane used to
be copied into a zero-padded plane first: 30-58% of the kernel's time): where a chunk's windows lie inside
its rows, without masks; at the rows' left and right edges with the columns outside masked off the loads
(as im2col's); rows above and below the input read the row of zeros. 3x3 windows get code of their own
(unrolled taps); with stride 2, a tap at an odd column offset takes the odd lanes of the span its left
neighbour loads. Planes whose rows are at most half a vector long (MobileNet's 7x7) are computed as one
row of OH*OW outputs (`_flat`), their loads masked by a table of masks made once per call.
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
# stride 2's: fewer (its blocks' input rows, 2*rows + 1, stay inside the input more often, and keep fewer
# spans live): 0.8-0.95x the time of 4 rows on MobileNetV2's stride-2 layers
STRIDED_ROWS = 2
FLAT_MASKS = 4096  # masks `_flat_masks` keeps: (kh*kw + 1) a chunk of a plane (a 3x3 window's 8x8 plane: 40)
CLAIMS = 16  # chunks a shared range of planes is claimed in (an imbalance is at most about one chunk)
_Window = namedtuple("_Window", "kh kw dh dw sh")  # Python ints (unrolled, constant offsets) or IR values


def scratch_bytes(geometry: dict, itemsize: int) -> int:
    """Bytes of `scratch` for a convolution of GEOMETRY `geometry` (name -> int): two rows of zeros (one
    a part of a split call), each as long as an input row rounded up to whole vectors."""
    lanes = VECTOR_BYTES // itemsize
    return 2 * -(-geometry["W"] // lanes) * lanes * itemsize


def _zero_row(b: ir.IRBuilder, scratch, width, part, lanes: int, itemsize: int):
    """`scratch_bytes`' row of zeros of part `part` (0 or 1), written."""
    zeros = b.gep(scratch, [b.mul(part, b.mul(b.sdiv(b.add(width, I64(lanes - 1)), I64(lanes)), I64(lanes)))])
    memset = b.module.declare_intrinsic("llvm.memset", [I8P, I64])
    b.call(memset, [b.bitcast(zeros, I8P), I8(0), b.mul(width, I64(itemsize)), ir.IntType(1)(0)])
    return zeros


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
    """`tscript_depthwise2d_<f32|f64>`: the kernel with a row of zeros of its own, from malloc."""
    fn = ir.Function(module, kernel.function_type, f"{PREFIX}_{FLOATS[dtype][1]}")
    planes, ptrs8, dims, scalars = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    width = b.load(b.gep(dims, [I64(CONV_SLOTS.index("W"))]))
    malloc = _intrinsic(module, "malloc", I8P, [I64])
    free = _intrinsic(module, "free", ir.VoidType(), [I8P])
    scratch = b.call(malloc, [b.add(b.mul(width, I64(dtype.itemsize)), I64(VECTOR_BYTES))])
    with b.if_then(b.icmp_unsigned("!=", scratch, ir.Constant(I8P, None))):  # (no memory: nothing computed)
        src = b.bitcast(ptrs8, I8P.as_pointer())
        ptrs = b.alloca(I8P, I64(len(POINTERS)))
        for i, name in enumerate(POINTERS):  # {x, w, bias, out}, scratch, no epilogue
            value = scratch if name == "scratch" else ir.Constant(I8P, None) if i >= FLOAT_POINTERS else \
                b.load(b.gep(src, [I64(i)]))
            b.store(value, b.gep(ptrs, [I64(i)]))
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
    first, last = b.load(planes), b.load(b.gep(planes, [I64(1)]))
    shared = b.inttoptr(b.load(b.gep(planes, [I64(3)])), I64.as_pointer())
    has_bias = b.icmp_unsigned("!=", b.bitcast(bias, I8P), ir.Constant(I8P, None))
    lanes = VECTOR_BYTES // dtype.itemsize
    zeros = _zero_row(b, scratch, g.W, b.load(b.gep(planes, [I64(2)])), lanes, dtype.itemsize)

    def planes_of(stride):
        _planes(_Chunks(fn, b, dtype, stride, g, x), g, d, first, last, (w, bias, has_bias, out, zeros), finish,
                shared)
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


def _planes(chunks: _Chunks, g: _Geometry, d: dict, first, last, operands, finish: tuple, shared) -> None:
    """Output planes first..last (those claimed through `shared`, or all when it is null), each then
    through the epilogue (`finish`: function and context; or null)."""
    b, fn = chunks.b, chunks.fn
    w, bias, has_bias, out, zeros = operands
    channels = b.mul(d["G"], d["O"])
    grain = b.sdiv(b.sub(last, first), I64(CLAIMS))
    flat = _flat_masks(chunks, g) if chunks.stride == 1 else None
    with claimed(b, fn, first, last, grain, shared, "planes") as (start, stop), counted(b, fn, start, stop, 1, "plane") as p:
        base, channel = b.mul(b.mul(b.sdiv(p, d["O"]), g.H), g.W), b.srem(p, channels)
        weights = b.gep(w, [b.mul(channel, b.mul(g.kh, g.kw))])
        start = _splat(b, bias_of(b, has_bias, bias, channel, chunks.fty), chunks.lanes)
        plane_out = b.gep(out, [b.mul(b.mul(p, g.OH), g.OW)])
        _plane(chunks, g, (weights, start, base, plane_out, zeros), flat)
        epilogue, context = finish
        with b.if_then(b.icmp_unsigned("!=", epilogue, ir.Constant(I8P, None))):
            ftype = ir.FunctionType(ir.VoidType(), [I8P, chunks.fty.as_pointer(), I64, I64, I64])
            area = b.mul(g.OH, g.OW)
            b.call(b.bitcast(epilogue, ftype.as_pointer()), [context, plane_out, I64(1), area, area])


def _plane(chunks: _Chunks, g: _Geometry, operands, flat=None) -> None:
    """One output plane (`operands`: its weights, its start vector, where its input plane starts in
    `chunks.x`, where it goes, the row of zeros) in blocks of rows (`_rows`), by the code for its window;
    or, stride 1, as one row (`flat`: whether, and the masks: `_flat_masks`)."""
    b = chunks.b

    def rows(window: _Window):
        _rows(chunks, window, operands)
    if chunks.span is None:  # any stride (gathers): one variant
        rows(_Window(g.kh, g.kw, g.dh, g.dw, g.sh))
        return
    # 3x3, undilated, the same stride down as across: every tap's address a constant offset
    common = [b.icmp_signed("==", v, I64(n)) for v, n in ((g.kh, 3), (g.kw, 3), (g.dh, 1), (g.dw, 1),
                                                          (g.sh, chunks.stride))]

    def by_window(code):
        with b.if_else(functools.reduce(b.and_, common)) as (three, other):
            with three:
                code(_Window(3, 3, 1, 1, chunks.stride))
            with other:
                code(_Window(g.kh, g.kw, g.dh, g.dw, g.sh))
    if flat is None:
        by_window(rows)
        return
    applies, masks = flat
    with b.if_else(applies) as (whole, by_rows):
        with whole:
            by_window(lambda window: _flat(chunks, window, operands, masks))
        with by_rows:
            by_window(rows)


def _flat_masks(chunks: _Chunks, g: _Geometry) -> tuple:
    """Whether the planes are computed `_flat` (stride 1, rows as long as the input's and at most half a
    vector long: row by row, they would fill less than half their vectors; FLAT_MASKS masks enough), and
    then their masks, the same for every plane: chunk c's (lanes c*lanes..) kh*kw + 1 masks from
    c*(kh*kw + 1) on, one per tap (i, j), of the lanes whose input row oh + i*dh - ph and column
    ow + j*dw - pw lie inside the input, then the one of the lanes before OH*OW (bits of an integer as
    wide as the vector has lanes)."""
    b, fn, lanes = chunks.b, chunks.fn, chunks.lanes
    taps = b.mul(g.kh, g.kw)
    count = b.mul(b.sdiv(b.add(b.mul(g.OH, g.OW), I64(ROWS * lanes - 1)), I64(ROWS * lanes)), I64(ROWS))
    applies = functools.reduce(b.and_, [
        b.icmp_signed("==", g.sh, I64(1)), b.icmp_signed("==", g.OW, g.W), b.icmp_signed("<=", g.W, I64(lanes // 2)),
        b.icmp_signed("<=", b.mul(count, b.add(taps, I64(1))), I64(FLAT_MASKS))])
    bits = ir.IntType(lanes)
    masks = b.alloca(bits, I64(FLAT_MASKS))
    with b.if_then(applies):
        ivec, fvec = ir.VectorType(I32, lanes), ir.VectorType(ir.FloatType(), lanes)
        width, height = (_splat(b, b.trunc(v, I32), lanes) for v in (g.W, g.H))
        lane = _numbers(range(lanes))
        floor = _intrinsic(fn.module, f"llvm.floor.v{lanes}f32", fvec, [fvec])
        rows = b.fptosi(b.call(floor, [b.fdiv(b.sitofp(lane, fvec), b.sitofp(width, fvec))]), ivec)  # (exact)
        columns = b.sub(lane, b.mul(width, rows))  # the output row and column of the first chunk's lanes
        down, across = (_splat(b, b.trunc(b.sdiv(I64(lanes), g.W), I32), lanes),
                        _splat(b, b.trunc(b.srem(I64(lanes), g.W), I32), lanes))

        def chunk(c, positions):
            rows, columns = positions
            entry = b.gep(masks, [b.mul(c, b.add(taps, I64(1)))])
            with counted(b, fn, I64(0), g.kh, 1, "mask_i") as i:
                row = b.add(rows, _splat(b, b.trunc(b.sub(b.mul(i, g.dh), g.ph), I32), lanes))
                with counted(b, fn, I64(0), g.kw, 1, "mask_j") as j:
                    column = b.add(columns, _splat(b, b.trunc(b.sub(b.mul(j, g.dw), g.pw), I32), lanes))
                    inside = b.and_(b.icmp_unsigned("<", row, height), b.icmp_unsigned("<", column, width))
                    b.store(b.bitcast(inside, bits), b.gep(entry, [b.add(b.mul(i, g.kw), j)]))
            before = _interval(b, I64(0), b.sub(b.mul(g.OH, g.OW), b.mul(c, I64(lanes))), lanes)
            b.store(b.bitcast(before, bits), b.gep(entry, [taps]))
            columns = b.add(columns, across)
            wrapped = b.icmp_unsigned(">=", columns, width)
            rows = b.add(b.add(rows, down), b.zext(wrapped, ivec))
            return [rows, b.select(wrapped, b.sub(columns, width), columns)]
        carried(b, fn, I64(0), count, 1, "masks", [rows, columns], chunk)
    return applies, masks


def _flat(chunks: _Chunks, window: _Window, operands, masks) -> None:
    """One output plane of a stride-1 convolution whose output rows are as long as its input's, as one
    row of OH*OW outputs: output q + l reads input q + l + (i*dh - ph)*W + j*dw - pw at tap (i, j),
    masked by `_flat_masks` (off: lanes whose window leaves the input, reading the neighbouring row or
    outside the plane). ROWS chunks of `lanes` outputs at a time; no lanes wasted at each row's end
    (a 7x7 plane fills 49 of 64 lanes in one block instead of 7 of 16 lanes in two blocks)."""
    b, fn, g, lanes = chunks.b, chunks.fn, chunks.g, chunks.lanes
    weights, start, base, plane_out, _ = operands
    taps = _product(b, window.kh, window.kw)
    per = _sum(b, taps, 1)  # masks a chunk
    mask_type = ir.VectorType(ir.IntType(1), lanes)
    fp = chunks.fty.as_pointer()
    load = chunks._intrinsic("llvm.masked.load", chunks.vec, [fp, I32, mask_type, chunks.vec], f".v{lanes}", "")
    store = chunks._intrinsic("llvm.masked.store", ir.VoidType(), [chunks.vec, fp, I32, mask_type], f".v{lanes}", "")

    with counted(b, fn, I64(0), b.mul(g.OH, g.OW), ROWS * lanes, "flat") as q0:
        entries = b.gep(masks, [b.mul(b.sdiv(q0, I64(lanes)), _value(per))])

        def mask(r, tap):
            return b.bitcast(b.load(b.gep(entries, [_value(_sum(b, _product(b, r, per), tap))])), mask_type)

        def read(r, i, j):
            down = b.mul(_value(_sum(b, _product(b, i, window.dh), b.neg(g.ph))), g.W)
            at = b.add(b.add(I64(r * lanes), q0), b.add(down, _value(_sum(b, _product(b, j, window.dw), b.neg(g.pw)))))
            return b.call(load, [b.gep(chunks.x, [b.add(base, at)]), I32(chunks.align),
                                 mask(r, _sum(b, _product(b, i, window.kw), j)), ir.Constant(chunks.vec, None)])
        taps_of = _unrolled if isinstance(window.kh, int) else _taps
        for r, acc in enumerate(taps_of(chunks, window, weights, [start] * ROWS, read)):
            at = b.gep(plane_out, [b.add(q0, I64(r * lanes))], inbounds=True)
            b.call(store, [acc, at, I32(chunks.align), mask(r, taps)])


def _rows(chunks: _Chunks, window: _Window, operands) -> None:
    """The plane's blocks (`_block_rows` output rows each; rows past OH computed, not stored), row by row
    of them; with stride 1 where a row has at most two chunks (both at its edges), a column of chunks at
    a time: each chunk's column masks are then the same down the plane, computed once (0.75-0.85x the
    time on MobileNet's 14x14 and 28x28 planes; 1.05-1.35x on 56 and 112 wide ones, whose rows' inner
    chunks need no masks, and 1.1-1.2x on the 56 wide stride 2 layer)."""
    b, fn, g = chunks.b, chunks.fn, chunks.g
    weights, start, base, plane_out, zeros = operands

    def block(oh, ow0):
        top = b.sub(b.mul(oh, _value(window.sh)), g.ph)  # the input row of the block's first windows
        accs = _block(chunks, window, (weights, start, base, zeros), top, ow0)
        for r, acc in enumerate(accs):
            row = b.add(oh, I64(r))
            with b.if_then(b.icmp_signed("<", row, g.OH)):
                chunks.store(acc, b.gep(plane_out, [b.mul(row, g.OW)], inbounds=True), ow0)

    def blocks():
        return counted(b, fn, I64(0), g.OH, _block_rows(chunks), "oh")
    short = b.icmp_signed("<=", g.OW, I64(2 * chunks.lanes)) if chunks.stride == 1 else ir.Constant(ir.IntType(1), 0)
    with b.if_else(short) as (columns, rows):
        with columns:
            with chunks.starts() as ow0, blocks() as oh:
                block(oh, ow0)
        with rows:
            with blocks() as oh, chunks.starts() as ow0:
                block(oh, ow0)


def _block(chunks: _Chunks, window: _Window, operands, top, ow0) -> list:
    """The accumulators (one a row) of chunk ow0 of the block whose windows start at input row `top`
    (`operands`: weights, start vector, the input plane's offset in `chunks.x`, a row of zeros), read
    straight from the input: its rows outside the input read the row of zeros instead (a pointer chosen
    per row: masking them off every load measured 1.05-1.4x the time of the block); loads without masks
    where the chunk's windows lie inside the row, else with the columns outside it masked off."""
    b, g = chunks.b, chunks.g
    weights, start, base, zeros = operands
    taps = _unrolled if isinstance(window.kh, int) else _taps

    def row(r, i):
        k = b.add(top, _value(_sum(b, _product(b, r, window.sh), _product(b, i, window.dh))))
        return b.add(base, b.mul(k, g.W)), k

    def offset(j):
        return _value(_product(b, j, window.dw))

    def gathered(r, i, j):
        at, k = row(r, i)
        return chunks.load(at, ow0, offset(j), b.icmp_unsigned("<", k, g.H), 0.0)

    def row_pointer(r, i):
        at, k = row(r, i)
        return b.select(b.icmp_unsigned("<", k, g.H), b.gep(chunks.x, [at]), zeros)

    def plain(r, i, offset):
        at = b.gep(row_pointer(r, i), [chunks.start(ow0, offset)], inbounds=True)
        return b.load(b.bitcast(at, ir.VectorType(chunks.fty, chunks.span).as_pointer()), align=chunks.align)

    def masked(r, i, offset):
        start = chunks.start(ow0, offset)
        return _span_load(chunks, b.gep(row_pointer(r, i), [start]),
                          _interval(b, b.neg(start), b.sub(g.W, start), chunks.span))

    def reads(span):
        """load(r, i, j) from `span(r, i, column offset)`: its lanes (stride 2: the even elements; or, for
        a constant odd column offset, the odd ones of the span one column left, loaded once for both)."""
        spans = {}

        def load(r, i, j):
            o, k = _product(b, j, window.dw), _sum(b, _product(b, r, window.sh), _product(b, i, window.dh))
            if chunks.stride != 2 or not isinstance(o, int) or not isinstance(k, int):
                return chunks._lanes(span(r, i, _value(o)))
            if (k, o - o % 2) not in spans:
                spans[k, o - o % 2] = span(r, i, I64(o - o % 2))
            loaded = spans[k, o - o % 2]
            return b.shuffle_vector(loaded, ir.Constant(loaded.type, None), _numbers(range(o % 2, chunks.span, 2)))
        return load

    def block(load):
        return lambda: taps(chunks, window, weights, [start] * _block_rows(chunks), load)
    if chunks.span is None:
        return block(gathered)()
    left = chunks.start(ow0, I64(0))  # the span of the last tap's column ends inside the row
    end = b.add(b.add(left, b.mul(b.sub(_value(window.kw), I64(1)), _value(window.dw))), I64(chunks.span))
    columns_inside = b.and_(b.icmp_signed(">=", left, I64(0)), b.icmp_signed("<=", end, g.W))
    return _either(b, columns_inside, block(reads(plain)), block(reads(masked)))


def _block_rows(chunks: _Chunks) -> int:
    """Output rows a block: ROWS, STRIDED_ROWS for stride 2."""
    return STRIDED_ROWS if chunks.stride == 2 else ROWS


def _span_load(chunks: _Chunks, at, mask):
    """The span at pointer `at`, its elements off `mask` reading zeros."""
    b, n = chunks.b, chunks.span
    vec = ir.VectorType(chunks.fty, n)
    load = chunks._intrinsic("llvm.masked.load", vec, [chunks.fty.as_pointer(), I32, mask.type, vec], f".v{n}", "")
    return b.call(load, [at, I32(chunks.align), mask, ir.Constant(vec, None)])


def _either(b: ir.IRBuilder, condition, then, otherwise) -> list:
    """`then()` if condition else `otherwise()`: each builds its code and returns a list of values."""
    with b.if_else(condition) as (yes, no):
        with yes:
            first, first_block = then(), b.block
        with no:
            second, second_block = otherwise(), b.block
    values = []
    for one, other in zip(first, second):
        value = b.phi(one.type)
        value.add_incoming(one, first_block)
        value.add_incoming(other, second_block)
        values.append(value)
    return values


def _value(v):
    return I64(v) if isinstance(v, int) else v


def _product(b: ir.IRBuilder, u, v):
    """u * v: a Python int when both are, else an IR value."""
    return u * v if isinstance(u, int) and isinstance(v, int) else b.mul(_value(u), _value(v))


def _sum(b: ir.IRBuilder, u, v):
    """u + v: a Python int when both are, else an IR value."""
    return u + v if isinstance(u, int) and isinstance(v, int) else b.add(_value(u), _value(v))


def _unrolled(chunks: _Chunks, window: _Window, weights, starts, load) -> list:
    """`_taps` for a window of constant size, dilation and stride (Python ints: `load` gets them)."""
    b = chunks.b
    fma = _intrinsic(chunks.fn.module, f"llvm.fma.v{chunks.lanes}{chunks.suffix}", chunks.vec, [chunks.vec] * 3)
    accs = list(starts)
    for i in range(window.kh):
        for j in range(window.kw):
            weight = _splat(b, b.load(b.gep(weights, [I64(i * window.kw + j)])), chunks.lanes)
            accs = [b.call(fma, [load(r, i, j), weight, acc]) for r, acc in enumerate(accs)]
    return accs


def _taps(chunks: _Chunks, window: _Window, weights, starts, load) -> list:
    """For each accumulator r of the block: starts[r] + the sum over taps (i, j) of weights[i*kw + j]
    times `load(r, i, j)`."""
    b, fn = chunks.b, chunks.fn
    fma = _intrinsic(fn.module, f"llvm.fma.v{chunks.lanes}{chunks.suffix}", chunks.vec, [chunks.vec] * 3)

    def tap_row(i, accs):
        tap_weights = b.gep(weights, [b.mul(i, window.kw)])

        def tap(j, accs):
            weight = _splat(b, b.load(b.gep(tap_weights, [j])), chunks.lanes)
            return [b.call(fma, [load(r, i, j), weight, acc]) for r, acc in enumerate(accs)]
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
