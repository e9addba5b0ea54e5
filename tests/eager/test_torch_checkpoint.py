"""`tscript.load` of PyTorch checkpoints (the zip format of torch.save) without torch and without
running code: files written by PyTorch itself (when installed) load into the matching tscript
models and give PyTorch's outputs; files written by tests/eager/torch_format.py (no torch needed)
cover every dtype, views, shared storages and byte order; a pickle naming any global off the
allow-list is refused before anything runs (a marker file is never created)."""
import io
import math
import pickle
import subprocess
import sys
import time
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import tscript as ts
from tests.conftest import assert_close
from tests.eager.torch_format import Call, Global, SavedTensor, pickle_bytes, state_dict_checkpoint, write_checkpoint
from tscript import pickle_scan, torch_checkpoint
from tscript_runtime import ModelError

DTYPES = {np.float32: ts.float32, np.float64: ts.float64, np.int32: ts.int32, np.int64: ts.int64, np.bool_: ts.bool}


def make_cnn(nn):
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(8 * 4 * 4, 10))


def make_mlp(nn):
    return nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4), nn.LogSoftmax(-1))


def make_lstm(nn):
    return nn.LSTM(5, 7, num_layers=2, batch_first=True)


def make_encoder(nn):
    return nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True)


def load_bytes(write) -> object:
    buf = io.BytesIO()
    write(buf)
    buf.seek(0)
    return ts.load(buf)


def first(output):
    return output[0] if isinstance(output, tuple) else output


# -- written by PyTorch ---------------------------------------------------------------------------------

@pytest.mark.parametrize("make, shape", [(make_cnn, (2, 3, 8, 8)), (make_mlp, (3, 6)), (make_lstm, (2, 4, 5)),
                                         (make_encoder, (2, 5, 16))])
def test_a_pytorch_state_dict_loads_into_the_tscript_model_and_gives_pytorchs_outputs(oracle, tmp_path, make, shape):
    oracle.manual_seed(0)
    reference = make(oracle.nn)
    x = oracle.randn(*shape)
    reference(x)  # train mode: batch norm's running statistics move away from their defaults
    reference.eval()
    oracle.save(reference.state_dict(), tmp_path / "model.pt")
    model = make(ts.nn).eval()
    state = ts.load(tmp_path / "model.pt")
    assert type(state) is OrderedDict and list(state) == list(reference.state_dict())
    model.load_state_dict(state)
    with oracle.no_grad():
        expected = first(reference(x))
    assert_close(first(model(ts.tensor(x.numpy()))), expected, rtol=1e-4, atol=1e-5)


