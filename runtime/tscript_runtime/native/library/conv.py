"""Native im2col and max-pooling kernels, called by the whole-graph entry with a plan's GEOMETRY
(`C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, OH, OW`, i64; C counts planes for pooling):

    void tscript_im2col_<f32|f64>(i64* geo, T* x, T* col)     one (C, H, W) image -> (C*kh*kw, OH*OW)
    void tscript_im2col_ld_<f32|f64>(i64* geo, T* x, T* col, i64 ld)   the same, col's rows ld apart
    void tscript_max_pool2d_<f32|f64>(i64* geo, T* x, T* y)   (P, H, W) -> (P, OH, OW)

Both walk each output row in chunks of one AVX-512 vector of outputs (16 floats, 8 doubles). A
tap's columns outside the input are masked off its load, which then reads the padding value (0 for
im2col, -inf for pooling) without touching memory, and the row's last chunk is a masked store: the
short rows of small CNNs (OW = 8..32) run as whole vectors, with no scalar remainder loop and no
bounds branches. Stride 1 loads a contiguous span, stride 2 twice as many elements keeping the even
ones, other strides gather. im2col runs its oh loop innermost so that a chunk's column mask is
computed once for all rows; pooling checks whether a chunk's windows lie inside the input and then
loads without masks.
"""
from __future__ import annotations

from collections import namedtuple
from functools import partial, reduce

import numpy as np
from llvmlite import ir

from ...entry_steps import GEOMETRY
from .gemm import _intrinsic
from .loops import carried, counted, smax, smin, splat

I32, I64 = ir.IntType(32), ir.IntType(64)
VECTOR_BYTES = 64  # one AVX-512 register
# The whole-graph entry's convolutions (native/entry.py, planned in entry_plan.py):
BATCH_COLUMNS = 1024  # images whose columns total at most this many share one GEMM (7x7, 14x14 layers)
# output channels from which a float32 convolution takes the packed GEMM on hosts it is tuned for (AVX-512;
# else the register-blocked GEMM up to the plan's small_m): measured never slower, 3 to 64 channels
PACKED_FROM = 1
FLOATS = {np.dtype(np.float32): (ir.FloatType(), "f32"), np.dtype(np.float64): (ir.DoubleType(), "f64")}


def define_im2col(module: ir.Module, dtype) -> ir.Function:
    """Define (once per module; return the existing one if already defined)
    `void tscript_im2col_<f32|f64>(i64* geo, <float|double>* x, <float|double>* col)`: row
    `(c*kh + i)*kw + j`, column `oh*OW + ow` of the C-contiguous `col` is
    `x[c, oh*sh - ph + i*dh, ow*sw - pw + j*dw]`, or 0 outside the image."""
    return _define(module, "tscript_im2col", dtype, _im2col_rows)


