"""tscript.save / tscript.load: round trips of tensors and nested containers, and a clear
ModelError (never code execution) for corrupt, tampered or hostile files."""
import hashlib
import io
import json
import math
import os
import pathlib
import zipfile
from collections import OrderedDict, namedtuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tscript as ts
from tests.conftest import assert_close
from tests.runtime.json_paths import json_paths
from tscript_runtime import ModelError

DTYPES = [ts.float32, ts.float64, ts.int32, ts.int64, ts.bool]


def round_trip(obj):
    buf = io.BytesIO()
    ts.save(obj, buf)
    buf.seek(0)
    return ts.load(buf)


def assert_same_tensor(a, b):
    assert isinstance(b, ts.Tensor)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def state_dict():
    return OrderedDict([("fc.weight", ts.randn(4, 3)), ("fc.bias", ts.zeros(4)),
                        ("bn.num_batches_tracked", ts.tensor(7)), ("emb.weight", ts.randn(5, 2).double())])


# -- round trips ------------------------------------------------------------------------------------

def test_state_dict_round_trip_keeps_order_types_and_values():
    sd = state_dict()
    out = round_trip(sd)
    assert type(out) is OrderedDict and list(out) == list(sd)
    for key in sd:
        assert_same_tensor(sd[key], out[key])


def test_optimizer_state_like_structure():
    obj = {"state": {0: {"step": ts.tensor(3.0), "exp_avg": ts.ones(2, 2)}, 1: {}},
           "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "amsgrad": False,
                             "params": [0, 1], "name": None, "tag": "héllo ✓"}]}
    out = round_trip(obj)
    assert list(out["state"]) == [0, 1] and out["state"][1] == {}
    assert_same_tensor(obj["state"][0]["exp_avg"], out["state"][0]["exp_avg"])
    assert out["param_groups"][0] == {**obj["param_groups"][0]}
    assert type(out["param_groups"][0]["betas"]) is tuple


def test_scalars_keep_their_exact_types():
    values = [0, -3, 2 ** 80, 1.0, -0.0, 1e-300, True, False, None, "", "text", math.inf, -math.inf]
    out = round_trip(values)
    assert out == values and [type(v) for v in out] == [type(v) for v in values]
    assert math.copysign(1, out[4]) == -1
    assert math.isnan(round_trip(math.nan))


def test_dict_keys_of_every_scalar_type():
    obj = {"a": 1, 2: "b", 2.5: None, True: 3, None: [], "": ()}
    out = round_trip(obj)
    assert out == obj and list(out) == list(obj)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype(dtype):
    t = (ts.arange(12).reshape(3, 4) % 5).to(dtype)
    assert_same_tensor(t, round_trip(t))


@pytest.mark.parametrize("make", [lambda: ts.tensor(2.5), lambda: ts.tensor(True), lambda: ts.tensor(-4),
                                  lambda: ts.zeros(0), lambda: ts.zeros(3, 0, 2, dtype=ts.int32),
                                  lambda: ts.ones(1, 1, 1, 1)])
def test_zero_dim_and_empty_tensors(make):
    t = make()
    assert_same_tensor(t, round_trip(t))


def test_non_contiguous_views_are_saved_by_value():
    base = ts.arange(24.0).reshape(2, 3, 4)
    views = [base.transpose(0, 2), base.permute(1, 2, 0), ts.from_numpy(base.numpy()[:, ::2, 1::2]),
             base.expand(3, 2, 3, 4)]
    out = round_trip(views)
    for v, o in zip(views, out):
        assert not v.is_contiguous()
        assert_same_tensor(v, o)
        assert o.is_contiguous()


def test_views_of_one_storage_load_as_independent_copies():
    base = ts.zeros(2, 3)
    out = round_trip({"base": base, "view": base.t()})
    out["base"].add_(1)
    assert out["view"].tolist() == [[0, 0], [0, 0], [0, 0]]


def test_the_same_tensor_twice_loads_as_one_tensor():
    w = ts.randn(3)
    out = round_trip({"a": w, "b": [w], "c": w.clone()})
    assert out["a"] is out["b"][0] and out["c"] is not out["a"]
    buf = io.BytesIO()
    ts.save([w, w, w], buf)
    assert len([n for n in zipfile.ZipFile(buf).namelist() if n.endswith(".npy")]) == 1


def test_loaded_tensors_are_fresh_writable_and_independent(tmp_path):
    t = ts.arange(6.0)
    path = tmp_path / "t.pt"
    ts.save(t, path)
    a, b = ts.load(path), ts.load(path)
    a.mul_(10)
    assert b.tolist() == [0, 1, 2, 3, 4, 5] and t.tolist() == [0, 1, 2, 3, 4, 5]
    assert a.numpy().flags.writeable and a._version == 1


def test_requires_grad_is_preserved():
    w = ts.randn(2, requires_grad=True)
    out = round_trip({"w": w, "x": ts.randn(2)})
    assert out["w"].requires_grad and out["w"].is_leaf and not out["x"].requires_grad


