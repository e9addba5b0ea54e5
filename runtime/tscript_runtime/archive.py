"""Checked zip archives: the container of `tscript.save` files and of `.tsm` saved models.

An archive is a zip file (members stored uncompressed) holding named members plus
`manifest.json`, a JSON object with at least

    {"format": "<format name>", "version": <int>,
     "members": {"<member name>": {"sha256": "<hex digest>", "size": <bytes>}, ...},
     ...payload keys chosen by the format...}

Every member is listed with its checksum and size; the reader refuses any archive that is not a
zip, is truncated, lacks the manifest or a listed member, holds an unlisted member, has a member
whose checksum or size differs (tampered), or names another format or an unknown version. Arrays
are stored as `.npy` and read with `allow_pickle=False`: reading an archive never runs code.

Writing to a path is atomic: the archive goes to a temporary file in the same directory that
replaces the target only once it is complete, so a failure never leaves a half-written file and
never loses an existing one. Needs only the standard library and numpy.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import secrets
import shutil
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np

from . import dtypes as dt
from .errors import ModelError

MANIFEST = "manifest.json"
_RESERVED = ("format", "version", "members")


@dataclass
class Archive:
    """A verified archive: its manifest (a dict) and the bytes of every listed member."""
    source: str
    manifest: dict
    members: dict

    def error(self, problem: str) -> ModelError:
        """A ModelError naming this archive's file and `problem`."""
        return ModelError(f"{self.source}: {problem}")

    def array(self, name: str) -> np.ndarray:
        """The `.npy` member `name` as a fresh, writable, C-contiguous array of a tscript dtype."""
        if name not in self.members:
            raise self.error(f"member '{name}' is not listed in the manifest")
        return read_array(self.members[name], f"{self.source}, member '{name}'")


# -- writing ----------------------------------------------------------------------------------------

def array_bytes(array: np.ndarray) -> bytes:
    """`array` in `.npy` format (C order, never pickled)."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(array, order="C"), allow_pickle=False)
    return buf.getvalue()


def write_archive(target, fmt: str, version: int, payload: dict, members: dict) -> None:
    """Write an archive of `members` (name -> bytes) whose manifest is `payload` plus the format,
    version and member checksums. `target` is a path (written atomically) or a binary file object."""
    manifest = _manifest(fmt, version, payload, members)  # serialized before any file is touched
    if isinstance(target, (str, os.PathLike)):
        _write_atomic(os.fspath(target), manifest, members)
    else:
        _write_zip(target, manifest, members)


def _manifest(fmt: str, version: int, payload: dict, members: dict) -> bytes:
    assert not set(_RESERVED) & set(payload), f"payload keys {_RESERVED} are reserved"
    assert MANIFEST not in members
    listing = {name: {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
               for name, data in members.items()}
    manifest = {"format": fmt, "version": version, **payload, "members": listing}
    return json.dumps(manifest, indent=1).encode()


def _write_zip(stream, manifest: bytes, members: dict) -> None:
    with zipfile.ZipFile(stream, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(MANIFEST, manifest)
        for name, data in members.items():
            zf.writestr(name, data)


def _write_atomic(path: str, manifest: bytes, members: dict) -> None:
    path = os.path.realpath(path)  # replace a symlink's target, not the link
    directory, base = os.path.split(path)
    tmp = os.path.join(directory, f".{base}.{secrets.token_hex(8)}.tmp")
    # Mode 0o666 lets the umask decide, as open() would (mkstemp's files are private).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            _write_zip(f, manifest, members)
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(path):
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# -- reading ----------------------------------------------------------------------------------------

def source_name(source) -> str:
    """How error messages name a path or file object."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else f"<{type(source).__name__}>"


