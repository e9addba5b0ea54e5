"""The `tscript` command (also `python -m tscript`): demo, trace, ir, report."""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys

from tscript_runtime.errors import OpError


class UserError(Exception):
    """A mistake on the command line (a path, a name, a shape): one line on stderr, exit code 2."""


def _demo(args) -> int:
    from . import demo
    demo.run(seed=args.seed, steps=args.steps)
    return 0


def _load_target(spec: str):
    """`path/to/file.py:NAME` or `package.module:NAME` -> the object (called if it is a factory)."""
    target, _, attr = spec.partition(":")
    if not attr:
        raise UserError(f"expected MODULE:ATTR, got {spec!r}")
    module = _import(target)
    if not hasattr(module, attr):
        raise UserError(f"{target} has no attribute {attr!r}")
    obj = getattr(module, attr)
    from .nn import Module
    if isinstance(obj, type) and issubclass(obj, Module) or (callable(obj) and not isinstance(obj, Module)
                                                                and getattr(obj, "__name__", "") != "forward"
                                                                and _is_factory(obj)):
        obj = obj()
    return obj


def _import(target: str):
    """The module `target` names: a Python file, or a module importable from here."""
    is_file = target.endswith(".py") or os.path.sep in target
    if is_file and os.path.isdir(target):
        raise UserError(f"{target} is a directory: give a Python file (path/to/model.py:NAME) or a module name")
    if is_file and not os.path.exists(target):
        raise UserError(f"no such file: {target}")
    try:
        if not is_file:
            return _import_module(target)
        module_spec = importlib.util.spec_from_file_location("_tscript_user_model", target)
        if module_spec is None:
            raise UserError(f"{target} is not a Python file")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        return module
    except SyntaxError as e:
        raise UserError(f"{e.filename}:{e.lineno}: {e.msg}") from None
    except ImportError as e:
        raise UserError(f"cannot import {target}: {e}") from None


def _import_module(name: str):
    """Import module `name` as `python -m` would find it: the current directory comes first."""
    here = os.getcwd()
    added = here not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(name)
    finally:
        if added:
            sys.path.remove(here)


def _shape(text: str) -> tuple:
    """An --input-shape: comma-separated sizes."""
    try:
        shape = tuple(int(s) for s in text.split(","))
    except ValueError:
        shape = ()
    if not shape or any(n < 0 for n in shape):
        raise UserError(f"--input-shape {text!r}: expected sizes separated by commas, e.g. 8,784")
    return shape


def _random_input(shape: tuple, dtype: str):
    import tscript as ts
    try:
        return ts.randn(*shape, dtype=getattr(ts, dtype))
    except (MemoryError, ValueError) as e:  # ValueError: numpy's "array is too big"
        raise UserError(f"--input-shape {','.join(map(str, shape))}: cannot allocate an input of that "
                        f"size ({e})") from None


