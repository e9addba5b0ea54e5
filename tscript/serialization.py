"""`tscript.save` / `tscript.load`: which file format a call writes or reads.

`save` writes tscript's own format (tensor_file.py) unless told `format="safetensors"` (or given a
path ending in `.safetensors`). `load` tells the format from the file's first bytes, never from
its name alone:

    a zip with manifest.json          tscript.save's format        tensor_file.load
    a zip with <archive>/data.pkl     PyTorch's torch.save format   torch_checkpoint.load_checkpoint
    8-byte length + JSON header       safetensors                   safetensors_file.load

A legacy (non-zip) PyTorch file, a tar file or a bare pickle is refused with a ModelError saying
what it is. None of the readers runs code from the file.
"""
from __future__ import annotations

import os
import zipfile

from tscript_runtime.archive import MANIFEST, source_name
from tscript_runtime.errors import ModelError

from . import safetensors_file, tensor_file, torch_checkpoint
from ._device import check_device

FORMATS = ("tscript", "safetensors")
_HEAD = 512


def save(obj, f, format: str | None = None, metadata: dict | None = None) -> None:
    """Save `obj` to `f` (a path, written atomically, or a binary file object): tensors and nested
    dict/list/tuple of them and of Python scalars in tscript's format, or a state dict as
    safetensors (`format="safetensors"`, the default for a path ending in `.safetensors`;
    `metadata`: str -> str stored in its header)."""
    if format is None:
        format = "safetensors" if str(getattr(f, "name", f)).endswith(".safetensors") else "tscript"
    if format not in FORMATS:
        raise ValueError(f"tscript.save: unknown format {format!r} (expected one of {', '.join(FORMATS)})")
    if format == "safetensors":
        safetensors_file.save(obj, f, metadata)
        return
    if metadata is not None:
        raise ValueError("tscript.save: metadata is only stored by format='safetensors'")
    tensor_file.save(obj, f)


def load(f, map_location=None, weights_only=None, **kwargs):
    """Load what `f` (a path or binary file object) holds: a file of `tscript.save`, a PyTorch
    checkpoint (`torch.save`'s zip format, read without torch and without running code: only
    tensors, storages, dtypes and containers are built) or a `.safetensors` file.
    `map_location` may only name the CPU (a dict mapping devices to "cpu" too: tensors saved
    on other devices load on the CPU); `weights_only` is accepted as in PyTorch (loading never runs
    code anyway); `mmap` is accepted too (tscript maps stored members whenever it reads a path)."""
    _check_map_location(map_location)
    unknown = set(kwargs) - {"mmap", "pickle_module", "encoding"}
    if unknown:
        raise TypeError(f"load() got an unexpected keyword argument '{sorted(unknown)[0]}'")
    kind = _kind(f)
    if kind == "torch":
        return torch_checkpoint.load_checkpoint(f)
    if kind == "safetensors":
        return safetensors_file.load(f)
    return tensor_file.load(f)


def _check_map_location(map_location) -> None:
    if isinstance(map_location, dict):
        for target in map_location.values():
            check_device(target)
    elif callable(map_location):
        raise TypeError("tscript.load: map_location may be None, 'cpu', a device or a dict of devices; tscript "
                        "has no storages to hand to a function (everything loads on the CPU)")
    else:
        check_device(map_location)


def _kind(f) -> str:
    """"tscript", "torch" or "safetensors": the format of the file `f` (the position of a file object
    is kept); a ModelError for PyTorch's legacy formats and bare pickles."""
    head = _head(f)
    if head[:2] == b"PK":
        names = _zip_names(f)
        return "torch" if MANIFEST not in names and torch_checkpoint.is_checkpoint(names) else "tscript"
    if safetensors_file.looks_like(head):
        return "safetensors"
    problem = torch_checkpoint.legacy_problem(head)
    if problem is not None:
        raise ModelError(f"{source_name(f)}: {problem}")
    if str(getattr(f, "name", f)).endswith(".safetensors"):
        return "safetensors"  # its reader says what is wrong with it
    return "tscript"  # whose reader says it is no zip file


def _head(f) -> bytes:
    if not isinstance(f, (str, os.PathLike)):
        position = f.tell()
        try:
            return f.read(_HEAD)
        finally:
            f.seek(position)
    try:
        with open(f, "rb") as stream:
            return stream.read(_HEAD)
    except FileNotFoundError:
        raise ModelError(f"{os.fspath(f)}: no such file") from None
    except OSError as e:
        raise ModelError(f"{os.fspath(f)}: cannot read the file: {e}") from None


def _zip_names(f) -> list:
    position = None if isinstance(f, (str, os.PathLike)) else f.tell()
    try:
        with zipfile.ZipFile(f) as zf:
            return zf.namelist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError):
        return []  # the reader of tscript's format says what is wrong
    finally:
        if position is not None:
            f.seek(position)


__all__ = ["save", "load"]
