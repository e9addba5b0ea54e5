"""tscript benchmarks: `python -m benchmarks [suite ...]` prints medians and ratios."""
import os

# OpenBLAS reads this when numpy loads it, so it is set here, before any benchmark module imports numpy:
# its worker threads then stop spinning right after a GEMM instead of taking a core from whatever runs
# next (a torch GEMM right after a numpy one ran 15x slower without it).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