def _is_factory(obj) -> bool:
    import inspect
    try:
        return all(p.default is not p.empty for p in inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return False


def _trace(args) -> int:
    import tscript as ts
    if not os.path.isdir(os.path.dirname(args.output) or "."):
        raise UserError(f"cannot write {args.output}: no such directory")
    shapes = [_shape(text) for text in args.input_shape]
    obj = _load_target(args.target)
    if hasattr(obj, "train"):
        obj.train(args.backward)  # a model saved to train keeps dropout and batch statistics on
    inputs = tuple(_random_input(shape, args.dtype) for shape in shapes)
    from tscript_runtime.progress import Progress
    from .ir.passes.pipeline import observe_passes
    from .report.passes import PassProgress
    with Progress("tscript trace") as progress, observe_passes(PassProgress(progress)):
        progress.step("scripting" if args.script else "tracing")
        if args.backward:  # forward + backward graphs, compiled: what run_with_grad needs
            source = ts.jit.script(obj) if args.script else obj
            result = ts.jit.compile(source, inputs, backward=True, dynamic={0: [0]})
        else:
            with ts.no_grad():
                scripted = ts.jit.script(obj) if args.script else ts.jit.trace(obj, inputs)
                result = ts.jit.compile(scripted, inputs, dynamic={0: [0]}) if args.compile else scripted
        progress.step("saving")
        ts.jit.save(result, args.output)
    from tscript_runtime.model import read_saved_model
    entries = ", ".join(read_saved_model(args.output).entry_points)
    print(f"saved {args.output} ({os.path.getsize(args.output) / 1024:.1f} KiB; entry points: {entries})")
    return 0


def _report(args) -> int:
    import tscript as ts
    from tscript_runtime.progress import Progress
    from tscript_runtime.report import write_report
    from .report import build_report
    if args.runs < 0:
        raise UserError("--runs must be at least 0")
    if not os.path.isdir(os.path.dirname(args.output) or "."):
        raise UserError(f"cannot write {args.output}: no such directory")
    shapes = [_shape(text) for text in args.input_shape]
    obj = _load_target(args.target)
    if hasattr(obj, "train"):
        obj.train(args.backward)
    inputs = tuple(_random_input(shape, args.dtype) for shape in shapes)
    with Progress("tscript report") as progress:
        progress.step("scripting" if args.script else "tracing")
        source = ts.jit.script(obj) if args.script else obj
        data = build_report(source, inputs, args.runs, args.backward, layout=args.layout, progress=progress)
        progress.step("writing the page")
        size = write_report(data, args.output)
    print(f"wrote {args.output} ({size / 1024:.1f} KiB)")
    return 0


def _ir(args) -> int:
    import tscript_runtime
    model = tscript_runtime.load(args.model)
    text = model.ir(args.entry)
    if args.after_each_pass:
        if args.format != "text":
            raise UserError("--after-each-pass prints IR text: leave out --format")
        text = _after_each_pass(text, args.entry)
    elif args.format in ("dot", "svg"):
        from .ir.dot import to_dot
        from .ir.parser import parse_ir
        text = to_dot(parse_ir(text))
        if args.format == "svg":
            text = _svg(text)
    print(text, end="" if text.endswith("\n") else "\n")
    return 0


def _after_each_pass(text: str, entry: str) -> str:
    """The saved IR, then the IR after every pass of the pipeline that changes it (TSCRIPT_LOG=passes)."""
    import io
    from .ir.parser import parse_ir
    from .ir.passes.pipeline import run_pipeline
    log = io.StringIO()
    run_pipeline(parse_ir(text), level=2, log=set(), stream=log)
    passes = log.getvalue() or "(no pass changes it: it was saved optimized)\n"
    return f"== saved IR of entry point '{entry}' ==\n{text.rstrip()}\n{passes}"


def _svg(dot: str) -> str:
    """`dot` rendered to SVG by Graphviz."""
    program = shutil.which("dot")
    if program is None:
        raise UserError("--format svg needs Graphviz's `dot` program on PATH (e.g. apt-get install graphviz); "
                        "--format dot prints the graph for it")
    done = subprocess.run([program, "-Tsvg"], input=dot, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UserError(f"Graphviz's dot failed: {done.stderr.strip()}")
    return done.stdout


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tscript", description="tscript: trace, optimize, compile and "
                                     "save PyTorch-style models.")
    parser.add_argument("--version", action="version", version=f"tscript {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="run the built-in end-to-end demo")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--steps", type=int, default=30, help="eager training steps (default 30)")
    demo.set_defaults(func=_demo)
    trace = sub.add_parser("trace", help="trace (or script) a model and save it as .tsm")
    trace.add_argument("target", help="MODULE:ATTR (a module path from the current directory, or path/to/file.py) "
                       "naming a module instance, an nn.Module class or a factory")
    trace.add_argument("--input-shape", action="append", required=True, help="e.g. 8,784 (repeat per input)")
    trace.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    trace.add_argument("-o", "--output", required=True, help="output .tsm path")
    trace.add_argument("--script", action="store_true", help="script the source instead of tracing")
    trace.add_argument("--compile", action="store_true", help="also generate native code (dim 0 of input 0 "
                       "may vary: the batch)")
    trace.add_argument("--backward", action="store_true", help="also save a backward entry point (implies "
                       "--compile; the model in training mode): tsrt run --grad and run_with_grad train it")
    trace.set_defaults(func=_trace)
    ir = sub.add_parser("ir", help="print the IR stored in a .tsm file")
    ir.add_argument("model", help="the saved model (.tsm)")
    ir.add_argument("--entry", default="forward", help="entry point (default: forward)")
    ir.add_argument("--format", default="text", choices=["text", "dot", "svg"],
                    help="text (default), dot (Graphviz source) or svg (rendered by Graphviz's dot)")
    ir.add_argument("--after-each-pass", action="store_true",
                    help="run the pass pipeline on the saved IR and print it after every pass that changes it")
    ir.set_defaults(func=_ir)
    report = sub.add_parser("report", help="compile a model and write one self-contained HTML report: source and "
                            "IR, every pass, the graph, the kernels' code, a profile")
    report.add_argument("target", help="MODULE:ATTR, as for trace")
    report.add_argument("--input-shape", action="append", required=True, help="e.g. 8,784 (repeat per input)")
    report.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    report.add_argument("-o", "--output", required=True, help="output .html path")
    report.add_argument("--script", action="store_true", help="script the source instead of tracing")
    report.add_argument("--backward", action="store_true", help="compile the backward too (the model in training "
                        "mode) and report both graphs")
    report.add_argument("--runs", type=int, default=10, help="profiled runs on random inputs (default: 10; 0: none)")
    report.add_argument("--layout", default="auto", choices=["auto", "dot", "layered", "list"],
                        help="how to draw the graph (default: auto, Graphviz dot for small graphs when installed)")
    report.set_defaults(func=_report)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except (UserError, OpError, RuntimeError, ValueError, TypeError, OSError) as e:
        print(f"tscript {args.command}: error: {e}", file=sys.stderr)
        return 2
    except MemoryError as e:
        print(f"tscript {args.command}: error: out of memory ({e})", file=sys.stderr)
        return 2


def _version() -> str:
    from . import __version__
    return __version__


if __name__ == "__main__":
    sys.exit(main())
