"""tscript.onnx.export: every model of the zoo (MLP, CNN, LSTM, transformer encoder layer, GPT) goes to
an ONNX file that passes onnx.checker, runs in ONNX Runtime with eager's outputs (at the example batch
size and, with dynamic_axes, at another), and reads back through tscript.onnx.load with the same
outputs. Parameters are initializers named after them; scripted, compiled and function models export
too; what cannot be exported is refused with every op named."""
import numpy as np
import pytest

import tscript as ts
from tscript import nn

from tests.onnx.helpers import arrays, assert_close, ort_outputs
from tests.onnx.zoo import NAMES, build

onnx = pytest.importorskip("onnx")


def _eager(model, *inputs):
    with ts.no_grad():
        return model(*inputs)


def _export(tmp_path, model, inputs, name="m.onnx", **kw):
    path = tmp_path / name
    ts.onnx.export(model, inputs, path, **kw)
    return path


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_zoo_runs_in_onnx_runtime_as_in_eager(tmp_path, name, dynamic):
    model, example = build(ts, name)
    x = example(2)
    axes = {"x": {0: "batch"}, "y": {0: "batch"}} if dynamic else None
    path = _export(tmp_path, model, (x,), input_names=["x"], output_names=["y"], dynamic_axes=axes)
    for batch in ([2, 5] if dynamic else [2]):
        x = example(batch)
        assert_close(ort_outputs(path, x.numpy()), _eager(model, x))


@pytest.mark.parametrize("name", NAMES)
def test_zoo_reads_back_with_the_same_outputs(tmp_path, name):
    model, example = build(ts, name)
    path = _export(tmp_path, model, (example(2),), dynamic_axes={"x": [0]}, input_names=["x"])
    loaded = ts.onnx.load(path)
    for batch in (2, 3):
        x = example(batch)
        assert_close(loaded(x), _eager(model, x))


def test_the_file_holds_named_initializers_symbolic_dims_and_no_batch_norm(tmp_path):
    model, example = build(ts, "cnn")
    path = _export(tmp_path, model, (example(2),), input_names=["images"], output_names=["logits"],
                   dynamic_axes={"images": {0: "n"}, "logits": {0: "n"}})
    m = onnx.load(str(path))
    onnx.checker.check_model(m, full_check=True)
    assert m.producer_name == "tscript" and m.opset_import[0].version == 17
    ops = {n.op_type for n in m.graph.node}
    assert "BatchNormalization" not in ops and {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool"} <= ops
    assert {"4.weight", "4.bias", "9.weight"} <= {t.name for t in m.graph.initializer}  # the bn-free conv, linear
    dims = lambda v: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]  # noqa: E731
    assert [i.name for i in m.graph.input] == ["images"] and dims(m.graph.input[0]) == ["n", 3, 8, 8]
    assert [o.name for o in m.graph.output] == ["logits"] and dims(m.graph.output[0]) == ["n", 5]


def test_output_dims_that_follow_a_dynamic_input_dim_get_its_name(tmp_path):
    model, example = build(ts, "gpt")
    m = onnx.load(str(_export(tmp_path, model, (example(2),), dynamic_axes={"idx": {0: "batch"}})))
    assert [d.dim_param or d.dim_value for d in m.graph.output[0].type.tensor_type.shape.dim] == ["batch", 8, 40]


class TwoOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 3), nn.Linear(4, 2)

    def forward(self, x, scale):
        h = self.a(x) * scale
        return (h, self.b(x).relu()), h.sum(1)


def test_nested_outputs_are_flattened_and_every_input_named(tmp_path):
    ts.manual_seed(0)
    model, args = TwoOutputs(), (ts.randn(5, 4), ts.randn(1, 3))
    path = _export(tmp_path, model, args, input_names=["x"])
    m = onnx.load(str(path))
    assert [i.name for i in m.graph.input] == ["x", "scale"]
    assert [o.name for o in m.graph.output] == ["output_0", "output_1", "output_2"]
    (h, r), s = _eager(model, *args)
    assert_close(ts.onnx.load(path)(*args), (h, r, s))
    assert_close(ort_outputs(path, *(a.numpy() for a in args)), (h, r, s))


