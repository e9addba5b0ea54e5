"""Concurrency check: several threads calling one compiled model (and the same model saved and
loaded with the standalone runtime) at once must give outputs bit-identical to one thread's.

    python -m benchmarks.concurrency                  # 1, 2, 4 and 8 threads, 2000 calls each
    python -m benchmarks.concurrency --threads 2,16 --calls 500

Models: an MLP (the whole-graph entry), an elementwise chain large enough that its kernel runs in
two halves on the kernel library's worker thread, and a model with a node the entry does not lower
(the graph executor calling the fused kernels). Each thread cycles through inputs of several batch sizes, so
threads also plan new signatures while others run. Exits with status 1 on any mismatch or error.
"""
import argparse
import os
import sys
import tempfile
import threading
import time

import numpy as np

import tscript as ts
import tscript_runtime
from tscript import nn

BATCHES = (1, 3, 8, 33, 64)


def models() -> list:
    """(name, model to compile, feature shape, batch sizes)."""
    ts.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.GELU(), nn.Linear(64, 10)).eval()
    return [("mlp", mlp, (64,), BATCHES),
            ("split elementwise", lambda x: ((x * 1.5).tanh() * 2 + 1).sigmoid(), (512,), (130, 257, 300)),
            ("executor", lambda x: (ts.cat([x, x * 2], 1) * 0.5).tanh() + 1, (32,), BATCHES)]


def variants(model, features: tuple, batches: tuple, folder: str, name: str) -> list:
    """(variant name, call: numpy array -> numpy array) for the compiled model and its loaded file."""
    example = ts.randn(batches[0], *features)
    compiled = ts.jit.compile(model, example, dynamic={0: [0]})
    path = os.path.join(folder, name.replace(" ", "_") + ".tsm")
    ts.jit.save(compiled, path)
    loaded = tscript_runtime.load(path)
    return [("compiled", lambda x: compiled(ts.from_numpy(x)).numpy()), ("loaded", loaded.run)]


def hammer(call, inputs: list, expected: list, threads: int, calls: int) -> tuple[int, int, float]:
    """(mismatches, errors, seconds) of `threads` threads making `calls` calls each at once."""
    counts = {"mismatches": 0, "errors": 0, "first error": None}
    lock, barrier = threading.Lock(), threading.Barrier(threads)

    def work(offset: int) -> None:
        bad = failed = 0
        barrier.wait()
        for i in range(calls):
            k = (i + offset) % len(inputs)
            try:
                out = call(inputs[k])
                bad += out.dtype != expected[k].dtype or out.shape != expected[k].shape or \
                    out.tobytes() != expected[k].tobytes()
            except Exception as e:
                failed += 1
                counts["first error"] = counts["first error"] or f"{type(e).__name__}: {e}"
        with lock:
            counts["mismatches"] += bad
            counts["errors"] += failed
    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if counts["first error"]:
        print(f"  first error: {counts['first error']}")
    return counts["mismatches"], counts["errors"], time.perf_counter() - t0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.concurrency", description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2,4,8", help="thread counts, comma-separated (default 1,2,4,8)")
    parser.add_argument("--calls", type=int, default=2000, help="calls per thread (default 2000)")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.threads.split(",")]
    rng = np.random.default_rng(0)
    total_bad = 0
    print(f"{'model':24s}{'variant':>10s}{'threads':>9s}{'calls':>9s}{'mismatches':>12s}{'errors':>8s}"
          f"{'us/call':>10s}")
    with tempfile.TemporaryDirectory() as folder:
        for name, model, features, batches in models():
            inputs = [rng.standard_normal((b, *features)).astype(np.float32) for b in batches]
            for variant, call in variants(model, features, batches, folder, name):
                expected = [call(x).copy() for x in inputs]  # one thread: the reference
                for threads in counts:
                    bad, failed, seconds = hammer(call, inputs, expected, threads, args.calls)
                    n = threads * args.calls
                    total_bad += bad + failed
                    print(f"{name:24s}{variant:>10s}{threads:9d}{n:9d}{bad:12d}{failed:8d}{seconds / n * 1e6:10.1f}")
    print("all outputs bit-identical to one thread's" if total_bad == 0 else f"{total_bad} bad calls")
    return 1 if total_bad else 0


if __name__ == "__main__":
    sys.exit(main())
