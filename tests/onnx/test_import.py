"""tscript.onnx.load: every import row on small models built with onnx.helper gives ONNX Runtime's
outputs (several opsets where an op changed form); a few rows are also checked by hand without ONNX
Runtime; shape arithmetic folds into sizes; an imported model compiles, saves as .tsm and runs in the
standalone runtime, at other batch sizes too when its batch dim is symbolic."""
import numpy as np
import pytest

import tscript as ts
import tscript_runtime
from tscript_runtime.errors import ModelError

from tests.onnx.helpers import arrays, assert_close, ort_outputs

onnx = pytest.importorskip("onnx")
from tests.onnx.builders import f32, model, node  # noqa: E402  (needs onnx)

I64 = np.int64


def _run(m, *inputs):
    """tscript's outputs of the ModelProto `m` on `inputs` (arrays)."""
    return ts.onnx.load(m)(*(ts.from_numpy(np.asarray(a)) for a in inputs))


def _check(m, *inputs, rtol=1e-5, atol=1e-6):
    """tscript's outputs equal ONNX Runtime's."""
    assert_close(_run(m, *inputs), ort_outputs(m.SerializeToString(), *inputs), rtol, atol)


x34, x234 = f32(3, 4), f32(2, 3, 4, seed=1)
img = f32(2, 3, 7, 7, seed=2)

