"""Models that travel: a loaded `Model` pickles as the bytes of its `.tsm` file, so it can be sent to
worker processes (multiprocessing, Dask, Ray), where it loads again from those bytes: the file
checked in full, the native code emitted or found in that machine's cache. Native code, linked
libraries and threads never cross a process boundary.

The pickle holds `(file bytes, name of the file, parameters changed in place since loading)`:

- a model loaded from a path reads the file again when pickled, and refuses to pickle
  (`pickle.PicklingError`) when the file no longer holds the model it loaded (its manifest, which
  lists every member's SHA-256, differs); one loaded from a file object kept the object's bytes;
- parameters written in place (`model.params[name][...] = ...`, an optimizer step) travel too:
  those whose bytes differ from the file's are sent and written into the new model's arrays.
"""
from __future__ import annotations

import io
import json
import os
import pickle

from .archive import source_name
from .errors import ModelError


def origin_of(source) -> tuple:
    """(what to load, origin): a path loads as itself and is read again when the model is pickled;
    a file object's bytes are read now (from its start) and kept, and load from memory."""
    if isinstance(source, (str, os.PathLike)):
        return source, os.path.abspath(os.fspath(source))
    try:
        source.seek(0)
        data = source.read()
    except (AttributeError, OSError, ValueError) as e:  # not a binary file object, a closed one, ...
        raise ModelError(f"{source_name(source)}: cannot read the archive: {e}") from None
    if not isinstance(data, bytes):
        raise ModelError(f"{source_name(source)}: cannot read the archive: the file object gives "
                         f"{type(data).__name__}, not bytes (open it in binary mode)")
    return named_bytes(data, source_name(source)), data


def named_bytes(data: bytes, name: str) -> io.BytesIO:
    """A file object over `data` that error messages call `name`."""
    stream = io.BytesIO(data)
    stream.name = name
    return stream


def reduce_model(model) -> tuple:
    """`Model.__reduce__`: the file's bytes, its name and the parameters changed since loading."""
    from .model import read_saved_model
    if model.origin is None:
        raise pickle.PicklingError("this Model was not made by tscript_runtime.load, so it has no file to send")
    data = model.origin if isinstance(model.origin, bytes) else _read(model.origin)
    saved = read_saved_model(named_bytes(data, model.source))
    if _canonical(saved.manifest) != _canonical(model.manifest):
        raise pickle.PicklingError(f"{model.source} changed since the model was loaded from it: load it again "
                                   f"before sending it to another process")
    changed = {name: array for name, array in model.params.items() if array.tobytes() != saved.params[name].tobytes()}
    return restore, (data, model.source, changed)


def restore(data: bytes, source: str, changed: dict):
    """The Model a pickle describes (see `reduce_model`), loaded and checked from `data`."""
    from .model import Model, read_saved_model
    model = Model(read_saved_model(named_bytes(data, source)), origin=data)
    for name, value in changed.items():
        model.params[name][...] = value
    return model


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise pickle.PicklingError(f"{path}: cannot read the model's file again to send it ({e})") from None


def _canonical(manifest: dict) -> str:
    return json.dumps(manifest, sort_keys=True)
