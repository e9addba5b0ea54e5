"""PyTorch checkpoints (the zip format `torch.save` writes since PyTorch 1.6), read without torch and
without running code: `tscript.load` calls `load_checkpoint` for them.

The zip holds one top directory `<archive>/` with

    data.pkl       the pickled object (pickle protocol 2); each tensor's storage is a persistent id
                   ('storage', torch.FloatStorage, key, location, numel)
    data/<key>     the storage's bytes: numel elements, in the byte order of
    byteorder      "little" or "big" (little when absent)
    version        the format version (1 to 3); `.format_version`, `.storage_alignment` and
                   `.data/serialization_id` are not needed

The zip is read by `tscript_runtime.archive.read_zip` (its size limits and CRC checks; stored
members, all that PyTorch writes, are views of a private memory map of the file). `data.pkl` may
have at most MAX_PICKLE_BYTES (64 MiB); its opcodes are checked by `pickle_scan.scan` and every
global it names against the allow-list of `torch_pickle` before anything is unpickled, and it is
unpickled by `torch_pickle.CheckpointUnpickler`, which builds nothing else. Tensors are views of
their storage's array (offset and strides as saved; tensors of one storage share memory; a
big-endian file's storages are converted once). Storages of every tscript dtype load (float16,
bfloat16, uint8, int8, int16 and complex ones included); those of dtypes tscript lacks (uint16,
complex32, float8 ...) are refused by name; storages on another device (a checkpoint saved from CUDA)
load on the CPU. Any problem is a ModelError naming the file.
"""
from __future__ import annotations

import numpy as np

from tscript_runtime.archive import read_zip, source_name
from tscript_runtime.dtypes import bfloat16 as BFLOAT16
from tscript_runtime.errors import ModelError

from .pickle_scan import scan
from .torch_pickle import UNPICKLE_ERRORS, CheckpointUnpickler, Refused, Storage, materialize, refusal

MAX_PICKLE_BYTES = 64 << 20
VERSIONS = (b"1", b"2", b"3")
LEGACY_MAGIC = bytes.fromhex("8a0a6cfc9c46f9206aa85019")  # LONG1 0x1950a86a20f9469cfc6c, after the PROTO opcode


def is_checkpoint(names) -> bool:
    """Do these zip member names look like a `torch.save` checkpoint (or a TorchScript archive)?"""
    return any(n.count("/") == 1 and n.endswith("/data.pkl") for n in names)


def legacy_problem(head: bytes) -> str | None:
    """Why a file starting with `head` cannot be read as a checkpoint, when it is one of PyTorch's
    other formats or a bare pickle (None otherwise)."""
    if head[:2] == b"\x80\x02" and head[2:14] == LEGACY_MAGIC:
        return ("a PyTorch checkpoint in the legacy format (PyTorch before 1.6, or "
                "`_use_new_zipfile_serialization=False`), which only unpickling with torch can read: save it again "
                "with torch.save in PyTorch 1.6 or later")
    if head[257:262] == b"ustar":
        return "a tar file (PyTorch's oldest checkpoint format?): save it again with torch.save in PyTorch 1.6 or later"
    if head[:1] == b"\x80":
        return "a pickle, which tscript never loads (loading a pickle can run code)"
    return None


def load_checkpoint(source):
    """The object a `torch.save` zip checkpoint at `source` (a path or binary file object) holds,
    with tscript tensors (nn.Parameter for parameters) for its tensors."""
    where = source_name(source)
    members = read_zip(source)
    prefix = _prefix(members, where)
    data = members[prefix + "data.pkl"]
    if len(data) > MAX_PICKLE_BYTES:
        raise ModelError(f"{where}: data.pkl has {len(data)} bytes, more than MAX_PICKLE_BYTES ({MAX_PICKLE_BYTES})")
    for name in scan(data, f"{where}: data.pkl"):
        reason = refusal(name)
        if reason is not None:
            raise ModelError(f"{where}: {reason}")
    storages = _Storages(members, prefix, _byteorder(members, prefix, where), where)
    try:
        return materialize(CheckpointUnpickler(bytes(data), storages.get).load())
    except Refused as e:
        raise ModelError(f"{where}: {e}") from None
    except UNPICKLE_ERRORS as e:
        raise ModelError(f"{where}: data.pkl is not a valid checkpoint pickle ({type(e).__name__}: {e})") from None


def _prefix(members: dict, where: str) -> str:
    """The archive's top directory ("archive/"), after checking it holds a checkpoint."""
    found = sorted(n[:-len("data.pkl")] for n in members if n.count("/") == 1 and n.endswith("/data.pkl"))
    if len(found) != 1:
        raise ModelError(f"{where}: not a PyTorch checkpoint (expected one '<archive>/data.pkl', found "
                         f"{len(found)})")
    prefix = found[0]
    if prefix + "constants.pkl" in members or any(n.startswith(prefix + "code/") for n in members):
        raise ModelError(f"{where}: a TorchScript archive (torch.jit.save), which holds code; tscript reads "
                         f"checkpoints of torch.save (e.g. torch.save(model.state_dict(), path))")
    version = bytes(members.get(prefix + "version", b"3")).strip()
    if version not in VERSIONS:
        raise ModelError(f"{where}: unsupported checkpoint format version {version[:20]!r} (this reader supports "
                         f"{', '.join(v.decode() for v in VERSIONS)})")
    return prefix


def _byteorder(members: dict, prefix: str, where: str) -> str:
    order = bytes(members.get(prefix + "byteorder", b"little")).strip()
    if order not in (b"little", b"big"):
        raise ModelError(f"{where}: the byteorder member says {order[:20]!r}, expected 'little' or 'big'")
    return "<" if order == b"little" else ">"


class _Storages:
    """The storages of one checkpoint, each read once from its member and then shared."""

    def __init__(self, members: dict, prefix: str, order: str, where: str):
        self.members, self.prefix, self.order, self.where = members, prefix, order, where
        self.made: dict[str, Storage] = {}

    def get(self, key: str, dtype, numel: int) -> Storage:
        dtype = np.dtype(dtype)
        storage = self.made.get(key)
        if storage is None:
            storage = self.made[key] = Storage(key, self._read(key, dtype, numel))
        if storage.array.dtype != dtype or storage.array.size != numel:
            raise ModelError(f"{self.where}: storage '{key}' is used as {numel} elements of {dtype} and as "
                             f"{storage.array.size} of {storage.array.dtype}")
        return storage

    def _read(self, key: str, dtype: np.dtype, numel: int) -> np.ndarray:
        member = self.members.get(f"{self.prefix}data/{key}")
        if member is None:
            raise ModelError(f"{self.where}: storage '{key}' has no member {self.prefix}data/{key}")
        if len(member) != numel * dtype.itemsize:
            raise ModelError(f"{self.where}: storage '{key}' should hold {numel} elements of {dtype} "
                             f"({numel * dtype.itemsize} bytes), its member has {len(member)} bytes")
        bits = np.dtype(np.uint16) if dtype == BFLOAT16 else dtype  # (ml_dtypes' bfloat16 has no byte orders)
        array = np.frombuffer(member, bits.newbyteorder(self.order), numel)
        if array.dtype != bits or not array.flags.aligned or not array.flags.writeable:
            array = array.astype(bits)  # a big-endian file, or a member not aligned for its dtype
        array = array.view(dtype)
        if dtype == np.bool_ and numel and array.view(np.uint8).max() > 1:
            raise ModelError(f"{self.where}: storage '{key}' holds bool values other than 0 and 1")
        return array
