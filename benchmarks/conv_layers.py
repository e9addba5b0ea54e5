"""ResNet-18's convolution layers at batch 8, each compiled alone (one `conv2d` with bias, as a frozen
model's folded batch norm leaves it) and run through the whole-graph entry, against PyTorch's conv2d
when installed; GFLOP/s and the share of this CPU's measured float32 FMA peak on both cores
(tscript_runtime.native.peak: a register-only FMA loop).

    python -m benchmarks.conv_layers             # every distinct layer
    python -m benchmarks.conv_layers --budget 2  # seconds per layer (default 1)
    python -m benchmarks conv_layers             # the same layers in the suite table
"""
import argparse

import numpy as np

import tscript as ts
import tscript.nn.functional as F

from .harness import Case, run_case, torch

BATCH = 8
# (input channels, output channels, kernel, stride, padding, input size, where), ResNet-18's distinct convs
LAYERS = [(3, 64, 7, 2, 3, 224, "stem"), (64, 64, 3, 1, 1, 56, "layer1"), (64, 128, 3, 2, 1, 56, "layer2, first"),
          (128, 128, 3, 1, 1, 28, "layer2"), (64, 128, 1, 2, 0, 56, "layer2, downsample"),
          (128, 256, 3, 2, 1, 28, "layer3, first"), (256, 256, 3, 1, 1, 14, "layer3"),
          (256, 512, 3, 2, 1, 14, "layer4, first"), (512, 512, 3, 1, 1, 7, "layer4")]


def _flops(c: int, o: int, k: int, stride: int, padding: int, size: int) -> float:
    out = (size + 2 * padding - k) // stride + 1
    return 2.0 * BATCH * o * c * k * k * out * out


def _case(c: int, o: int, k: int, stride: int, padding: int, size: int, where: str) -> Case:
    rng = np.random.default_rng(c * 1000 + o)
    x = rng.standard_normal((BATCH, c, size, size)).astype(np.float32)
    w = (rng.standard_normal((o, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    weight, b = ts.from_numpy(w), ts.from_numpy(bias)
    compiled = ts.jit.compile(lambda t: F.conv2d(t, weight, b, stride, padding), (ts.from_numpy(x),))
    native = compiled.executable.entry
    args = [x]
    variants = {"tscript": lambda: native.run(args)}
    if native is None or native.run(args) is None:
        raise RuntimeError(f"conv {where} did not run as one native call: {compiled.explain()}")
    if torch is not None:
        tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(bias)
        np.testing.assert_allclose(native.run(args)[0], torch.conv2d(tx, tw, tb, stride, padding).numpy(),
                                   rtol=1e-3, atol=1e-3)

        def run_torch():
            with torch.no_grad():
                torch.conv2d(tx, tw, tb, stride, padding)
        variants["torch"] = run_torch
    flops = _flops(c, o, k, stride, padding, size)
    name = f"{where}: {c}->{o}, {k}x{k}/{stride}, {size}x{size}"
    notes = {f"GFLOP/s {v}": (lambda res, v=v: f"{flops / res[v] / 1e9:.0f}") for v in variants}
    return Case(name, variants, unit="ms", notes=notes)


def cases() -> list:
    return [_case(*layer) for layer in LAYERS]


def _table(results, peak: float) -> str:
    names = list(dict.fromkeys(v for _, res in results for v in res))
    head = f"{'layer (batch 8)':44s}" + "".join(f"{v + ' ms':>12s}{'GFLOP/s':>9s}" for v in names) + \
        f"{'% of peak':>11s}" + "".join(f"{'x vs ' + v:>11s}" for v in names[1:])
    lines = [head, "-" * len(head)]
    for case, res in results:
        cells = "".join(f"{res[v] * 1e3:12.3f}{case.notes[f'GFLOP/s {v}'](res):>9s}" for v in names)
        share = float(case.notes["GFLOP/s tscript"](res)) / peak * 100
        ratios = "".join(f"{res[v] / res['tscript']:11.2f}" for v in names[1:])
        lines.append(f"{case.name:44s}{cells}{share:10.0f}%{ratios}")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.conv_layers", description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=1.0, help="seconds per layer (default 1)")
    args = parser.parse_args(argv)
    from tscript_runtime.native.peak import peak_gflops
    peak = peak_gflops(2)
    print(f"measured float32 FMA peak: {peak_gflops(1):.0f} GFLOP/s per core, {peak:.0f} on both; "
          "medians of interleaved samples")
    print(_table([(case, run_case(case, args.budget)) for case in cases()], peak))


if __name__ == "__main__":
    main()
