"""The packed GEMM of a convolution whose im2col matrix never exists (implicit im2col):

    void tscript_sgemm_conv_f32(i64 M, i64 N, i64 K, float* A, i64 lda, i64* geo, float* x, i64 ldx,
                                float beta, float* C, i64 ldc, float* pack, i8* epilogue, i8* context)

computes C = A @ B + beta * C like `tscript_sgemm_epilogue_f32` (packed_gemm.py) with a row-major A
(M, K) and B the im2col columns of the images at x (GEOMETRY at geo: C, H, W, kh, kw, sh, sw, ph, pw,
dh, dw, OH, OW; image n at x + n*ldx): row p of B is the tap (c, i, j) = (p // (kh*kw), p // kw % kh,
p % kw), column n is the output position (image, oh, ow) = (n // (OH*OW), n // OW % OH, n % OW), its
value x[image, c, oh*sh - ph + i*dh, ow*sw - pw + j*dw], 0 outside the image. N is at most the
images' OH*OW positions; K is C*kh*kw. `pack` is `pack_bytes(M, N, K)` bytes of scratch, as for the
packed GEMM (the epilogue too: each finished block of C, while it is in L1).

Each KC x NC block of B is packed straight from the images into the GEMM's KC x NR micro-panels, one
vector of 16 columns at a time: its columns may lie in several output rows (7x7 images: up to 4), so
each row's piece of it is read by conv.py's `_Chunks` into the lanes it owns (a masked contiguous load
for stride 1, the even lanes of one for stride 2, a gather otherwise; the input's padding masked off
the load) and the vector is stored whole, an aligned line of its panel (the pieces are listed once per
block, the taps' offsets too). Lanes past the block's columns are zeros; the micro-kernels read no
further than the last whole vector. The micro-kernels and the loops around them are the packed GEMM's
(shared, not built twice). A product cut over both cores packs each half's columns on its own core.
"""
from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir

from ...entry_steps import GEOMETRY
from .conv import _Chunks, _either, _Geometry, _interval
from .loops import counted, smax, smin, stack
from .packed_gemm import BLOCKING, F32, F64, FP, I1, I8P, I64, LANES, NAME, Blocking, _Gemm

CONV_NAME = "tscript_sgemm_conv_f32"
I64P = I64.as_pointer()
FLOAT32 = np.dtype(np.float32)
_PIECE_FIELDS = ("row", "top", "ow", "lo", "hi")  # one piece of a packed vector: see `_ImplicitGemm.pieces`


def define_sgemm_conv(module: ir.Module, blocking: Blocking = BLOCKING, name: str = NAME) -> ir.Function:
    """Define (once per module) `<name without _f32>_conv_f32`, the function above, sharing the
    micro-kernels of the packed GEMM `name`; returns it."""
    conv_name = name.removesuffix("_f32") + "_conv_f32"
    try:
        return module.get_global(conv_name)
    except KeyError:
        pass
    return _ImplicitGemm(module, blocking, name).define_conv_entry(conv_name)


