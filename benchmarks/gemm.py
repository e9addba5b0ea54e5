"""The kernel library's packed float32 GEMM (`tscript_sgemm_f32`, native/library/packed_gemm.py)
against numpy's OpenBLAS (and PyTorch's GEMM when installed), both on this machine's two cores.

    python -m benchmarks.gemm                # the shapes below, then the two-thread threshold
    python -m benchmarks.gemm --budget 3     # seconds per case (default 1)
    python -m benchmarks gemm                # the shapes, in the suite table

Shapes (M, N, K) and layouts as the runtime multiplies them: transformer linear layers x @ W^T (B
transposed, "nt"; also plain "nn"), convolutions as W (O, C*kh*kw) @ im2col (C*kh*kw, pixels) ("nn":
ResNet-18's 3x3 convolutions at 56x56 and 7x7), and a square product. "tscript" calls the library
function through ctypes with pointers extracted once, into a preallocated C and scratch; "numpy" is
np.matmul(a, b, out=c) (OpenBLAS, its own two threads); "torch" torch.matmul(..., out=c). The
variants are interleaved (harness.py) and reported as medians with GFLOP/s.

The threshold section times products around the library's `split_min` (multiply-adds from which
the two halves of a product run at once) with that split and with every product on one thread
(a second build of the function with the split off).
"""
import argparse
import ctypes
from dataclasses import replace

import numpy as np

from .harness import Case, report, run_case, torch

SHAPES = [  # (M, N, K, layout, what)
    (128, 768, 256, "nt", "transformer: 128 tokens, 256 -> 768"),
    (1024, 1024, 256, "nt", "transformer: 1024 tokens, 256 -> 1024"),
    (1024, 256, 1024, "nt", "transformer: 1024 tokens, 1024 -> 256"),
    (128, 768, 256, "nn", "transformer, B row-major"),
    (1024, 1024, 256, "nn", "transformer, B row-major"),
    (1024, 256, 1024, "nn", "transformer, B row-major"),
    (64, 3136, 576, "nn", "conv 3x3 64 -> 64 at 56x56"),
    (512, 49, 4608, "nn", "conv 3x3 512 -> 512 at 7x7"),
    (2048, 2048, 2048, "nn", "square"),
]
THRESHOLD_SHAPES = [(65, 32, 64), (65, 64, 32), (65, 64, 64), (65, 128, 64), (65, 256, 64), (128, 256, 128)]
_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int32, *[ctypes.c_int64] * 3, ctypes.c_void_p,
                              ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p,
                              ctypes.c_int64, ctypes.c_void_p)


def _library_sgemm():
    """The library's function (its worker thread started) and its `pack_bytes`."""
    from tscript_runtime.native import library
    from tscript_runtime.native.library.blocking import pack_bytes
    from tscript_runtime.native.library.packed_gemm import NAME
    library.parallel2()
    return _SIGNATURE(library.addresses()[NAME]), pack_bytes


def _one_thread_sgemm():
    """A build of the same function that never splits (for the threshold), and its library (keep it)."""
    from llvmlite import ir

    from tscript_runtime.native.library.packed_gemm import BLOCKING, define_sgemm
    from tscript_runtime.native.link import NativeLibrary, imports_of
    from tscript_runtime.native.target import host, optimize_and_emit
    module = ir.Module("gemm_one_thread")
    module.triple = host()["triple"]
    define_sgemm(module, replace(BLOCKING, split_min=1 << 62), "sgemm_one_thread")
    obj = optimize_and_emit(str(module))
    lib = NativeLibrary(obj, ["sgemm_one_thread"], imports_of(module, obj))
    return _SIGNATURE(lib.address("sgemm_one_thread")), lib


