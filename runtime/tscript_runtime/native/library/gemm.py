"""Register-blocked float32 GEMMs for few rows, in two layouts: C = A @ B^T where rows of A (M, K)
and of B (N, K) are contiguous in K (what a linear layer computes), and C = A @ B with B (K, N)
row-major (`x @ w`; blocks of 4 rows x 32 columns accumulate in vectors along N).

For C = A @ B^T: Blocks of up to 4x4 values of C accumulate in 16-float vectors along K
(16 FMAs per 8 vector loads), so each row of B is read once per 4 rows of A. OpenBLAS packs B on every
call, which dominates for few rows: on these machines, M=4..64 rows of a 512x784 weight ran 3.5-6.7x
faster here (~100 GFLOP/s on one core) and M=1024 at par; C = A @ B ran 1.2-2.2x faster at 3-64 rows.
The whole-graph entry uses them for float32 products with 3 <= M <= the native plan's `small_m` rows
(BLAS's GEMV for one row; BLAS, which may use both cores, above)."""
from __future__ import annotations

from llvmlite import ir

from .loops import carried, counted, splat

I1, I64, F32 = ir.IntType(1), ir.IntType(64), ir.FloatType()
LANES = 16
VEC = ir.VectorType(F32, LANES)
NAME = "tscript_gemm_nt_f32"
NN_NAME = "tscript_gemm_nn_f32"
ROW_BLOCKS = (4, 2, 1)  # rows of A per block (the last blocks of M take 2, then 1)
COL_BLOCKS = (4, 1)     # rows of B per block (A @ B^T)
NN_COL_BLOCKS = (32, 16, 1)  # columns of B per block (A @ B)


def define_gemm_nt(module: ir.Module) -> ir.Function:
    """Define (once per module) `void tscript_gemm_nt_f32(float* A, float* B, float* C, i64 M, i64 N,
    i64 K, i64 lda, i64 ldb, ldc, i1 accumulate)`: C = A @ B^T, or C += A @ B^T."""
    return _define(module, NAME, COL_BLOCKS, _block)


def define_gemm_nn(module: ir.Module) -> ir.Function:
    """Define (once per module) `void tscript_gemm_nn_f32(float* A, float* B, float* C, i64 M, i64 N,
    i64 K, i64 lda, i64 ldb, ldc, i1 accumulate)`: C = A @ B, or C += A @ B (B is (K, N))."""
    return _define(module, NN_NAME, NN_COL_BLOCKS, _nn_block)


def _define(module: ir.Module, name: str, widths: tuple, block) -> ir.Function:
    """The kernel `name`: for each group of columns of C (the widths in turn, widest first), every
    row of A in blocks of 4, 2 and 1 rows (`block(module, name, rows, width)` builds each block)."""
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fp = F32.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [fp, fp, fp, I64, I64, I64, I64, I64, I64, I1]), name)
    for k in range(3):
        fn.args[k].add_attribute("noalias")
    a, b_, c, m, n, k, lda, ldb, ldc, accumulate = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    blocks = {(ra, w): block(module, name, ra, w) for ra in ROW_BLOCKS for w in widths}
    start = I64(0)
    for w in widths:
        stop = b.and_(n, I64(-w)) if w > 1 else n
        with counted(b, fn, start, stop, w, f"cols{w}") as n0:
            _rows(b, fn, blocks, w, m, n0, (a, b_, c, k, lda, ldb, ldc, accumulate))
        start = stop
    b.ret_void()
    return fn


def _rows(b, fn, blocks, rb, m, n0, args) -> None:
    """All rows of A against rows n0.. n0+rb of B: blocks of 4 rows, then 2, then 1."""
    a, b_, c, k, lda, ldb, ldc, accumulate = args
    m4 = b.and_(m, I64(-4))
    with counted(b, fn, I64(0), m4, 4, f"rows4x{rb}") as m0:
        b.call(blocks[4, rb], [a, b_, c, m0, n0, k, lda, ldb, ldc, accumulate])
    m2 = b.and_(m, I64(-2))
    with counted(b, fn, m4, m2, 2, f"rows2x{rb}") as m0:
        b.call(blocks[2, rb], [a, b_, c, m0, n0, k, lda, ldb, ldc, accumulate])
    with counted(b, fn, m2, m, 1, f"rows1x{rb}") as m0:
        b.call(blocks[1, rb], [a, b_, c, m0, n0, k, lda, ldb, ldc, accumulate])


