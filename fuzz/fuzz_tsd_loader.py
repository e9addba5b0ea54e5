"""Fuzz `tscript.load` with mutated `tscript.save` files (`.tsd`).

The input's first byte picks a seed file (fuzz/seeds/*.tsd, made by make_seeds.py); the rest drives
mutations.py's structured mutations (the manifest's "object" tree, the `.npy` members), checksums
recomputed. Allowed: the loaded object, or ModelError. Anything else is a finding (harness.py), as
are a hang (-timeout) and a crash.

    python fuzz/fuzz_tsd_loader.py fuzz/corpus/tsd -max_total_time=600 -timeout=30
"""
import os
import sys

import atheris

with atheris.instrument_imports(include=["tscript.tensor_file", "tscript_runtime.archive"]):
    import tscript
    from tscript.tensor_file import FORMAT, VERSION
    from tscript_runtime import ModelError

from harness import FdpChoices, finding, findings_dir, main
from mutations import TSD_POOL, Contents, mutate

SEEDS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")


def load_seeds(directory: str = SEEDS_DIR) -> list:
    """The seed files' contents, in name order (the first input byte indexes this list)."""
    names = sorted(n for n in os.listdir(directory) if n.endswith(".tsd")) if os.path.isdir(directory) else []
    if not names:
        sys.exit(f"no seed files in {directory}: run `python fuzz/make_seeds.py` first")
    return [Contents.read(os.path.join(directory, n), FORMAT, {VERSION}) for n in names]


def exercise(path: str) -> None:
    """Load the file; allowed outcomes return, anything else raises."""
    try:
        tscript.load(path)
    except ModelError:
        pass


def test_one_input(data: bytes) -> None:
    if not data:
        return
    blob = mutate(SEEDS[data[0] % len(SEEDS)], FdpChoices(data[1:]), TSD_POOL).to_bytes()
    with open(WORK, "wb") as f:
        f.write(blob)
    with finding("tsd", data, blob, ".tsd"):
        exercise(WORK)


# The file being loaded; after a crash in native code it is the reproducer.
WORK = os.path.join(findings_dir("tsd"), f"current-{os.getpid()}.tsd")
SEEDS = load_seeds()

if __name__ == "__main__":
    main("tsd", test_one_input)