def _operands(m: int, n: int, k: int, layout: str):
    """A (m, k), B stored (n, k) for "nt" or (k, n) for "nn", and C (m, n): float32."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((n, k) if layout == "nt" else (k, n), dtype=np.float32)
    return a, b, np.zeros((m, n), np.float32)


def _call(fn, pack_bytes, a, b, c, layout: str):
    """A no-argument call of `fn` computing c = a @ op(b) (the arguments converted once)."""
    m, k = a.shape
    n = c.shape[1]
    scratch = np.zeros(pack_bytes(m, n, k), np.uint8)
    args = (111, 112 if layout == "nt" else 111, m, n, k, a.ctypes.data, k, b.ctypes.data, b.shape[1], 0.0,
            c.ctypes.data, n, scratch.ctypes.data)
    keep = (a, b, c, scratch)  # the call holds only their addresses: they must live as long as it
    return lambda: (fn(*args), keep)


def _gflops(m: int, n: int, k: int, variant: str):
    return lambda r: f"{2 * m * n * k / r[variant] / 1e9:.0f}"


def cases() -> list[Case]:
    """One case per shape: tscript, numpy and (when installed) torch, with GFLOP/s as notes."""
    fn, pack_bytes = _library_sgemm()
    out = []
    for m, n, k, layout, what in SHAPES:
        a, b, c = _operands(m, n, k, layout)
        bt = b.T if layout == "nt" else b
        want = a.astype(np.float64) @ bt.astype(np.float64)
        ours = _call(fn, pack_bytes, a, b, c, layout)
        ours()
        np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3 * np.sqrt(k))
        c_np = np.zeros_like(c)
        variants = {"tscript": ours, "numpy": lambda a=a, bt=bt, c_np=c_np: np.matmul(a, bt, out=c_np)}
        if torch is not None:
            ta, tbt, tc = torch.from_numpy(a), torch.from_numpy(b).t() if layout == "nt" else torch.from_numpy(b), \
                torch.from_numpy(np.zeros_like(c))
            variants["torch"] = lambda ta=ta, tbt=tbt, tc=tc: torch.matmul(ta, tbt, out=tc)
        notes = {f"GFLOP/s {v}": _gflops(m, n, k, v) for v in variants}
        out.append(Case(f"({m}, {n}, {k}) {layout}: {what}", variants, unit="ms", notes=notes))
    return out


def threshold_cases() -> list[Case]:
    """Products around the split threshold: two halves at once ("tscript") against one thread."""
    fn, pack_bytes = _library_sgemm()
    single, lib = _one_thread_sgemm()
    _KEEP.append(lib)  # its code must stay linked while the cases may run
    out = []
    for m, n, k in THRESHOLD_SHAPES:
        a, b, c = _operands(m, n, k, "nt")
        variants = {"tscript": _call(fn, pack_bytes, a, b, c, "nt"),
                    "one thread": _call(single, pack_bytes, a, b, np.zeros_like(c), "nt")}
        out.append(Case(f"({m}, {n}, {k}) nt, {m * n * k / 2**20:.2f} Mi multiply-adds", variants,
                        notes={"GFLOP/s": _gflops(m, n, k, "tscript")}))
    return out


_KEEP: list = []


def _table(results) -> str:
    """Per case: each variant's median and GFLOP/s, then tscript's speed-up over the others (their
    time / tscript's time: above 1, tscript is faster)."""
    names = list(dict.fromkeys(v for _, res in results for v in res))
    head = f"{'case':60s}" + "".join(f"{v + ' ms':>12s}{'GFLOP/s':>9s}" for v in names) + \
        "".join(f"{'x vs ' + v:>11s}" for v in names[1:])
    lines = [head, "-" * len(head)]
    for case, res in results:
        cells = "".join(f"{res[v] * 1e3:12.3f}{case.notes[f'GFLOP/s {v}'](res):>9s}" if v in res else " " * 21
                        for v in names)
        ratios = "".join(f"{res[v] / res['tscript']:11.2f}" if v in res else " " * 11 for v in names[1:])
        lines.append(f"{case.name:60s}{cells}{ratios}")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gemm", description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=1.0, help="seconds per case (default 1)")
    args = parser.parse_args(argv)
    print(f"numpy {np.__version__}, torch {torch.__version__ if torch else 'not installed'}; "
          "medians of interleaved samples")
    print(_table([(case, run_case(case, args.budget)) for case in cases()]))
    from tscript_runtime.native.library.packed_gemm import BLOCKING
    print(f"\nsplit threshold (split_min = {BLOCKING.split_min / 2**20:.2f} Mi multiply-adds): two halves "
          "at once vs one thread")
    print(report([(case, run_case(case, args.budget)) for case in threshold_cases()]))


if __name__ == "__main__":
    main()
