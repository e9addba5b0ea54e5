"""`tscript.save(..., format="safetensors")` and `tscript.load` of `.safetensors` files: every tscript
dtype round-trips, files of the safetensors package (and of PyTorch, when installed) load with
the same values, other dtypes and corrupt files are ModelErrors."""
import io
import os
import struct

import numpy as np
import pytest

import tscript as ts
from tscript_runtime import ModelError

safetensors_numpy = pytest.importorskip("safetensors.numpy")

DTYPES = [ts.float32, ts.float64, ts.int32, ts.int64, ts.bool]


def state_dict():
    return {name: (ts.arange(6) % 2 == 0 if d is ts.bool else ts.arange(6).to(d)).reshape(2, 3)
            for name, d in zip("abcde", DTYPES)}


def test_every_dtype_round_trips_through_a_path(tmp_path):
    sd = state_dict()
    ts.save(sd, tmp_path / "m.safetensors")  # the suffix picks the format
    got = ts.load(tmp_path / "m.safetensors")
    assert sorted(got) == sorted(sd)
    for name, t in sd.items():
        assert got[name].dtype is t.dtype
        np.testing.assert_array_equal(got[name].numpy(), t.numpy())
    got["a"][0, 0] = 7  # fresh, writable tensors
    assert got["a"][0, 0].item() == 7


def test_file_objects_metadata_and_views(tmp_path):
    base = ts.arange(12.0).reshape(3, 4)
    buf = io.BytesIO()
    ts.save({"t": base.t(), "row": base[1]}, buf, format="safetensors", metadata={"epoch": "3"})
    buf.seek(0)
    got = ts.load(buf)
    assert got["t"].tolist() == base.t().tolist() and got["row"].tolist() == [4.0, 5.0, 6.0, 7.0]
    assert safetensors_numpy.load(buf.getvalue())["t"].shape == (4, 3)
    header = buf.getvalue()[8:8 + struct.unpack("<Q", buf.getvalue()[:8])[0]]
    assert b'"epoch":"3"' in header


def test_a_file_of_the_safetensors_package_loads(tmp_path):
    arrays = {"w": np.random.default_rng(0).standard_normal((3, 2)).astype(np.float32), "i": np.arange(3)}
    safetensors_numpy.save_file(arrays, tmp_path / "w.bin")  # the contents tell the format, not the name
    got = ts.load(tmp_path / "w.bin")
    np.testing.assert_array_equal(got["w"].numpy(), arrays["w"])
    assert got["i"].dtype is ts.int64


def test_a_pytorch_model_saved_as_safetensors_loads_into_a_tscript_model(oracle, tmp_path):
    torch_io = pytest.importorskip("safetensors.torch")
    oracle.manual_seed(0)
    reference = oracle.nn.Sequential(oracle.nn.Linear(4, 8), oracle.nn.Tanh(), oracle.nn.Linear(8, 2))
    torch_io.save_file(reference.state_dict(), tmp_path / "m.safetensors")
    model = ts.nn.Sequential(ts.nn.Linear(4, 8), ts.nn.Tanh(), ts.nn.Linear(8, 2))
    model.load_state_dict(ts.load(tmp_path / "m.safetensors"))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(model(ts.tensor(x)).detach().numpy(),
                               reference(oracle.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_dtypes_tscript_lacks_are_refused_by_name(tmp_path):
    safetensors_numpy.save_file({"h": np.ones(2, np.uint16)}, tmp_path / "h.safetensors")
    with pytest.raises(ModelError, match="tensor 'h' is of dtype uint16"):
        ts.load(tmp_path / "h.safetensors")


@pytest.mark.parametrize("damage", [lambda d: d[:-3], lambda d: d.replace(b'"F32"', b'"X32"'), lambda d: d[:10],
                                    lambda d: struct.pack("<Q", 2) + b"{}" + d[10:]])
def test_corrupt_files_are_model_errors(tmp_path, damage):
    ts.save({"w": ts.ones(4)}, tmp_path / "w.safetensors")
    path = tmp_path / "w.safetensors"
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(ModelError, match="w.safetensors"):
        ts.load(path)


def test_what_cannot_be_saved(tmp_path):
    with pytest.raises(TypeError, match="dict of str -> Tensor.*'n': int"):
        ts.save({"w": ts.ones(2), "n": 3}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="metadata"):
        ts.save({"w": ts.ones(2)}, tmp_path / "x.safetensors", metadata={"a": 1})
    with pytest.raises(ValueError, match="unknown format 'onnx'"):
        ts.save({"w": ts.ones(2)}, tmp_path / "x", format="onnx")
    with pytest.raises(ValueError, match="metadata is only stored"):
        ts.save({"w": ts.ones(2)}, tmp_path / "x", metadata={"a": "b"})
    assert not list(tmp_path.iterdir())


def test_a_failed_save_keeps_the_existing_file(tmp_path, monkeypatch):
    path = tmp_path / "w.safetensors"
    ts.save({"w": ts.ones(2)}, path)
    before = path.read_bytes()
    def fail(fd):
        raise OSError("disk full")
    monkeypatch.setattr(os, "fsync", fail)  # after the new bytes were written to the temporary file
    with pytest.raises(OSError, match="disk full"):
        ts.save({"w": ts.zeros(2)}, path)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["w.safetensors"]