def assert_same(got, expected, torch):
    """`got` (loaded by tscript) holds what `expected` (loaded by PyTorch) holds."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(got, ts.Tensor) and got.dtype.name == str(expected.dtype).split(".")[1]
        assert got.requires_grad == expected.requires_grad
        assert isinstance(got, ts.nn.Parameter) == isinstance(expected, torch.nn.Parameter)
        np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
    elif isinstance(expected, torch.dtype):
        assert got is getattr(ts, str(expected).split(".")[1])
    elif isinstance(expected, dict):
        assert type(got) is type(expected) and list(got) == list(expected)
        for key in expected:
            assert_same(got[key], expected[key], torch)
    elif isinstance(expected, (list, tuple)):
        assert type(got).__name__ == type(expected).__name__ and len(got) == len(expected)
        for a, b in zip(got, expected):
            assert_same(a, b, torch)
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(got)
    else:
        assert type(got) is type(expected) and got == expected


def test_a_nested_training_checkpoint_loads_as_pytorch_loads_it(oracle, tmp_path):
    oracle.manual_seed(0)
    model = make_mlp(oracle.nn)
    optimizer = oracle.optim.Adam(model.parameters(), lr=1e-3)
    model(oracle.randn(3, 6)).sum().backward()
    optimizer.step()
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 3,
                  "history": [1.5, float("nan"), None, True, "loss", 2 ** 70], "shape": oracle.Size([2, 3]),
                  "dtype": oracle.float64, "tags": {"a", "b"}, "blob": b"\x00\xff", "pair": (1, (2.5, "x"))}
    oracle.save(checkpoint, tmp_path / "ckpt.pt")
    expected = oracle.load(tmp_path / "ckpt.pt", weights_only=True)
    got = ts.load(tmp_path / "ckpt.pt")
    assert_same(got, expected, oracle)
    resumed = ts.optim.Adam(make_mlp(ts.nn).parameters(), lr=1e-3)
    resumed.load_state_dict(got["optimizer"])
    assert resumed.state_dict()["param_groups"][0]["lr"] == 1e-3


def test_every_dtype_views_and_shared_storages_from_pytorch(oracle, tmp_path):
    base = oracle.arange(24, dtype=oracle.float32)
    tensors = {name: oracle.arange(6).to(getattr(oracle, name)) for name in ("float32", "float64", "int32", "int64")}
    tensors.update(bool=oracle.tensor([True, False, True]), scalar=oracle.tensor(2.5), empty=oracle.zeros(0, 3),
                   base=base, rows=base.view(4, 6)[1:3], columns=base.view(4, 6)[:, 2], transposed=base.view(4, 6).t(),
                   expanded=oracle.tensor([1.0, 2.0]).expand(3, 2), weight=oracle.nn.Parameter(oracle.ones(2, 2)),
                   frozen=oracle.nn.Parameter(oracle.ones(2), requires_grad=False),
                   leaf=oracle.ones(3, requires_grad=True))
    oracle.save(tensors, tmp_path / "tensors.pt")
    got = ts.load(tmp_path / "tensors.pt")
    assert_same(got, oracle.load(tmp_path / "tensors.pt", weights_only=True), oracle)
    assert got["columns"].stride() == (6,) and got["transposed"].stride() == (1, 6)
    got["base"][8] = -1.0  # one storage: every view of it sees the write
    assert got["rows"][0, 2].item() == -1.0 and got["columns"][1].item() == -1.0 and got["transposed"][2, 1].item() == -1.0


def test_a_checkpoint_saved_from_another_device_loads_on_the_cpu(oracle):
    buf = io.BytesIO()
    oracle.save({"w": oracle.ones(2)}, buf)
    moved = io.BytesIO()
    with zipfile.ZipFile(buf) as src, zipfile.ZipFile(moved, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name.endswith("data.pkl"):  # the storage's location, as a checkpoint saved from CUDA has it
                data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
            dst.writestr(name, data)
    moved.seek(0)
    assert ts.load(moved, map_location={"cuda:0": "cpu"})["w"].tolist() == [1.0, 1.0]


def test_pytorchs_legacy_format_is_refused_with_a_clear_message(oracle, tmp_path):
    oracle.save({"w": oracle.ones(2)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(ModelError, match="legacy format .*save it again"):
        ts.load(tmp_path / "old.pt")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_torchscript_archive_is_refused(oracle, tmp_path):
    oracle.jit.save(oracle.jit.script(oracle.nn.Linear(2, 2)), tmp_path / "scripted.pt")
    with pytest.raises(ModelError, match="TorchScript archive"):
        ts.load(tmp_path / "scripted.pt")


def test_dtypes_tscript_lacks_are_refused_by_name(oracle, tmp_path):
    oracle.save({"w": oracle.ones(2, dtype=oracle.uint16)}, tmp_path / "u16.pt")
    with pytest.raises(ModelError, match="dtype uint16.*float32"):
        ts.load(tmp_path / "u16.pt")


# -- written without torch ------------------------------------------------------------------------------

def test_a_state_dict_written_without_torch_loads_into_a_model(tmp_path):
    ts.manual_seed(0)
    source = make_cnn(ts.nn).eval()
    state_dict_checkpoint(source.state_dict(), tmp_path / "model.pt")
    model = make_cnn(ts.nn).eval()
    model.load_state_dict(ts.load(tmp_path / "model.pt"))
    x = ts.randn(2, 3, 8, 8)
    assert_close(model(x), source(x))


@pytest.mark.parametrize("byteorder", ["little", "big"])
@pytest.mark.parametrize("np_dtype", list(DTYPES))
def test_every_dtype_in_either_byte_order(np_dtype, byteorder):
    storage = (np.arange(6) % 2 == 0) if np_dtype is np.bool_ else np.arange(6).astype(np_dtype) - 2
    got = load_bytes(lambda f: write_checkpoint({"t": SavedTensor(storage, size=(2, 3))}, f, byteorder=byteorder))
    assert got["t"].dtype is DTYPES[np_dtype]
    np.testing.assert_array_equal(got["t"].numpy(), storage.reshape(2, 3))


def test_views_of_one_storage_share_memory_and_keep_offset_and_strides():
    base = np.arange(12, dtype=np.float32)
    got = load_bytes(lambda f: write_checkpoint(
        [SavedTensor(base, size=(3, 4)), SavedTensor(base, offset=5, size=(2, 2), stride=(4, 1)),
         SavedTensor(base, size=(4, 3), stride=(1, 4)), SavedTensor(base, offset=11, size=(0, 5)),
         SavedTensor(base, offset=3, size=(), stride=()), SavedTensor(base, offset=2, size=(3, 2), stride=(0, 1))], f))
    whole, block, transposed, empty, scalar, expanded = got
    assert block.tolist() == [[5.0, 6.0], [9.0, 10.0]]
    assert transposed.tolist() == [[0.0, 4.0, 8.0], [1.0, 5.0, 9.0], [2.0, 6.0, 10.0], [3.0, 7.0, 11.0]]
    assert transposed.stride() == (1, 4) and expanded.tolist() == [[2.0, 3.0]] * 3
    assert empty.shape == (0, 5) and scalar.item() == 3.0
    whole[1, 1] = 100.0
    assert block[0, 0].item() == 100.0 and transposed[1, 1].item() == 100.0


def test_the_same_tensor_twice_loads_as_one_object_and_parameters_stay_parameters():
    shared = SavedTensor(np.ones(3, np.float32), parameter=True, requires_grad=True)
    got = load_bytes(lambda f: write_checkpoint({"a": shared, "b": shared, "c": [shared]}, f))
    assert got["a"] is got["b"] is got["c"][0]
    assert isinstance(got["a"], ts.nn.Parameter) and got["a"].requires_grad


def test_file_objects_paths_and_map_location(tmp_path):
    write_checkpoint({"w": SavedTensor(np.ones(2, np.float32))}, tmp_path / "w.pt")
    with open(tmp_path / "w.pt", "rb") as f:
        assert ts.load(f, map_location="cpu")["w"].tolist() == [1.0, 1.0]
    assert ts.load(str(tmp_path / "w.pt"), map_location=ts.device("cpu"), weights_only=True)["w"].shape == (2,)
    with pytest.raises(TypeError, match="map_location"):
        ts.load(tmp_path / "w.pt", map_location=lambda storage, location: storage)
    assert ts.load(tmp_path / "w.pt", mmap=True, pickle_module=pickle)["w"].shape == (2,)  # accepted, as torch.load's
    with pytest.raises(TypeError, match="unexpected keyword argument 'strict'"):
        ts.load(tmp_path / "w.pt", strict=True)


def test_loading_needs_no_torch(tmp_path):
    write_checkpoint({"w": SavedTensor(np.arange(4, dtype=np.float32), size=(2, 2))}, tmp_path / "w.pt")
    code = ("import sys; sys.modules['torch'] = None\n"  # any import of torch now fails
            "import tscript\n"
            f"print(tscript.load({str(tmp_path / 'w.pt')!r})['w'].tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[[0.0, 1.0], [2.0, 3.0]]"


def test_stored_storages_are_read_in_place_from_a_path(tmp_path):
    write_checkpoint({"w": SavedTensor(np.arange(1024, dtype=np.float32))}, tmp_path / "w.pt")
    w = ts.load(tmp_path / "w.pt")["w"].numpy()
    base = w
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    assert not isinstance(base, np.ndarray)  # a view of the file's memory map, not a copy
    w[0] = 5.0  # private pages: the file is never written
    assert ts.load(tmp_path / "w.pt")["w"][0].item() == 0.0


# -- hostile files: refused, and nothing runs -----------------------------------------------------------

PAYLOADS = [Global("os", "system"), Global("posix", "system"), Global("subprocess", "call"),
            Global("builtins", "eval"), Global("__builtin__", "eval"), Global("builtins", "exec"),
            Global("torch", "load"), Global("torch._utils", "_rebuild_qtensor"), Global("numpy", "load")]


def marker_command(marker) -> str:
    return f"touch {marker}"


@pytest.mark.parametrize("protocol", [2, 4])
@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda g: f"{g.module}.{g.name}")
def test_a_global_off_the_allow_list_is_refused_and_nothing_runs(tmp_path, payload, protocol):
    marker = tmp_path / "marker"
    evil = Call(payload, (marker_command(marker),))
    obj = {"weight": SavedTensor(np.ones(2, np.float32)), "payload": [evil]}
    write_checkpoint(obj, tmp_path / "evil.pt", protocol=protocol)
    with pytest.raises(ModelError, match=f"names '{payload.module}.{payload.name}'.*allow-list"):
        ts.load(tmp_path / "evil.pt")
    assert not marker.exists()


def test_the_payload_is_live_for_a_plain_unpickler(tmp_path):
    """(What the refusals above guard against: Python's own pickle runs it.)"""
    marker = tmp_path / "marker"
    data, _ = pickle_bytes([Call(Global("os", "system"), (marker_command(marker),))])
    pickle.loads(data)
    assert marker.exists()


def test_the_payload_inside_an_allowed_call_is_refused_too(tmp_path):
    marker = tmp_path / "marker"
    evil = Call(Global("os", "system"), (marker_command(marker),))
    storage = SavedTensor(np.ones(2, np.float32))
    obj = Call(Global("collections", "OrderedDict"), ([("w", storage), ("x", evil)],))
    write_checkpoint(obj, tmp_path / "evil.pt", protocol=4)  # STACK_GLOBAL: found by find_class, not the scan
    with pytest.raises(ModelError, match="os.system"):
        ts.load(tmp_path / "evil.pt")
    assert not marker.exists()


def test_a_tensor_needs_a_storage_and_build_on_a_dict_leaves_nothing_behind():
    tensor = Call(Global("torch._utils", "_rebuild_tensor_v2"),
                  (Call(Global("torch", "Size"), ((2,),)), 0, (2,), (1,), False, OrderedDict()))
    with pytest.raises(ModelError, match="torch.Size|storage"):
        load_bytes(lambda f: write_checkpoint(tensor, f))
    junk = Call(Global("collections", "OrderedDict"), ([("a", 1)],), state={"keys": "junk", "_metadata": {"": {}}})
    got = load_bytes(lambda f: write_checkpoint(junk, f))
    assert type(got) is OrderedDict and list(got.keys()) == ["a"] and got._metadata == {"": {}}


def test_unsupported_opcodes_are_refused():
    for opcode in (b"(c__builtin__\nset\no.", b"(i__builtin__\nset\n.", b"\x80\x02\x82\x01.", b"P0\n."):
        with pytest.raises(ModelError, match="refusing the pickle opcode"):
            load_bytes(lambda f: write_checkpoint(None, f, pickled=opcode))


def test_a_huge_memo_index_is_refused_before_anything_is_allocated():
    data = b"\x80\x02N" + b"r" + (2 ** 31).to_bytes(4, "little") + b"."  # LONG_BINPUT 2**31
    with pytest.raises(ModelError, match="memo index"):
        load_bytes(lambda f: write_checkpoint(None, f, pickled=data))


def test_a_tuple_that_would_take_forever_to_hash_is_refused_quickly():
    data = bytearray(b"\x80\x02K\x01q\x00")  # 1, memo 0
    for i in range(1, 80):  # t_i = (t_{i-1}, t_{i-1}): 2**80 leaves as a dict key
        data += b"h" + bytes([i - 1]) + b"h" + bytes([i - 1]) + b"\x86q" + bytes([i])
    data += b"}h" + bytes([79]) + b"Ns."  # {t_79: None}
    start = time.perf_counter()
    with pytest.raises(ModelError, match="MAX_TUPLE_ITEMS"):
        load_bytes(lambda f: write_checkpoint(None, f, pickled=bytes(data)))
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("tensor, match", [
    (SavedTensor(np.ones(4, np.float32), size=(5,)), "reaches beyond its storage"),
    (SavedTensor(np.ones(4, np.float32), offset=2, size=(2, 2), stride=(1, 1)), "reaches beyond"),
    (SavedTensor(np.ones(4, np.float32), size=(2,), stride=(-1,)), "bad tensor arguments"),
    (SavedTensor(np.ones(4, np.float32), offset=-1, size=(2,)), "bad tensor arguments"),
    (SavedTensor(np.ones(4, np.float32), size=(2, 2), stride=(1,)), "bad tensor arguments"),
    (SavedTensor(np.ones(4, np.float32), size=(1,) * 65, stride=(1,) * 65), "bad tensor arguments"),
])
def test_tensors_outside_their_storage_are_refused(tensor, match):
    with pytest.raises(ModelError, match=match):
        load_bytes(lambda f: write_checkpoint(tensor, f))


@pytest.mark.parametrize("options, match", [
    ({"extra": {"data/0": b"\x00" * 3}}, "should hold 2 elements"),
    ({"byteorder": "middle"}, "byteorder"),
    ({"version": b"9"}, "unsupported checkpoint format version"),
    ({"extra": {"data/0": b"\x02\x00"}}, "bool values other than 0 and 1"),
    ({"extra": {"code/x.py": b"print()"}}, "TorchScript"),
])
def test_malformed_members_are_refused(options, match):
    tensor = SavedTensor(np.array([True, False]))
    with pytest.raises(ModelError, match=match):
        load_bytes(lambda f: write_checkpoint({"t": tensor}, f, **options))


def test_a_missing_storage_member_and_a_storage_used_with_two_dtypes_are_refused():
    data, _ = pickle_bytes({"t": SavedTensor(np.ones(2, np.float32))})
    with pytest.raises(ModelError, match="has no member archive/data/0"):
        load_bytes(lambda f: write_checkpoint(None, f, pickled=data))
    obj = {"a": SavedTensor(np.ones(2, np.float32)), "b": SavedTensor(np.ones(2, np.int32))}
    data, _ = pickle_bytes(obj)
    assert data.count(b"X\x01\x00\x00\x001") == 1  # storage key '1' ...
    data = data.replace(b"X\x01\x00\x00\x001", b"X\x01\x00\x00\x000")  # ... now names storage '0' again
    members = {"data/0": np.ones(2, np.float32).tobytes()}
    with pytest.raises(ModelError, match="storage '0' is used as 2 elements of int32 and as 2 of float32"):
        load_bytes(lambda f: write_checkpoint(None, f, pickled=data, extra=members))


@pytest.mark.parametrize("data", [b"", b"\x80\x02", b"\x80\x02}q\x00(", b"\x80\x02)R.", b"\x80\x02N0.", b"\xff",
                                  b"\x80\x02]q\x00h\x05."])
def test_malformed_pickles_are_model_errors(data):
    with pytest.raises(ModelError, match="not a valid"):
        load_bytes(lambda f: write_checkpoint(None, f, pickled=data))


def test_a_bare_pickle_and_two_archives_are_refused(tmp_path):
    (tmp_path / "plain.pkl").write_bytes(pickle.dumps({"a": 1}, protocol=2))
    with pytest.raises(ModelError, match="a pickle, which tscript never loads"):
        ts.load(tmp_path / "plain.pkl")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("a/data.pkl", pickle.dumps(1, protocol=2))
        zf.writestr("b/data.pkl", pickle.dumps(1, protocol=2))
    buf.seek(0)
    with pytest.raises(ModelError, match="expected one '<archive>/data.pkl', found 2"):
        torch_checkpoint.load_checkpoint(buf)


def test_the_pickle_size_limit(monkeypatch):
    monkeypatch.setattr(torch_checkpoint, "MAX_PICKLE_BYTES", 16)
    with pytest.raises(ModelError, match="MAX_PICKLE_BYTES"):
        load_bytes(lambda f: write_checkpoint({"a": "x" * 100}, f))


def test_the_scan_accepts_what_pythons_pickler_writes_and_names_its_globals():
    for obj in ({"a": [1, (2, 3)], "b": {1, 2}}, OrderedDict(x=b"\x00"), [[]] * 3, (1, ("s", None)), ((1,),) * 3):
        for protocol in range(6):
            names = pickle_scan.scan(pickle.dumps(obj, protocol=protocol), "x")
            if protocol < 4 and isinstance(obj, OrderedDict):
                assert names[0] == "collections.OrderedDict"


def test_build_on_a_constant_is_refused():
    data = b"\x80\x02ctorch\nfloat32\n}X\x04\x00\x00\x00nameX\x04\x00\x00\x00evilsb."
    with pytest.raises(ModelError, match="sets the state of a Constant"):
        load_bytes(lambda f: write_checkpoint(None, f, pickled=data))
    assert ts.float32.name == "float32"
