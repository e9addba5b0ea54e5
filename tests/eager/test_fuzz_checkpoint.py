"""The checkpoint fuzzer's property (fuzz/fuzz_checkpoint.py), bounded: seed checkpoints written
without torch (fuzz/make_seeds.py), mutated by fuzz/checkpoint_mutations.py with hypothesis making
the choices. A mutated checkpoint loads (every tensor in it readable) or is refused with a
ModelError; never another exception, a crash, or code running (the payload's marker file)."""
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tscript as ts
from fuzz import make_seeds
from fuzz.checkpoint_mutations import MARKER, Checkpoint, mutate_checkpoint
from tests.fuzz_choices import DrawChoices
from tscript_runtime import ModelError

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def seeds():
    os.makedirs(os.path.dirname(MARKER), exist_ok=True)  # so that a payload that ran would leave its marker
    return [Checkpoint.from_bytes(data) for data in make_seeds.checkpoint_seeds().values()]


def read_all(obj, seen) -> None:
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, ts.Tensor):
        obj.detach().numpy().sum()
    for item in (obj.items() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple, set)) else ()):
        read_all(item, seen)


def test_the_seeds_load(seeds, tmp_path):
    for seed in seeds:
        (tmp_path / "seed.pt").write_bytes(seed.to_bytes())
        read_all(ts.load(tmp_path / "seed.pt"), set())


@FUZZ
@given(data=st.data())
def test_a_mutated_checkpoint_loads_or_is_refused_and_never_runs_code(seeds, tmp_path, data):
    seed = data.draw(st.sampled_from(seeds), label="seed")
    path = tmp_path / "mutated.pt"
    path.write_bytes(mutate_checkpoint(seed, DrawChoices(data)).to_bytes())
    try:
        read_all(ts.load(path), set())
    except ModelError:
        pass
    assert not os.path.exists(MARKER), "loading the checkpoint ran code"
