"""What a file may make a loader spend is bounded before anything is allocated: zip bombs (a deflated
member or manifest that inflates a thousand times, members that overlap), example shapes that would
allocate gigabytes while a model prepares its first run; and the temporary files of saves killed
midway are swept by the next save to the same place."""
import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
import zlib

import numpy as np
import pytest

import tscript as ts
import tscript_runtime as rt
from tscript import nn
from tscript_runtime import ModelError, archive, graph_entry
from tscript_runtime import model as model_module
from tscript_runtime.archive import MANIFEST, array_bytes, read_archive, write_archive
from tscript_runtime.signature import MAX_EXAMPLE_ELEMENTS

FMT = "test.format"
LOADERS = [rt.load, ts.jit.load]
_BLOCK = 1 << 20


def deflated_zeros(n: int) -> bytes:
    """A genuine deflate stream of `n` (a multiple of 1 MiB) zero bytes, about 1000 times smaller."""
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = block.compress(bytes(_BLOCK)) + block.flush(zlib.Z_FULL_FLUSH)  # self-contained: repeatable
    return chunk * (n // _BLOCK) + zlib.compressobj(9, zlib.DEFLATED, -15).flush()


def write_zip(path, stored: dict, deflated: dict) -> None:
    """A zip of `stored` members (name -> bytes) and `deflated` ones (name -> (deflate stream, the
    size it inflates to)), the latter written as they are and described by the zip's directory as
    deflated members of that size (their CRC is not checked: the limits come before any reading)."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in stored.items():
            zf.writestr(name, data)
        for name, (stream, size) in deflated.items():
            zf.writestr(name, stream)
            info = zf.getinfo(name)
            info.compress_type, info.file_size = zipfile.ZIP_DEFLATED, size


def manifest(members: dict) -> bytes:
    listing = {name: {"sha256": "0" * 64, "size": size} for name, size in members.items()}
    return json.dumps({"format": FMT, "version": 1, "members": listing}).encode()


def test_the_deflate_stream_is_genuine():
    out = zlib.decompressobj(-15).decompress(deflated_zeros(4 * _BLOCK))
    assert out == bytes(4 * _BLOCK)


# -- zip bombs ----------------------------------------------------------------------------------------

def test_a_member_inflating_to_2_gib_is_refused_before_inflating(tmp_path):
    path = tmp_path / "bomb.tsm"
    bomb = deflated_zeros(2 << 30)
    write_zip(path, {MANIFEST: manifest({"params/w.npy": 2 << 30})}, {"params/w.npy": (bomb, 2 << 30)})
    assert path.stat().st_size < 2_200_000
    start = time.perf_counter()
    with pytest.raises(ModelError, match=r"bomb.tsm: member 'params/w.npy': .* beyond MAX_INFLATED_BYTES "
                                         r"\(1073741824\)"):
        read_archive(path, FMT, {1})
    assert time.perf_counter() - start < 1


def test_a_high_compression_ratio_is_refused(tmp_path):
    path = tmp_path / "bomb.tsm"
    write_zip(path, {MANIFEST: manifest({"notes.txt": 64 << 20})}, {"notes.txt": (deflated_zeros(64 << 20), 64 << 20)})
    with pytest.raises(ModelError, match=r"member 'notes.txt': the compressed members would inflate 10\d\d times "
                                         r".*beyond MAX_COMPRESSION_RATIO \(100\)"):
        read_archive(path, FMT, {1})


def test_a_manifest_padded_to_2_gib_is_refused(tmp_path):
    path = tmp_path / "bomb.tsm"
    write_zip(path, {}, {MANIFEST: (deflated_zeros(2 << 30), 2 << 30)})
    with pytest.raises(ModelError, match=r"member 'manifest.json' has 2147483648 bytes, more than MAX_MANIFEST_BYTES"):
        read_archive(path, FMT, {1})


def test_a_deflated_manifest_of_spaces_is_refused(tmp_path):
    path = tmp_path / "bomb.tsm"
    text = manifest({}).replace(b"{", b"{" + b" " * (32 << 20), 1)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(MANIFEST, text)
    with pytest.raises(ModelError, match="member 'manifest.json': .*MAX_COMPRESSION_RATIO"):
        read_archive(path, FMT, {1})


def test_overlapping_members_are_refused(tmp_path):
    """Many directory entries for one member's bytes: each within the file, together far beyond it."""
    path = tmp_path / "overlap.tsm"
    data = bytes(1 << 16)
    names = [f"m{i}" for i in range(64)]
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(MANIFEST, manifest(dict.fromkeys(names, len(data))))
        zf.writestr(names[0], data)
        for name in names[1:]:
            info = zipfile.ZipInfo(name)
            first = zf.infolist()[1]
            info.header_offset, info.CRC = first.header_offset, first.CRC
            info.file_size = info.compress_size = len(data)
            zf.filelist.append(info)
    with pytest.raises(ModelError, match=r"overlap.tsm: its members claim \d+ bytes of a file of \d+ bytes"):
        read_archive(path, FMT, {1})


def test_a_bomb_in_a_saved_model_is_refused_by_both_loaders(tmp_path):
    path = tmp_path / "model.tsm"
    ts.jit.save(ts.jit.trace(nn.Linear(4, 3), ts.randn(2, 4)), path)
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    listing = json.loads(members[MANIFEST])
    listing["members"]["params/pad.npy"] = {"sha256": "0" * 64, "size": 256 << 20}
    members[MANIFEST] = json.dumps(listing).encode()
    write_zip(path, members, {"params/pad.npy": (deflated_zeros(256 << 20), 256 << 20)})
    for load in LOADERS:
        with pytest.raises(ModelError, match="model.tsm: member 'params/pad.npy': .*MAX_COMPRESSION_RATIO"):
            load(path)


def test_compressed_members_within_the_limits_load(tmp_path):
    """Other zip tools' files (deflated members) load, small ones of zeros too."""
    path = tmp_path / "zipped.tsm"
    members = {"params/w.npy": array_bytes(np.random.default_rng(0).standard_normal((64, 64))),
               "params/zeros.npy": array_bytes(np.zeros(4096))}
    write_archive(path, FMT, 1, {"entry": "forward"}, members)
    with zipfile.ZipFile(path) as zf:
        contents = {n: zf.read(n) for n in zf.namelist()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in contents.items():
            zf.writestr(name, data)
    np.testing.assert_array_equal(read_archive(path, FMT, {1}).array("params/zeros.npy"), np.zeros(4096))


def test_the_inflated_total_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "MAX_INFLATED_BYTES", 100_000)
    path = tmp_path / "big.tsm"
    noise = np.random.default_rng(0).bytes(60_000)  # incompressible: only the total can stop it
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(MANIFEST, manifest({"a": len(noise), "b": len(noise)}))
        zf.writestr("a", noise)
        zf.writestr("b", noise)
    with pytest.raises(ModelError, match=r"member 'b': .* beyond MAX_INFLATED_BYTES \(100000\)"):
        read_archive(path, FMT, {1})


def test_a_stored_manifest_beyond_the_limit_is_refused_and_never_written(tmp_path, monkeypatch):
    path = tmp_path / "m.tsm"
    write_archive(path, FMT, 1, {"entry": "x" * 2000}, {})
    monkeypatch.setattr(archive, "MAX_MANIFEST_BYTES", 1000)
    with pytest.raises(ModelError, match=r"m.tsm: member 'manifest.json' has \d+ bytes, more than "
                                         r"MAX_MANIFEST_BYTES \(1000\)"):
        read_archive(path, FMT, {1})
    with pytest.raises(ValueError, match=r"more than MAX_MANIFEST_BYTES \(1000\)"):
        write_archive(tmp_path / "n.tsm", FMT, 1, {"entry": "x" * 2000}, {})
    assert not (tmp_path / "n.tsm").exists()


def test_a_stored_member_claiming_more_than_the_file_is_refused():
    """From a stream (no memory map) a stored member is read into a buffer of the size it claims."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(MANIFEST, manifest({"notes.txt": 1 << 31}))
        zf.writestr("notes.txt", b"hello")
    data = bytearray(buf.getvalue())
    central = data.rindex(b"PK\x01\x02")  # the last member's directory entry: its uncompressed size
    data[central + 24:central + 28] = (1 << 31).to_bytes(4, "little")
    with pytest.raises(ModelError, match="member 'notes.txt' is stored with 5 bytes but claims 2147483648"):
        read_archive(io.BytesIO(bytes(data)), FMT, {1})


# -- example shapes -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    ts.manual_seed(0)
    module = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 10)).eval()
    path = tmp_path_factory.mktemp("limits") / "compiled.tsm"
    ts.jit.save(ts.jit.compile(module, ts.randn(4, 16), dynamic={0: [0]}), path)
    return path


def with_example_shape(src, dst, shape):
    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    listing = json.loads(members.pop(MANIFEST))
    listing["entry_points"]["forward"]["inputs"][0]["example_shape"] = shape
    with zipfile.ZipFile(dst, "w") as zf:
        zf.writestr(MANIFEST, json.dumps(listing))
        for name, data in members.items():
            zf.writestr(name, data)
    return dst


def prepared_arena(model) -> int:
    local = model.executables["forward"].entry._local
    return local.arena.nbytes if hasattr(local, "arena") else 0


def test_a_huge_example_shape_is_not_allocated_at_load(compiled, tmp_path):
    path = with_example_shape(compiled, tmp_path / "big.tsm", [10 ** 7, 16])
    start = time.perf_counter()
    model = rt.load(path)
    assert time.perf_counter() - start < 2
    assert prepared_arena(model) <= 1 << 16  # not planned for: the first run plans instead
    x = np.ones((3, 16), np.float32)
    np.testing.assert_allclose(model.run(x), rt.load(compiled).run(x), rtol=1e-6)


def test_example_shapes_up_to_the_limit_are_planned_at_load(compiled, tmp_path, monkeypatch):
    assert MAX_EXAMPLE_ELEMENTS == 1 << 24
    monkeypatch.setattr(model_module, "MAX_EXAMPLE_ELEMENTS", 4096 * 16)
    planned = rt.load(with_example_shape(compiled, tmp_path / "ok.tsm", [4096, 16]))
    assert prepared_arena(planned) >= 4096 * 32 * 4  # the hidden layer's activations
    assert prepared_arena(rt.load(with_example_shape(compiled, tmp_path / "ko.tsm", [4097, 16]))) <= 1 << 16


def test_the_arena_prepared_at_load_is_bounded(compiled, monkeypatch):
    monkeypatch.setattr(graph_entry, "MAX_PREPARED_ARENA", 1000)
    model = rt.load(compiled)
    assert prepared_arena(model) <= 1 << 16
    x = np.ones((4, 16), np.float32)
    assert model.run(x).shape == (4, 10) and prepared_arena(model) > 1000  # the first run makes it


# -- temporary files of killed saves ------------------------------------------------------------------

HANG_IN_SAVE = """
import os, sys, time
import numpy as np
import tscript as ts
def hang(fd):
    print("writing", flush=True)
    time.sleep(600)
os.fsync = hang
ts.save({"w": ts.ones(4)}, sys.argv[1])
"""


def start_hanging_save(target):
    """A process saving to `target`, stopped once its temporary file is written (before the rename)."""
    proc = subprocess.Popen([sys.executable, "-c", HANG_IN_SAVE, str(target)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "writing\n"
    return proc


def temp_files(directory, name: str) -> list:
    return sorted(p for p in os.listdir(directory) if p.startswith(f".{name}.") and p.endswith(".tmp"))


def backdate(path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_the_next_save_sweeps_what_a_killed_save_left(tmp_path):
    target = tmp_path / "state.tsd"
    proc = start_hanging_save(target)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    (left,) = temp_files(tmp_path, "state.tsd")
    backdate(tmp_path / left, archive.SWEEP_AFTER_SECONDS + 5)
    ts.save({"w": ts.zeros(2)}, target)
    assert temp_files(tmp_path, "state.tsd") == []
    assert ts.load(target)["w"].shape == (2,)


def test_a_save_in_progress_is_never_swept(tmp_path):
    target = tmp_path / "state.tsd"
    proc = start_hanging_save(target)
    try:
        (live,) = temp_files(tmp_path, "state.tsd")
        backdate(tmp_path / live, 3600)  # old, but locked by a live writer
        ts.save({"w": ts.zeros(2)}, target)
        assert temp_files(tmp_path, "state.tsd") == [live]
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def test_only_old_leftovers_of_the_same_target_are_swept(tmp_path):
    hexes = ["0123456789abcdef", "fedcba9876543210"]
    young = tmp_path / f".model.tsm.{hexes[0]}.tmp"
    old = tmp_path / f".model.tsm.{hexes[1]}.tmp"
    others = [tmp_path / n for n in (f".other.tsm.{hexes[1]}.tmp", ".model.tsm.notahexname00000.tmp",
                                     f"model.tsm.{hexes[1]}.tmp", f".model.tsm.{hexes[1]}.tmp.keep")]
    for p in [young, old, *others]:
        p.write_bytes(b"partial")
    for p in [old, *others]:
        backdate(p, 3600)
    write_archive(tmp_path / "model.tsm", FMT, 1, {}, {"a": b"1"})
    assert not old.exists()
    assert young.exists() and all(p.exists() for p in others)
