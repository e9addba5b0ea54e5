"""The packed GEMM's row blocks, the part of it that is its micro-kernels, as a library part of their own
(parts.py), so that a cold start compiles them on one core while the packing and driver code compiles
on the other (the packed GEMM was the longest part: 1.45 s of LLVM alone):

    void tscript_sgemm_f32_rows<mr>(i64 kc, i64 nc, float* a, i64 lda, float* bp, i64 ldbp, i64 step,
                                    float* edge, float* c, i64 ldc, i1 load_c, float scale)
        mr rows of C times a kc x nc block of packed B (packed_gemm.py `_Gemm.row_block`), for mr in
        ROWS: the micro-panel height and the tail blocks.

The packed GEMM's part declares them (they are library functions) and its drivers call them across the
two objects: one call per row block and block of B, each running whole micro-kernels.
"""
from __future__ import annotations

from llvmlite import ir

from .packed_gemm import BLOCKING, NAME, _Gemm, tail_rows

ROWS = (BLOCKING.mr, *tail_rows(BLOCKING.mr))
ROW_NAMES = tuple(f"{NAME}_rows{mr}" for mr in ROWS)
ARGUMENTS = ["i64", "i64", "f32*", "i64", "f32*", "i64", "i64", "f32*", "f32*", "i64", "i1", "f32"]


def define_rows(module: ir.Module) -> None:
    """Define (once per module) every row block of ROWS, exported."""
    gemm = _Gemm(module, BLOCKING, NAME)
    for mr in ROWS:
        gemm.row_block(mr).linkage = ""  # external: the packed GEMM's part calls it
