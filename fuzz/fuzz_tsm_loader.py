"""Fuzz `tscript_runtime.load` with mutated `.tsm` models, and run those that load.

The input's first byte picks a seed model (fuzz/seeds/*.tsm, made by make_seeds.py); the rest drives
mutations.py's structured mutations of its members, checksums recomputed. Allowed: the model loads
(then its forward runs on the seed's example inputs, and a trainable model also runs backward) or
load raises ModelError / InputError and running raises one of tscript_runtime.errors' OpErrors.
Anything else is a finding (harness.py); so is a native-code fallback (a plan the runtime accepted
but could not emit), a hang (-timeout) or a crash.

    python fuzz/fuzz_tsm_loader.py fuzz/corpus/tsm -max_total_time=600 -timeout=30
"""
import os
import sys
import tempfile
import warnings

import atheris

with atheris.instrument_imports(include=["tscript_runtime"], exclude=["tscript_runtime.ops"]):
    import numpy as np
    import tscript_runtime
    from tscript_runtime.errors import InputError, ModelError, OpError
    from tscript_runtime.model import FORMAT, READABLE_VERSIONS
    from tscript_runtime.native.emit import link_native

from harness import FdpChoices, Finding, finding, findings_dir, main
from mutations import TSM_POOL, Contents, mutate

SEEDS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")


class Seed:
    """A seed model: its contents, and inputs (and output gradients) its forward accepts."""

    def __init__(self, path: str):
        self.contents = Contents.read(path, FORMAT, READABLE_VERSIONS)
        model = tscript_runtime.load(path)
        self.inputs = model.signature.example_inputs(np.random.default_rng(0))
        out = model.run(*self.inputs)
        self.grad_outputs = [np.ones_like(o) for o in (out if isinstance(out, tuple) else (out,))]


def load_seeds(directory: str = SEEDS_DIR) -> list:
    """The seed models, in name order (the first input byte indexes this list)."""
    names = sorted(n for n in os.listdir(directory) if n.endswith(".tsm")) if os.path.isdir(directory) else []
    if not names:
        sys.exit(f"no seed models in {directory}: run `python fuzz/make_seeds.py` first")
    return [Seed(os.path.join(directory, n)) for n in names]


def exercise(path: str, seed: Seed) -> None:
    """Load the file and run it; allowed outcomes return, anything else raises."""
    try:
        model = tscript_runtime.load(path)
    except (ModelError, InputError):
        return
    for name, executable in model.executables.items():
        if executable.mode == "reference":  # llvmlite works here: the plan passed its checks, then emitting failed
            raise Finding(f"entry point '{name}' fell back to the reference kernels: {executable.reason}") \
                from _emit_error(executable)
    try:
        model.run(*seed.inputs)
        if "training" in model.manifest:
            model.run_with_grad(*seed.inputs, grad_outputs=seed.grad_outputs)
    except OpError:
        pass


def _emit_error(executable):
    """The exception emitting the executable's code raises (the runtime keeps only its message)."""
    try:
        link_native(executable.graph, executable.plan)
    except Exception as e:
        return e
    return None


def test_one_input(data: bytes) -> None:
    if not data:
        return
    seed = SEEDS[data[0] % len(SEEDS)]
    blob = mutate(seed.contents, FdpChoices(data[1:]), TSM_POOL).to_bytes()
    with open(WORK, "wb") as f:  # a path, not a stream: load maps files, as in real use
        f.write(blob)
    with finding("tsm", data, blob, ".tsm"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exercise(WORK, seed)


# Mutated plans emit new code on every input: keep those objects out of the user's cache.
os.environ.setdefault("TSCRIPT_CACHE_DIR", os.path.join(tempfile.gettempdir(), "tscript-fuzz-cache"))
# The file being loaded; after a crash in native code it is the reproducer.
WORK = os.path.join(findings_dir("tsm"), f"current-{os.getpid()}.tsm")
SEEDS = load_seeds()

if __name__ == "__main__":
    main("tsm", test_one_input)
