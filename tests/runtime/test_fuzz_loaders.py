"""The loader fuzzers' properties (fuzz/fuzz_tsm_loader.py, fuzz/fuzz_tsd_loader.py), bounded: seed files
made by tscript (fuzz/make_seeds.py), mutated by fuzz/mutations.py with hypothesis making the choices,
checksums recomputed (an attacker writes the whole file). A mutated `.tsm` loads and runs, or is refused
with a ModelError (InputError / an OpError from running); a mutated `tscript.save` file loads or is
refused with a ModelError. Never another exception, a crash or a native-code fallback."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tscript as ts
import tscript_runtime as rt
from tscript.tensor_file import FORMAT as TSD_FORMAT, VERSION as TSD_VERSION
from tscript_runtime.errors import InputError, ModelError, OpError
from tscript_runtime.model import FORMAT, READABLE_VERSIONS

from fuzz import make_seeds
from fuzz.mutations import TSD_POOL, TSM_POOL, Contents, mutate
from tests.fuzz_choices import DrawChoices

FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """(contents, example inputs, output gradients) of every seed model."""
    tmp = tmp_path_factory.mktemp("seeds")
    seeds = []
    for name, obj in make_seeds.model_seeds().items():
        ts.jit.save(obj, tmp / f"{name}.tsm")
        model = rt.load(tmp / f"{name}.tsm")
        inputs = model.signature.example_inputs(np.random.default_rng(0))
        out = model.run(*inputs)
        grads = [np.ones_like(o) for o in (out if isinstance(out, tuple) else (out,))]
        seeds.append((Contents.read(tmp / f"{name}.tsm", FORMAT, READABLE_VERSIONS), inputs, grads))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TSCRIPT_CACHE_DIR", str(tmp / "cache"))  # mutated plans emit code: not into the user's cache
        yield seeds


@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    """The contents of every seed `tscript.save` file."""
    tmp = tmp_path_factory.mktemp("objects")
    for name, obj in make_seeds.object_seeds().items():
        ts.save(obj, tmp / f"{name}.tsd")
    return [Contents.read(tmp / f"{name}.tsd", TSD_FORMAT, {TSD_VERSION}) for name in make_seeds.object_seeds()]


@FUZZ
@given(data=st.data())
def test_a_mutated_model_runs_or_is_refused(models, tmp_path, data):
    contents, inputs, grads = data.draw(st.sampled_from(models), label="seed")
    path = tmp_path / "mutated.tsm"
    path.write_bytes(mutate(contents, DrawChoices(data), TSM_POOL).to_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # version-1 files say their code is not run
        try:
            model = rt.load(path)
        except (ModelError, InputError):
            return
    assert all(e.mode != "reference" for e in model.executables.values()), "a checked plan failed to emit"
    try:
        model.run(*inputs)
        if "training" in model.manifest:
            model.run_with_grad(*inputs, grad_outputs=grads)
    except OpError:
        pass


@FUZZ
@given(data=st.data())
def test_a_mutated_saved_object_loads_or_is_refused(objects, tmp_path, data):
    contents = data.draw(st.sampled_from(objects), label="seed")
    path = tmp_path / "mutated.tsd"
    path.write_bytes(mutate(contents, DrawChoices(data), TSD_POOL).to_bytes())
    try:
        ts.load(path)
    except ModelError:
        pass
