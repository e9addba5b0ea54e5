"""Declarations of the BLAS functions native code calls (numpy's OpenBLAS, linked by link.py)."""
from __future__ import annotations

from llvmlite import ir

I32, I64 = ir.IntType(32), ir.IntType(64)


def blas_function(module: ir.Module, name: str, fty) -> ir.Function:
    """cblas_?gemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) or
    cblas_?gemv(order, trans, M, N, alpha, A, lda, x, incx, beta, y, incy), declared once per module;
    ILP64 integers."""
    try:
        return module.get_global(name)
    except KeyError:
        fp = fty.as_pointer()
        args = [I32, I32, I32, I64, I64, I64, fty, fp, I64, fp, I64, fty, fp, I64] if name.endswith("gemm") else \
            [I32, I32, I64, I64, fty, fp, I64, fp, I64, fty, fp, I64]
        return ir.Function(module, ir.FunctionType(ir.VoidType(), args), name)
