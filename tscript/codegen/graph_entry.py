"""The whole-graph entry function: calls a graph's kernels and BLAS GEMMs in order, reading every
shape-dependent number from the plan (layout and ABI: tscript_runtime.graph_entry)."""
from __future__ import annotations

from llvmlite import ir

from tscript_runtime.graph_entry import GEMM_SLOTS, NO_TRANS, TRANS, EntryLayout, GemmStep, KernelStep

I8, I32, I64, F64 = ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.DoubleType()
I8P = I8.as_pointer()
FLOATS = {"cblas_sgemm": ir.FloatType(), "cblas_dgemm": ir.DoubleType()}
ROW_MAJOR = 101


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
        fn = _product_function(self.module, step.function)
        bias = self.pointer(step.bias) if step.bias is not None else ir.Constant(I8P, None)
        b.call(fn, [b.gep(self.plan_p, [I64(step.dims)]), self.pointer(step.a), self.pointer(step.b),
                    self.pointer(step.out), bias])


def _product_function(module: ir.Module, function: str) -> ir.Function:
    """`void <function>_step(i64* dims, i8* a, i8* b, i8* c, i8* bias)`, defined once per module: C =
    op(A) @ op(B) (+ the bias rows, when `bias` is not null) with the plan's GEMM_SLOTS at `dims`;
    BLAS's GEMV when C is one row or one column (its GEMM is slower there)."""
    name = f"{function}_step"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I8P, I8P, I8P, I8P]), name)
    fn.linkage = "internal"
    dims_p, a8, b8, c8, bias = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ta, tb, m, n, k, lda, ldb, ldc, bias_rows = (b.load(b.gep(dims_p, [I64(i)])) for i in range(len(GEMM_SLOTS)))
    ta, tb = b.trunc(ta, I32), b.trunc(tb, I32)
    fty = FLOATS[function]
    size = I64(8 if fty == F64 else 4)
    with b.if_then(b.and_(b.icmp_signed(">", m, I64(0)), b.icmp_signed(">", n, I64(0)))):
        has_bias = b.icmp_unsigned("!=", bias, ir.Constant(I8P, None))
        with b.if_then(has_bias):
            _fill_rows(module, fn, b, c8, bias, m, b.mul(n, size), b.mul(bias_rows, size))
        beta = b.select(has_bias, fty(1.0), fty(0.0))
        a, bm, c = (b.bitcast(p, fty.as_pointer()) for p in (a8, b8, c8))
        gemv, gemm = _blas(module, function.replace("gemm", "gemv"), fty), _blas(module, function, fty)
        one, unit = fty(1.0), I64(1)
        no, yes = I32(NO_TRANS), I32(TRANS)
        with b.if_else(b.icmp_signed("==", m, unit)) as (row, other):
            with row:  # c = op(B)^T a
                plain = b.icmp_signed("==", tb, no)
                b.call(gemv, [I32(ROW_MAJOR), b.select(plain, yes, no), b.select(plain, k, n), b.select(plain, n, k),
                              one, bm, ldb, a, unit, beta, c, unit])
            with other:
                with b.if_else(b.icmp_signed("==", n, unit)) as (column, full):
                    with column:  # c = op(A) b
                        plain = b.icmp_signed("==", ta, no)
                        b.call(gemv, [I32(ROW_MAJOR), b.select(plain, no, yes), b.select(plain, m, k),
                                      b.select(plain, k, m), one, a, lda, bm, unit, beta, c, unit])
                    with full:
                        b.call(gemm, [I32(ROW_MAJOR), ta, tb, m, n, k, one, a, lda, bm, ldb, beta, c, ldc])
    b.ret_void()
    return fn


def _fill_rows(module, fn, b, c, bias, rows, row_bytes, bias_step) -> None:
    """C[i, :] = bias row i (bias_step 0: the same row for every i), as memcpy of row_bytes each."""
    memcpy = module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
    header = b.block
    loop, done = fn.append_basic_block("fill"), fn.append_basic_block("filled")
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I64)
    i.add_incoming(I64(0), header)
    b.call(memcpy, [b.gep(c, [b.mul(i, row_bytes)]), b.gep(bias, [b.mul(i, bias_step)]), row_bytes, ir.IntType(1)(0)])
    nxt = b.add(i, I64(1), flags=["nuw", "nsw"])
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, rows), loop, done)
    b.position_at_end(done)


def _blas(module: ir.Module, name: str, fty) -> ir.Function:
    """cblas_?gemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) or
    cblas_?gemv(order, trans, M, N, alpha, A, lda, x, incx, beta, y, incy); ILP64 integers."""
    try:
        return module.get_global(name)
    except KeyError:
        fp = fty.as_pointer()
        args = [I32, I32, I32, I64, I64, I64, fty, fp, I64, fp, I64, fty, fp, I64] if name.endswith("gemm") else \
            [I32, I32, I64, I64, fty, fp, I64, fp, I64, fty, fp, I64]
        return ir.Function(module, ir.FunctionType(ir.VoidType(), args), name)
