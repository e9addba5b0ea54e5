"""A packed, register-blocked float32 GEMM for products of many rows (BLIS's loop structure):

    void tscript_sgemm_f32(i32 trans_a, i32 trans_b, i64 M, i64 N, i64 K, float* A, i64 lda,
                           float* B, i64 ldb, float beta, float* C, i64 ldc, float* pack)

computes C = op(A) @ op(B) + beta * C, row-major like `cblas_sgemm` with alpha 1: op(A) is (M, K),
op(B) is (K, N), a transpose flag is CBLAS's 111 (no transpose; any other value transposes: 112,
113). With beta 0, C is only written (NaN or garbage there does not propagate); K = 0 gives beta * C.
`pack` is caller-owned scratch of at least `pack_bytes(M, N, K)` bytes (any alignment; at most
~1.1 MB, less for small products), used by one call at a time, its contents not kept between calls.

Blocking. For each block of NC columns and KC steps of K, op(B) is packed into micro-panels of KC x NR
(NR = 64 floats, zero-padded at the right edge; a transposed B is turned around 16 x 16 at a time in
registers). For each MR = 6 rows, the micro-kernel then walks those panels with the 6 x KC block of A
held in L1 and the panels streaming from L2; it keeps C's 6 x 64 tile in 24 zmm accumulators and per
step of K loads 4 vectors of B and broadcasts 6 values of A into 24 FMAs. A row-major A is read in
place (its 6 rows are 6 sequential streams); a transposed A is packed 48 rows at a time (Blocking.a_rows,
turned around 16 x 16 in registers) before their eight 6-row blocks. A row-major B of at most `in_place_floats` values under at most `in_place_rows`
rows is read in place too (but for its last, partial panel): packing it would cost more than the few
row blocks that reuse it save.
Rows past the last whole micro-panel go in blocks of 4, 2 and 1 rows (tail_rows), and the last columns a kernel
for that many vectors, the last one of 8 floats when 8 are enough, with masked loads and stores of C:
nothing outside C's M x N values is read or written.

    void tscript_sgemm_epilogue_f32(<the same>, i8* epilogue, i8* context)

is the same product that, when `epilogue` is not null, calls
`void epilogue(i8* context, float* c, i64 rows, i64 cols, i64 ldc)` on each finished block of C (MR
rows of NC columns, after its last step of K, while it is still in L1), which may rewrite the block in
place: a convolution's bias and the pointwise ops after it (native/conv_epilogue.py). With a null
`epilogue` it computes what `tscript_sgemm_f32` computes, by the same operations.

Two cores: with at least `BLOCKING.split_min` multiply-adds the larger of M and N is cut in two and
the halves run at once through `tscript_parallel2`, each packing into its own half of `pack`; the
packing both halves repeat (all of A when N is cut, all of B when M is cut) is the smaller one. A
column or row of C is computed by the same operations whether the product is cut or not.
"""
from __future__ import annotations

import functools

from llvmlite import ir

from .blocking import ALIGN, BLOCKING, LANES, Blocking
from .loops import carried, counted, smin, splat, stack, zeros

I1, I32, I64, F32, F64 = ir.IntType(1), ir.IntType(32), ir.IntType(64), ir.FloatType(), ir.DoubleType()
I8P = ir.IntType(8).as_pointer()
FP = F32.as_pointer()
VEC = ir.VectorType(F32, LANES)
VP = VEC.as_pointer()
MASK = ir.VectorType(I1, LANES)
NAME = "tscript_sgemm_f32"
EPILOGUE_NAME = "tscript_sgemm_epilogue_f32"
# void epilogue(i8* context, float* c, i64 rows, i64 cols, i64 ldc)
EPILOGUE = ir.FunctionType(ir.VoidType(), [I8P, FP, I64, I64, I64])
NO_TRANS = 111


def define_sgemm(module: ir.Module, blocking: Blocking = BLOCKING, name: str = NAME) -> ir.Function:
    """Define (once per module) `name`, the GEMM described above, with `blocking`, and beside it
    `<name without _f32>_epilogue_f32`, the one taking an epilogue (EPILOGUE_NAME for the default
    name); returns `name`."""
    try:
        return module.get_global(name)
    except KeyError:
        pass
    g = _Gemm(module, blocking, name)
    return g.define_entries(epilogue_name(name))


