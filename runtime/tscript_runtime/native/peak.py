"""This CPU's peak float32 multiply-add rate, measured once per process: a loop of independent vector
FMAs (enough accumulators to hide the FMA latency) in the host's widest vectors, emitted, compiled and
timed like any kernel. The profile (profile.py) rates GEMMs and convolutions against it."""
from __future__ import annotations

import ctypes
import time

_state: dict = {}
ACCUMULATORS = 12        # independent FMA chains: latency (4-5 cycles) x 2 FMA ports, and some to spare
ITERATIONS = 1 << 20     # loop trips per timed call (12 Mi FMAs)


def vector_lanes() -> int:
    """float32 lanes of the host's widest vector registers (16 with AVX-512, 8 with AVX, else 4)."""
    from .target import host
    features = host()["features"].split(",")
    return 16 if "+avx512f" in features else 8 if "+avx" in features else 4


def peak_gflops(threads: int = 1) -> float:
    """GFLOP/s (an FMA counts 2) of `threads` cores of this CPU running float32 FMAs back to back
    (one core measured, best of 5 calls; times `threads`)."""
    if "gflops" not in _state:
        _state["gflops"] = _measure()
    return _state["gflops"] * threads


def _measure() -> float:
    from .link import NativeLibrary
    from .target import optimize_and_emit
    lanes = vector_lanes()
    library = NativeLibrary(optimize_and_emit(_fma_loop(lanes)), ["tscript_peak"], set())
    loop = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_int64)(library.address("tscript_peak"))
    loop(1 << 10)  # page the code in
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        loop(ITERATIONS)
        best = min(best, time.perf_counter() - start)
    _state["library"] = library  # (its code stays loaded while the process may measure again)
    return 2 * lanes * ACCUMULATORS * ITERATIONS / best / 1e9


def _fma_loop(lanes: int) -> str:
    """LLVM IR of `float tscript_peak(i64 n)`: n trips of ACCUMULATORS independent vector FMAs."""
    from llvmlite import ir
    f32, i64 = ir.FloatType(), ir.IntType(64)
    vec = ir.VectorType(f32, lanes)
    module = ir.Module("tscript_peak")
    fn = ir.Function(module, ir.FunctionType(f32, [i64]), "tscript_peak")
    fma = ir.Function(module, ir.FunctionType(vec, [vec] * 3), f"llvm.fma.v{lanes}f32")
    entry, body, done = (fn.append_basic_block(n) for n in ("entry", "body", "done"))
    b = ir.IRBuilder(entry)
    b.branch(body)
    b.position_at_end(body)
    i = b.phi(i64)
    accs = [b.phi(vec) for _ in range(ACCUMULATORS)]
    a, c = ir.Constant(vec, [0.999] * lanes), ir.Constant(vec, [1e-3] * lanes)
    nexts = [b.call(fma, [acc, a, c]) for acc in accs]
    i_next = b.add(i, ir.Constant(i64, 1))
    b.cbranch(b.icmp_signed("<", i_next, fn.args[0]), body, done)
    i.add_incoming(ir.Constant(i64, 0), entry)
    i.add_incoming(i_next, body)
    for k, (acc, nxt) in enumerate(zip(accs, nexts)):
        acc.add_incoming(ir.Constant(vec, [float(k)] * lanes), entry)
        acc.add_incoming(nxt, body)
    b.position_at_end(done)
    total = nexts[0]
    for nxt in nexts[1:]:
        total = b.fadd(total, nxt)
    b.ret(b.extract_element(total, ir.Constant(ir.IntType(32), 0)))
    return str(module)