def images_per_gemm(images: int, groups: int, length: int) -> int:
    """How many images' columns (`length` each) the entry puts side by side for one GEMM: 1 (one GEMM
    per image and group) unless the convolution has one group and several small images."""
    return min(images, BATCH_COLUMNS // max(length, 1)) if groups == 1 and images > 1 and 2 * length <= \
        BATCH_COLUMNS else 1


def implicit_columns(dtype) -> bool:
    """Does the entry's convolution of `dtype` pack its GEMM's columns straight from the image
    (implicit_gemm.py) instead of writing im2col columns first? float32 where the packed GEMM is the
    one for products of many rows (AVX-512 hosts)."""
    from ..target import host
    return np.dtype(dtype) == np.float32 and "+avx512f" in host()["features"].split(",")


def packs_from_image(pointwise: bool, stride_w: int, rows: int, columns: int, images: int = 1) -> bool:
    """Where `implicit_columns`: does a convolution's product of `rows` output channels and `columns`
    columns (of `images` images side by side) pack them from the image? Not for one image of a
    `pointwise` convolution (1x1, stride 1, unpadded: its columns are the input itself, which the GEMM
    reads in place; several images' columns would be copied side by side first, on one core), nor for
    a strided one whose rows outnumber its columns (the product is cut by rows, both cores packing all
    of B: from the image that measured 5-13% slower than im2col once, ResNet's 14x14 and 7x7 stride-2
    layers). A strided 1x1 convolution packs from the image: its im2col is a copy on one core (ResNet's
    56x56 downsample took 2.9x ONNX Runtime's time). The entry's code decides the same
    (native/entry.py `_packs_from_image`)."""
    return (not pointwise or images > 1) and (stride_w == 1 or columns >= rows)


def define_im2col_ld(module: ir.Module, dtype) -> ir.Function:
    """Define (once per module) `void tscript_im2col_ld_<f32|f64>(i64* geo, T* x, T* col, i64 ld)`: the
    same columns, their rows `ld` elements apart (several images' columns side by side in one matrix,
    for one GEMM over all of them)."""
    return _define(module, "tscript_im2col_ld", dtype, _im2col_rows, strided=True)


def define_max_pool2d(module: ir.Module, dtype) -> ir.Function:
    """Define (once per module) `void tscript_max_pool2d_<f32|f64>(i64* geo, T* x, T* y)`:
    `y[p, oh, ow]` is the maximum of the window's positions inside `x[p]` (NaN propagates),
    -inf for a window with none."""
    return _define(module, "tscript_max_pool2d", dtype, _pool_rows)


def _define(module: ir.Module, prefix: str, dtype, rows, strided: bool = False) -> ir.Function:
    """The function `prefix_<f32|f64>(i64* geo, T* x, T* out)` (`strided`: and `i64 ld`, the distance
    between out's rows): the geometry loaded, then `rows(chunks, out)` (`rows(chunks, out, ld)`) built
    three times, for stride 1, stride 2 and any other stride."""
    dtype = np.dtype(dtype)
    fty, suffix = FLOATS[dtype]
    name = f"{prefix}_{suffix}"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fp = fty.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), fp, fp] + [I64] * strided), name)
    for a in fn.args[:3]:
        a.add_attribute("noalias")
    geo_p, x, out = fn.args[:3]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    g = _Geometry(*(b.load(b.gep(geo_p, [I64(k)])) for k in range(len(GEOMETRY))))
    if strided:
        rows = partial(rows, ld=fn.args[3])
    with b.if_else(b.icmp_signed("==", g.sw, I64(1))) as (unit, other):
        with unit:
            rows(_Chunks(fn, b, dtype, 1, g, x), out)
        with other:
            with b.if_else(b.icmp_signed("==", g.sw, I64(2))) as (two, any_stride):
                with two:
                    rows(_Chunks(fn, b, dtype, 2, g, x), out)
                with any_stride:
                    rows(_Chunks(fn, b, dtype, g.sw, g, x), out)
    b.ret_void()
    return fn


_Geometry = namedtuple("_Geometry", GEOMETRY)  # the i64 values loaded from `geo`


