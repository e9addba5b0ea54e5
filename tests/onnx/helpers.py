"""Shared by the ONNX tests: running a file in ONNX Runtime (the oracle; tests that need it skip
without it) and comparing outputs at SPEC.md's tolerance for matmul-heavy results."""
import numpy as np
import pytest


def ort_outputs(path, *inputs) -> list:
    """The outputs of the ONNX file `path` (or model bytes) run by ONNX Runtime on the CPU, inputs in
    graph order."""
    ort = pytest.importorskip("onnxruntime")
    model = path if isinstance(path, bytes) else str(path)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, {n: np.asarray(x) for n, x in zip(names, inputs)})


def arrays(out) -> list:
    """Tensors / arrays (or a tuple of them) as a list of arrays."""
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [np.asarray(o.detach().numpy() if hasattr(o, "detach") else o) for o in out]


def assert_close(got, expected, rtol=1e-4, atol=1e-5) -> None:
    got, expected = arrays(got), arrays(expected)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape, (g.shape, e.shape)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
