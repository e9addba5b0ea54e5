"""`.safetensors` files (an 8-byte header length, a JSON header giving each tensor's dtype, shape and
byte range, then the raw bytes): `tscript.save(state_dict, path, format="safetensors")` and
`tscript.load` of such files, through the `safetensors` package (its Rust reader checks the header,
the offsets and the sizes; nothing in the file is ever executed).

What can be saved: a dict (or OrderedDict) of str -> Tensor, e.g. `model.state_dict()`, plus
optional str -> str `metadata`. Every tensor is stored as its own contiguous copy (tensors that
share memory are stored once per name). Loading gives a dict of name -> tensor (fresh, writable
arrays). Every tscript dtype is stored (F16, BF16 and C64 included); tensors of dtypes tscript lacks
(U16, U32, F8_E4M3, ...) are refused by name.
"""
from __future__ import annotations

import contextlib
import os
import secrets

import numpy as np

from tscript_runtime.archive import source_name
from tscript_runtime.errors import ModelError

from ._dtype import FROM_NP
from ._tensor import Tensor, _make

HEADER_LIMIT = 100 << 20  # the safetensors package refuses larger headers


def looks_like(head: bytes) -> bool:
    """Does a file starting with `head` look like a safetensors file?"""
    return len(head) > 8 and head[8:9] == b"{" and 2 <= int.from_bytes(head[:8], "little") <= HEADER_LIMIT


def save(obj, f, metadata: dict | None = None) -> None:
    """Write the state dict `obj` (str -> Tensor) to `f` (a path, written atomically, or a binary
    file object) in the safetensors format."""
    numpy_io = _package()
    if not isinstance(obj, dict) or not all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items()):
        raise TypeError(f"tscript.save(format='safetensors'): expected a dict of str -> Tensor (a state dict), "
                        f"got {_describe(obj)}")
    if metadata is not None and not (isinstance(metadata, dict) and
                                     all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError("tscript.save(format='safetensors'): metadata must be a dict of str -> str")
    for name, t in obj.items():
        if t._data.dtype == np.complex128:
            raise ValueError(f"tscript.save(format='safetensors'): tensor '{name}' is complex128, which the "
                             f"safetensors format cannot store (complex64 it can)")
    arrays = {name: np.ascontiguousarray(t._data) for name, t in obj.items()}  # the package saves raw memory
    data = numpy_io.save(arrays, metadata=metadata)
    if isinstance(f, (str, os.PathLike)):
        _write_atomic(os.fspath(f), data)
    else:
        f.write(data)


def load(f) -> dict:
    """The tensors of the safetensors file `f` (a path or binary file object), by name."""
    numpy_io = _package()
    where = source_name(f)
    from safetensors import SafetensorError
    try:
        arrays = numpy_io.load_file(f) if isinstance(f, (str, os.PathLike)) else numpy_io.load(f.read())
    except FileNotFoundError:
        raise ModelError(f"{where}: no such file") from None
    except (SafetensorError, ValueError, KeyError, TypeError, OSError) as e:
        raise ModelError(f"{where}: not a valid safetensors file ({type(e).__name__}: {e})") from None
    return {name: _tensor(array, name, where) for name, array in arrays.items()}


def _tensor(array: np.ndarray, name: str, where: str) -> Tensor:
    if array.dtype not in FROM_NP:
        raise ModelError(f"{where}: tensor '{name}' is of dtype {array.dtype}, which tscript does not have (it has "
                         f"{', '.join(d.name for d in FROM_NP.values())})")
    if not (array.flags.writeable and array.flags.c_contiguous and array.flags.aligned):
        array = np.array(array, order="C")
    return _make(array)


def _package():
    try:
        import safetensors.numpy
    except ImportError:
        raise ModelError("reading and writing .safetensors files needs the safetensors package "
                         "(pip install safetensors)") from None
    return safetensors.numpy


def _write_atomic(path: str, data: bytes) -> None:
    """`data` to `path` through a temporary file in the same directory (an error leaves `path` as it was)."""
    path = os.path.realpath(path)
    directory, base = os.path.split(path)
    tmp = os.path.join(directory, f".{base}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _describe(obj) -> str:
    if isinstance(obj, dict):
        bad = next(((k, v) for k, v in obj.items() if not (isinstance(k, str) and isinstance(v, Tensor))), None)
        return f"a dict with the entry {bad[0]!r}: {type(bad[1]).__name__}" if bad else "a dict"
    return type(obj).__name__
