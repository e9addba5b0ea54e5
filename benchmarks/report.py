"""The report of a 10,000-node graph: how long `tscript.jit.report` takes, stage by stage, and how long
a headless Chromium takes to open the page (when one is installed). Target: the page written in under
5 s (rendering: layout, diffs of every pass, HTML) and opened in under 5 s.

    python -m benchmarks.report            # 10,000 nodes
    python -m benchmarks.report --layers 500

The model: `layers` linear layers of width 8, each followed by a tanh and a scaled residual add (two
nodes per layer after fusion: the GEMM and a fusion group), traced and compiled; with the parameter
reads the final graph has about 5 nodes per layer.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time

import tscript as ts
import tscript.nn as nn
from tscript.report import build_report
from tscript_runtime.report import write_report


class Deep(nn.Module):
    """`layers` x (linear -> tanh -> x + 0.5 * that)."""

    def __init__(self, layers: int, width: int = 8):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(layers)])

    def forward(self, x):
        for layer in self.layers:
            x = x + 0.5 * layer(x).tanh()
        return x


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2000, help="linear layers (default 2000: ~10,000 nodes)")
    parser.add_argument("--runs", type=int, default=3, help="profiled runs (default 3)")
    args = parser.parse_args(argv)
    ts.manual_seed(0)
    model, x = Deep(args.layers).eval(), ts.randn(4, 8)
    start = time.perf_counter()
    data = build_report(model, (x,), runs=args.runs)
    built = time.perf_counter() - start
    entry = data["entries"][0]
    nodes = sum(1 for line in entry["ir"].split("\n") if " = " in line)
    path = os.path.join(tempfile.mkdtemp(prefix="tscript-report-"), "report.html")
    start = time.perf_counter()
    size = write_report(data, path)
    written = time.perf_counter() - start
    print(f"graph: {len(entry['graph']['nodes'])} top-level nodes ({nodes} IR lines defining values), "
          f"{len(entry['kernels'])} kernels, {sum(len(r['passes']) for r in entry['passes'])} passes recorded")
    print(f"compile with every pass recorded, profile {args.runs} runs, read the kernels' code: {built:.2f} s")
    print(f"write the report (layout, diffs, HTML): {written:.2f} s  -> {path} ({size / 2 ** 20:.1f} MiB)")
    browser = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
    if browser:
        empty = os.path.join(os.path.dirname(path), "empty.html")
        with open(empty, "w") as f:
            f.write("<!DOCTYPE html><title>empty</title>")
        startup, total = _open(browser, empty), _open(browser, path)
        print(f"open in headless {browser} (load, run the page's script, paint): {total - startup:.2f} s "
              f"({total:.2f} s with the browser's own start, {startup:.2f} s for an empty page)")


def _open(browser: str, path: str) -> float:
    """Seconds for a headless browser to load `path` and take a screenshot of it."""
    shot = os.path.join(os.path.dirname(path), "shot.png")
    start = time.perf_counter()
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1440,900",
                    f"--screenshot={shot}", f"file://{path}"], capture_output=True, timeout=300)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
