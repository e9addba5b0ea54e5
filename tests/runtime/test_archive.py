"""The checked zip archive shared by `tscript.save` and `.tsm` models: round trips, atomic writes,
and a clear ModelError for every kind of broken, tampered or hostile file."""
import hashlib
import io
import json
import os
import struct
import zipfile

import numpy as np
import pytest

from tscript_runtime import ModelError
from tscript_runtime.archive import MANIFEST, array_bytes, read_archive, read_array, write_archive

FMT = "test.format"
MEMBERS = {"params/w.npy": array_bytes(np.arange(6, dtype=np.float32).reshape(2, 3)),
           "notes.txt": b"hello"}


def write(target, payload=None, members=None, version=1):
    write_archive(target, FMT, version, payload or {"entry": "forward"}, MEMBERS if members is None else members)


def rewrite(path, *, manifest=None, members=None, drop=(), rehash=False):
    """Rebuild the zip at `path` with some members replaced or dropped (and optionally their
    checksums recomputed, as a careful attacker would)."""
    with zipfile.ZipFile(path) as zf:
        contents = {n: zf.read(n) for n in zf.namelist()}
    man = json.loads(contents.pop(MANIFEST))
    contents.update(members or {})
    if rehash:
        for name, data in contents.items():
            man["members"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    man.update(manifest or {})
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(MANIFEST, json.dumps(man))
        for name, data in contents.items():
            if name not in drop:
                zf.writestr(name, data)


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "model.tsm"
    write(path)
    return path


def test_round_trip_through_a_path(saved):
    archive = read_archive(saved, FMT, {1})
    assert archive.manifest["entry"] == "forward" and archive.manifest["version"] == 1
    assert archive.members["notes.txt"] == b"hello"
    w = archive.array("params/w.npy")
    np.testing.assert_array_equal(w, np.arange(6, dtype=np.float32).reshape(2, 3))
    assert w.dtype == np.float32 and w.flags.writeable and w.flags.c_contiguous


def test_round_trip_through_a_file_object():
    buf = io.BytesIO()
    write(buf)
    buf.seek(0)
    assert read_archive(buf, FMT, {1}).members["notes.txt"] == b"hello"


def test_manifest_lists_sha256_and_size_of_every_member(saved):
    with zipfile.ZipFile(saved) as zf:
        manifest = json.loads(zf.read(MANIFEST))
        assert set(zf.namelist()) == {MANIFEST, *MEMBERS}
    assert manifest["format"] == FMT
    for name, data in MEMBERS.items():
        assert manifest["members"][name] == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def test_arrays_round_trip_for_every_dtype_and_shape():
    for arr in [np.float64(2.5) * np.ones(()), np.zeros((0, 3), np.int32), np.array([True, False]),
                np.arange(12, dtype=np.int64).reshape(3, 4).T, np.float32([[1, 2]])]:
        out = read_array(array_bytes(arr), "x")
        assert out.dtype == arr.dtype and out.shape == arr.shape and out.flags.c_contiguous
        np.testing.assert_array_equal(out, arr)


def test_foreign_byte_order_and_fortran_order_are_normalised():
    data = np.arange(6, dtype=">i8").reshape(2, 3)
    buf = io.BytesIO()
    np.save(buf, np.asfortranarray(data))
    out = read_array(buf.getvalue(), "x")
    assert out.dtype == np.int64 and out.dtype.isnative and out.flags.c_contiguous
    np.testing.assert_array_equal(out, data)


def test_unknown_member_name_is_an_error(saved):
    with pytest.raises(ModelError, match="member 'params/b.npy' is not listed"):
        read_archive(saved, FMT, {1}).array("params/b.npy")


# -- broken files ------------------------------------------------------------------------------------

def test_missing_file(tmp_path):
    with pytest.raises(ModelError, match="nope.tsm: no such file"):
        read_archive(tmp_path / "nope.tsm", FMT, {1})


def test_random_bytes(tmp_path):
    path = tmp_path / "junk.tsm"
    path.write_bytes(np.random.default_rng(0).bytes(2000))
    with pytest.raises(ModelError, match=r"junk.tsm: not a valid archive \(not a zip file, or truncated\)"):
        read_archive(path, FMT, {1})


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.9, 0.99])
def test_truncated_file(saved, keep):
    data = saved.read_bytes()
    saved.write_bytes(data[:int(len(data) * keep)])
    with pytest.raises(ModelError, match="model.tsm: not a valid archive"):
        read_archive(saved, FMT, {1})


def test_empty_file_object():
    with pytest.raises(ModelError, match="<BytesIO>: not a valid archive"):
        read_archive(io.BytesIO(b""), FMT, {1})


def test_missing_manifest(tmp_path):
    path = tmp_path / "m.tsm"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("notes.txt", b"hello")
    with pytest.raises(ModelError, match="the archive has no manifest.json"):
        read_archive(path, FMT, {1})