# name -> (nodes, inputs, initializers, opset, {output: dtype})
CASES = {
    "gemm_trans_alpha_beta": ([node("Gemm", ["x", "b", "c"], transA=1, transB=1, alpha=0.5, beta=2.0)],
                              {"x": x34}, {"b": f32(5, 3), "c": f32(5)}, 17, {}),
    "gemm_matrix_bias": ([node("Gemm", ["x", "b", "c"])], {"x": x34}, {"b": f32(4, 5), "c": f32(1, 5)}, 11, {}),
    "matmul_batched": ([node("MatMul", ["x", "w"])], {"x": x234}, {"w": f32(4, 6)}, 17, {}),
    "conv_same_upper_stride": ([node("Conv", ["x", "w", "b"], auto_pad="SAME_UPPER", strides=[2, 2])],
                               {"x": f32(1, 3, 8, 8)}, {"w": f32(4, 3, 3, 3), "b": f32(4)}, 17, {}),
    "conv_grouped_dilated": ([node("Conv", ["x", "w"], group=3, dilations=[2, 2], pads=[2, 2, 2, 2])],
                             {"x": img}, {"w": f32(6, 1, 3, 3)}, 13, {}),
    "conv1d": ([node("Conv", ["x", "w"], pads=[1, 1], strides=[2])], {"x": f32(2, 3, 9)}, {"w": f32(4, 3, 3)}, 17, {}),
    "conv_transpose": ([node("ConvTranspose", ["x", "w"], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])],
                       {"x": f32(1, 4, 5, 5)}, {"w": f32(4, 2, 3, 3)}, 17, {}),
    "batch_norm_rank3": ([node("BatchNormalization", ["x", "s", "b", "m", "v"], epsilon=1e-3)],
                         {"x": f32(2, 3, 5)},
                         {"s": f32(3), "b": f32(3), "m": f32(3), "v": np.abs(f32(3, seed=4)) + 0.5}, 15, {}),
    "max_pool_ceil": ([node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)], {"x": img}, {},
                      17, {}),
    "avg_pool_pads_counted": ([node("AveragePool", ["x"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                    count_include_pad=1)], {"x": img}, {}, 17, {}),
    "avg_pool_pads_not_counted": ([node("AveragePool", ["x"], kernel_shape=[2, 2], strides=[2, 2],
                                        pads=[1, 1, 1, 1])], {"x": img}, {}, 17, {}),
    "global_pools": ([node("GlobalAveragePool", ["x"], ["a"]), node("GlobalMaxPool", ["x"], ["m"]),
                      node("Add", ["a", "m"])], {"x": img}, {}, 17, {}),
    "flatten_axis2": ([node("Flatten", ["x"], axis=2)], {"x": img}, {}, 17, {}),
    "transpose_default": ([node("Transpose", ["x"])], {"x": x234}, {}, 17, {}),
    "slice_negative_axes_steps": ([node("Slice", ["x", "s", "e", "a", "st"])], {"x": x234},
                                  {"s": np.array([-1, 0], I64), "e": np.array([-9, 9], I64),
                                   "a": np.array([-1, 1], I64), "st": np.array([-1, 2], I64)}, 17, {}),
    "slice_negative_steps": ([node("Slice", ["x", "s", "e", "a", "st"])], {"x": f32(2, 9, 4)},
                             {"s": np.array([7, -1], I64), "e": np.array([1, -5], I64), "a": np.array([1, 2], I64),
                              "st": np.array([-3, -2], I64)}, 17, {}),
    "slice_opset9_attrs": ([node("Slice", ["x"], starts=[1], ends=[100], axes=[2])], {"x": x234}, {}, 9, {}),
    "expand_both_ways": ([node("Expand", ["x", "s"])], {"x": f32(3, 1)}, {"s": np.array([2, 1, 4], I64)}, 17, {}),
    "where_broadcast": ([node("Greater", ["x", "z"], ["c"]), node("Where", ["c", "x", "y0"])], {"x": x234},
                        {"z": np.zeros(4, np.float32), "y0": np.float32(-1)}, 17, {}),
    "softmax_opset11_axis1": ([node("Softmax", ["x"], axis=1)], {"x": x234}, {}, 11, {}),
    "log_softmax_opset13": ([node("LogSoftmax", ["x"], axis=1)], {"x": x234}, {}, 13, {}),
    "split_opset11_attr": ([node("Split", ["x"], ["a", "b"], axis=2, split=[1, 3]), node("Sub", ["b", "a"])],
                           {"x": x234}, {}, 11, {}),
    "split_opset13_equal": ([node("Split", ["x"], ["a", "b"], axis=-1), node("Mul", ["a", "b"])], {"x": x234}, {},
                            13, {}),
    "split_opset18_uneven": ([node("Split", ["x"], ["a", "b", "c"], axis=2, num_outputs=3), node("Concat",
                              ["c", "b", "a"], axis=2)], {"x": f32(2, 3, 5)}, {}, 18, {}),
    "reduce_mean_opset13": ([node("ReduceMean", ["x"], axes=[0, 2], keepdims=0)], {"x": x234}, {}, 13, {}),
    "reduce_mean_opset18": ([node("ReduceMean", ["x", "a"], keepdims=1)], {"x": x234},
                            {"a": np.array([-1], I64)}, 18, {}),
    "reduce_sum_all": ([node("ReduceSum", ["x"], keepdims=0)], {"x": x234}, {}, 13, {}),
    "reduce_prod_l2_lse": ([node("ReduceProd", ["x"], ["p"], axes=[1, 2]), node("ReduceL2", ["x"], ["l"], axes=[1, 2]),
                            node("ReduceLogSumExp", ["x"], ["s"], axes=[1, 2]), node("Sum", ["p", "l", "s"])],
                           {"x": x234}, {}, 13, {}),
    "argmax_keepdims0": ([node("ArgMax", ["x"], axis=1, keepdims=0)], {"x": x234}, {}, 13, {"y": I64}),
    "gather_2d_negative_indices": ([node("Gather", ["w", "i"], axis=0)], {"i": np.array([[0, -1], [2, 1]], I64)},
                                   {"w": f32(4, 3)}, 13, {}),
    "gather_elements": ([node("GatherElements", ["x", "i"], axis=1)], {"x": x34},
                        {"i": np.array([[0, 2], [1, 1], [3, 0]], I64)}, 13, {}),
    "unsqueeze_squeeze_opset11": ([node("Unsqueeze", ["x"], ["u"], axes=[0, 3]), node("Squeeze", ["u"], axes=[0])],
                                  {"x": x34}, {}, 11, {}),
    "unsqueeze_squeeze_opset13": ([node("Unsqueeze", ["x", "a"], ["u"]), node("Squeeze", ["u"])],
                                  {"x": x34}, {"a": np.array([-1, 0], I64)}, 13, {}),
    "clip_min_only": ([node("Clip", ["x", "lo"])], {"x": x34}, {"lo": np.float32(0.1)}, 13, {}),
    "clip_opset6_attrs": ([node("Clip", ["x"], min=-0.5, max=0.5)], {"x": x34}, {}, 7, {}),
    "activations": ([node("LeakyRelu", ["x"], ["a"], alpha=0.2), node("Elu", ["x"], ["b"], alpha=0.7),
                     node("HardSigmoid", ["x"], ["c"]), node("HardSwish", ["x"], ["d"]), node("Softplus", ["x"], ["e"]),
                     node("Softsign", ["x"], ["f"]), node("PRelu", ["x", "slope"], ["g"]),
                     node("Sum", ["a", "b", "c", "d", "e", "f", "g"])],
                    {"x": x234 * 4}, {"slope": f32(4)}, 17, {}),
    "gelu_tanh_opset20": ([node("Gelu", ["x"], approximate="tanh")], {"x": x234}, {}, 20, {}),
    "gelu_opset20": ([node("Gelu", ["x"])], {"x": x234}, {}, 20, {}),
    "layer_norm_two_dims": ([node("LayerNormalization", ["x", "s", "b"], axis=-2, epsilon=1e-3)], {"x": x234},
                            {"s": f32(3, 4), "b": f32(3, 4)}, 17, {}),
    "unary_chain": ([node("Abs", ["x"], ["a"]), node("Sqrt", ["a"], ["b"]), node("Log", ["b"], ["c"]),
                     node("Exp", ["c"], ["d"]), node("Reciprocal", ["d"], ["e"]), node("Neg", ["e"], ["f"]),
                     node("Sin", ["f"], ["g"]), node("Cos", ["g"], ["h"]), node("Erf", ["h"], ["i"]),
                     node("Tanh", ["i"], ["j"]), node("Sigmoid", ["j"], ["k"]), node("Floor", ["x"], ["l"]),
                     node("Ceil", ["x"], ["m"]), node("Round", ["x"], ["n"]), node("Sign", ["x"], ["o"]),
                     node("Sum", ["k", "l", "m", "n", "o"])], {"x": x34 * 3}, {}, 13, {}),
    "pow_mod_max_min_mean": ([node("Pow", ["x", "two"], ["p"]), node("Max", ["x", "p"], ["a"]),
                              node("Min", ["x", "p"], ["b"]), node("Mean", ["a", "b", "p"])], {"x": x34},
                             {"two": np.float32(2)}, 13, {}),
    "int_div_truncates_mod_floors": ([node("Div", ["i", "j"], ["d"]), node("Mod", ["i", "j"], ["m"]),
                                      node("Add", ["d", "m"])], {"i": np.array([-7, 7, -8, 9], I64)},
                                     {"j": np.array([2, -2, 3, 4], I64)}, 13, {"y": I64}),
    "logic": ([node("Less", ["x", "z"], ["a"]), node("GreaterOrEqual", ["x", "h"], ["b"]),
               node("Or", ["a", "b"], ["c"]), node("Not", ["c"], ["d"]), node("Xor", ["a", "d"], ["e"]),
               node("Equal", ["x", "x"], ["f"]), node("And", ["e", "f"], ["g"]), node("LessOrEqual", ["x", "z"], ["h2"]),
               node("And", ["g", "h2"])], {"x": x34}, {"z": np.float32(0), "h": np.float32(0.5)}, 13,
              {"y": np.bool_}),
    "tile_cumsum_trilu": ([node("Tile", ["x", "r"], ["t"]), node("CumSum", ["t", "ax"], ["c"]),
                           node("Trilu", ["c", "k"], ["u"], upper=1), node("Trilu", ["c"], ["l"], upper=0),
                           node("Add", ["u", "l"])], {"x": x34},
                          {"r": np.array([2, 2], I64), "ax": np.array(1, I64), "k": np.array(1, I64)}, 14, {}),
    "topk": ([node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=0)], {"x": x34}, {"k": np.array([2], I64)}, 13,
             {"v": np.float32, "i": I64}),
    "einsum": ([node("Einsum", ["x", "w"], equation="bij,jk->bik")], {"x": x234}, {"w": f32(4, 2)}, 13, {}),
    "cast_and_cast_like": ([node("Cast", ["x"], ["i"], to=7), node("CastLike", ["i", "x"])], {"x": x34 * 5}, {},
                           15, {}),
    "range_and_constant_of_shape": ([node("Shape", ["x"], ["s"]), node("ConstantOfShape", ["s"], ["z"],
                                     value=onnx.numpy_helper.from_array(np.array([2.5], np.float32))),
                                     node("Range", ["r0", "r1", "r2"], ["r"]), node("Add", ["z", "r"])],
                                    {"x": x34}, {"r0": np.float32(1), "r1": np.float32(3), "r2": np.float32(0.5)},
                                    13, {}),
    "size_and_dropout": ([node("Dropout", ["x"], ["d"]), node("Size", ["x"], ["n"]), node("Cast", ["n"], ["f"], to=1),
                          node("Mul", ["d", "f"])], {"x": x34}, {}, 13, {}),
    "constants": ([node("Constant", [], ["c"], value_floats=[1.0, 2.0, 3.0, 4.0]),
                   node("Constant", [], ["k"], value_float=0.5), node("Mul", ["c", "k"], ["m"]),
                   node("Add", ["x", "m"])], {"x": x34}, {}, 13, {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_row_gives_onnx_runtimes_outputs(case):
    nodes, inputs, inits, opset, out_types = CASES[case]
    outputs = list(out_types) if len(out_types) > 1 else ["y"]
    m = model(nodes, inputs, inits, outputs, opset, out_types=out_types)
    _check(m, *inputs.values(), atol=1e-5)


def test_rows_by_hand():
    """Without ONNX Runtime: Gemm, a whole reversal, integer Div (truncates), Softmax before opset 13
    (over the dims from `axis` on, flattened)."""
    b, c = f32(5, 3), f32(5)
    m = model([node("Gemm", ["x", "b", "c"], transA=1, transB=1, alpha=0.5, beta=2.0)], {"x": x34}, {"b": b, "c": c})
    np.testing.assert_allclose(arrays(_run(m, x34))[0], 0.5 * x34.T @ b.T + 2 * c, rtol=1e-5, atol=1e-6)
    m = model([node("Slice", ["x", "s", "e", "a", "st"])], {"x": x234},
              {"s": np.array([-1], I64), "e": np.array([-2 ** 63], I64), "a": np.array([2], I64),
               "st": np.array([-1], I64)})
    np.testing.assert_array_equal(arrays(_run(m, x234))[0], x234[:, :, ::-1])
    m = model([node("Div", ["i", "j"])], {"i": np.array([-7, 7], I64)}, {"j": np.array([2, 2], I64)},
              out_types={"y": I64})
    np.testing.assert_array_equal(arrays(_run(m, np.array([-7, 7], I64)))[0], [-3, 3])
    m = model([node("Softmax", ["x"], axis=1)], {"x": x234}, opset=11)
    flat = np.exp(x234.reshape(2, 12))
    np.testing.assert_allclose(arrays(_run(m, x234))[0], (flat / flat.sum(1, keepdims=True)).reshape(2, 3, 4),
                               rtol=1e-5, atol=1e-6)


def _shape_arithmetic_model():
    """What exporters write for `x.view(x.size(0), -1)`: Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "zero"], ["n"], axis=0),
             node("Unsqueeze", ["n", "axes"], ["n1"]), node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             node("Reshape", ["x", "shape"], ["r"]), node("Relu", ["r"])]
    inits = {"zero": np.array(0, I64), "axes": np.array([0], I64), "minus1": np.array([-1], I64)}
    return model(nodes, {"x": img}, inits, dims={"x": ["batch", 3, 7, 7]})


def test_shape_arithmetic_folds_into_sizes():
    f = ts.onnx.load(_shape_arithmetic_model().SerializeToString())
    kinds = [n.kind for n in f.graph.nodes]
    assert "aten::cat" not in kinds and "aten::full" not in kinds and kinds.count("aten::size") <= 1
    assert str(f.graph.inputs[0].type) == "Float(batch, 3, 7, 7)"
    for batch in (2, 5):
        x = f32(batch, 3, 7, 7)
        np.testing.assert_array_equal(arrays(f(ts.from_numpy(x)))[0], np.maximum(x.reshape(batch, -1), 0))


def test_an_imported_model_compiles_saves_and_runs_in_the_standalone_runtime(tmp_path):
    m = _shape_arithmetic_model()
    f = ts.onnx.load(m.SerializeToString())
    x = ts.from_numpy(img)
    compiled = ts.jit.compile(f, (x,), dynamic={0: [0]})
    ts.jit.save(compiled, tmp_path / "m.tsm")
    runtime = tscript_runtime.load(tmp_path / "m.tsm")
    for batch in (2, 4):
        xb = f32(batch, 3, 7, 7, seed=batch)
        want = np.maximum(xb.reshape(batch, -1), 0)
        np.testing.assert_array_equal(arrays(compiled(ts.from_numpy(xb)))[0], want)
        np.testing.assert_array_equal(runtime.run(xb), want)
    ts.jit.save(f, tmp_path / "graph.tsm")  # the uncompiled graph saves too (a function with a batch dim)
    np.testing.assert_array_equal(tscript_runtime.load(tmp_path / "graph.tsm").run(img), np.maximum(img.reshape(2, -1), 0))
    assert "aten::relu" in str(ts.jit.optimize(f).graph)


def _lstm_model(direction: str, layout: int, states: bool, opset: int = 14):
    dirs, hidden, batch, seq, width = (2 if direction == "bidirectional" else 1), 5, 3, 4, 6
    inits = {"w": f32(dirs, 4 * hidden, width, seed=1) * 0.5, "r": f32(dirs, 4 * hidden, hidden, seed=2) * 0.5,
             "b": f32(dirs, 8 * hidden, seed=3) * 0.5}
    names = ["x", "w", "r", "b", "", "h0", "c0"] if states else ["x", "w", "r", "b"]
    shape = (batch, seq, width) if layout else (seq, batch, width)
    inputs = {"x": f32(*shape, seed=4)}
    if states:
        state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
        inputs.update(h0=f32(*state, seed=5), c0=f32(*state, seed=6))
    attrs = {"hidden_size": hidden, "direction": direction} | ({"layout": layout} if layout else {})
    lstm = node("LSTM", names, ["y", "yh", "yc"], **attrs)
    return model([lstm], inputs, inits, ["y", "yh", "yc"], opset), inputs


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("states", [False, True], ids=["zero_states", "given_states"])
def test_lstm_imports_with_onnx_runtimes_outputs(direction, states):
    m, inputs = _lstm_model(direction, 0, states)
    _check(m, *inputs.values(), atol=1e-5)


def _recurrent_model(op: str, direction: str, states: bool, **attrs):
    """An ONNX GRU or RNN node over (seq 4, batch 3, width 6) with hidden size 5."""
    gates = {"GRU": 3, "RNN": 1}[op]
    dirs, hidden = (2 if direction == "bidirectional" else 1), 5
    inits = {"w": f32(dirs, gates * hidden, 6, seed=1) * 0.5, "r": f32(dirs, gates * hidden, hidden, seed=2) * 0.5,
             "b": f32(dirs, 2 * gates * hidden, seed=3) * 0.5}
    inputs = {"x": f32(4, 3, 6, seed=4)} | ({"h0": f32(dirs, 3, hidden, seed=5)} if states else {})
    names = ["x", "w", "r", "b"] + (["", "h0"] if states else [])
    layer = node(op, names, ["y", "yh"], hidden_size=hidden, direction=direction, **attrs)
    return model([layer], inputs, inits, ["y", "yh"], 14), inputs


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("states", [False, True], ids=["zero_states", "given_states"])
@pytest.mark.parametrize("op, attrs", [("GRU", {"linear_before_reset": 1}), ("RNN", {}),
                                       ("RNN", {"activations": ["Relu"]})], ids=["gru", "rnn_tanh", "rnn_relu"])
def test_gru_and_rnn_import_with_onnx_runtimes_outputs(op, attrs, direction, states):
    if direction == "bidirectional" and "activations" in attrs:
        attrs = {"activations": ["Relu", "Relu"]}
    m, inputs = _recurrent_model(op, direction, states, **attrs)
    _check(m, *inputs.values(), atol=1e-5)


@pytest.mark.parametrize("op, attrs, message", [
    ("GRU", {}, "linear_before_reset=0"), ("RNN", {"activations": ["Sigmoid"]}, "activations"),
    ("GRU", {"linear_before_reset": 1, "clip": 2.0}, "clip")])
def test_recurrent_options_the_loops_do_not_compute_are_refused(op, attrs, message):
    m, _ = _recurrent_model(op, "forward", False, **attrs)
    with pytest.raises(ModelError, match=message):
        ts.onnx.load(m)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_batch_major_lstm_is_the_sequence_major_one_transposed(direction):
    """layout=1 (which ONNX Runtime's CPU LSTM does not run) against layout=0 on transposed data."""
    m1, inputs = _lstm_model(direction, 1, True)
    m0, _ = _lstm_model(direction, 0, True)
    seq_major = [np.swapaxes(a, 0, 1) for a in inputs.values()]
    y0, h0, c0 = arrays(_run(m0, *seq_major))
    y1, h1, c1 = arrays(_run(m1, *inputs.values()))
    np.testing.assert_allclose(y1, np.transpose(y0, (2, 0, 1, 3)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h1, np.swapaxes(h0, 0, 1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c1, np.swapaxes(c0, 0, 1), rtol=1e-6, atol=1e-6)