def test_traced_compiled_and_function_models_export(tmp_path):
    model, example = build(ts, "mlp")
    x = example(3)
    expected = _eager(model, x)
    sources = {"traced": ts.jit.trace(model, (x,)), "compiled": ts.jit.compile(model, (x,), dynamic={0: [0]}),
               "function": lambda t: (t * 2).tanh() @ ts.ones(10, 4)}
    for name, source in sources.items():
        path = _export(tmp_path, source, (x,), name=f"{name}.onnx")
        want = _eager(sources["function"], x) if name == "function" else expected
        assert_close(ts.onnx.load(path)(x), want)


@pytest.mark.parametrize("opset", [13, 17, 18, 20])
def test_opsets_whose_ops_changed_form(tmp_path, opset):
    """Reductions take their axes as an input from opset 18 (ReduceSum from 13); Split its sizes from 13."""
    model, example = build(ts, "transformer")
    x = example(2)
    path = _export(tmp_path, model, (x,), opset_version=opset)
    assert onnx.load(str(path)).opset_import[0].version == opset
    assert_close(ts.onnx.load(path)(x), _eager(model, x))
    assert_close(ort_outputs(path, x.numpy()), _eager(model, x))


def test_what_cannot_be_exported_is_named(tmp_path):
    def uses_sort_and_unique(x):
        return x.sort(dim=1).values + x.unique().sum()

    with pytest.raises(ts.onnx.UnsupportedOperatorError, match=r"aten::sort.*aten::unique|aten::unique.*aten::sort"):
        ts.onnx.export(uses_sort_and_unique, (ts.randn(3, 4),), tmp_path / "x.onnx")
    assert not (tmp_path / "x.onnx").exists()


@pytest.mark.parametrize("kwargs, error, message", [
    ({"opset_version": 9}, ValueError, "opset_version must be an int from 13"),
    ({"dynamic_axes": {"nope": [0]}}, ValueError, r"dynamic_axes names \['nope'\]"),
    ({"dynamic_axes": {"x": [3]}}, ValueError, "names dim 3, but 'x' has 2 dims"),
    ({"dynamic_axes": {"x": 0}}, TypeError, "must be a list of dims or a dict"),
    ({"input_names": ["a", "b"]}, ValueError, "2 input_names for a model of 1 inputs"),
    ({"output_names": ["x"]}, ValueError, "must differ from each other and from the input names"),
])
def test_bad_arguments_are_refused_clearly(tmp_path, kwargs, error, message):
    model, example = build(ts, "mlp")
    with pytest.raises(error, match=message):
        ts.onnx.export(model, (example(2),), tmp_path / "m.onnx", **{"input_names": ["x"], **kwargs})


def test_inputs_must_be_tensors_and_training_models_are_refused(tmp_path):
    with pytest.raises(ts.onnx.OnnxExporterError, match="input 1 .* must be a Tensor, got int"):
        ts.onnx.export(lambda x, n: x * n, (ts.randn(2), 3), tmp_path / "m.onnx")
    model, example = build(ts, "mlp")
    trained = ts.jit.compile(model.train(), (example(2),), backward=True)
    with pytest.raises(ts.onnx.OnnxExporterError, match="backward=True cannot be exported"):
        ts.onnx.export(trained, (example(2),), tmp_path / "m.onnx")


def test_export_restores_the_training_mode_and_writes_to_file_objects(tmp_path):
    import io
    model, example = build(ts, "mlp")
    model.train()
    buffer = io.BytesIO()
    ts.onnx.export(model, example(2), buffer)
    assert model.training and all(m.training for m in model.modules())
    x = example(4)
    assert_close(ts.onnx.load(buffer.getvalue())(x), _eager(model.eval(), x))
    assert arrays(ts.onnx.load(io.BytesIO(buffer.getvalue()))(example(1)))[0].shape == (1, 4)
