"""The recurrent product of a time loop's step, h_prev (M, K) @ W^T for a range of hidden units, on W
packed once per call (native/recurrent.py):

    void tscript_rgemm_pack_f32(float* w, i64 ldw, i64 k, i64 n, float* packed)
        rows [0, n) of w (k values each, rows ldw apart) as W^T's columns in panels of k x 32 (panel t
        at packed + t*32*k, zeros past column n); `packed` 64-byte aligned
    void tscript_rgemm_f32(i64 m, i64 n, i64 k, float* a, i64 lda, float* packed, float* c, i64 ldc)
        C (m, n) = A (m, k) @ the first n columns of a packed W^T

Ten rows of C x 32 columns (16 in a last panel of 16 columns or fewer) stay in 20 zmm accumulators (the packed GEMM's micro-kernel with another
blocking), each step of K loading two vectors of the panel and broadcasting ten values of A. A language
model's batch of 20 rows is two such blocks, where the packed GEMM's 6-row tiles take four (the last
of 2 rows) and tscript_gemm_nt_f32 reduces every value of C across a vector.
"""
from __future__ import annotations

from llvmlite import ir

from .loops import counted, smin
from .packed_gemm import FP, F32, I1, I64, Blocking, _Gemm

BLOCKING = Blocking(mr=10, nv=2)
NAME, PACK_NAME = "tscript_rgemm_f32", "tscript_rgemm_pack_f32"
PANEL = BLOCKING.nr  # columns of W^T per panel
ROWS = (10, 5, 2, 1)  # row blocks, largest first: 8 kernels instead of one per remainder (compiling ~2.5x faster)


def define_rgemm(module: ir.Module) -> ir.Function:
    """Define (once per module) both functions above; returns the product."""
    try:
        return module.get_global(NAME)
    except KeyError:
        pass
    g = _Gemm(module, BLOCKING, NAME)
    _define_pack(module, g)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, I64, I64, FP, I64, FP, FP, I64]), NAME)
    m, n, k, a, lda, packed, c, ldc = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    with counted(b, fn, I64(0), n, PANEL, "panel") as j:
        panel, cols, c_cols = b.gep(packed, [b.mul(j, k)]), smin(b, b.sub(n, j), I64(PANEL)), b.gep(c, [j])
        # the kernels store every vector but their last whole: a panel of 16 columns or fewer takes one vector
        for wide, nv in ((True, 2), (False, 1)):
            with b.if_then(b.icmp_signed(">" if wide else "<=", cols, I64(PANEL // 2))):
                start = I64(0)
                for rows in ROWS:  # blocks of 10 rows, then at most one of 5, then 2s and a last row
                    stop = b.add(start, b.mul(b.sdiv(b.sub(m, start), I64(rows)), I64(rows)))
                    with counted(b, fn, start, stop, rows, f"rows{rows}x{nv}") as r:
                        b.call(g.kernel(rows, nv), [k, b.gep(a, [b.mul(r, lda)]), lda, panel, I64(PANEL),
                                                    b.gep(c_cols, [b.mul(r, ldc)]), ldc, cols, I1(0), F32(0.0)])
                    start = stop
    b.ret_void()
    return fn


def _define_pack(module: ir.Module, g: _Gemm) -> None:
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [FP, I64, I64, I64, FP]), PACK_NAME)
    w, ldw, k, n, packed = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.call(g.pack_b(), [w, ldw, I1(1), k, n, packed])  # op(B) = W^T: W's rows turned into columns
    b.ret_void()


def packed_floats(hidden: int, k: int) -> int:
    """Floats of one gate's packed W^T: `hidden` columns in whole panels of k rows."""
    return -(-hidden // PANEL) * PANEL * k