def epilogue_name(name: str) -> str:
    """The name of the epilogue-taking GEMM defined beside `name`."""
    return name.removesuffix("_f32") + "_epilogue_f32"


class _Gemm:
    """The builders of one blocking's functions (named after the entry point)."""

    def __init__(self, module: ir.Module, blocking: Blocking, name: str):
        self.module, self.k, self.name = module, blocking, name

    def _defined(self, suffix: str):
        """The function `suffix` names if it is already defined, else None."""
        try:
            return self.module.get_global(f"{self.name}{suffix}")
        except KeyError:
            return None

    def _fma(self, width: int) -> ir.Function:
        vec = _vector(width)
        return _intrinsic(self.module, f"llvm.fma.v{width}f32", vec, [vec] * 3)

    def _load_masked(self, b, at, mask):
        """The vector at `at` (as many floats as `mask` has lanes), zero in the lanes off `mask`
        (those are not read)."""
        vec = _vector(mask.type.count)
        # (declared as conv.py declares them: the same names must have the same types in one module)
        load = _intrinsic(self.module, f"llvm.masked.load.v{vec.count}f32.p0", vec, [FP, I32, mask.type, vec])
        return b.call(load, [b.bitcast(at, FP), I32(4), mask, ir.Constant(vec, None)])

    def _store_masked(self, b, value, at, mask) -> None:
        store = _intrinsic(self.module, f"llvm.masked.store.v{value.type.count}f32.p0", ir.VoidType(),
                           [value.type, FP, I32, mask.type])
        b.call(store, [value, b.bitcast(at, FP), I32(4), mask])

    def _function(self, suffix: str, args: list, ret=ir.VoidType(), internal=True) -> tuple:
        fn = ir.Function(self.module, ir.FunctionType(ret, args), f"{self.name}{suffix}")
        if internal:
            fn.linkage = "internal"
            fn.attributes.add("noinline")  # each is big: inlined copies only cost compile time
        return fn, ir.IRBuilder(fn.append_basic_block("entry"))

    # -- the micro-kernel ------------------------------------------------------------------------

    def kernel(self, mr: int, nv: int, half: bool = False) -> ir.Function:
        """`kernel(kc, a, lda, bp, ldbp, c, ldc, ncols, load_c, scale)`: the mr x (16 nv) tile at `c`
        (ncols of its columns are C's) = [C * scale +] A's mr rows (a[i*lda + p]) @ the kc x (16 nv)
        panel of B at `bp` (value (p, j) at bp[p*ldbp + j]: ldbp is NR in a packed panel). With
        `half`, the last vector is 8 floats: on a CPU with 256-bit FMA units (Zen 4) a 256-bit FMA
        costs half a 512-bit one, which N = 49 (7 x 7 pixels: 3 vectors and 1 column) spends 1/8 on."""
        suffix = f"_kernel{mr}x{nv}{'h' if half else ''}"
        if self._defined(suffix):  # (by this blocking's other entry points: the kernels are shared)
            return self._defined(suffix)
        k = self.k
        fn, b = self._function(suffix, [I64, FP, I64, FP, I64, FP, I64, I64, I1, F32])
        for arg in (fn.args[1], fn.args[3], fn.args[5]):
            arg.add_attribute("noalias")
        kc, a, lda, bp, ldbp, c, ldc, ncols, load_c, scale = fn.args
        widths = [LANES] * (nv - 1) + [LANES // 2 if half else LANES]
        rows = [b.gep(a, [b.mul(I64(i), lda)]) for i in range(mr)]

        def step(p, accs):
            ys = [b.load(b.bitcast(b.gep(bp, [b.add(b.mul(p, ldbp), I64(v * LANES))], inbounds=True),
                                   _vector(w).as_pointer()), align=4) for v, w in enumerate(widths)]
            out = []
            for i in range(mr):
                x = b.load(b.gep(rows[i], [p], inbounds=True))
                out += [b.call(self._fma(w), [_splat(b, x, w), y, accs[i * nv + v]])
                        for v, (y, w) in enumerate(zip(ys, widths))]
            return out

        def unrolled(p, accs):
            for u in range(k.unroll):
                accs = step(b.add(p, I64(u)), accs)
            return accs
        initial = [zeros(_vector(w)) for w in widths] * mr
        whole = b.and_(kc, I64(-k.unroll))
        accs = carried(b, fn, I64(0), whole, k.unroll, "k", initial, unrolled)
        accs = carried(b, fn, whole, kc, 1, "ktail", accs, step)
        with b.if_else(load_c) as (update, overwrite):
            for branch, loads in ((update, True), (overwrite, False)):
                with branch:
                    self._store_tile(b, c, ldc, mr, widths, accs, ncols, scale if loads else None)
        b.ret_void()
        return fn

    def _store_tile(self, b, c, ldc, mr, widths, accs, ncols, scale) -> None:
        """C's tile = accs (+ scale * C unless scale is None): whole vectors, the last one masked to
        C's ncols columns."""
        nv, w = len(widths), widths[-1]
        last = _mask(b, b.sub(ncols, I64((nv - 1) * LANES)), w)
        for i in range(mr):
            row = b.gep(c, [b.mul(I64(i), ldc)])
            for v, width in enumerate(widths):
                at, value = b.gep(row, [I64(v * LANES)]), accs[i * nv + v]
                mask = last if v == nv - 1 else None
                if scale is not None:
                    old = b.load(b.bitcast(at, VP), align=4) if mask is None else self._load_masked(b, at, mask)
                    value = b.call(self._fma(width), [old, _splat(b, scale, width), value])
                if mask is None:
                    b.store(value, b.bitcast(at, VP), align=4)
                else:
                    self._store_masked(b, value, at, mask)

    # -- packing ---------------------------------------------------------------------------------

    def pack_b(self) -> ir.Function:
        """`pack_b(src, ldb, trans, kc, nc, dest)`: op(B)'s kc x nc block at `src` (value (p, j) at
        src[p*ldb + j], or src[j*ldb + p] when trans) into KC x NR panels (panel t at dest +
        t*NR*kc, value (p, j) at p*NR + j), zeros right of column nc."""
        if self._defined("_pack_b"):
            return self._defined("_pack_b")
        fn, b = self._function("_pack_b", [FP, I64, I1, I64, I64, FP])
        src, ldb, trans, kc, nc, dest = fn.args
        for arg in (src, dest):
            arg.add_attribute("noalias")
        nr = I64(self.k.nr)
        whole = b.and_(nc, I64(-self.k.nr))
        with b.if_else(trans) as (turned, plain):
            with turned:
                with counted(b, fn, I64(0), whole, self.k.nr, "bt") as j:
                    self._pack_b_turned(fn, b, b.gep(src, [b.mul(j, ldb)]), ldb, kc, nr, b.gep(dest, [b.mul(j, kc)]))
                with b.if_then(b.icmp_signed("<", whole, nc)):
                    self._pack_b_turned(fn, b, b.gep(src, [b.mul(whole, ldb)]), ldb, kc, b.sub(nc, whole),
                                        b.gep(dest, [b.mul(whole, kc)]), edge=True)
            with plain:
                self._pack_b_rows(fn, b, src, ldb, kc, nc, dest)
        b.ret_void()
        return fn

    def _pack_b_rows(self, fn, b, src, ldb, kc, nc, dest) -> None:
        """A row-major B, one row of the block at a time (NR floats into each panel, the last panel's
        masked past column nc)."""
        k = self.k
        whole = b.and_(nc, I64(-k.nr))
        masks = [_mask(b, b.sub(b.sub(nc, whole), I64(v * LANES))) for v in range(k.nv)]
        with counted(b, fn, I64(0), kc, 1, "bp") as p:
            row = b.gep(src, [b.mul(p, ldb)])
            out = b.gep(dest, [b.mul(p, I64(k.nr))])

            def copy(j, edge):
                for v in range(k.nv):
                    at = b.bitcast(b.gep(row, [b.add(j, I64(v * LANES))]), VP)
                    value = self._load_masked(b, at, masks[v]) if edge else \
                        b.load(at, align=4)
                    to = b.gep(out, [b.add(b.mul(j, kc), I64(v * LANES))])
                    b.store(value, b.bitcast(to, VP), align=ALIGN)
            with counted(b, fn, I64(0), whole, k.nr, "bn") as j:
                copy(j, False)
            with b.if_then(b.icmp_signed("<", whole, nc)):
                copy(whole, True)

    def _pack_b_turned(self, fn, b, src, ldb, kc, cols, panel, edge=False) -> None:
        """One panel of a transposed B (rows of B are columns of op(B)): 16 x 16 blocks transposed in
        registers, then the last kc % 16 steps of K one value at a time."""
        nr = self.k.nr
        whole = b.and_(kc, I64(-LANES))
        for v in range(self.k.nv):
            def load_block(p, v=v):
                rows = []
                for r in range(LANES):
                    j = v * LANES + r
                    at = b.bitcast(b.gep(src, [b.add(b.mul(I64(j), ldb), p)]), VP)
                    if edge:
                        inside = b.icmp_signed("<", I64(j), cols)
                        mask = b.select(inside, ir.Constant(MASK, [1] * LANES), ir.Constant(MASK, [0] * LANES))
                        rows.append(self._load_masked(b, at, mask))
                    else:
                        rows.append(b.load(at, align=4))
                return rows
            with counted(b, fn, I64(0), whole, LANES, f"bt{v}") as p:
                for q, value in enumerate(_transpose16(b, load_block(p))):
                    out = b.gep(panel, [b.add(b.mul(b.add(p, I64(q)), I64(nr)), I64(v * LANES))])
                    b.store(value, b.bitcast(out, VP), align=ALIGN)
        with counted(b, fn, whole, kc, 1, "btail") as p:
            with counted(b, fn, I64(0), I64(nr), 1, "btailj") as j:
                out = b.gep(panel, [b.add(b.mul(p, I64(nr)), j)])
                inside = b.icmp_signed("<", j, cols)
                with b.if_else(inside) as (copy, pad):
                    with copy:
                        b.store(b.load(b.gep(src, [b.add(b.mul(j, ldb), p)])), out)
                    with pad:
                        b.store(F32(0.0), out)

    def pack_a(self) -> ir.Function:
        """`pack_a(src, lda, rows, kc, dest)`: a transposed A's rows (at most A_ROWS; value (i, p) at
        src[p*lda + i]) as the rows of dest (value (i, p) at dest[i*kc + p]): 16 steps of K x 16 rows at
        a time turned around in registers, then the last kc % 16 steps one value at a time."""
        if self._defined("_pack_a"):
            return self._defined("_pack_a")
        fn, b = self._function("_pack_a", [FP, I64, I64, I64, FP])
        src, lda, rows, kc, dest = fn.args
        for arg in (src, dest):
            arg.add_attribute("noalias")
        whole = b.and_(kc, I64(-LANES))
        with counted(b, fn, I64(0), whole, LANES, "ap") as p:
            with counted(b, fn, I64(0), rows, LANES, "ai") as i0:
                left, mask = b.sub(rows, i0), _mask(b, b.sub(rows, i0))
                columns = [self._load_masked(b, b.gep(src, [b.add(b.mul(b.add(p, I64(q)), lda), i0)]), mask)
                           for q in range(LANES)]
                for i, row in enumerate(_transpose16(b, columns)):
                    with b.if_then(b.icmp_signed("<", I64(i), left)):
                        at = b.gep(dest, [b.add(b.mul(b.add(i0, I64(i)), kc), p)])
                        b.store(row, b.bitcast(at, VP), align=4)
        with counted(b, fn, whole, kc, 1, "atail") as p:
            with counted(b, fn, I64(0), rows, 1, "atailrow") as i:
                b.store(b.load(b.gep(src, [b.add(b.mul(p, lda), i)])), b.gep(dest, [b.add(b.mul(i, kc), p)]))
        b.ret_void()
        return fn

    # -- loops around the micro-kernel -----------------------------------------------------------

    def row_block(self, mr: int) -> ir.Function:
        """`rows(kc, nc, a, lda, bp, ldbp, step, edge, c, ldc, load_c, scale)`: mr rows of C times a
        kc x nc block of B: its whole panels at bp + t*step (rows ldbp apart), then the packed last
        one's vectors at `edge`."""
        if self._defined(f"_rows{mr}"):
            return self._defined(f"_rows{mr}")
        k = self.k
        fn, b = self._function(f"_rows{mr}", [I64, I64, FP, I64, FP, I64, I64, FP, FP, I64, I1, F32])
        kc, nc, a, lda, bp, ldbp, step, edge, c, ldc, load_c, scale = fn.args
        whole = b.and_(nc, I64(-k.nr))
        with counted(b, fn, I64(0), whole, k.nr, "panel") as j:
            panel = b.gep(bp, [b.mul(b.lshr(j, I64(k.nr.bit_length() - 1)), step)])
            b.call(self.kernel(mr, k.nv), [kc, a, lda, panel, ldbp, b.gep(c, [j]), ldc, I64(k.nr), load_c, scale])
        rest = b.sub(nc, whole)
        halves = b.lshr(b.add(rest, I64(LANES // 2 - 1)), I64(3))  # the last panel's 8-float halves
        args = [kc, a, lda, edge, I64(k.nr), b.gep(c, [whole]), ldc, rest, load_c, scale]
        _switch(b, fn, halves, range(1, 2 * k.nv + 1),
                lambda h: b.call(self.kernel(mr, (h + 1) // 2, h % 2 == 1), args))
        b.ret_void()
        return fn

    def driver(self) -> ir.Function:
        """`driver(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, pack, epilogue, context)` on one
        thread, K > 0, `pack` aligned: for each NC columns and KC steps of K, pack B, then every MR
        rows (after the last step of K, each one's block of C through the epilogue, unless null)."""
        if self._defined("_driver"):
            return self._defined("_driver")
        k = self.k
        fn, b = self._function("_driver", [I1, I1, I64, I64, I64, FP, I64, FP, I64, F32, FP, I64, FP, I8P, I8P])
        ta, tb, m, n, kk, a, lda, bm, ldb, beta, c, ldc, pack, epilogue, context = fn.args
        a_panel = self.a_panel(b, n, kk, pack)
        with counted(b, fn, I64(0), n, k.nc, "jc") as jc:
            nc = smin(b, b.sub(n, jc), I64(k.nc))
            with counted(b, fn, I64(0), kk, k.kc, "pc") as pc:
                kc = smin(b, b.sub(kk, pc), I64(k.kc))
                b_block = b.gep(bm, [b.select(tb, b.add(b.mul(jc, ldb), pc), b.add(b.mul(pc, ldb), jc))])
                # a row-major B under few rows: its whole panels are read in place (packing them costs
                # more than it saves), only the last one is packed (for the masked loads past column N)
                in_place = functools.reduce(b.and_, [b.not_(tb), b.icmp_signed("<=", m, I64(k.in_place_rows)),
                                                     b.icmp_signed("<=", b.mul(kk, n), I64(k.in_place_floats))])
                cols = b.and_(nc, I64(-k.nr))
                b.call(self.pack_b(), [b.select(in_place, b.gep(b_block, [cols]), b_block), ldb, tb, kc,
                                       b.select(in_place, b.sub(nc, cols), nc), pack])
                panels = [b.select(in_place, b_block, pack), b.select(in_place, ldb, I64(k.nr)),
                          b.select(in_place, I64(k.nr), b.mul(kc, I64(k.nr))),
                          b.select(in_place, pack, b.gep(pack, [b.mul(cols, kc)]))]
                self.row_blocks(fn, b, [m, kk, pc, kc, nc, ta, a, lda, a_panel], panels,
                                [b.gep(c, [jc]), ldc, beta], (epilogue, context))
        b.ret_void()
        return fn

    def row_blocks(self, fn, b, sizes: list, panels: list, c_args: list, finish: tuple) -> None:
        """Every MR rows of C's block (`c_args`: C's block, ldc, beta) times B's kc x nc block
        (`panels`: row_block's bp, ldbp, step, edge) at step pc of K (`sizes`: M, K, pc, kc, nc, ta, A,
        lda, A's panel): a transposed A's rows packed first, a row-major A's read in place; after the
        last step of K, each finished block through the epilogue (`finish`: function, context; null:
        none) while it is in L1."""
        k = self.k
        m, kk, pc, kc, nc, ta, a, lda, a_panel = sizes
        c_block, ldc, beta = c_args
        epilogue, context = finish
        first = b.icmp_signed("==", pc, I64(0))
        load_c = b.or_(b.icmp_signed(">", pc, I64(0)), b.fcmp_unordered("!=", beta, F32(0.0)))
        scale = b.select(first, beta, F32(1.0))
        whole = b.sub(m, b.urem(m, I64(k.mr)))

        def block(ir_, base):
            """row_block's arguments for the rows from ir_ (a transposed A's packed from row `base`)."""
            a_rows = b.select(ta, b.gep(a_panel, [b.mul(b.sub(ir_, base), kc)]), b.gep(a, [b.add(b.mul(ir_, lda), pc)]))
            return [kc, nc, a_rows, b.select(ta, kc, lda), *panels, b.gep(c_block, [b.mul(ir_, ldc)]), ldc, load_c,
                    scale]
        has_epilogue = b.icmp_unsigned("!=", epilogue, ir.Constant(I8P, None))
        finished = b.and_(has_epilogue, b.icmp_signed(">=", b.add(pc, kc), kk))

        def finish_rows(ir_, mr):
            with b.if_then(finished):
                b.call(b.bitcast(epilogue, EPILOGUE.as_pointer()), [context, b.gep(c_block, [b.mul(ir_, ldc)]), mr,
                                                                    nc, ldc])
        # A_ROWS rows at a time (a transposed A's packed first), each in blocks of MR rows
        with counted(b, fn, I64(0), m, k.a_rows, "ic") as ic:
            with b.if_then(ta):
                b.call(self.pack_a(), [b.gep(a, [b.add(b.mul(pc, lda), ic)]), lda, smin(b, b.sub(m, ic), I64(k.a_rows)),
                                       kc, a_panel])
            with counted(b, fn, ic, smin(b, b.add(ic, I64(k.a_rows)), whole), k.mr, "ir") as ir_:
                b.call(self.row_block(k.mr), block(ir_, ic))
                finish_rows(ir_, I64(k.mr))
        last = b.mul(b.sdiv(b.sub(m, I64(1)), I64(k.a_rows)), I64(k.a_rows))  # the start of the last rows packed
        at = whole
        for rows in tail_rows(k.mr):  # the last rows (fewer than MR) in blocks of 4, 2 and 1: 16 fewer kernels
            fits = b.icmp_signed(">=", b.sub(m, at), I64(rows))
            with b.if_then(fits):
                b.call(self.row_block(rows), block(at, last))
                finish_rows(at, I64(rows))
            at = b.select(fits, b.add(at, I64(rows)), at)

    def a_panel(self, b, n, kk, pack):
        """Where a transposed A's packed rows go in `pack`: after B's largest block."""
        k = self.k
        kc_max = smin(b, kk, I64(k.kc))
        nc_max = smin(b, b.and_(b.add(n, I64(k.nr - 1)), I64(-k.nr)), I64(k.nc))
        return b.gep(pack, [b.mul(kc_max, nc_max)])

    # -- the entry point and its two halves ------------------------------------------------------

    def part(self) -> ir.Function:
        """`part(i64* [M, N], i8** [A, B, C, pack, epilogue, context], i64* [ta, tb, K, lda, ldb, ldc],
        f64* [beta])`: the driver in the kernel ABI `tscript_parallel2` runs."""
        if self._defined("_part"):
            return self._defined("_part")
        fn, b = self._function("_part", [I64.as_pointer(), I8P, I64.as_pointer(), F64.as_pointer()])
        sizes, ptrs8, dims, scalars = fn.args
        ptrs = b.bitcast(ptrs8, I8P.as_pointer())
        m, n = (b.load(b.gep(sizes, [I64(i)])) for i in range(2))
        a, bm, c, pack = (b.bitcast(b.load(b.gep(ptrs, [I64(i)])), FP) for i in range(4))
        epilogue, context = (b.load(b.gep(ptrs, [I64(i)])) for i in (4, 5))
        ta, tb, kk, lda, ldb, ldc = (b.load(b.gep(dims, [I64(i)])) for i in range(6))
        beta = b.fptrunc(b.load(scalars), F32)
        b.call(self.driver(), [b.trunc(ta, I1), b.trunc(tb, I1), m, n, kk, a, lda, bm, ldb, beta, c, ldc, pack,
                               epilogue, context])
        b.ret_void()
        return fn

    def define_entries(self, with_epilogue: str) -> ir.Function:
        """The entry point (`self.name`) and the one taking an epilogue (`with_epilogue`); returns the first."""
        full = self.define_entry(with_epilogue)
        fn, b = self._function("", [I32, I32, I64, I64, I64, FP, I64, FP, I64, F32, FP, I64, FP], internal=False)
        null = ir.Constant(I8P, None)
        b.call(full, [*fn.args, null, null])
        b.ret_void()
        return fn

    def define_entry(self, name: str) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I32, I32, I64, I64, I64, FP, I64, FP, I64, F32,
                                                                      FP, I64, FP, I8P, I8P]), name)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ta32, tb32, m, n, kk, a, lda, bm, ldb, beta, c, ldc, pack8, epilogue, context = fn.args
        pack, wide, halves = self.prologue(fn, b, [m, n, kk, beta, c, ldc, pack8, epilogue, context])
        ta, tb = b.icmp_signed("!=", ta32, I32(NO_TRANS)), b.icmp_signed("!=", tb32, I32(NO_TRANS))
        with b.if_else(halves) as (split, alone):
            with split:
                self._split(b, [ta, tb, m, n, kk, a, lda, bm, ldb, beta, c, ldc, pack, epilogue, context], wide)
            with alone:
                b.call(self.driver(), [ta, tb, m, n, kk, a, lda, bm, ldb, beta, c, ldc, pack, epilogue, context])
        b.ret_void()
        return fn

    def prologue(self, fn, b, args: list) -> tuple:
        """An entry point's start (`args`: M, N, K, beta, C, ldc, pack, epilogue, context): return at
        once for an empty C; for an empty K, C = beta C and the epilogue, then return. Else (pack
        aligned, is N the larger side, do both halves run at once)."""
        m, n, kk, beta, c, ldc, pack8, epilogue, context = args
        with b.if_then(b.or_(b.icmp_signed("<=", m, I64(0)), b.icmp_signed("<=", n, I64(0)))):
            b.ret_void()
        with b.if_then(b.icmp_signed("<=", kk, I64(0))):
            _scale_c(b, fn, m, n, c, ldc, beta)
            with b.if_then(b.icmp_unsigned("!=", epilogue, ir.Constant(I8P, None))):
                b.call(b.bitcast(epilogue, EPILOGUE.as_pointer()), [context, c, m, n, ldc])
            b.ret_void()
        ptrmask = _intrinsic(self.module, "llvm.ptrmask.p0.i64", FP, [FP, I64])
        pack = b.call(ptrmask, [b.gep(pack8, [I64(ALIGN // 4 - 1)]), I64(-ALIGN)])
        wide = b.icmp_signed(">=", n, m)
        halves = b.and_(b.icmp_signed(">=", b.mul(b.mul(m, n), kk), I64(self.k.split_min)),
                        b.icmp_signed(">=", b.select(wide, n, m), I64(2 * LANES)))
        return pack, wide, halves

    def _split(self, b, args, wide) -> None:
        """The two halves of the product at once: N cut at a multiple of 16 columns when `wide`, else
        M cut in the middle; the second half packs into the second region of `pack`."""
        from .parallel import PARALLEL2, define_pool
        ta, tb, m, n, kk, a, lda, bm, ldb, beta, c, ldc, pack, epilogue, context = args
        cut_n = b.and_(b.add(b.lshr(n, I64(1)), I64(LANES // 2)), I64(-LANES))
        cut_m = b.lshr(m, I64(1))
        m1, n1 = b.select(wide, m, cut_m), b.select(wide, cut_n, n)
        m2, n2 = b.select(wide, m, b.sub(m, cut_m)), b.select(wide, b.sub(n, cut_n), n)
        a2 = b.gep(a, [b.select(wide, I64(0), b.select(ta, cut_m, b.mul(cut_m, lda)))])
        b2 = b.gep(bm, [b.select(wide, b.select(tb, b.mul(cut_n, ldb), cut_n), I64(0))])
        c2 = b.gep(c, [b.select(wide, cut_n, b.mul(cut_m, ldc))])
        pack2 = b.gep(pack, [self._region(b, n, kk)])
        first = stack(b, I8P, [b.bitcast(p, I8P) for p in (a, bm, c, pack)] + [epilogue, context])
        second = stack(b, I8P, [b.bitcast(p, I8P) for p in (a2, b2, c2, pack2)] + [epilogue, context])
        sizes = stack(b, I64, [m1, n1, m2, n2])
        dims = stack(b, I64, [b.zext(ta, I64), b.zext(tb, I64), kk, lda, ldb, ldc])
        scalars = stack(b, F64, [b.fpext(beta, F64)])
        define_pool(self.module)  # (where it is not yet: a module of its own, as in the tests)
        b.call(self.module.get_global(PARALLEL2),
               [b.bitcast(self.part(), I8P), sizes, b.bitcast(first, I8P), b.gep(sizes, [I64(2)]),
                b.bitcast(second, I8P), dims, scalars])

    def _region(self, b, n, kk):
        """`_region_floats` in IR."""
        k = self.k
        kc = smin(b, kk, I64(k.kc))
        nc = smin(b, b.and_(b.add(n, I64(k.nr - 1)), I64(-k.nr)), I64(k.nc))
        a_floats = b.and_(b.add(b.mul(kc, I64(k.a_rows)), I64(LANES - 1)), I64(-LANES))
        return b.add(b.mul(kc, nc), a_floats)


def tail_rows(mr: int) -> list[int]:
    """Row blocks for the last M % MR rows, largest first: the powers of two under MR, each needed at
    most once (MR = 6: 5 rows are 4 + 1, 3 are 2 + 1)."""
    return [1 << i for i in reversed(range(max(mr - 1, 1).bit_length()))]


def _scale_c(b, fn, m, n, c, ldc, beta) -> None:
    """C = beta * C (C = 0 for beta 0, without reading it): the product of an empty K."""
    zero = b.fcmp_ordered("==", beta, F32(0.0))
    with counted(b, fn, I64(0), m, 1, "ci") as i:
        row = b.gep(c, [b.mul(i, ldc)])
        with counted(b, fn, I64(0), n, 1, "cj") as j:
            at = b.gep(row, [j])
            b.store(b.select(zero, F32(0.0), b.fmul(b.load(at), beta)), at)


def _switch(b, fn, value, cases, build) -> None:
    """`build(v)` for the one of `cases` that `value` is (nothing for any other value)."""
    done = fn.append_basic_block("switch.done")
    sw = b.switch(value, done)
    for v in cases:
        block = fn.append_basic_block(f"case{v}")
        sw.add_case(I64(v), block)
        b.position_at_end(block)
        build(v)
        b.branch(done)
    b.position_at_end(done)


def _transpose16(b, rows: list) -> list:
    """The 16 x 16 transpose of 16 vectors: for each bit of the index, the halves of each pair of rows
    (r, r + d) swap their off-diagonal blocks of d lanes."""
    rows = list(rows)
    for d in (1, 2, 4, 8):
        low = [c if c & d == 0 else LANES + c - d for c in range(LANES)]
        high = [c + d if c & d == 0 else LANES + c for c in range(LANES)]
        for r in range(LANES):
            if r & d == 0:
                x, y = rows[r], rows[r + d]
                rows[r] = b.shuffle_vector(x, y, ir.Constant(ir.VectorType(I32, LANES), low))
                rows[r + d] = b.shuffle_vector(x, y, ir.Constant(ir.VectorType(I32, LANES), high))
    return rows


def _mask(b, count, lanes: int = LANES):
    """The mask of the first `count` of `lanes` lanes (count clamped to 0..lanes)."""
    count = b.select(b.icmp_signed("<", count, I64(0)), I64(0), smin(b, count, I64(lanes)))
    bits = b.trunc(b.sub(b.shl(I64(1), count), I64(1)), ir.IntType(lanes))
    return b.bitcast(bits, ir.VectorType(I1, lanes))



def _vector(width: int) -> ir.VectorType:
    return ir.VectorType(F32, width)


def _splat(b, x, width: int = LANES):
    """A vector of `width` copies of float x."""
    return splat(b, x, _vector(width))



def _intrinsic(module: ir.Module, name: str, ret, args: list) -> ir.Function:
    try:
        return module.get_global(name)
    except KeyError:
        return ir.Function(module, ir.FunctionType(ret, args), name)
