"""ONNX external data (weights kept in files beside the model, as torch.onnx's dynamo exporter and
large models do), read safely: a location must be a relative path to a regular file inside the
model's directory (no absolute paths, no `..`, no symlink out of it), offset and length must lie
inside that file and match the tensor's size; anything else is a ModelError naming the tensor.
"""
from __future__ import annotations

import os

import numpy as np

from tscript_runtime.errors import ModelError

# Bytes per element of the data types tscript reads (import_rows.DTYPES).
_ITEM_BYTES = {1: 4, 2: 1, 3: 1, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 14: 8, 15: 16, 16: 2}


def load_external_data(onnx, model, base_dir: str | None) -> None:
    """Fill the raw data of every initializer kept in an external file (in place)."""
    tensors = [t for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    if tensors and base_dir is None:
        raise ModelError(f"ONNX model: initializer '{tensors[0].name}' keeps its data in an external file; "
                         f"load the model from its path so the file beside it can be found")
    root = os.path.realpath(base_dir) if base_dir is not None else None
    for t in tensors:
        t.raw_data = _read(t, root)
        del t.external_data[:]
        t.data_location = onnx.TensorProto.DEFAULT


def _read(t, root: str) -> bytes:
    info = {e.key: e.value for e in t.external_data}
    location = info.get("location", "")
    path = _inside(t.name, location, root)
    size = os.path.getsize(path)
    offset, length = _int(t.name, info, "offset", 0), _int(t.name, info, "length", None)
    expected = _ITEM_BYTES.get(t.data_type, 0) * int(np.prod(t.dims, dtype=np.int64)) if t.dims else \
        _ITEM_BYTES.get(t.data_type, 0)
    length = expected if length is None else length
    if length != expected or offset + length > size:
        raise ModelError(f"ONNX model: external data of '{t.name}' ({location}, offset {offset}, length {length}) "
                         f"does not match the tensor ({expected} bytes) or lies outside the file ({size} bytes)")
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(length)


def _inside(name: str, location: str, root: str) -> str:
    """The real path of `location` when it is a file inside `root`."""
    if not location or os.path.isabs(location) or "\\" in location or ".." in location.split("/"):
        raise ModelError(f"ONNX model: external data of '{name}' has the location {location!r}, which is not a "
                         f"plain relative path beside the model")
    path = os.path.realpath(os.path.join(root, location))
    if os.path.commonpath([path, root]) != root or not os.path.isfile(path):
        raise ModelError(f"ONNX model: external data file {location!r} of '{name}' is not a file in the model's "
                         f"directory")
    return path


def _int(name: str, info: dict, key: str, default):
    text = info.get(key)
    if text is None:
        return default
    if not text.isdigit():
        raise ModelError(f"ONNX model: external data of '{name}' has {key} {text!r}, not a non-negative integer")
    return int(text)
