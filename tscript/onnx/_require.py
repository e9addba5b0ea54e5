"""The `onnx` package is an optional dependency of tscript (`pip install tscript[onnx]`): imported
only when an ONNX file is written or read, with a clear error when it is missing."""
from __future__ import annotations

INSTALL_HINT = "pip install 'tscript[onnx]'  (or: pip install onnx)"


def require_onnx():
    """The `onnx` module; ImportError saying how to install it when it is absent."""
    try:
        import onnx
    except ImportError as e:
        raise ImportError(f"tscript.onnx needs the 'onnx' package, which is not installed: {INSTALL_HINT}") from e
    return onnx