class _ImplicitGemm(_Gemm):
    """The packed GEMM's builders and the functions that pack B from images."""

    def pieces(self, fn, b, g: _Geometry, ldx, n0, nc, tables: dict, starts):
        """Fill `tables` (an i64 array per _PIECE_FIELDS) with the pieces of the block's vectors (16
        columns each, the last one's past nc none): the lanes lo <= lane < hi of a vector that lie in
        one output row, with that row's first input row's offset in x (`row`: its image's + top*W) and
        distance from the plane's top (`top`: oh*sh - ph), and the output column of the vector's lane
        0 in that row (`ow`, negative when the vector starts in an earlier row). Vector v's pieces are
        starts[v]..starts[v + 1]."""
        count = b.alloca(I64)
        b.store(I64(0), count)
        end = b.add(n0, nc)
        vectors = b.ashr(b.add(nc, I64(LANES - 1)), I64(4))
        with counted(b, fn, I64(0), vectors, 1, "vector") as v:
            b.store(b.load(count), b.gep(starts, [v]))
            first = b.add(n0, b.mul(v, I64(LANES)))
            last = smin(b, b.add(first, I64(LANES)), end)
            with counted(b, fn, b.sdiv(first, g.OW), b.add(b.sdiv(b.sub(last, I64(1)), g.OW), I64(1)), 1, "piece") as r:
                start = b.mul(r, g.OW)
                top = b.sub(b.mul(b.srem(r, g.OH), g.sh), g.ph)
                values = {"row": b.add(b.mul(b.sdiv(r, g.OH), ldx), b.mul(top, g.W)), "top": top,
                          "ow": b.sub(first, start), "lo": smax(b, b.sub(start, first), I64(0)),
                          "hi": b.sub(smin(b, b.add(start, g.OW), last), first)}
                at = b.load(count)
                for field, value in values.items():
                    b.store(value, b.gep(tables[field], [at]))
                b.store(b.add(at, I64(1)), count)
        b.store(b.load(count), b.gep(starts, [vectors]))
        return vectors

    def taps(self, fn, b, g: _Geometry, p0, kc, tables: dict) -> None:
        """Fill `tables` (i64 arrays "tap_row", "down", "right") with each of the block's kc taps (rows
        p0.. of B, (c, i, j)): its input row's offset from its output row's first (c*H + i*dh)*W, that
        row's distance i*dh and its column offset j*dw."""
        taps = b.mul(g.kh, g.kw)
        with counted(b, fn, I64(0), kc, 1, "tap") as p:
            q = b.add(p0, p)
            c, rest = b.sdiv(q, taps), b.srem(q, taps)
            down = b.mul(b.sdiv(rest, g.kw), g.dh)
            values = {"tap_row": b.mul(b.add(b.mul(c, g.H), down), g.W), "down": down,
                      "right": b.mul(b.srem(rest, g.kw), g.dw)}
            for field, value in values.items():
                b.store(value, b.gep(tables[field], [p]))

    def copy_vectors(self, chunks: _Chunks, kc, dest, tables: dict, starts, vectors) -> None:
        """Each vector of the block, for each of its kc taps: its first piece stored whole (zeros in the
        lanes it does not own), each further one into its own lanes (a masked store), all aligned lines
        of the panel's rows. Taps innermost: a piece's numbers stay in registers, and successive taps
        read the same input rows."""
        b, fn, g = chunks.b, chunks.fn, chunks.g
        nr = I64(self.k.nr)
        everything = ir.Constant(ir.VectorType(I1, LANES), [1] * LANES)
        with counted(b, fn, I64(0), vectors, 1, "vec") as v:
            first, last = b.load(b.gep(starts, [v])), b.load(b.gep(starts, [b.add(v, I64(1))]))
            panel = b.add(b.mul(b.ashr(v, I64(2)), b.mul(kc, nr)), b.mul(b.and_(v, I64(3)), I64(LANES)))
            out = b.gep(dest, [panel])
            with counted(b, fn, first, last, 1, "piece") as s:
                f = {name: b.load(b.gep(tables[name], [s])) for name in _PIECE_FIELDS}
                lanes = (f["lo"], f["hi"])
                mask = b.select(b.icmp_signed("==", s, first), everything, _interval(b, *lanes, LANES))
                whole = b.and_(b.icmp_signed("==", f["lo"], I64(0)), b.icmp_signed("==", f["hi"], I64(LANES)))
                with counted(b, fn, I64(0), kc, 1, "vectap") as p:
                    tap = {t: b.load(b.gep(tables[t], [p])) for t in ("tap_row", "down", "right")}
                    inside = b.icmp_unsigned("<", b.add(f["top"], tap["down"]), g.H)
                    value = self._load_piece(chunks, b.add(f["row"], tap["tap_row"]), f["ow"], tap["right"], inside,
                                             lanes, whole)
                    self._store_masked(b, value, b.gep(out, [b.mul(p, nr)]), mask)

    @staticmethod
    def _load_piece(chunks: _Chunks, row, ow, right, inside, lanes, whole):
        """A piece's lanes of one tap (`chunks.load`), without a mask where the piece is the whole vector
        and its span lies inside the input row (most of a big image's vectors: the masks took a third
        of the packing's time)."""
        if chunks.span is None:
            return chunks.load(row, ow, right, inside, 0.0, lanes)
        b, start = chunks.b, chunks.start(ow, right)
        plain = functools.reduce(b.and_, [whole, inside, b.icmp_signed(">=", start, I64(0)),
                                          b.icmp_signed("<=", b.add(start, I64(chunks.span)), chunks.g.W)])
        return _either(b, plain, lambda: chunks.load_inside(row, ow, right),
                       lambda: chunks.load(row, ow, right, inside, 0.0, lanes))

    def pack_image(self) -> ir.Function:
        """`pack_image(geo, x, ldx, p0, kc, n0, nc, dest)`: rows p0..p0+kc, columns n0..n0+nc of the
        images' B into KC x NR panels at dest (panel t at dest + t*NR*kc, value (p, j) at p*NR + j),
        zeros right of column nc up to a multiple of 16."""
        if self._defined("_pack_image"):
            return self._defined("_pack_image")
        k = self.k
        fn, b = self._function("_pack_image", [I64P, FP, I64, I64, I64, I64, I64, FP])
        geo, x, ldx, p0, kc, n0, nc, dest = fn.args
        for arg in (x, dest):
            arg.add_attribute("noalias")
        capacity = I64(k.nc + k.nc // LANES)  # pieces of NC columns: a vector's rows (at most 16) + 1
        tables = {f: b.alloca(I64, capacity) for f in _PIECE_FIELDS}
        tables.update({f: b.alloca(I64, I64(k.kc)) for f in ("tap_row", "down", "right")})
        starts = b.alloca(I64, I64(k.nc // LANES + 1))
        g = _Geometry(*(b.load(b.gep(geo, [I64(i)])) for i in range(len(GEOMETRY))))
        vectors = self.pieces(fn, b, g, ldx, n0, nc, tables, starts)
        self.taps(fn, b, g, p0, kc, tables)
        with b.if_else(b.icmp_signed("==", g.sw, I64(1))) as (unit, other):
            with unit:
                self.copy_vectors(_Chunks(fn, b, FLOAT32, 1, g, x), kc, dest, tables, starts, vectors)
            with other:
                with b.if_else(b.icmp_signed("==", g.sw, I64(2))) as (two, any_stride):
                    with two:
                        self.copy_vectors(_Chunks(fn, b, FLOAT32, 2, g, x), kc, dest, tables, starts, vectors)
                    with any_stride:
                        self.copy_vectors(_Chunks(fn, b, FLOAT32, g.sw, g, x), kc, dest, tables, starts, vectors)
        b.ret_void()
        return fn

    def conv_driver(self) -> ir.Function:
        """`conv_driver(M, N, K, A, lda, geo, x, ldx, n0, beta, C, ldc, pack, epilogue, context)` on one
        thread, K > 0, `pack` aligned: C's N columns are B's columns n0..n0+N; for each NC columns and
        KC steps of K, B's block packed from the images, then every MR rows (packed_gemm's row_blocks)."""
        if self._defined("_conv_driver"):
            return self._defined("_conv_driver")
        k = self.k
        fn, b = self._function("_conv_driver", [I64, I64, I64, FP, I64, I64P, FP, I64, I64, F32, FP, I64, FP,
                                                I8P, I8P])
        m, n, kk, a, lda, geo, x, ldx, n0, beta, c, ldc, pack, epilogue, context = fn.args
        a_panel = self.a_panel(b, n, kk, pack)
        with counted(b, fn, I64(0), n, k.nc, "jc") as jc:
            nc = smin(b, b.sub(n, jc), I64(k.nc))
            with counted(b, fn, I64(0), kk, k.kc, "pc") as pc:
                kc = smin(b, b.sub(kk, pc), I64(k.kc))
                b.call(self.pack_image(), [geo, x, ldx, pc, kc, b.add(n0, jc), nc, pack])
                cols = b.and_(nc, I64(-k.nr))
                panels = [pack, I64(k.nr), b.mul(kc, I64(k.nr)), b.gep(pack, [b.mul(cols, kc)])]
                self.row_blocks(fn, b, [m, kk, pc, kc, nc, I1(0), a, lda, a_panel], panels,
                                [b.gep(c, [jc]), ldc, beta], (epilogue, context))
        b.ret_void()
        return fn

    def conv_part(self) -> ir.Function:
        """`conv_part(i64* [M, N, n0], i8** [A, C, pack, x, geo, epilogue, context], i64* [K, lda, ldx,
        ldc], f64* [beta])`: the conv driver in the kernel ABI `tscript_parallel2` runs."""
        if self._defined("_conv_part"):
            return self._defined("_conv_part")
        fn, b = self._function("_conv_part", [I64P, I8P, I64P, F64.as_pointer()])
        sizes, ptrs8, dims, scalars = fn.args
        ptrs = b.bitcast(ptrs8, I8P.as_pointer())
        m, n, n0 = (b.load(b.gep(sizes, [I64(i)])) for i in range(3))
        a, c, pack, x = (b.bitcast(b.load(b.gep(ptrs, [I64(i)])), FP) for i in range(4))
        geo = b.bitcast(b.load(b.gep(ptrs, [I64(4)])), I64P)
        epilogue, context = (b.load(b.gep(ptrs, [I64(i)])) for i in (5, 6))
        kk, lda, ldx, ldc = (b.load(b.gep(dims, [I64(i)])) for i in range(4))
        b.call(self.conv_driver(), [m, n, kk, a, lda, geo, x, ldx, n0, b.fptrunc(b.load(scalars), F32), c, ldc,
                                    pack, epilogue, context])
        b.ret_void()
        return fn

    def define_conv_entry(self, name: str) -> ir.Function:
        """The entry point: empty products, an empty K (C = beta C, then the epilogue), and the split
        over two cores decided as the packed GEMM decides it."""
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I64, I64, I64, FP, I64, I64P, FP, I64, F32, FP,
                                                                      I64, FP, I8P, I8P]), name)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        m, n, kk, a, lda, geo, x, ldx, beta, c, ldc, pack8, epilogue, context = fn.args
        pack, wide, halves = self.prologue(fn, b, [m, n, kk, beta, c, ldc, pack8, epilogue, context])
        with b.if_else(halves) as (split, alone):
            with split:
                self._conv_split(b, [m, n, kk, a, lda, geo, x, ldx, beta, c, ldc, pack, epilogue, context], wide)
            with alone:
                b.call(self.conv_driver(), [m, n, kk, a, lda, geo, x, ldx, I64(0), beta, c, ldc, pack, epilogue,
                                            context])
        b.ret_void()
        return fn

    def _conv_split(self, b, args, wide) -> None:
        """Both halves at once, cut as the packed GEMM cuts them: N at a multiple of 16 columns when
        `wide` (the second half's columns start there in B), else M in the middle."""
        from .parallel import PARALLEL2, define_pool
        m, n, kk, a, lda, geo, x, ldx, beta, c, ldc, pack, epilogue, context = args
        cut_n = b.and_(b.add(b.lshr(n, I64(1)), I64(LANES // 2)), I64(-LANES))
        cut_m = b.lshr(m, I64(1))
        m1, n1 = b.select(wide, m, cut_m), b.select(wide, cut_n, n)
        m2, n2 = b.select(wide, m, b.sub(m, cut_m)), b.select(wide, b.sub(n, cut_n), n)
        a2 = b.gep(a, [b.select(wide, I64(0), b.mul(cut_m, lda))])
        c2 = b.gep(c, [b.select(wide, cut_n, b.mul(cut_m, ldc))])
        pack2 = b.gep(pack, [self._region(b, n, kk)])
        shared = [b.bitcast(x, I8P), b.bitcast(geo, I8P), epilogue, context]
        first = stack(b, I8P, [b.bitcast(p, I8P) for p in (a, c, pack)] + shared)
        second = stack(b, I8P, [b.bitcast(p, I8P) for p in (a2, c2, pack2)] + shared)
        sizes = stack(b, I64, [m1, n1, I64(0), m2, n2, b.select(wide, cut_n, I64(0))])
        dims = stack(b, I64, [kk, lda, ldx, ldc])
        scalars = stack(b, F64, [b.fpext(beta, F64)])
        define_pool(self.module)
        b.call(self.module.get_global(PARALLEL2),
               [b.bitcast(self.conv_part(), I8P), sizes, b.bitcast(first, I8P), b.gep(sizes, [I64(3)]),
                b.bitcast(second, I8P), dims, scalars])
