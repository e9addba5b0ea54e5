"""tscript.onnx: models out to ONNX and ONNX models in (the `onnx` package is an optional extra:
`pip install 'tscript[onnx]'`; it is imported only when a file is written or read).

    export(model, args, f, input_names=, output_names=, dynamic_axes=, opset_version=)   exporter.py
    load(f) -> OnnxFunction, a ScriptFunction tscript optimizes, compiles, saves as .tsm   importer.py

What each side translates is in its table (export_rows.py, import_rows.py); `supported_ops()` lists
them. The two sides are loaded on first use, so `import tscript` does not pay for them.
"""
from .errors import OnnxExporterError, UnsupportedOnnxOpsError, UnsupportedOperatorError

__all__ = ["OnnxExporterError", "OnnxFunction", "UnsupportedOnnxOpsError", "UnsupportedOperatorError", "export",
           "load", "supported_ops"]


def __getattr__(name: str):
    if name == "export":
        from .exporter import export
        return export
    if name in ("load", "OnnxFunction"):
        from . import importer
        return getattr(importer, name)
    if name == "supported_ops":
        from .ops_doc import supported_ops
        return supported_ops
    raise AttributeError(f"module 'tscript.onnx' has no attribute '{name}'")
