"""A hostile or broken .onnx file gives a ModelError naming what is wrong, never a crash: bytes that
are not ONNX, a truncated file, ops tscript cannot import (all named at once), dtypes it does not
have, external data outside the model's directory or not matching its tensor, nodes the rows cannot
make sense of. Without the onnx package, export and load say how to install it."""
import sys

import numpy as np
import pytest

import tscript as ts
from tscript_runtime.errors import ModelError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tests.onnx.builders import f32, model, node  # noqa: E402


def _bytes(m) -> bytes:
    return m.SerializeToString()


def _relu() -> bytes:
    return _bytes(model([node("Relu", ["x"])], {"x": f32(2, 3)}))


@pytest.mark.parametrize("data, message", [
    (b"", "the file is empty"),
    (b"\xff\xfe not protobuf at all \x00\x01", "not a valid ONNX"),
    (numpy_helper.from_array(np.ones(3, np.float32), "t").SerializeToString(), "no graph|not a valid ONNX"),
])
def test_bytes_that_are_not_an_onnx_model(data, message):
    with pytest.raises(ModelError, match=message):
        ts.onnx.load(data)


def test_truncated_files_and_missing_paths(tmp_path):
    data = _bytes(model([node("MatMul", ["x", "w"])], {"x": f32(2, 3)}, {"w": f32(3, 64)}))
    for cut in (len(data) // 3, len(data) - 7):
        with pytest.raises(ModelError):
            ts.onnx.load(data[:cut])
    with pytest.raises(ModelError, match="cannot be read"):
        ts.onnx.load(tmp_path / "missing.onnx")


def test_a_file_over_the_size_limit_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    load_module = sys.modules["tscript.onnx.importer"]
    path = tmp_path / "m.onnx"
    path.write_bytes(_relu())
    monkeypatch.setattr(load_module, "MAX_ONNX_BYTES", 10)
    with pytest.raises(ModelError, match="larger than 10 bytes"):
        ts.onnx.load(path)


def test_every_unsupported_op_is_named_at_once():
    nodes = [node("NonZero", ["x"], ["a"]), node("Resize", ["x", "", "s"], ["b"]), node("NonZero", ["x"], ["c"]),
             helper.make_node("FusedMatMul", ["x", "x"], ["y"], domain="com.microsoft")]
    m = model(nodes, {"x": f32(1, 1, 2, 2)}, {"s": np.ones(4, np.float32)}, opset=17, infer=False)
    with pytest.raises(ts.onnx.UnsupportedOnnxOpsError,
                       match=r"cannot import these ops: NonZero \(x2\), Resize, com\.microsoft::FusedMatMul"):
        ts.onnx.load(_bytes(m))


def test_a_model_failing_the_checker_is_refused():
    m = model([node("Relu", ["x"], ["a"]), node("Relu", ["a"])], {"x": f32(2)})
    m.graph.node[0].input[0] = "nowhere"  # an input no one defines
    with pytest.raises(ModelError, match="onnx.checker"):
        ts.onnx.load(_bytes(m))


def test_dtypes_tscript_lacks_are_named():
    m = helper.make_model(helper.make_graph(
        [node("Relu", ["x"])], "g", [helper.make_tensor_value_info("x", TensorProto.UINT16, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.UINT16, [2, 2])]),
        opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ModelError, match="input 'x' has data type uint16"):
        ts.onnx.load(_bytes(m))
    m = helper.make_model(helper.make_graph(
        [node("Cast", ["x"], to=TensorProto.UINT16)], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.UINT16, [2])]), opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ModelError, match="data type uint16 is not supported"):
        ts.onnx.load(_bytes(m))


def test_float16_and_small_integer_models_import():
    x16 = f32(2, 3).astype(np.float16)
    m = model([node("Relu", ["x"], ["a"]), node("Mul", ["a", "w"])], {"x": x16},
              initializers={"w": np.full((3,), 1.5, np.float16)}, out_types={"y": np.float16})
    out = ts.onnx.load(_bytes(m))(ts.tensor(x16))
    assert out.dtype == ts.float16
    np.testing.assert_array_equal(out.numpy(), (np.maximum(x16, 0) * np.float16(1.5)).astype(np.float16))
    m = helper.make_model(helper.make_graph(
        [node("Cast", ["x"], to=TensorProto.UINT8)], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [3])]), opset_imports=[helper.make_opsetid("", 17)])
    assert ts.onnx.load(_bytes(m))(ts.tensor([1.0, 7.9, 200.0])).tolist() == [1, 7, 200]