def _block_function(module: ir.Module, name: str):
    """An internal, always-inlined `blk(A, B, C, m0, n0, K, lda, ldb, ldc, accumulate)` and its builder."""
    fp = F32.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [fp, fp, fp, I64, I64, I64, I64, I64, I64, I1]), name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _block(module: ir.Module, kernel: str, ra: int, rb: int) -> ir.Function:
    """C[m0:m0+ra, n0:n0+rb] (+)= A rows @ B rows^T: one vector accumulator per value of C along K."""
    fn, b = _block_function(module, f"{kernel}_block{ra}x{rb}")
    a, b_, c, m0, n0, k, lda, ldb, ldc, accumulate = fn.args
    rows_a = [b.gep(a, [b.mul(b.add(m0, I64(i)), lda)], inbounds=True) for i in range(ra)]
    rows_b = [b.gep(b_, [b.mul(b.add(n0, I64(j)), ldb)], inbounds=True) for j in range(rb)]
    fma = _intrinsic(module, f"llvm.fma.v{LANES}f32", VEC, [VEC] * 3)
    fma1 = _intrinsic(module, "llvm.fma.f32", F32, [F32] * 3)
    reduce = _intrinsic(module, f"llvm.vector.reduce.fadd.v{LANES}f32", F32, [F32, VEC])
    kv = b.and_(k, I64(-LANES))
    zero = ir.Constant(VEC, None)
    pairs = [(i, j) for i in range(ra) for j in range(rb)]

    def step(ty, multiply):
        def update(at, accs):
            xs, ys = _loads(b, rows_a, at, ty), _loads(b, rows_b, at, ty)
            return [b.call(multiply, [xs[i], ys[j], acc]) for (i, j), acc in zip(pairs, accs)]
        return update
    # the vector loop over K: one accumulator vector per value of C; then the K % 16 tail
    sums = carried(b, fn, I64(0), kv, LANES, "kvec", [zero] * len(pairs), step(VEC, fma))
    scalars = [b.call(reduce, [F32(0.0), s], fastmath=("reassoc",)) for s in sums]
    totals = carried(b, fn, kv, k, 1, "ktail", scalars, step(F32, fma1))
    for (i, j), total in zip(pairs, totals):
        at = b.gep(c, [b.add(b.mul(b.add(m0, I64(i)), ldc), b.add(n0, I64(j)))], inbounds=True)
        old = b.select(accumulate, b.load(at), F32(0.0))
        b.store(b.fadd(old, total), at)
    b.ret_void()
    return fn


def _nn_block(module: ir.Module, kernel: str, ra: int, width: int) -> ir.Function:
    """C[m0:m0+ra, n0:n0+width] (+)= A rows @ B[:, n0:n0+width]: per k, each A value (broadcast)
    times width/16 vectors of B's row k (width 1: scalars)."""
    fn, b = _block_function(module, f"{kernel}_block{ra}x{width}")
    a, b_, c, m0, n0, k, lda, ldb, ldc, accumulate = fn.args
    ty = VEC if width >= LANES else F32
    nv = max(width // LANES, 1)
    fma = _intrinsic(module, f"llvm.fma.v{LANES}f32", VEC, [VEC] * 3) if ty is VEC else \
        _intrinsic(module, "llvm.fma.f32", F32, [F32] * 3)
    rows_a = [b.gep(a, [b.mul(b.add(m0, I64(i)), lda)], inbounds=True) for i in range(ra)]
    column = b.gep(b_, [n0], inbounds=True)
    pairs = [(i, j) for i in range(ra) for j in range(nv)]

    def update(at, accs):
        row_b = b.gep(column, [b.mul(at, ldb)], inbounds=True)
        ys = _loads(b, [b.gep(row_b, [I64(j * LANES)], inbounds=True) for j in range(nv)], I64(0), ty)
        xs = [b.load(b.gep(r, [at], inbounds=True)) for r in rows_a]
        xs = [_splat(b, x) for x in xs] if ty is VEC else xs
        return [b.call(fma, [xs[i], ys[j], acc]) for (i, j), acc in zip(pairs, accs)]
    totals = carried(b, fn, I64(0), k, 1, "k", [ir.Constant(ty, None)] * len(pairs), update)
    for (i, j), total in zip(pairs, totals):
        at = b.gep(c, [b.add(b.mul(b.add(m0, I64(i)), ldc), b.add(n0, I64(j * LANES)))], inbounds=True)
        at = b.bitcast(at, ty.as_pointer())
        old = b.select(accumulate, b.load(at, align=4), ir.Constant(ty, None))
        b.store(b.fadd(old, total), at, align=4)
    b.ret_void()
    return fn


def _splat(b, x):
    """A vector of LANES copies of float x."""
    return splat(b, x, VEC)


def _loads(b, rows: list, at, ty) -> list:
    """Each row's value(s) at element `at`: a vector of LANES floats or one float."""
    out = []
    for row in rows:
        p = b.gep(row, [at], inbounds=True)
        out.append(b.load(b.bitcast(p, ty.as_pointer()), align=4) if ty is VEC else b.load(p))
    return out


def _intrinsic(module: ir.Module, name: str, ret, args: list) -> ir.Function:
    try:
        return module.get_global(name)
    except KeyError:
        return ir.Function(module, ir.FunctionType(ret, args), name)
