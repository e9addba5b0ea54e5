"""Fuzz `tscript.load` with mutated PyTorch checkpoints (torch.save's zip format).

The input's first byte picks a seed (fuzz/seeds/*.pt, written without torch by make_seeds.py); the
rest drives checkpoint_mutations.py: opcodes of data.pkl deleted, duplicated, moved, changed or
inserted (globals allowed and forbidden among them), storages cut or changed, records and member
names changed. Allowed: the loaded object (every tensor in it readable), or ModelError. A finding:
anything else, a hang (-timeout), a crash, or the marker file that the forbidden globals' payload
(`touch`) would create: loading must never run code.

    python fuzz/fuzz_checkpoint.py fuzz/corpus/checkpoint -max_total_time=600 -timeout=30
"""
import os
import sys

import atheris

with atheris.instrument_imports(include=["tscript.torch_checkpoint", "tscript.torch_pickle", "tscript.pickle_scan",
                                         "tscript.serialization", "tscript_runtime.archive"]):
    import tscript
    from tscript_runtime import ModelError

from checkpoint_mutations import MARKER, Checkpoint, mutate_checkpoint
from harness import FdpChoices, Finding, finding, findings_dir, main

SEEDS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")


def load_seeds(directory: str = SEEDS_DIR) -> list:
    """The seed checkpoints, in name order (the first input byte indexes this list)."""
    names = sorted(n for n in os.listdir(directory) if n.endswith(".pt")) if os.path.isdir(directory) else []
    if not names:
        sys.exit(f"no seed checkpoints in {directory}: run `python fuzz/make_seeds.py` first")
    return [Checkpoint.from_bytes(open(os.path.join(directory, n), "rb").read()) for n in names]


def touch_tensors(obj, seen=None) -> None:
    """Read every tensor of a loaded object (a view outside its storage would fault here)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, tscript.Tensor):
        obj.detach().numpy().sum()
    elif isinstance(obj, dict):
        for k, v in obj.items():
            touch_tensors(k, seen)
            touch_tensors(v, seen)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            touch_tensors(v, seen)


def exercise(path: str) -> None:
    """Load the file; allowed outcomes return, anything else raises."""
    try:
        touch_tensors(tscript.load(path))
    except ModelError:
        pass
    finally:
        if os.path.exists(MARKER):
            os.unlink(MARKER)
            raise Finding("loading the checkpoint ran code (the marker file appeared)")


def test_one_input(data: bytes) -> None:
    if not data:
        return
    blob = mutate_checkpoint(SEEDS[data[0] % len(SEEDS)], FdpChoices(data[1:])).to_bytes()
    with open(WORK, "wb") as f:
        f.write(blob)
    with finding("checkpoint", data, blob, ".pt"):
        exercise(WORK)


# The file being loaded; after a crash in native code it is the reproducer.
WORK = os.path.join(findings_dir("checkpoint"), f"current-{os.getpid()}.pt")
SEEDS = load_seeds()

if __name__ == "__main__":
    main("checkpoint", test_one_input)