def test_nodes_the_rows_cannot_follow_are_named():
    asym = model([node("MaxPool", ["x"], kernel_shape=[2, 2], pads=[0, 0, 1, 1])], {"x": f32(1, 1, 4, 4)})
    with pytest.raises(ModelError, match=r"node 0 \(MaxPool\): asymmetric padding \[0, 0, 1, 1\]"):
        ts.onnx.load(_bytes(asym))
    computed_axes = model([node("Unsqueeze", ["x", "a"])], {"x": f32(2), "a": np.array([0], np.int64)})
    with pytest.raises(ModelError, match=r"axes \('a'\) must be known at import"):
        ts.onnx.load(_bytes(computed_axes))
    bad_reshape = model([node("Reshape", ["x", "s"])], {"x": f32(2, 3)}, {"s": np.array([4, 4], np.int64)})
    bad_reshape.graph.output[0].type.tensor_type.shape.Clear()
    with pytest.raises(ModelError, match=r"\(Reshape\): .*reshape"):
        ts.onnx.load(_bytes(bad_reshape))


def _external_model(tmp_path, location: str, offset: int = 0, length: int | None = None):
    """A MatMul whose weight lives in `location` (relative to tmp_path)."""
    weight = numpy_helper.from_array(f32(3, 4), "w")
    entries = {"location": location, "offset": str(offset)} | ({"length": str(length)} if length is not None else {})
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    for k, v in entries.items():
        weight.external_data.add(key=k, value=v)
    g = helper.make_graph([node("MatMul", ["x", "w"])], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                           [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [weight])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "model" / "m.onnx"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(_bytes(m))
    return path


def test_external_data_is_read_from_beside_the_model(tmp_path):
    w = f32(3, 4)
    path = _external_model(tmp_path, "weights.bin", offset=8)
    (path.parent / "weights.bin").write_bytes(b"\x00" * 8 + w.tobytes())
    x = f32(2, 3, seed=3)
    np.testing.assert_allclose(ts.onnx.load(path)(ts.from_numpy(x)).numpy(), x @ w, rtol=1e-5, atol=1e-6)
    with pytest.raises(ModelError, match="load the model from its path"):
        ts.onnx.load(path.read_bytes())


@pytest.mark.parametrize("location, offset, length, message", [
    ("../secret.bin", 0, None, "not a plain relative path"),
    ("/etc/passwd", 0, None, "not a plain relative path"),
    ("missing.bin", 0, None, "is not a file in the model's directory"),
    ("link.bin", 0, None, "is not a file in the model's directory"),
    ("weights.bin", 40, None, "lies outside the file"),
    ("weights.bin", 0, 12, "does not match the tensor"),
])
def test_external_data_that_escapes_or_does_not_fit_is_refused(tmp_path, location, offset, length, message):
    path = _external_model(tmp_path, location, offset, length)
    (path.parent / "weights.bin").write_bytes(f32(3, 4).tobytes())
    (tmp_path / "secret.bin").write_bytes(f32(3, 4).tobytes())
    (path.parent / "link.bin").symlink_to(tmp_path / "secret.bin")
    with pytest.raises(ModelError, match=message):
        ts.onnx.load(path)


def test_without_the_onnx_package_both_directions_say_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'tscript\[onnx\]'"):
        ts.onnx.load(tmp_path / "m.onnx")
    with pytest.raises(ImportError, match=r"pip install 'tscript\[onnx\]'"):
        ts.onnx.export(lambda x: x + 1, (ts.ones(2),), tmp_path / "m.onnx")


@pytest.mark.parametrize("op", ["Range", "ConstantOfShape", "Expand"])
def test_constants_far_larger_than_the_file_are_refused_at_import(op):
    """A few bytes asking for 10^12 elements: refused before any pass would build the constant."""
    nodes = {"Range": [node("Range", ["a", "b", "c"], ["r"])], "ConstantOfShape": [node("ConstantOfShape", ["s"], ["r"])],
             "Expand": [node("Expand", ["one", "s"], ["r"])]}[op]
    inits = {"a": np.array(0, np.int64), "b": np.array(10 ** 12, np.int64), "c": np.array(1, np.int64),
             "s": np.array([10 ** 6, 10 ** 6], np.int64), "one": np.ones(1, np.float32)}
    m = model(nodes + [node("Relu", ["x"])], {"x": f32(2)}, inits, infer=False)
    with pytest.raises(ModelError, match="would make a constant of 1000000000000 elements"):
        ts.onnx.load(_bytes(m))


def test_random_byte_mutations_load_or_give_a_model_error(tmp_path):
    """A bounded fuzz run: 100 seeded mutations of an exported model (bytes flipped, cut, inserted)."""
    import random
    path = tmp_path / "m.onnx"
    ts.manual_seed(0)
    ts.onnx.export(ts.nn.Sequential(ts.nn.Linear(4, 8), ts.nn.ReLU(), ts.nn.Linear(8, 2)), (ts.randn(2, 4),), path,
                   dynamic_axes={"input": [0]})
    seed, rng = path.read_bytes(), random.Random(0)
    for _ in range(100):
        data = bytearray(seed)
        for _ in range(rng.randint(1, 6)):
            pos = rng.randrange(len(data))
            cut = rng.random()
            if cut < 0.6:
                data[pos] = rng.randrange(256)
            elif cut < 0.8:
                del data[pos:pos + rng.randint(1, 16)]
            else:
                data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        try:
            ts.onnx.load(bytes(data))
        except ModelError:
            pass
