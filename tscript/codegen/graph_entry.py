"""The whole-graph entry function: calls a graph's kernels and BLAS GEMMs in order, reading every
shape-dependent number from the plan (layout and ABI: tscript_runtime.graph_entry)."""
from __future__ import annotations

from llvmlite import ir

from tscript_runtime.graph_entry import GEMM_SLOTS, EntryLayout, GemmStep, KernelStep

I8, I32, I64, F64 = ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.DoubleType()
I8P = I8.as_pointer()
FLOATS = {"cblas_sgemm": ir.FloatType(), "cblas_dgemm": ir.DoubleType()}
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112


def build_entry(module: ir.Module, layout: EntryLayout, name: str) -> None:
    """Define `void name(i8** bases, i64* plan, double* scalars)` in `module` (which holds the kernels)."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P.as_pointer(), I64.as_pointer(), F64.as_pointer()]),
                     name)
    bases_p, plan_p, scalars_p = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    width = max([len(s.outputs) + len(s.tensors) for s in layout.steps if isinstance(s, KernelStep)] + [1])
    emit = _Emitter(module, fn, b, layout, bases_p, plan_p, scalars_p, b.alloca(I8P, I64(width)))
    for step in layout.steps:
        if isinstance(step, KernelStep):
            emit.kernel(step)
        else:
            emit.gemm(step)
    emit.b.ret_void()


class _Emitter:
    def __init__(self, module, fn, b, layout, bases_p, plan_p, scalars_p, ptrs):
        self.module, self.fn, self.b, self.layout = module, fn, b, layout
        self.bases_p, self.plan_p, self.scalars_p = bases_p, plan_p, scalars_p
        self.ptrs = ptrs  # the kernels' pointer arrays (calls run one after another)

    def plan(self, slot: int):
        return self.b.load(self.b.gep(self.plan_p, [I64(slot)]))

    def pointer(self, value: str):
        """The address of a tensor value: its root's base, plus the arena offset for arena roots."""
        root = self.layout.address(value)
        b = self.b
        base = b.load(b.gep(self.bases_p, [I64(root.base)]))
        return base if root.slot is None else b.gep(base, [self.plan(root.slot)])

    def kernel(self, step: KernelStep) -> None:
        b = self.b
        arrays = step.outputs + step.tensors
        ptrs = self.ptrs
        for k, v in enumerate(arrays):
            b.store(self.pointer(v), b.gep(ptrs, [I64(k)]))
        sizes = b.gep(self.plan_p, [I64(step.sizes)])
        strides = b.gep(self.plan_p, [I64(step.sizes + step.rank)])
        scalars = b.gep(self.scalars_p, [I64(step.first_scalar)])
        b.call(self.module.get_global(step.kernel), [sizes, ptrs, strides, scalars])

    def gemm(self, step: GemmStep) -> None:
        b = self.b
        m, n, k, lda, ldb, ldc, bias_rows = (self.plan(step.dims + i) for i in range(len(GEMM_SLOTS)))
        fty = FLOATS[step.function]
        size = I64(8 if fty == F64 else 4)
        work = b.and_(b.icmp_signed(">", m, I64(0)), b.icmp_signed(">", n, I64(0)))
        with b.if_then(work):
            c = self.pointer(step.out)
            beta = fty(0.0)
            if step.bias is not None:
                self._fill_rows(c, self.pointer(step.bias), m, b.mul(n, size), b.mul(bias_rows, size))
                beta = fty(1.0)
            a, bm, c = (b.bitcast(self.pointer(v), fty.as_pointer()) for v in (step.a, step.b, step.out))
            self._product(step, fty, m, n, k, lda, ldb, ldc, a, bm, c, beta)

    def _product(self, step, fty, m, n, k, lda, ldb, ldc, a, bm, c, beta) -> None:
        """C = A @ op(B) + beta C: GEMV when C is one row or one column (BLAS's GEMM is slower
        there), else GEMM."""
        b = self.b
        gemv = self._declare(step.function.replace("gemm", "gemv"), fty)
        one, unit = fty(1.0), I64(1)
        with b.if_else(b.icmp_signed("==", m, unit)) as (row, other):
            with row:  # c = op(B)^T a: B is (N, K) for linear, (K, N) otherwise
                rows, cols = (n, k) if step.trans_b else (k, n)
                b.call(gemv, [I32(ROW_MAJOR), I32(NO_TRANS if step.trans_b else TRANS), rows, cols, one, bm, ldb, a,
                              unit, beta, c, unit])
            with other:
                with b.if_else(b.icmp_signed("==", n, unit)) as (column, full):
                    with column:  # c = A b, b contiguous (K values)
                        b.call(gemv, [I32(ROW_MAJOR), I32(NO_TRANS), m, k, one, a, lda, bm, unit, beta, c, unit])
                    with full:
                        gemm = self._declare(step.function, fty)
                        b.call(gemm, [I32(ROW_MAJOR), I32(NO_TRANS), I32(TRANS if step.trans_b else NO_TRANS), m, n, k,
                                      one, a, lda, bm, ldb, beta, c, ldc])

    def _fill_rows(self, c, bias, rows, row_bytes, bias_step) -> None:
        """C[i, :] = bias row i (bias_step 0: the same row for every i), as memcpy of row_bytes each."""
        b = self.b
        memcpy = self.module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
        header = b.block
        loop, done = self.fn.append_basic_block("fill"), self.fn.append_basic_block("filled")
        b.branch(loop)
        b.position_at_end(loop)
        i = b.phi(I64)
        i.add_incoming(I64(0), header)
        b.call(memcpy, [b.gep(c, [b.mul(i, row_bytes)]), b.gep(bias, [b.mul(i, bias_step)]), row_bytes, ir.IntType(1)(0)])
        nxt = b.add(i, I64(1), flags=["nuw", "nsw"])
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, rows), loop, done)
        b.position_at_end(done)

    def _declare(self, name: str, fty) -> ir.Function:
        """cblas_?gemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) or
        cblas_?gemv(order, trans, M, N, alpha, A, lda, x, incx, beta, y, incy); ILP64 integers."""
        try:
            return self.module.get_global(name)
        except KeyError:
            fp = fty.as_pointer()
            args = [I32, I32, I32, I64, I64, I64, fty, fp, I64, fp, I64, fty, fp, I64] if name.endswith("gemm") else \
                [I32, I32, I64, I64, fty, fp, I64, fp, I64, fty, fp, I64]
            return ir.Function(self.module, ir.FunctionType(ir.VoidType(), args), name)