def test_tuple_subclasses_load_as_tuples():
    Point = namedtuple("Point", "x y")
    assert round_trip([Point(1, 2), ts.Size([2, 3])]) == [(1, 2), (2, 3)]


@pytest.mark.parametrize("to_target", [str, pathlib.Path])
def test_paths(tmp_path, to_target):
    target = to_target(tmp_path / "sd.pt")
    sd = state_dict()
    ts.save(sd, target)
    out = ts.load(target)
    for key in sd:
        assert_same_tensor(sd[key], out[key])


def test_file_objects(tmp_path):
    path = tmp_path / "f.pt"
    with open(path, "wb") as f:
        ts.save([ts.ones(2)], f)
    with open(path, "rb") as f:
        assert ts.load(f)[0].tolist() == [1, 1]


def test_load_keyword_arguments():
    buf = io.BytesIO()
    ts.save(ts.ones(2), buf)
    for kwargs in ({"map_location": "cpu"}, {"map_location": ts.device("cpu")}, {"weights_only": True},
                   {"weights_only": False}, {"map_location": None}):
        buf.seek(0)
        assert ts.load(buf, **kwargs).tolist() == [1, 1]
    buf.seek(0)
    with pytest.raises(RuntimeError, match="device 'cuda:0' is not available"):
        ts.load(buf, map_location="cuda:0")


def test_values_match_torch_after_round_trip(oracle):
    data = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    out = round_trip({"x": ts.tensor(data)})["x"]
    assert_close(out, oracle.tensor(data))


# -- what cannot be saved ------------------------------------------------------------------------------

@pytest.mark.parametrize("obj,match", [
    ({1, 2}, "cannot save an object of type set"),
    ([np.ones(2)], "cannot save an object of type ndarray"),
    ({"f": lambda: 0}, "cannot save an object of type function"),
    ({(1, 2): ts.ones(1)}, "cannot save a dict key of type tuple"),
    (np.float32(1.0), "cannot save an object of type float32"),
])
def test_unsupported_objects(obj, match):
    with pytest.raises(TypeError, match=match):
        ts.save(obj, io.BytesIO())


def test_recursive_containers():
    loop = [1]
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        ts.save(loop, io.BytesIO())
    shared = [1]
    assert round_trip([shared, shared]) == [[1], [1]]  # sharing without a cycle is fine


# -- corrupt and hostile files --------------------------------------------------------------------------

@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "model.pt"
    ts.save({"w": ts.arange(8.0).reshape(2, 4), "n": 3}, path)
    return path


def rewrite(path, *, manifest=None, members=None, drop=(), rehash=False):
    """Rebuild the zip at `path` with changes (and optionally recomputed checksums)."""
    with zipfile.ZipFile(path) as zf:
        contents = {n: zf.read(n) for n in zf.namelist()}
    man = json.loads(contents.pop("manifest.json"))
    contents.update(members or {})
    if rehash:
        man["members"] = {n: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)}
                          for n, d in contents.items() if n not in drop}
    man.update(manifest or {})
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("manifest.json", json.dumps(man))
        for name, data in contents.items():
            if name not in drop:
                zf.writestr(name, data)
    return man


def npy_member(path):
    with zipfile.ZipFile(path) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".npy"))
        return name, zf.read(name)


def test_truncated_file(saved):
    saved.write_bytes(saved.read_bytes()[:-40])
    with pytest.raises(ModelError, match=r"model.pt: not a valid archive \(not a zip file, or truncated\)"):
        ts.load(saved)


def test_random_bytes(saved):
    saved.write_bytes(os.urandom(500))
    with pytest.raises(ModelError, match="model.pt: not a valid archive"):
        ts.load(saved)


def test_missing_file(tmp_path):
    with pytest.raises(ModelError, match="absent.pt: no such file"):
        ts.load(tmp_path / "absent.pt")


def test_tampered_npy_member(saved):
    name, data = npy_member(saved)
    flipped = bytearray(data)
    flipped[-1] ^= 0x01
    rewrite(saved, members={name: bytes(flipped)})
    with pytest.raises(ModelError, match=f"model.pt: checksum mismatch for member '{name}'.*tampered"):
        ts.load(saved)


def test_wrong_version(saved):
    rewrite(saved, manifest={"version": 99})
    with pytest.raises(ModelError, match="unsupported tscript.save format version 99"):
        ts.load(saved)


def test_not_a_tscript_save_file(saved):
    rewrite(saved, manifest={"format": "tscript.model"})
    with pytest.raises(ModelError, match="not a tscript.save archive"):
        ts.load(saved)


def test_missing_member(saved):
    name, _ = npy_member(saved)
    rewrite(saved, drop={name})
    with pytest.raises(ModelError, match=f"member '{name}' listed in the manifest is missing"):
        ts.load(saved)


