"""Run benchmark suites and print a table of medians and ratios.

    python -m benchmarks            # all suites
    python -m benchmarks eager      # one suite
"""
import argparse
import platform

import numpy as np

from . import autograd, compile, conv_layers, eager_ops, executor, gemm, ir_scale, load, models, nn_layers, passes, script, strided, \
    training
from tscript_runtime.progress import Progress

from .harness import report, run_case, torch

SUITES = {"eager": eager_ops.cases, "autograd": autograd.cases, "nn": nn_layers.cases, "ir": ir_scale.cases,
          "executor": executor.cases, "passes": passes.cases, "script": script.cases, "compile": compile.cases,
          "training": training.cases, "strided": strided.cases, "load": load.cases,
          "models": models.cases, "gemm": gemm.cases, "conv_layers": conv_layers.cases}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="*", choices=[*SUITES, []], help="suites to run (default: all)")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds per case (default 1)")
    args = parser.parse_args(argv)
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"torch {torch.__version__ if torch else 'not installed'}")
    for suite in args.suites or SUITES:
        results = _run_suite(suite, args.budget)
        if results:  # (a suite may print its own table instead)
            print(f"\n[{suite}] medians of interleaved samples")
            print(report(results))


def _run_suite(suite: str, budget: float) -> list:
    """(case, medians) of every case of `suite`; a progress line on a terminal while they run."""
    cases = list(SUITES[suite]())
    results = []
    with Progress("python -m benchmarks") as progress:
        for i, case in enumerate(cases):
            progress.step(f"{suite}: {case.name}", i + 1, len(cases))
            results.append((case, run_case(case, budget)))
    return results


if __name__ == "__main__":
    main()