def test_manifest_that_is_not_json(saved):
    rewrite(saved)
    with zipfile.ZipFile(saved) as zf:
        contents = {n: zf.read(n) for n in zf.namelist() if n != MANIFEST}
    with zipfile.ZipFile(saved, "w") as zf:
        zf.writestr(MANIFEST, b"{not json")
        for name, data in contents.items():
            zf.writestr(name, data)
    with pytest.raises(ModelError, match="manifest.json is not valid JSON"):
        read_archive(saved, FMT, {1})


@pytest.mark.parametrize("change,match", [
    ({"format": "other"}, "not a test.format archive \\(format 'other'\\)"),
    ({"version": 2}, "unsupported test.format format version 2 \\(this reader supports 1\\)"),
    ({"version": True}, "unsupported test.format format version True"),
    ({"version": "1"}, "unsupported test.format format version '1'"),
    ({"members": ["notes.txt"]}, "malformed 'members' listing"),
    ({"members": {"notes.txt": {"sha256": 3, "size": 5}}}, "malformed 'members' listing"),
])
def test_bad_manifest_fields(saved, change, match):
    rewrite(saved, manifest=change)
    with pytest.raises(ModelError, match=match):
        read_archive(saved, FMT, {1})


def test_newer_version_written_by_a_newer_writer(tmp_path):
    path = tmp_path / "v2.tsm"
    write(path, version=2)
    with pytest.raises(ModelError, match="unsupported test.format format version 2"):
        read_archive(path, FMT, {1})
    assert read_archive(path, FMT, {1, 2}).manifest["version"] == 2


def test_missing_member(saved):
    rewrite(saved, drop={"notes.txt"})
    with pytest.raises(ModelError, match="member 'notes.txt' listed in the manifest is missing"):
        read_archive(saved, FMT, {1})


def test_unlisted_member(saved):
    rewrite(saved, members={"extra.bin": b"surprise"})
    with pytest.raises(ModelError, match="member 'extra.bin' is not listed in the manifest"):
        read_archive(saved, FMT, {1})


def test_tampered_member_same_size(saved):
    rewrite(saved, members={"notes.txt": b"jello"})
    with pytest.raises(ModelError, match="checksum mismatch for member 'notes.txt' .*tampered"):
        read_archive(saved, FMT, {1})


def test_tampered_member_other_size(saved):
    rewrite(saved, members={"notes.txt": b"hello world"})
    with pytest.raises(ModelError, match="member 'notes.txt' has 11 bytes, the manifest says 5"):
        read_archive(saved, FMT, {1})


def test_flipped_byte_in_the_zip_itself(saved):
    data = bytearray(saved.read_bytes())
    offset = data.index(b"hello")
    data[offset] ^= 0xFF
    saved.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="model.tsm: checksum mismatch for member .notes.txt."):
        read_archive(saved, FMT, {1})


def test_duplicate_member_names(saved):
    with zipfile.ZipFile(saved, "a") as zf, pytest.warns(UserWarning, match="Duplicate name"):
        zf.writestr("notes.txt", b"hello")
    with pytest.raises(ModelError, match="several members of the same name"):
        read_archive(saved, FMT, {1})


# -- hostile arrays: never unpickled -----------------------------------------------------------------