class _Chunks:
    """Vector code for a chunk of `lanes` consecutive outputs ow0.. of a row (one vector register),
    reading input columns `ow*stride - pw + offset` of `x`. Strides 1 and 2 read a contiguous span
    (2 elements a lane for stride 2, the even ones kept), any other stride (a run-time value) gathers."""

    def __init__(self, fn, b, dtype, stride, g: _Geometry, x):
        self.fn, self.b, self.g, self.x, self.stride = fn, b, g, x, stride
        (self.fty, self.suffix), self.align = FLOATS[dtype], dtype.itemsize
        self.lanes = VECTOR_BYTES // dtype.itemsize
        self.span = self.lanes * stride if isinstance(stride, int) else None  # elements a contiguous load reads
        self.vec = ir.VectorType(self.fty, self.lanes)
        self.size = b.mul(b.mul(g.C, g.H), g.W)  # elements of x

    def starts(self):
        """`for ow0 in range(0, OW, lanes)` around the chunk body; yields ow0."""
        return counted(self.b, self.fn, I64(0), self.g.OW, self.lanes, "chunk")

    def start(self, ow0, offset):
        """The input column of the chunk's first lane: `ow0*stride - pw + offset`."""
        b = self.b
        return b.add(b.sub(b.mul(ow0, I64(self.stride) if self.span else self.stride), self.g.pw), offset)

    def load(self, row, ow0, offset, row_inside, padding: float, lanes=None):
        """The lanes' inputs `x[row + (ow0 + lane)*stride - pw + offset]`, or `padding` where that
        column is outside the row or the row is outside the plane (`row_inside` false). With `lanes`
        (lo, hi), only lanes lo <= lane < hi read, the others are `padding` too (the piece of a vector
        that lies in one output row: implicit_gemm.py)."""
        b, g, start = self.b, self.g, self.start(ow0, offset)
        if self.span is None:
            return self._gather(row, start, row_inside, padding, lanes)
        n = self.span
        # the elements k of the span with 0 <= start + k < W, none when the row is outside
        lo, hi = b.neg(start), b.select(row_inside, b.sub(g.W, start), I64(0))
        if lanes is not None:  # (lane l reads element l*stride of the span)
            lo, hi = smax(b, lo, b.mul(lanes[0], I64(self.stride))), smin(b, hi, b.mul(lanes[1], I64(self.stride)))
        mask = _interval(b, lo, hi, n)
        vec = ir.VectorType(self.fty, n)
        masked = self._intrinsic("llvm.masked.load", vec, [self.fty.as_pointer(), I32, mask.type, vec], f".v{n}", "")
        return self._lanes(b.call(masked, [b.gep(self.x, [b.add(row, start)]), I32(self.align), mask,
                                           ir.Constant(vec, [padding] * n)]))

    def load_inside(self, row, ow0, offset):
        """`load` for a chunk whose every lane before OW reads inside its row, and whose span at
        `row + start` lies inside x: no mask."""
        b, vec = self.b, ir.VectorType(self.fty, self.span)
        at = b.gep(self.x, [b.add(row, self.start(ow0, offset))], inbounds=True)
        return self._lanes(b.load(b.bitcast(at, vec.as_pointer()), align=self.align))

    def _lanes(self, span):
        """The lanes' values from a loaded span: every element, or the even ones for stride 2."""
        if self.stride != 2:
            return span
        return self.b.shuffle_vector(span, ir.Constant(span.type, None), _numbers(range(0, self.span, 2)))

    def _gather(self, row, start, row_inside, padding: float, owned=None):
        """Lane l reads x[row + start + l*stride] when that column is inside a row inside the plane
        (and, with `owned` (lo, hi), lo <= l < hi)."""
        b, lanes = self.b, self.lanes
        columns = b.add(_splat(b, start, lanes), b.mul(_splat(b, self.stride, lanes), _numbers(range(lanes), I64)))
        mask = b.icmp_unsigned("<", columns, _splat(b, self.g.W, lanes))
        mask = b.select(row_inside, mask, ir.Constant(mask.type, None))
        if owned is not None:
            mask = b.and_(mask, _interval(b, owned[0], owned[1], lanes))
        pointers = b.gep(_splat(b, self.x, lanes), [b.add(_splat(b, row, lanes), columns)], source_etype=self.fty)
        gather = self._intrinsic("llvm.masked.gather", self.vec, [pointers.type, I32, mask.type, self.vec],
                                 f".v{lanes}", f".v{lanes}")
        return b.call(gather, [pointers, I32(self.align), mask, ir.Constant(self.vec, [padding] * lanes)])

    def store(self, value, out, ow0) -> None:
        """`out[ow0 + lane] = value` for the lanes before OW."""
        b = self.b
        mask = _interval(b, I64(0), b.sub(self.g.OW, ow0), self.lanes)
        masked = self._intrinsic("llvm.masked.store", ir.VoidType(), [self.vec, self.fty.as_pointer(), I32, mask.type],
                                 f".v{self.lanes}", "")
        b.call(masked, [value, b.gep(out, [ow0], inbounds=True), I32(self.align), mask])

    def _intrinsic(self, name: str, ret, args: list, values: str, pointers: str) -> ir.Function:
        """`name.<values><f32|f64>.<pointers>p0`, e.g. llvm.masked.load.v16f32.p0."""
        return _intrinsic(self.fn.module, f"{name}{values}{self.suffix}{pointers}.p0", ret, args)


def _im2col_rows(chunks: _Chunks, col, ld=None) -> None:
    """for c, i, j, oh: col row `(c*kh + i)*kw + j` (rows `ld` apart, default OH*OW) at `oh*OW` = image
    row `oh*sh - ph + i*dh` read at columns `ow*sw - pw + j*dw` (zeros outside)."""
    b, fn, g = chunks.b, chunks.fn, chunks.g
    length = b.mul(g.OH, g.OW) if ld is None else ld
    with counted(b, fn, I64(0), g.C, 1, "c") as c:
        with counted(b, fn, I64(0), g.kh, 1, "i") as i:
            with counted(b, fn, I64(0), g.kw, 1, "j") as j:
                out_row = b.gep(col, [b.mul(b.add(b.mul(b.add(b.mul(c, g.kh), i), g.kw), j), length)], inbounds=True)
                offset = b.mul(j, g.dw)
                # oh innermost: the chunk's column mask is computed once for all rows
                with chunks.starts() as ow0:
                    with counted(b, fn, I64(0), g.OH, 1, "oh") as oh:
                        row, row_inside = _input_row(b, g, c, b.add(b.sub(b.mul(oh, g.sh), g.ph), b.mul(i, g.dh)))
                        out = b.gep(out_row, [b.mul(oh, g.OW)], inbounds=True)
                        chunks.store(chunks.load(row, ow0, offset, row_inside, 0.0), out, ow0)