def read_archive(source, fmt: str, versions) -> Archive:
    """Open and verify the archive at `source` (a path or a binary file object) of format `fmt`
    with a version in `versions`; every problem is a ModelError naming the file."""
    name = source_name(source)
    try:
        with zipfile.ZipFile(source) as zf:
            manifest = _read_manifest(zf, name, fmt, versions)
            members = {m: _read_member(zf, name, m, entry) for m, entry in manifest["members"].items()}
            _check_no_extra(zf, name, manifest["members"])
    except ModelError:
        raise
    except FileNotFoundError:
        raise ModelError(f"{name}: no such file") from None
    except (zipfile.BadZipFile, EOFError) as e:
        raise ModelError(f"{name}: not a valid archive (not a zip file, or truncated): {e}") from None
    except (OSError, ValueError, RuntimeError, zlib.error) as e:  # unreadable stream, encrypted member, ...
        raise ModelError(f"{name}: cannot read the archive: {e}") from None
    return Archive(name, manifest, members)


def _read_manifest(zf: zipfile.ZipFile, name: str, fmt: str, versions) -> dict:
    try:
        manifest = json.loads(zf.read(MANIFEST))
    except KeyError:
        raise ModelError(f"{name}: the archive has no {MANIFEST} (not written by tscript; PyTorch's own "
                         f"files, which run code when loaded, cannot be read)") from None
    except (ValueError, RecursionError) as e:
        raise ModelError(f"{name}: {MANIFEST} is not valid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise ModelError(f"{name}: not a {fmt} archive (format {found!r})")
    version = manifest.get("version")
    if type(version) is not int or version not in versions:
        raise ModelError(f"{name}: unsupported {fmt} format version {version!r} (this reader supports "
                         f"{', '.join(map(str, sorted(versions)))})")
    if not _valid_listing(manifest.get("members")):
        raise ModelError(f"{name}: {MANIFEST} has a malformed 'members' listing")
    return manifest


def _valid_listing(listing) -> bool:
    return isinstance(listing, dict) and all(
        isinstance(e, dict) and isinstance(e.get("sha256"), str) and isinstance(e.get("size"), int)
        for e in listing.values())


def _read_member(zf: zipfile.ZipFile, name: str, member: str, entry: dict) -> bytes:
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise ModelError(f"{name}: member '{member}' listed in the manifest is missing") from None
    if info.file_size != entry["size"]:  # checked before reading: a huge member is never inflated
        raise ModelError(f"{name}: member '{member}' has {info.file_size} bytes, the manifest says "
                         f"{entry['size']} (tampered with or corrupted)")
    data = zf.read(info)
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise ModelError(f"{name}: checksum mismatch for member '{member}' (the file was tampered with "
                         f"or corrupted)")
    return data


def _check_no_extra(zf: zipfile.ZipFile, name: str, listing: dict) -> None:
    names = zf.namelist()
    if len(set(names)) != len(names):
        raise ModelError(f"{name}: the archive holds several members of the same name")
    extra = sorted(set(names) - set(listing) - {MANIFEST})
    if extra:
        raise ModelError(f"{name}: member '{extra[0]}' is not listed in the manifest")


def read_array(data: bytes, where: str) -> np.ndarray:
    """A `.npy` payload as a fresh array; object (pickled) arrays and dtypes other than the five
    tscript dtypes are refused with a ModelError naming `where`."""
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except ValueError as e:
        if "object" in str(e).lower():  # numpy: "Object arrays cannot be loaded when allow_pickle=False"
            raise ModelError(f"{where}: refusing to load pickled data ({e})") from None
        raise ModelError(f"{where}: not a valid .npy array ({e})") from None
    except (OSError, EOFError) as e:
        raise ModelError(f"{where}: not a valid .npy array ({e})") from None
    if not isinstance(array, np.ndarray):
        raise ModelError(f"{where}: expected a single .npy array, found {type(array).__name__}")
    native = array.dtype.newbyteorder("=")
    if native not in dt.ALL:
        raise ModelError(f"{where}: unsupported array dtype {array.dtype}")
    if array.dtype != native or not (array.flags.c_contiguous and array.flags.writeable):
        array = np.array(array, dtype=native, order="C")
    return array
