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
`read_zip` reads the members of zip files without a manifest (PyTorch checkpoints) under the same
limits, each checked against the CRC-32 the zip directory gives.

Sizes are bounded from the zip's directory before anything is read or inflated, so a small file
cannot make a reader allocate or hash much more than its own size:

- MAX_MANIFEST_BYTES (64 MiB): the manifest's size (tscript refuses to write a larger one).
- The members' bytes in the file add up to at most the file's size: members may not overlap or
  claim more than the file holds. Stored members (all that tscript writes) are read where they
  lie in the file (a memory map), so a parameter may be as large as the file allows.
- Compressed members (other zip tools' files) are inflated into memory: together they may inflate
  to at most MAX_INFLATED_BYTES (1 GiB), and, beyond the first RATIO_FREE_BYTES (1 MiB), to at
  most MAX_COMPRESSION_RATIO (100) times their compressed size (weights compress about 1.1 times,
  text 5 to 10 times; a zip bomb about 1000 times).

Writing to a path is atomic: the archive goes to a temporary file `.<name>.<16 hex digits>.tmp` in
the same directory that replaces the target only once it is complete, so a failure never leaves a
half-written file and never loses an existing one. A save killed before it could clean up leaves
its temporary file behind: each save sweeps those of its target that are older than
SWEEP_AFTER_SECONDS (60) and not locked by a live writer (a writer holds an exclusive `flock` on
its temporary file while writing it, released when the file is complete or its process dies; where
there is no `flock`, the age alone decides: writing keeps the file's modification time recent).
Needs only the standard library and numpy.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import hashlib
import io
import json
import mmap
import os
import re
import secrets
import shutil
import struct
import threading
import time
import tokenize
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np

try:
    import fcntl
except ImportError:  # Windows: the age of a temporary file alone tells a killed save's
    fcntl = None

from . import dtypes as dt
from .errors import ModelError

MANIFEST = "manifest.json"
_RESERVED = ("format", "version", "members")
MAX_MANIFEST_BYTES = 64 << 20
MAX_INFLATED_BYTES = 1 << 30
MAX_COMPRESSION_RATIO = 100
RATIO_FREE_BYTES = 1 << 20
SWEEP_AFTER_SECONDS = 60


@dataclass
class Archive:
    """A verified archive: its manifest (a dict) and the bytes of every listed member (memoryviews).
    `pending`: the checksums still being computed (read_archive's `defer`); `verify()` waits for them."""
    source: str
    manifest: dict
    members: dict
    pending: "_Checks | None" = None

    def verify(self) -> None:
        """Wait for the deferred checksums; a ModelError if one does not match."""
        if self.pending is not None:
            self.pending.result()

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
    array = np.asarray(array, order="C")
    np.save(buf, array.view(_VOID2) if array.dtype == dt.bfloat16 else array, allow_pickle=False)
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
    data = json.dumps(manifest, indent=1).encode()
    if len(data) > MAX_MANIFEST_BYTES:  # no reader would open the file
        raise ValueError(f"the manifest would have {len(data)} bytes, more than MAX_MANIFEST_BYTES "
                         f"({MAX_MANIFEST_BYTES}): too many objects to describe")
    return data


def _write_zip(stream, manifest: bytes, members: dict) -> None:
    with zipfile.ZipFile(stream, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(MANIFEST, manifest)
        for name, data in members.items():
            zf.writestr(_aligned(zf, name), data)


ALIGN = 64  # member data starts at a multiple of this (with .npy's own 64-byte header padding, so
#             does every array a reader maps: aligned like arrays numpy allocates, same results)
_PADDING_ID = 0xD935  # the extra-field id zipalign pads with


def _aligned(zf: zipfile.ZipFile, name: str) -> zipfile.ZipInfo:
    """The ZipInfo of the next member, its local header padded (an extra field) so that its data
    starts at a multiple of ALIGN in the file."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    start = zf.fp.tell() + zipfile.sizeFileHeader + len(name.encode()) + 4
    info.extra = struct.pack("<HH", _PADDING_ID, -start % ALIGN) + bytes(-start % ALIGN)
    return info


def _write_atomic(path: str, manifest: bytes, members: dict) -> None:
    path = os.path.realpath(path)  # replace a symlink's target, not the link
    directory, base = os.path.split(path)
    _sweep(directory, base)
    tmp = os.path.join(directory, f".{base}.{secrets.token_hex(8)}.tmp")
    # Mode 0o666 lets the umask decide, as open() would (mkstemp's files are private).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            _lock(f.fileno())  # until it is complete: a save in progress is never swept
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


def _sweep(directory: str, base: str) -> None:
    """Remove the temporary files of earlier saves to `base` that were killed before cleaning up:
    those older than SWEEP_AFTER_SECONDS that no live writer holds locked (best effort)."""
    pattern = re.compile(rf"\.{re.escape(base)}\.[0-9a-f]{{16}}\.tmp")
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            if pattern.fullmatch(entry.name) and _abandoned(entry):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _abandoned(entry: os.DirEntry) -> bool:
    """Is this temporary file old and unlocked? (Writers only ever create new ones, so it stays so.)"""
    try:
        if not entry.is_file(follow_symlinks=False) or \
                time.time() - entry.stat(follow_symlinks=False).st_mtime <= SWEEP_AFTER_SECONDS:
            return False
        fd = os.open(entry.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        return _lock(fd)
    finally:
        os.close(fd)


def _lock(fd: int) -> bool:
    """Take an exclusive flock on `fd` (held until it is closed, or its process dies): False when
    another process holds it; True too where there is no flock (then the age alone decides)."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # a file system without locks
        pass
    return True


# -- reading ----------------------------------------------------------------------------------------

def source_name(source) -> str:
    """How error messages name a path or file object."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else f"<{type(source).__name__}>"


def read_archive(source, fmt: str, versions, defer: bool = False) -> Archive:
    """Open and verify the archive at `source` (a path or a binary file object) of format `fmt`
    with a version in `versions`; every problem is a ModelError naming the file. With `defer`, the
    checksums of large `.npy` members are computed on a thread of their own while the caller goes
    on (a model's graph checked and its code linked meanwhile): the caller must call `verify()`
    before it uses or returns anything read from the archive."""
    name = source_name(source)
    with _zip_errors(name), zipfile.ZipFile(source) as zf:
        _check_sizes(zf, name)
        manifest = _read_manifest(zf, name, fmt, versions)
        _check_no_extra(zf, name, manifest["members"])
        members, pending = _read_members(zf, name, manifest["members"], defer)
    return Archive(name, manifest, members, pending)


def read_zip(source) -> dict:
    """Every member of a zip file that has no manifest (a PyTorch checkpoint): name -> bytes, read as
    `read_archive` reads members (stored ones are views of a private memory map of the file) under
    the same size limits, each checked against its CRC-32; any problem is a ModelError naming the file."""
    name = source_name(source)
    with _zip_errors(name), zipfile.ZipFile(source) as zf:
        _check_sizes(zf, name)
        _check_no_extra(zf, name, {n: None for n in zf.namelist()})
        mapped = _memory_map(zf)
        members = {}
        for info in zf.infolist():
            data = members[info.filename] = _member_bytes(zf, mapped, name, info.filename, info)
            if zlib.crc32(data) != info.CRC:  # (zipfile checks what it inflates; mapped bytes are ours to check)
                raise ModelError(f"{name}: member '{info.filename}' fails its CRC-32 check (corrupted)")
    return members


@contextlib.contextmanager
def _zip_errors(name: str):
    """Reading a zip file: every problem becomes a ModelError naming the file."""
    try:
        yield
    except ModelError:
        raise
    except FileNotFoundError:
        raise ModelError(f"{name}: no such file") from None
    except (zipfile.BadZipFile, EOFError) as e:
        raise ModelError(f"{name}: not a valid archive (not a zip file, or truncated): {e}") from None
    except (OSError, ValueError, RuntimeError, zlib.error) as e:  # unreadable stream, encrypted member, ...
        raise ModelError(f"{name}: cannot read the archive: {e}") from None


def _check_sizes(zf: zipfile.ZipFile, name: str) -> None:
    """The size limits of the module docstring, from the zip's directory alone (nothing is read)."""
    in_file = sum(info.compress_size for info in zf.infolist())
    size = _file_size(zf)
    if in_file > size:
        raise ModelError(f"{name}: its members claim {in_file} bytes of a file of {size} bytes (members that "
                         f"overlap, a zip bomb, or a corrupt zip file)")
    inflated = compressed = 0
    for info in zf.infolist():
        where = f"{name}: member '{info.filename}'"
        if info.filename == MANIFEST and info.file_size > MAX_MANIFEST_BYTES:
            raise ModelError(f"{where} has {info.file_size} bytes, more than MAX_MANIFEST_BYTES ({MAX_MANIFEST_BYTES})")
        if info.compress_type == zipfile.ZIP_STORED:
            if info.file_size != info.compress_size:
                raise ModelError(f"{where} is stored with {info.compress_size} bytes but claims {info.file_size} "
                                 f"(a corrupt zip file)")
            continue
        inflated, compressed = inflated + info.file_size, compressed + info.compress_size
        if inflated > MAX_INFLATED_BYTES:
            raise ModelError(f"{where}: the compressed members would inflate to {inflated} bytes or more, beyond "
                             f"MAX_INFLATED_BYTES ({MAX_INFLATED_BYTES}); tscript stores members uncompressed")
        if inflated > max(RATIO_FREE_BYTES, MAX_COMPRESSION_RATIO * compressed):
            raise ModelError(f"{where}: the compressed members would inflate {inflated // max(compressed, 1)} times "
                             f"(from {compressed} to {inflated} bytes), beyond MAX_COMPRESSION_RATIO "
                             f"({MAX_COMPRESSION_RATIO}): a zip bomb?")


def _file_size(zf: zipfile.ZipFile) -> int:
    position = zf.fp.tell()
    try:
        return zf.fp.seek(0, os.SEEK_END)
    finally:
        zf.fp.seek(position)


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


def _read_members(zf: zipfile.ZipFile, name: str, listing: dict, defer: bool) -> tuple:
    """Every listed member's bytes, checked against its size and SHA-256, and the future of the
    deferred checks (None: none deferred). From a file, members are views of one private
    (copy-on-write) memory map of it, so arrays read them in place and writing into an array never
    reaches the file; large archives are hashed on two threads at once."""
    infos = {m: _info(zf, name, m, entry) for m, entry in listing.items()}
    mapped = _memory_map(zf)
    members = {m: _member_bytes(zf, mapped, name, m, info) for m, info in infos.items()}
    check = functools.partial(_check_digest, name, listing)
    later = {m: data for m, data in members.items() if defer and m.endswith(".npy") and len(data) >= _DEFERRED_BYTES}
    now = {m: data for m, data in members.items() if m not in later}
    if sum(len(data) for data in now.values()) < _PARALLEL_BYTES:
        list(map(check, now, now.values()))
    else:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:  # hashlib releases the GIL
            list(pool.map(check, now, now.values()))
    return members, (_Checks(check, later) if later else None)


class _Checks:
    """Checksums computed on a thread of their own, largest member first, while the caller goes on;
    `result()` checks the members still waiting on the caller's thread too (so both cores hash once the
    caller is done) and raises the first mismatch."""

    def __init__(self, check, members: dict):
        self._check, self._errors = check, []
        self._waiting = sorted(members.items(), key=lambda item: len(item[1]))  # popped from the end
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, name="tscript-checksums", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._waiting:
                    return
                member, data = self._waiting.pop()
            try:
                self._check(member, data)
            except ModelError as e:
                self._errors.append(e)

    def result(self) -> None:
        self._work()
        self._thread.join()
        if self._errors:
            raise self._errors[0]


_PARALLEL_BYTES = 1 << 23
_DEFERRED_BYTES = 1 << 16  # a deferred check is worth a thread's hand-over from this size


def _info(zf: zipfile.ZipFile, name: str, member: str, entry: dict) -> zipfile.ZipInfo:
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise ModelError(f"{name}: member '{member}' listed in the manifest is missing") from None
    if info.file_size != entry["size"]:  # checked before reading: a huge member is never inflated
        raise ModelError(f"{name}: member '{member}' has {info.file_size} bytes, the manifest says "
                         f"{entry['size']} (tampered with or corrupted)")
    return info


def _memory_map(zf: zipfile.ZipFile) -> memoryview | None:
    """The archive file mapped private and writable (pages are copied only when written), or None
    for a stream that is not a real file."""
    try:
        return memoryview(mmap.mmap(zf.fp.fileno(), 0, flags=mmap.MAP_PRIVATE,
                                    prot=mmap.PROT_READ | mmap.PROT_WRITE))
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


def _member_bytes(zf: zipfile.ZipFile, mapped: memoryview | None, name: str, member: str,
                  info: zipfile.ZipInfo):
    """A stored member as a view of the map; a compressed one (not written by tscript) or one of a
    stream inflated by zipfile, which checks its CRC."""
    if info.compress_type == zipfile.ZIP_STORED and mapped is not None:
        start = _data_offset(mapped, name, info)
        if start + info.file_size > len(mapped):
            raise ModelError(f"{name}: member '{member}' is truncated")
        return mapped[start:start + info.file_size]
    data = bytearray(info.file_size)
    with zf.open(info) as f:
        if f.readinto(data) != len(data):
            raise ModelError(f"{name}: member '{member}' is truncated")
    return memoryview(data)


def _data_offset(mapped: memoryview, name: str, info: zipfile.ZipInfo) -> int:
    """Where a stored member's bytes start: after its local file header (name and extra field)."""
    header = bytes(mapped[info.header_offset:info.header_offset + zipfile.sizeFileHeader])
    if len(header) != zipfile.sizeFileHeader or header[:4] != zipfile.stringFileHeader:
        raise ModelError(f"{name}: member '{info.filename}' has a bad local header (a corrupt zip file)")
    fields = struct.unpack(zipfile.structFileHeader, header)
    return info.header_offset + zipfile.sizeFileHeader + fields[zipfile._FH_FILENAME_LENGTH] + \
        fields[zipfile._FH_EXTRA_FIELD_LENGTH]


def _check_digest(name: str, listing: dict, member: str, data) -> None:
    if hashlib.sha256(data).hexdigest() != listing[member]["sha256"]:
        raise ModelError(f"{name}: checksum mismatch for member '{member}' (the file was tampered with "
                         f"or corrupted)")


def _check_no_extra(zf: zipfile.ZipFile, name: str, listing: dict) -> None:
    names = zf.namelist()
    if len(set(names)) != len(names):
        raise ModelError(f"{name}: the archive holds several members of the same name")
    extra = sorted(set(names) - set(listing) - {MANIFEST})
    if extra:
        raise ModelError(f"{name}: member '{extra[0]}' is not listed in the manifest")


NPY_MAGIC = b"\x93NUMPY"
# bfloat16 (ml_dtypes) has no .npy type code: it is stored as 2-byte voids ("|V2", which numpy reads
# without unpickling) and read back as bfloat16, the only dtype tscript stores so.
_VOID2 = np.dtype("V2")
_NPY_HEAD = 1 << 16  # bytes: magic + header of any .npy array tscript writes (refused beyond)
# The header numpy writes, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (64, 3, 7, 7), }
_NPY_HEADER = re.compile(rb"\{'descr': '([<>|=][a-zV]\d{1,2})', 'fortran_order': (True|False), "
                         rb"'shape': \(((?:\d{1,19}, ?)*(?:\d{1,19})?)\), \} *\n")


def _npy_header(view: memoryview) -> tuple:
    """(shape, fortran order, dtype, offset of the data) of a .npy payload: numpy's own header format
    read directly (no Python expression is evaluated), others through numpy's reader."""
    if view[6:8] == b"\x01\x00" and len(view) >= 10:
        end = 10 + int.from_bytes(view[8:10], "little")
        match = _NPY_HEADER.fullmatch(bytes(view[10:end]))
        if match:
            shape = tuple(int(d) for d in match[3].split(b",") if d.strip())
            return shape, match[2] == b"True", np.dtype(match[1].decode()), end
    head = io.BytesIO(bytes(view[:_NPY_HEAD]))
    version = np.lib.format.read_magic(head)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, dtype = read(head)
    return shape, fortran, dtype, head.tell()


def read_array(data, where: str) -> np.ndarray:
    """A `.npy` payload (bytes-like; a writable one, such as a view of the archive's private memory
    map, the array reads in place) as a C-contiguous, writable array of a tscript dtype; pickled data,
    object arrays, other dtypes and a header that does not match the payload's size are refused with
    a ModelError naming `where`, before anything is allocated."""
    view = memoryview(data)
    if view[:len(NPY_MAGIC)] != NPY_MAGIC:
        if view[:1] == b"\x80":
            raise ModelError(f"{where}: refusing to load pickled data (not a .npy array)")
        if view[:2] == b"PK":
            raise ModelError(f"{where}: expected a single .npy array, found an .npz archive")
        raise ModelError(f"{where}: not a valid .npy array (no .npy magic)")
    try:
        shape, fortran, dtype, offset = _npy_header(view)
    except (ValueError, OSError, EOFError, SyntaxError, TypeError, tokenize.TokenError) as e:
        reason = f"its header: {e.args[0]}" if isinstance(e, tokenize.TokenError) else e  # (its str is a tuple)
        raise ModelError(f"{where}: not a valid .npy array ({reason})") from None
    if dtype.hasobject:
        raise ModelError(f"{where}: refusing to load pickled data (an array of Python objects)")
    if dtype == _VOID2:
        dtype = dt.bfloat16
    native = dtype.newbyteorder("=")
    if native not in dt.ALL:
        raise ModelError(f"{where}: unsupported array dtype {dtype}")
    count = int(np.prod(shape, dtype=object))
    if not all(type(d) is int and d >= 0 for d in shape) or count * dtype.itemsize != len(view) - offset:
        raise ModelError(f"{where}: not a valid .npy array (its header says {list(shape)} of {dtype}, the payload "
                         f"holds {len(view) - offset} bytes)")
    try:
        array = np.frombuffer(data, dtype, count, offset).reshape(shape, order="F" if fortran else "C")
    except ValueError as e:  # more dims than numpy allows, a dim beyond its index range (of an empty array)
        raise ModelError(f"{where}: not a valid .npy array (shape {list(shape)}: {e})") from None
    if array.dtype != native or not (array.flags.c_contiguous and array.flags.writeable):
        array = np.array(array, dtype=native, order="C")
    return array
