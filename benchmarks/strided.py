"""Compiled elementwise kernels on non-contiguous inputs (transposed and permuted views) against the
same model on contiguous inputs of the same shape, the numpy expression and PyTorch eager.

"tscript" calls the model compiled on the strided example with it; "kernel" calls the model's one
fusion-group kernel (its launcher) with the same arrays, which is what "tscript" costs when the
model runs through the executor instead of the whole-graph entry (the entry copies non-contiguous
inputs to C order first); "contig" calls the model with a C-contiguous array of the same shape and
values. Compiled outputs are always C-contiguous (launchers reuse a previous output buffer that
nothing holds any more, as here where results are dropped); numpy and PyTorch give their results
the layout of the input instead (so they never transpose anything), and numpy's figure includes
allocating its two results.
"""
import numpy as np

import tscript as ts

from .harness import Case, torch

N = 2048


def _case(name: str, fn, x: np.ndarray, *others: np.ndarray) -> Case:
    """`fn` on `x` (a strided view) and `others` (contiguous), with the variants above."""
    args = (ts.from_numpy(x), *map(ts.from_numpy, others))
    contiguous = (ts.from_numpy(np.ascontiguousarray(x)), *args[1:])
    cm = ts.jit.compile(fn, args)
    (kernel,) = cm.native.launchers.values()
    variants = {"tscript": lambda: cm(*args), "kernel": lambda: kernel(x, *others),
                "contig": lambda: cm(*contiguous), "numpy": lambda: fn(x, *others)}
    if torch is not None:
        targs = tuple(torch.from_numpy(a) for a in (x, *others))
        variants["torch"] = lambda: fn(*targs)
    notes = {"strided / contiguous": lambda r: f"{r['tscript'] / r['contig']:.2f}x model, "
                                               f"{r['kernel'] / r['contig']:.2f}x kernel"}
    return Case(name, variants, notes=notes)


def cases() -> list[Case]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, N), dtype=np.float32)
    y = rng.standard_normal((N, N), dtype=np.float32)
    cube = rng.standard_normal((64, 256, 256), dtype=np.float32)
    return [_case(f"x.t() * 2 + 1, ({N}, {N}) float32", lambda a: a * 2 + 1, x.T),
            _case(f"x.t() + y, ({N}, {N}) float32", lambda a, b: a + b, x.T, y),
            _case("x.permute(2, 0, 1) * 2 + 1, (64, 256, 256)", lambda a: a * 2 + 1, cube.transpose(2, 0, 1))]
