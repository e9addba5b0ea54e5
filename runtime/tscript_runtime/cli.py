"""The `tsrt` command (also `python -m tscript_runtime`): inspect and run saved models.

    tsrt info model.tsm                                  entry points, parameters, size, native code
    tsrt run model.tsm --input x.npy [...] [--output out.npz] [--grad]
    tsrt ir model.tsm [--entry forward]
    tsrt bench model.tsm [--runs N] [--input x.npy ...]  latency over repeated runs
                         [--profile]                     ... and the time of every step and node, sorted
    tsrt report model.tsm -o report.html                 one HTML file: graph, kernels, profile, memory
    tsrt serve model.tsm [--port N] [--host H]           an HTTP inference server (serve.py)

Every error is one line on stderr and exit code 2, never a traceback.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from . import __version__, dtypes as dt
from .errors import OpError
from .model import Model, load
from .serve import DEFAULT_MAX_REQUEST_BYTES


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tsrt", description="Run tscript saved models (.tsm) with numpy "
                                     "and llvmlite only.")
    parser.add_argument("--version", action="version", version=f"tsrt (tscript_runtime) {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    info = commands.add_parser("info", help="show entry points, signature, parameters and native code")
    run = commands.add_parser("run", help="run an entry point on inputs stored as .npy files")
    ir = commands.add_parser("ir", help="print the IR of an entry point")
    bench = commands.add_parser("bench", help="measure the latency of repeated runs")
    serve = commands.add_parser("serve", help="serve the model over HTTP: POST /run (JSON, .npy or .npz), "
                                "GET /info, GET /health")
    report = commands.add_parser("report", help="write one self-contained HTML report: IR beside the source, "
                                 "the graph, every kernel's code, a profile, memory")
    for sub in (info, run, ir, bench, serve, report):
        sub.add_argument("model", help="the saved model (.tsm)")
    for sub in (run, ir, bench, serve):
        sub.add_argument("--entry", default="forward", help="entry point (default: forward)")
    for sub in (run, bench):
        sub.add_argument("--input", action="append", default=[], metavar="FILE.npy",
                         help="one input per option, in order (bench: random inputs when omitted)")
    run.add_argument("--output", metavar="FILE.npz", help="also write the outputs to an .npz file")
    run.add_argument("--grad", action="store_true",
                     help="also compute and print gradients (of forward, in models saved with a backward entry point)")
    bench.add_argument("--runs", type=int, default=100, help="number of timed runs (default: 100)")
    bench.add_argument("--warmup", type=int, default=3, help="untimed runs first (default: 3)")
    bench.add_argument("--profile", action="store_true", help="also time every step of the whole-graph entry "
                       "inside the native call, and every node through the executor, and print them sorted, with "
                       "operand shapes and GFLOP/s of GEMMs and convolutions")
    report.add_argument("-o", "--output", required=True, metavar="FILE.html", help="where to write the report")
    report.add_argument("--runs", type=int, default=10, help="profiled runs per entry point (default: 10; 0: none)")
    report.add_argument("--layout", default="auto", choices=["auto", "dot", "layered", "list"],
                        help="how to draw the graph (default: auto, Graphviz dot for small graphs when installed)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this "
                       "machine only; 0.0.0.0 for every interface)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0 picks a free one)")
    serve.add_argument("--max-request-bytes", type=int, default=DEFAULT_MAX_REQUEST_BYTES,
                       help=f"larger request bodies are refused with 413 (default: {DEFAULT_MAX_REQUEST_BYTES})")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        COMMANDS[args.command](args)
    except (OpError, OSError, ValueError) as e:
        return _fail(str(e).replace("\n", " "))
    except Exception as e:  # a bug still gets one line, as promised, rather than a traceback
        return _fail(f"internal error: {type(e).__name__}: {e}")
    return 0


def _fail(message: str) -> int:
    print(f"tsrt: error: {message}", file=sys.stderr)
    return 2


# -- commands ---------------------------------------------------------------------------------------

def cmd_info(args) -> None:
    model = load(args.model)
    m = model.manifest
    print(f"{args.model}: {m.get('kind', '?')} {m.get('name', '?')}, {_size(os.path.getsize(args.model))}, "
          f"format {m['format']} v{m['version']}, produced by {m.get('producer', 'unknown')}")
    print("entry points:")
    for entry in model.entry_points.values():
        print(f"  {entry.signature}")
    n = sum(a.size for a in model.params.values())
    print(f"parameters and buffers: {len(model.params)} tensors, {n} values")
    width = max((len(name) for name in model.params), default=0)
    for name, array in model.params.items():
        print(f"  {name:<{width}}  {dt.NAMES[array.dtype]:<7} {list(array.shape)}")
    print("native code:")
    for name, executable in model.executables.items():
        print(f"  {name}: {executable.describe()}")


def cmd_run(args) -> None:
    if args.grad and args.entry != "forward":
        raise ValueError("--grad computes the gradients of forward: leave out --entry")
    model = load(args.model)
    inputs = [_read_input(p) for p in args.input]
    if args.grad:
        outputs, grads = model.run_with_grad(*inputs)
        arrays = dict(flatten_outputs("output", outputs))
        arrays.update({f"grad.{name}": g for name, g in grads.items()})
    else:
        arrays = dict(flatten_outputs("output", model.run_method(args.entry, *inputs)))
    for name, value in arrays.items():
        print(f"{name}: {_summary(value)}")
    if args.output:
        with open(args.output, "wb") as f:
            np.savez(f, **arrays)


def cmd_ir(args) -> None:
    print(load(args.model).ir(args.entry), end="")


def cmd_bench(args) -> None:
    if args.runs < 1 or args.warmup < 0:
        raise ValueError("--runs must be at least 1 and --warmup at least 0")
    model = load(args.model)
    inputs = [_read_input(p) for p in args.input] or _random_inputs(model, args.entry)
    times = _time_runs(model, args.entry, inputs, args.runs, args.warmup)
    print(f"{args.model} {args.entry}: {args.runs} runs, median {_ms(np.median(times))}, "
          f"p90 {_ms(np.percentile(times, 90))}, min {_ms(times.min())}, mean {_ms(times.mean())}")
    print(f"native code: {model.executables[args.entry].describe()}")
    if args.profile:
        print(model.profile(*inputs, runs=args.runs, entry=args.entry).table())


def cmd_report(args) -> None:
    from .progress import Progress
    from .report import write_report
    from .report.collect import model_report
    if args.runs < 0:
        raise ValueError("--runs must be at least 0")
    if not os.path.isdir(os.path.dirname(os.path.abspath(args.output))):
        raise ValueError(f"cannot write {args.output}: no such directory")
    with Progress("tsrt report") as progress:
        progress.step("loading and emitting native code")
        model = load(args.model)
        progress.step("profiling and reading the kernels' code")
        report = model_report(model, args.model, args.runs, args.layout)
        progress.step("laying out the graph and writing the page")
        size = write_report(report, args.output)
    print(f"wrote {args.output} ({_size(size)})")


def cmd_serve(args) -> None:
    from .serve import make_server
    if not 0 <= args.port <= 65535 or args.max_request_bytes < 1:
        raise ValueError("--port must be in 0..65535 and --max-request-bytes at least 1")
    server = make_server(load(args.model), args.host, args.port, args.entry, args.max_request_bytes)
    host, port = server.server_address[:2]
    print(f"serving {args.model} on http://{host}:{port} (POST /run, GET /info, GET /health; Ctrl-C stops)",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


COMMANDS = {"info": cmd_info, "run": cmd_run, "ir": cmd_ir, "bench": cmd_bench, "serve": cmd_serve,
            "report": cmd_report}


# -- helpers ----------------------------------------------------------------------------------------

def _read_input(path: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as e:
        raise ValueError(f"{path}: not a .npy array without pickled objects ({e})") from None


def _random_inputs(model: Model, entry: str) -> list:
    return model.entry(entry).signature.example_inputs(np.random.default_rng(0))


def _time_runs(model: Model, entry: str, inputs: list, runs: int, warmup: int) -> np.ndarray:
    for _ in range(warmup):
        model.run_method(entry, *inputs)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        model.run_method(entry, *inputs)
        times.append(time.perf_counter() - start)
    return np.array(times)


def flatten_outputs(name: str, value):
    """(key, array) pairs of a nested output: `output`, `output.0`, `output.logits`, ..."""
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            yield from flatten_outputs(f"{name}.{i}", v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from flatten_outputs(f"{name}.{k}", v)
    elif value is not None:
        yield name, np.asarray(value)


def _summary(a: np.ndarray) -> str:
    head = f"{dt.NAMES.get(a.dtype, str(a.dtype))} {list(a.shape)}"
    if a.size <= 8:
        return f"{head} {np.array2string(a.ravel(), precision=6, separator=', ')}"
    values = a.astype(np.float64)
    return f"{head} min {values.min():.6g} max {values.max():.6g} mean {values.mean():.6g}"


def _size(n: int) -> str:
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 1024 ** 2 else f"{n / 1024 ** 2:.1f} MiB"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


if __name__ == "__main__":
    sys.exit(main())
