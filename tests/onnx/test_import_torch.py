"""Files written by torch.onnx.export (the TorchScript-based exporter, and the dynamo one where the
former cannot export the model) import into tscript and give PyTorch's and ONNX Runtime's outputs
for the zoo, at two batch sizes (the batch dim exported as dynamic), also compiled to native code;
exported again by tscript, the imported graph still gives them."""
import contextlib
import io
import logging
import warnings

import numpy as np
import pytest

import tscript as ts

from tests.onnx.helpers import assert_close
from tests.onnx.zoo import build

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")

# (model, dynamo exporter?): the TorchScript-based exporter fails on TransformerEncoderLayer in torch 2.13
CASES = [("mlp", False), ("cnn", False), ("lstm", False), ("gpt", False), ("transformer", True)]


def _export(model, x, path, dynamo: bool) -> None:
    kwargs = ({"dynamic_shapes": ({0: torch.export.Dim("batch")},)} if dynamo else
              {"dynamic_axes": {"x": {0: "batch"}, "y": {0: "batch"}}})
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            torch.onnx.export(model, (x,), str(path), input_names=["x"], output_names=["y"], dynamo=dynamo, **kwargs)
        except ImportError as e:  # the dynamo exporter needs onnxscript
            pytest.skip(f"torch.onnx.export(dynamo={dynamo}) is not available here: {e}")
        finally:
            logging.disable(logging.NOTSET)


def _ort(path, x):
    try:
        import onnxruntime
    except ImportError:
        return None
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})


@pytest.mark.parametrize("name, dynamo", CASES, ids=[f"{n}-{'dynamo' if d else 'torchscript'}" for n, d in CASES])
def test_torch_exports_import_with_pytorchs_and_onnx_runtimes_outputs(tmp_path, name, dynamo):
    model, example = build(torch, name)
    path = tmp_path / "m.onnx"
    _export(model, example(2), path, dynamo)
    loaded = ts.onnx.load(path)
    compiled = ts.jit.compile(loaded, (ts.from_numpy(example(2).numpy()),), dynamic={0: [0]})
    again = tmp_path / "again.onnx"
    ts.onnx.export(loaded, (ts.from_numpy(example(2).numpy()),), again, input_names=["x"], dynamic_axes={"x": [0]})
    for batch in (2, 5):
        x = example(batch)
        with torch.no_grad():
            expected = model(x).numpy()
        xn = x.numpy()
        got = loaded(ts.from_numpy(xn))
        assert_close(got, expected)
        assert_close(compiled(ts.from_numpy(xn)), expected)
        assert_close(ts.onnx.load(again)(ts.from_numpy(xn)), expected)
        for file in (path, again):
            ort = _ort(file, xn)
            if ort is not None:
                assert_close(got, ort)