def _pool_rows(chunks: _Chunks, y) -> None:
    """for p, oh, each chunk of ow: the maximum over taps (i, j) in row-major order, as numpy's
    `maximum(best, tap)` folds them in the reference kernel (the first NaN wins; of equal values,
    the last one, which decides between -0.0 and 0.0). Chunks whose windows lie inside the input
    load without masks (computing them took half the time of a 2x2 pool)."""
    b, fn, g = chunks.b, chunks.fn, chunks.g
    with counted(b, fn, I64(0), g.C, 1, "p") as p:
        with counted(b, fn, I64(0), g.OH, 1, "oh") as oh:
            top = b.sub(b.mul(oh, g.sh), g.ph)
            out = b.gep(y, [b.mul(b.add(b.mul(p, g.OH), oh), g.OW)], inbounds=True)
            with chunks.starts() as ow0:
                def masked(row, offset, row_inside):
                    return chunks.load(row, ow0, offset, row_inside, -np.inf)

                def plain(row, offset, row_inside):
                    return chunks.load_inside(row, ow0, offset)
                if chunks.span is None:  # gathers: no unmasked variant
                    best = _window_max(chunks, p, top, masked)
                else:
                    best = _either(b, _interior(chunks, p, top, ow0), lambda: _window_max(chunks, p, top, plain),
                                   lambda: _window_max(chunks, p, top, masked))
                chunks.store(best, out, ow0)


def _window_max(chunks: _Chunks, p, top, load):
    """The running maximum over the chunk's taps, `load(row, offset, row_inside)` reading each."""
    b, fn, g = chunks.b, chunks.fn, chunks.g

    def tap_row(i, best):
        row, row_inside = _input_row(b, g, p, b.add(top, b.mul(i, g.dh)))

        def tap(j, acc):
            return [_maximum(b, acc[0], load(row, b.mul(j, g.dw), row_inside))]
        return carried(b, fn, I64(0), g.kw, 1, "j", best, tap)
    return carried(b, fn, I64(0), g.kh, 1, "i", [ir.Constant(chunks.vec, [-np.inf] * chunks.lanes)], tap_row)[0]


def _interior(chunks: _Chunks, p, top, ow0):
    """Do the windows of the chunk's lanes before OW lie inside plane p, and the spans its loads
    read (lanes past OW included) inside x?"""
    b, g, lanes = chunks.b, chunks.g, I64(chunks.lanes)
    bottom = b.add(top, b.mul(b.sub(g.kh, I64(1)), g.dh))
    reach = b.mul(b.sub(g.kw, I64(1)), g.dw)  # from a window's first column to its last
    left = chunks.start(ow0, I64(0))
    last = b.sub(b.select(b.icmp_signed("<", b.add(ow0, lanes), g.OW), b.add(ow0, lanes), g.OW), I64(1))
    right = chunks.start(last, reach)
    end = b.add(b.add(b.mul(b.add(b.mul(p, g.H), bottom), g.W), b.add(left, reach)), I64(chunks.span))
    tests = [b.icmp_signed(">=", top, I64(0)), b.icmp_signed("<", bottom, g.H), b.icmp_signed(">=", left, I64(0)),
             b.icmp_signed("<", right, g.W), b.icmp_signed("<=", end, chunks.size)]
    return reduce(b.and_, tests)


def _either(b, condition, then, otherwise):
    """`then()` if condition else `otherwise()`: each builds its code and returns a value."""
    with b.if_else(condition) as (yes, no):
        with yes:
            first, first_block = then(), b.block
        with no:
            second, second_block = otherwise(), b.block
    value = b.phi(first.type)
    value.add_incoming(first, first_block)
    value.add_incoming(second, second_block)
    return value


def _input_row(b, g: _Geometry, plane, h):
    """The offset in x of row `h` of plane `plane`, and whether that row is inside the plane."""
    return b.mul(b.add(b.mul(plane, g.H), h), g.W), b.icmp_unsigned("<", h, g.H)


def _maximum(b, best, value):
    """numpy's `maximum(best, value)`: best when it is NaN or greater, else value."""
    keep = b.or_(b.fcmp_unordered("uno", best, best), b.fcmp_ordered(">", best, value))
    return b.select(keep, best, value)


def _numbers(values, ty=I32):
    """A constant vector of integers (a shufflevector mask, lane numbers)."""
    values = list(values)
    return ir.Constant(ir.VectorType(ty, len(values)), values)


def _splat(b, value, n: int):
    return splat(b, value, ir.VectorType(value.type, n))


def _interval(b, lo, hi, n: int):
    """The mask of lanes k < n with lo <= k < hi (i64 bounds)."""
    k = _numbers(range(n))
    lo, hi = (b.trunc(_clamp(b, v, n), I32) for v in (lo, hi))
    return b.and_(b.icmp_signed(">=", k, _splat(b, lo, n)), b.icmp_signed("<", k, _splat(b, hi, n)))


def _clamp(b, value, n: int):
    """`value` clamped to 0..n."""
    value = b.select(b.icmp_signed("<", value, I64(0)), I64(0), value)
    return b.select(b.icmp_signed(">", value, I64(n)), I64(n), value)