def test_pickled_object_array_is_refused_and_never_executed(saved, tmp_path):
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return open, (str(marker), "w")

    name, _ = npy_member(saved)
    buf = io.BytesIO()
    np.save(buf, np.array([Exploit()], dtype=object), allow_pickle=True)
    rewrite(saved, members={name: buf.getvalue()}, rehash=True)
    with pytest.raises(ModelError, match=f"member '{name}'.*refusing to load pickled data"):
        ts.load(saved)
    assert not marker.exists()


@pytest.mark.parametrize("obj,match", [
    ({"type": "set", "items": []}, "malformed structure: unexpected node"),
    ({"type": {"list": 1}, "items": []}, "malformed structure: unexpected node"),  # not hashable
    ({"type": ["tensor"], "member": "tensors/0.npy"}, "malformed structure: unexpected node"),
    ({"type": "list", "items": [{"type": {}}]}, "malformed structure: unexpected node"),
    ([1, 2], "malformed structure: unexpected node"),
    ({"type": "list"}, "'list' node without a valid 'items'"),
    ({"type": "dict", "items": [[[1], 2]]}, "bad dict item"),
    ({"type": "dict", "items": [["a"]]}, "bad dict item"),
    ({"type": "tensor", "member": "tensors/7.npy"}, "member 'tensors/7.npy' is not listed"),
    ({"type": "tensor", "member": 0}, "'tensor' node without a valid 'member'"),
    ({"type": "tensor", "member": "tensors/0.npy", "dtype": "int64", "shape": [2, 4]},
     r"holds a float32 array of shape \[2, 4\], the manifest says int64 \[2, 4\]"),
    ({"type": "tensor", "member": "tensors/0.npy", "dtype": "float32", "shape": [8]}, "shape"),
])
def test_malformed_structure(saved, obj, match):
    rewrite(saved, manifest={"object": obj})
    with pytest.raises(ModelError, match=match):
        ts.load(saved)


ODD_VALUES = [None, 0, -1, 1.5, "", "x", [], {}, [1], [[1]], {"a": 1}, True, "float32", {"type": "tensor"},
              {"type": {}}, ["list"]]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_field_of_the_object_of_any_type_is_a_model_error_or_loads(saved, data):
    original = saved.read_bytes()
    obj = {"type": "dict", "items": [["w", {"type": "tensor", "member": "tensors/0.npy", "dtype": "float32",
                                             "shape": [2, 4], "requires_grad": False}],
                                      ["l", {"type": "list", "items": [1, {"type": "tuple", "items": [2.5]}]}]]}
    where = data.draw(st.sampled_from(list(json_paths(obj))), label="field")
    doc = json.loads(json.dumps(obj))
    target = doc
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = data.draw(st.sampled_from(ODD_VALUES), label="value")
    rewrite(saved, manifest={"object": doc})
    try:
        ts.load(saved)
    except ModelError:
        pass
    saved.write_bytes(original)


def replace_manifest(path, text: str):
    with zipfile.ZipFile(path) as zf:
        contents = {n: zf.read(n) for n in zf.namelist() if n != "manifest.json"}
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("manifest.json", text)
        for name, data in contents.items():
            zf.writestr(name, data)


def test_manifest_without_object(saved):
    man = rewrite(saved)
    del man["object"]
    replace_manifest(saved, json.dumps(man))
    with pytest.raises(ModelError, match="the manifest has no 'object' entry"):
        ts.load(saved)


@pytest.mark.parametrize("depth", [900, 100_000])
def test_deeply_nested_structure_is_an_error_not_a_crash(saved, depth):
    man = rewrite(saved, manifest={"object": "HOLE"})
    nested = '{"type": "list", "items": [' * depth + "1" + "]}" * depth
    replace_manifest(saved, json.dumps(man).replace('"HOLE"', nested))
    with pytest.raises(ModelError, match="model.pt: .*(nested too deeply|not valid JSON)"):
        ts.load(saved)


def test_model_error_is_a_runtime_error(saved):
    saved.write_bytes(b"not a zip")
    with pytest.raises(RuntimeError):
        ts.load(saved)


# -- atomic saves ---------------------------------------------------------------------------------------

def test_unsupported_object_leaves_the_existing_file_intact(saved):
    before = saved.read_bytes()
    with pytest.raises(TypeError):
        ts.save({"ok": ts.ones(2), "bad": object()}, saved)
    assert saved.read_bytes() == before


def test_failure_while_writing_leaves_the_existing_file_intact(saved, monkeypatch):
    before = saved.read_bytes()
    original = zipfile.ZipFile.writestr

    def writestr(self, name, data, *args, **kwargs):
        if getattr(name, "filename", name).endswith(".npy"):
            raise OSError("disk full")
        return original(self, name, data, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "writestr", writestr)
    with pytest.raises(OSError, match="disk full"):
        ts.save(state_dict(), saved)
    monkeypatch.undo()
    assert saved.read_bytes() == before
    assert os.listdir(saved.parent) == [saved.name]
    assert ts.load(saved)["n"] == 3
