"""Exceptions of tscript.onnx. Export errors follow torch.onnx's names (subclasses of RuntimeError);
a file that cannot be imported raises tscript_runtime's ModelError, like any other model file."""
from tscript_runtime.errors import ModelError


class OnnxExporterError(RuntimeError):
    """A model could not be exported to ONNX."""


class UnsupportedOperatorError(OnnxExporterError):
    """The optimized graph holds ops that have no ONNX translation (all of them are named)."""


class UnsupportedOnnxOpsError(ModelError):
    """An ONNX file uses ops tscript cannot import (all of them are named)."""
