"""A saved scripted function's argument defaults: the standalone runtime fills in what a call leaves
out, takes inputs by name, and refuses names it does not know and malformed defaults in a file."""
import json
import zipfile

import numpy as np
import pytest

import tscript as ts
import tscript_runtime as rt
from tscript_runtime.errors import InputError


@ts.jit.script
def scaled(x, n: int = 3, shift: float = 0.5):
    return x * n + shift


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("defaults") / "scaled.tsm"
    ts.jit.save(scaled, path)
    return path


def test_defaults_fill_in_what_a_call_leaves_out(saved):
    model, x = rt.load(saved), np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(model.run(x), x * 3 + 0.5)
    np.testing.assert_array_equal(model.run(x, 2), x * 2 + 0.5)
    np.testing.assert_array_equal(model.run(x, shift=-1.0), x * 3 - 1)
    np.testing.assert_array_equal(model.run(x=x, n=1), x + 0.5)


def test_unknown_repeated_and_missing_inputs_are_refused(saved):
    model, x = rt.load(saved), np.ones(2, np.float32)
    with pytest.raises(InputError, match="unexpected .* input 'scale'"):
        model.run(x, scale=1.0)
    with pytest.raises(InputError, match="unexpected .* input 'x'"):
        model.run(x, x=x)
    with pytest.raises(InputError, match="missing input 'x'"):
        model.run()
    with pytest.raises(InputError, match="missing input 'x'"):
        model.run(n=2)


def test_defaults_are_in_the_manifest_and_malformed_ones_are_a_model_error(saved):
    with zipfile.ZipFile(saved) as z:
        manifest = json.loads(z.read(next(n for n in z.namelist() if n.endswith("manifest.json"))))
    assert manifest["entry_points"]["forward"]["defaults"] == {"n": 3, "shift": 0.5}
    signature = rt.load(saved).entry("forward").signature
    for bad in ({"nope": 1}, {"n": [1, 2]}, {"shift": float("inf")}, ["n"]):
        with pytest.raises(rt.ModelError, match="'defaults' must map input names to plain values"):
            rt.model._defaults(_Archive(), bad, signature, "entry point 'forward'")


class _Archive:
    """What the reader asks of an archive here: an error naming the file."""

    @staticmethod
    def error(message):
        return rt.ModelError(message)
