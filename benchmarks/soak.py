"""Memory soak: the resident memory of a process that keeps compiling models, each dropped after
use, and of models run many times. A server that compiles continuously must stay flat.

    python -m benchmarks.soak        # 1000 distinct compiles, 1000 of one model, 1000 loads, 20000 calls
    python -m benchmarks.soak --compiles 300 --calls 5000

Target: the RSS after the first 100 distinct compiles and after the last differ by less than 10%.
Every distinct model's code is emitted (optimized and compiled by LLVM) and linked: the object
cache is a temporary directory, which also keeps the user's cache free of a thousand entries.
"""
import argparse
import gc
import os
import shutil
import tempfile
import time

import numpy as np

import tscript as ts
import tscript.nn.functional as F

ACTIVATIONS = (F.relu, ts.tanh, ts.sigmoid, F.gelu)
CHECKPOINT = 100


def rss_mib() -> float:
    """This process's resident set size in MiB (Linux; elsewhere the peak, from getrusage)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def distinct_model(i: int):
    """A small model (linear layer, activation, scale) whose code no other `i` shares: its
    constant is folded into its kernel."""
    rng = np.random.default_rng(i)
    w, b = ts.tensor(rng.standard_normal((16, 16), np.float32)), ts.tensor(rng.standard_normal(16, np.float32))
    act, c = ACTIVATIONS[i % len(ACTIVATIONS)], 1.0 + i / 1024

    def model(x):
        return act(x @ w + b) * c + c
    return model


def make_and_drop(n: int, make) -> list[tuple[int, float]]:
    """Make `make(i)` (a model, as a function of no arguments) for i < n, call it once and drop it;
    (models made, RSS) every CHECKPOINT."""
    marks = []
    for i in range(n):
        run = make(i)
        run()
        del run
        if (i + 1) % CHECKPOINT == 0 or i + 1 == n:
            gc.collect()
            marks.append((i + 1, rss_mib()))
    return marks


def call_many(fn, n: int) -> tuple[float, float]:
    """RSS after the first tenth of `n` calls of `fn` and after all of them."""
    for _ in range(n // 10):
        fn()
    gc.collect()
    first = rss_mib()
    for _ in range(n - n // 10):
        fn()
    gc.collect()
    return first, rss_mib()


def growth(first: float, last: float) -> str:
    return f"{first:.1f} -> {last:.1f} MiB ({100 * (last - first) / first:+.1f}%)"


def report(title: str, marks: list, seconds: float) -> None:
    print(f"\n{title} ({seconds / marks[-1][0] * 1e3:.1f} ms each)")
    print("    models  RSS MiB")
    for n, rss in marks:
        print(f"  {n:8d}  {rss:7.1f}")
    first = marks[0][1]
    verdict = "within" if abs(marks[-1][1] - first) < 0.1 * first else "OUTSIDE"
    print(f"  after {marks[0][0]} -> after {marks[-1][0]}: {growth(first, marks[-1][1])}, {verdict} the 10% target")


def compiling(model, x):
    """A model to make: `model` compiled for `x`, called on it."""
    compiled = ts.jit.compile(model, x)
    return lambda: compiled(x)


def loading(path: str, x: np.ndarray):
    """A model to make: the saved model at `path`, loaded and run on `x`."""
    import tscript_runtime
    model = tscript_runtime.load(path)
    return lambda: model.run(x)


def run(compiles: int, calls: int, cache: str) -> None:
    ts.manual_seed(0)
    x = ts.randn(8, 16)
    print(f"start: {rss_mib():.1f} MiB")
    cases = [(f"{compiles} distinct models compiled, each called once and dropped",
              lambda i: compiling(distinct_model(i), x)),
             (f"one model compiled {compiles} times (its code from the object cache)",
              lambda i: compiling(distinct_model(0), x))]
    path = os.path.join(cache, "soak.tsm")
    ts.jit.save(ts.jit.compile(distinct_model(0), x), path)
    cases.append((f"one saved model loaded {compiles} times", lambda i: loading(path, x.numpy())))
    for title, make in cases:
        t0 = time.perf_counter()
        marks = make_and_drop(compiles, make)
        report(title, marks, time.perf_counter() - t0)
    compiled, loaded = compiling(distinct_model(0), x), loading(path, x.numpy())
    print(f"\none compiled model called {calls} times: {growth(*call_many(compiled, calls))}")
    print(f"one loaded model run {calls} times: {growth(*call_many(loaded, calls))}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--compiles", type=int, default=1000, help="distinct models to compile (default 1000)")
    parser.add_argument("--calls", type=int, default=20000, help="calls of one model (default 20000)")
    args = parser.parse_args(argv)
    cache = tempfile.mkdtemp(prefix="tscript-soak-")
    os.environ["TSCRIPT_CACHE_DIR"] = cache
    try:
        run(args.compiles, args.calls, cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