class _Exploit:
    """Unpickling this would create a marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return open, (self.marker, "w")


def test_pickled_object_array_is_refused_without_running_code(tmp_path):
    marker = tmp_path / "pwned"
    buf = io.BytesIO()
    np.save(buf, np.array([_Exploit(str(marker))], dtype=object), allow_pickle=True)
    path = tmp_path / "evil.tsm"
    write(path, members={"params/w.npy": buf.getvalue()})  # checksums are valid: only the content is evil
    archive = read_archive(path, FMT, {1})
    with pytest.raises(ModelError, match="member 'params/w.npy'.*refusing to load pickled data"):
        archive.array("params/w.npy")
    assert not marker.exists()


def test_raw_pickle_instead_of_npy_is_refused(tmp_path):
    import pickle
    marker = tmp_path / "pwned"
    with pytest.raises(ModelError, match="refusing to load pickled data"):
        read_array(pickle.dumps(_Exploit(str(marker))), "x")
    assert not marker.exists()


@pytest.mark.parametrize("payload,match", [
    (array_bytes(np.ones(3, np.clongdouble)), "unsupported array dtype complex"),
    (array_bytes(np.ones(3, np.uint16)), "unsupported array dtype uint16"),
    (array_bytes(np.ones(3, "V4")), "unsupported array dtype |V4"),   # (2-byte voids are bfloat16)
    (array_bytes(np.zeros(2, [("a", np.int32), ("b", np.float32)])), "unsupported array dtype"),
    (array_bytes(np.ones((4, 4), np.float32))[:-7], "not a valid .npy array"),
    (b"\x93NUMPY\x01\x00garbage", "not a valid .npy array"),
    (b"", "not a valid .npy array"),
])
def test_bad_npy_payloads(payload, match):
    with pytest.raises(ModelError, match=match):
        read_array(payload, "x")


def npy_with_header(header: str, payload: bytes, version=(1, 0)) -> bytes:
    """A .npy file with this header text (padded as numpy pads it) and payload."""
    text, short = header.encode("latin1"), version == (1, 0)
    text += b" " * (-((10 if short else 12) + len(text) + 1) % 64) + b"\n"
    return b"\x93NUMPY" + bytes(version) + struct.pack("<H" if short else "<I", len(text)) + text + payload


EXACT = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }"  # numpy's own format: read directly
OTHER = "{'shape': %s, 'descr': '<f4', 'fortran_order': False}"   # another order: numpy's reader reads it


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
@pytest.mark.parametrize("header,payload,match", [
    (EXACT[:-3], b"", r"not a valid .npy array \(its header: EOF in multi-line statement\)"),  # unbalanced brace
    (OTHER[:-1], b"", r"not a valid .npy array \(its header: EOF in multi-line statement\)"),
    ("{", b"", "not a valid .npy array"),
    (EXACT % "(100000000000, 100000000000)", bytes(12),
     r"its header says \[100000000000, 100000000000\] of float32, the payload holds 12 bytes"),
    (OTHER % "(100000000000, 100000000000)", bytes(12),
     r"its header says \[100000000000, 100000000000\] of float32, the payload holds 12 bytes"),
    (OTHER % "(-1, -3)", bytes(12), r"its header says \[-1, -3\]"),
    (OTHER % "(True, 3)", bytes(12), r"its header says \[True, 3\]"),
    (EXACT % "(0, 9999999999999999999)", b"", "Maximum allowed dimension exceeded"),
    (OTHER % "(0, 99999999999999999999999)", b"", "Maximum allowed dimension exceeded"),
    (OTHER % ("(" + "0, " * 65 + ")"), b"", "maximum supported dimension"),
    (OTHER.replace("'<f4'", "('<f4', (100000000000, 100000000000))") % "(2,)", b"", "not a valid .npy array"),
    ("__import__('os').system('false')", b"", "not a valid .npy array"),
])
def test_hostile_npy_headers(header, payload, match, version):
    with pytest.raises(ModelError, match="^x: .*" + match):
        read_array(npy_with_header(header, payload, version), "x")


def test_numpys_own_header_format_is_read_without_numpys_parser(monkeypatch):
    monkeypatch.setattr(np.lib.format, "read_array_header_1_0", None)
    data = npy_with_header(EXACT % "(2, 3)", np.arange(6, dtype="<f4").tobytes())
    np.testing.assert_array_equal(read_array(data, "x"), np.arange(6, dtype=np.float32).reshape(2, 3))
    assert array_bytes(np.zeros((2, 3), np.float32))[10:].startswith(EXACT.split(" 'shape'")[0].encode())


def test_npz_instead_of_npy_is_refused():
    buf = io.BytesIO()
    np.savez(buf, a=np.ones(2))
    with pytest.raises(ModelError, match="expected a single .npy array"):
        read_array(buf.getvalue(), "x")


# -- atomic writes -------------------------------------------------------------------------------------

def test_failed_write_keeps_the_existing_file_and_leaves_no_temp_file(saved, monkeypatch):
    before = saved.read_bytes()
    calls = []

    def failing_writestr(self, name, data, *args, **kwargs):
        calls.append(name)
        if len(calls) == 2:
            raise OSError("disk full")
        return original(self, name, data, *args, **kwargs)

    original = zipfile.ZipFile.writestr
    monkeypatch.setattr(zipfile.ZipFile, "writestr", failing_writestr)
    with pytest.raises(OSError, match="disk full"):
        write(saved, members={"a": b"1", "b": b"2"})
    assert saved.read_bytes() == before
    assert os.listdir(saved.parent) == [saved.name]


def test_failed_rename_keeps_the_existing_file(saved, monkeypatch):
    before = saved.read_bytes()
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("rename failed")))
    with pytest.raises(OSError, match="rename failed"):
        write(saved)
    assert saved.read_bytes() == before
    assert os.listdir(saved.parent) == [saved.name]


def test_new_files_get_the_usual_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        write(tmp_path / "a.tsm")
    finally:
        os.umask(umask)
    assert (tmp_path / "a.tsm").stat().st_mode & 0o777 == 0o644


def test_overwrite_keeps_permissions_and_replaces_through_symlinks(saved, tmp_path):
    os.chmod(saved, 0o600)
    link = tmp_path / "link.tsm"
    link.symlink_to(saved)
    write(link, members={"only.txt": b"new"})
    assert link.is_symlink()
    assert saved.stat().st_mode & 0o777 == 0o600
    assert read_archive(saved, FMT, {1}).members == {"only.txt": b"new"}
