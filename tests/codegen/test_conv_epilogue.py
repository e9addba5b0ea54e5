"""Convolution epilogues: a conv2d and the pointwise ops after it (ReLU, ReLU6, LeakyReLU, SiLU, hardswish,
a per-channel scale and shift, a residual add + ReLU) compile to one `tscript::ConvGroup`, whose ops the
whole-graph entry applies to each finished block of the convolution's output (inside the packed GEMM,
the depthwise kernel, after the batched images' copy or a BLAS product). Checked on random shapes,
strides, paddings, dilations and groups in float32 and float64 against float64 eager (and PyTorch when
installed), each case through one native call; the interpreted ConvGroup gives exactly the unfused
graph's results; a file's ConvGroup that the entry cannot run is refused with a clear error."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
import tscript.nn.functional as F
from tscript.ir.passes.fuse import GROUP
from tscript_runtime.prims import CONV_GROUP

from tests.codegen.test_window_steps import entry_ran

# epilogue name -> f(y, residual, scale, shift): what follows the convolution
EPILOGUES = {
    "relu": lambda y, r, s, t: F.relu(y),
    "relu6": lambda y, r, s, t: F.relu6(y),
    "hardtanh": lambda y, r, s, t: F.hardtanh(y, 0.0, 6.0),
    "leaky_relu": lambda y, r, s, t: F.leaky_relu(y, 0.1),
    "silu": lambda y, r, s, t: F.silu(y),
    "hardswish": lambda y, r, s, t: F.hardswish(y),
    "residual_relu": lambda y, r, s, t: F.relu(y + r),
    "scale_shift_relu": lambda y, r, s, t: F.relu(y * s + t),
    "bn_residual": lambda y, r, s, t: F.relu(y * s + t + r),
}


def conv_groups(graph) -> list:
    return [n for n in graph.nodes if n.kind == CONV_GROUP]


def run_case(shape, out_channels, kernel, stride, padding, dilation, groups, bias, epilogue, dtype):
    """Compile conv2d + `epilogue`; it must be one ConvGroup run by the entry and match float64 eager."""
    rng = np.random.default_rng(sum(shape) + out_channels + len(epilogue))
    x = rng.standard_normal(shape)
    w = rng.standard_normal((out_channels, shape[-3] // groups) + kernel) / np.sqrt(np.prod(kernel) * shape[-3])
    b = rng.standard_normal(out_channels) if bias else None
    probe = F.conv2d(ts.from_numpy(x), ts.from_numpy(w), None, stride, padding, dilation, groups)
    r = rng.standard_normal(tuple(probe.shape))
    s = rng.standard_normal((out_channels, 1, 1)) + 1.0
    t = rng.standard_normal((1, out_channels, 1, 1) if len(shape) == 4 else (out_channels, 1, 1))

    def model(arrays, d):
        xx, ww, bb, rr, ss, tt = (None if a is None else ts.from_numpy(a.astype(d)) for a in arrays)
        return lambda v: EPILOGUES[epilogue](F.conv2d(v, ww, bb, stride, padding, dilation, groups), rr, ss, tt)
    arrays = (x, w, b, r, s, t)
    fn = model(arrays, dtype)
    example = ts.from_numpy(x.astype(dtype))
    cm = ts.jit.compile(fn, (example,))
    got = cm(example).numpy()
    assert len(conv_groups(cm.graph)) == 1 and not [n for n in cm.graph.nodes if n.kind == GROUP], cm.graph
    assert entry_ran(cm), cm.explain()
    expected = model(arrays, np.float64)(ts.from_numpy(x)).numpy()
    tol = 2e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * max(1.0, np.abs(expected).max()))
    return got, expected


@st.composite
def conv_cases(draw):
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    depthwise = draw(st.booleans()) and groups == 1
    per_group = 1 if depthwise else draw(st.integers(1, 6))
    channels = draw(st.integers(2, 6)) if depthwise else groups * per_group
    groups = channels if depthwise else groups
    out_channels = groups * draw(st.integers(1, 9))
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), 1)
    padding = tuple(draw(st.integers(0, k // 2 + 1)) for k in kernel)
    stride = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    size = tuple(draw(st.integers(max(1, d * (k - 1) + 1 - 2 * p), 14)) for k, p, d in zip(kernel, padding, dilation))
    batch = draw(st.sampled_from([(), (1,), (2,), (3,)]))
    return (batch + (channels,) + size, out_channels, kernel, stride, padding, dilation, groups, draw(st.booleans()),
            draw(st.sampled_from(sorted(EPILOGUES))), draw(st.sampled_from([np.float32, np.float64])))


@settings(max_examples=30, deadline=None)
@given(conv_cases())
def test_random_convolutions(case):
    run_case(*case)


@pytest.mark.parametrize("epilogue", sorted(EPILOGUES))
@pytest.mark.parametrize("shape, out_channels, kernel, stride, padding, groups, path", [
    ((2, 32, 24, 24), 70, (3, 3), (1, 1), (1, 1), 1, "packed GEMM: several K blocks, column blocks, a row tail"),
    ((1, 64, 30, 30), 16, (1, 1), (1, 1), (0, 0), 1, "packed GEMM on the input itself (1x1), split in halves"),
    ((4, 16, 7, 7), 24, (3, 3), (1, 1), (1, 1), 1, "small images: one GEMM for several, each block spread to its images"),
    ((8, 24, 14, 14), 40, (1, 1), (1, 1), (0, 0), 1, "small 1x1 images: 5 + 3 a GEMM, packed from the images"),
    ((3, 8, 10, 10), 4, (3, 3), (2, 2), (1, 1), 1, "small images, few channels, blocks across images"),
    ((2, 12, 15, 15), 12, (3, 3), (2, 2), (1, 1), 12, "depthwise, 3x3 stride 2 (split rows)"),
    ((2, 32, 20, 20), 64, (3, 3), (1, 1), (1, 1), 32, "depthwise with a channel multiplier, split planes"),
    ((2, 8, 9, 9), 12, (3, 3), (1, 1), (0, 0), 4, "grouped"),
])
def test_each_code_path(shape, out_channels, kernel, stride, padding, groups, path, epilogue):
    for dtype in (np.float32, np.float64):
        run_case(shape, out_channels, kernel, stride, padding, (1, 1), groups, True, epilogue, dtype)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, r = rng.standard_normal((2, 16, 11, 11)).astype(np.float32), rng.standard_normal((2, 24, 11, 11))
    w, b = rng.standard_normal((24, 16, 3, 3)).astype(np.float32) / 12, rng.standard_normal(24).astype(np.float32)
    r = r.astype(np.float32)
    cm = ts.jit.compile(lambda v: F.hardswish(F.conv2d(v, ts.from_numpy(w), ts.from_numpy(b), 1, 1) + ts.from_numpy(r)),
                        (ts.from_numpy(x),))
    got = cm(ts.from_numpy(x)).numpy()
    tf = torch.nn.functional
    want = tf.hardswish(tf.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), 1, 1)
                        + torch.from_numpy(r)).numpy()
    assert entry_ran(cm) and conv_groups(cm.graph)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_the_pass_folds_only_a_convolution_read_once():
    w = ts.randn(8, 4, 3, 3)
    x = ts.randn(1, 4, 6, 6)
    cm = ts.jit.compile(lambda v: F.relu(F.conv2d(v, w)), (x,))
    (group,) = conv_groups(cm.graph)
    sub = group.attrs["subgraph"]
    assert [n.kind for n in sub.nodes if n.kind != "prim::Constant"] == ["aten::conv2d", "aten::relu"]
    assert list(sub.nodes)[0].inputs == list(sub.inputs)[:7]
    twice = ts.jit.compile(lambda v: (lambda y: (F.relu(y), y))(F.conv2d(v, w)), (x,))
    assert not conv_groups(twice.graph), twice.graph


def test_an_input_broadcast_along_the_image_is_not_fused():
    """Only full-shaped, per-channel or single values are read by the epilogue."""
    w, m = ts.randn(8, 4, 3, 3), ts.randn(1, 1, 4, 4)
    x = ts.randn(2, 4, 6, 6)
    cm = ts.jit.compile(lambda v: F.relu(F.conv2d(v, w) * m), (x,))
    assert not conv_groups(cm.graph)
    np.testing.assert_allclose(cm(x).numpy(), F.relu(F.conv2d(x, w) * m).numpy(), rtol=1e-5, atol=1e-5)


def test_interpreted_group_is_the_unfused_graph():
    """Without native code the executor runs a ConvGroup by interpreting its subgraph: bit for bit the
    unfused graph's result (the same reference kernels in the same order)."""
    from tscript.ir.graph_json import graph_to_json
    from tscript.ir.passes.fuse_conv import fuse_conv_epilogues
    from tscript.ir.passes.pipeline import PIPELINE, run_stages
    from tscript_runtime.executable import Executable
    w, r = ts.randn(6, 3, 3, 3), ts.randn(2, 6, 5, 5)
    s, t = ts.randn(6, 1, 1), ts.randn(6, 1, 1)
    x = ts.randn(2, 3, 7, 7)
    graph = ts.jit.trace(lambda v: F.leaky_relu(F.conv2d(v, w) * s + t + r, 0.2), (x,)).graph
    run_stages(graph, [stage for stage in PIPELINE if stage[0] != "fuse_conv"])
    fused = graph.copy()
    assert fuse_conv_epilogues(fused) and len(conv_groups(fused)) == 1
    results = [Executable(graph_to_json(g), g.constants, None).run([x.numpy()])[0] for g in (graph, fused)]
    np.testing.assert_array_equal(results[0], results[1])


def test_a_non_contiguous_residual_runs_in_the_executor():
    """An epilogue input whose layout the code does not read (a transposed view): the executor runs that call."""
    w = ts.randn(5, 5, 1, 1)
    x, r = ts.randn(1, 5, 4, 4), ts.randn(1, 5, 4, 4)
    cm = ts.jit.compile(lambda v, u: F.relu(F.conv2d(v, w) + u), (x, r))
    assert conv_groups(cm.graph)
    rt = r.transpose(2, 3)
    np.testing.assert_allclose(cm(x, rt).numpy(), F.relu(F.conv2d(x, w) + rt).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cm(x, r).numpy(), F.relu(F.conv2d(x, w) + r).numpy(), rtol=1e-5, atol=1e-5)


def test_a_file_convgroup_the_entry_cannot_run_is_refused():
    from tscript.ir.graph_json import graph_to_json
    from tscript_runtime.errors import ModelError
    from tscript_runtime.native_plan import NativePlan
    from tscript_runtime.typed_graph import typed_graph
    w = ts.randn(8, 4, 3, 3)
    x = ts.randn(1, 4, 6, 6)
    cm = ts.jit.compile(lambda v: F.relu(F.conv2d(v, w)), (x,))
    plan = cm.executable.plan.to_json()
    doc = graph_to_json(cm.graph)
    (node,) = [n for n in doc["nodes"] if n["kind"] == CONV_GROUP]
    sub = node["attrs"]["subgraph"]["graph"]
    conv = next(n for n in sub["nodes"] if n["kind"] == "aten::conv2d")
    conv["inputs"][3], conv["inputs"][4] = conv["inputs"][4], conv["inputs"][3]  # stride <-> padding
    with pytest.raises(ModelError, match="aten::conv2d of its first 7 inputs"):
        NativePlan.from_json(plan, typed_graph(doc), doc)


def test_dynamic_batch_and_a_boolean_mask():
    """A symbolic batch size (the residual and mask have it too) and a bool input of the epilogue."""
    w = ts.randn(6, 3, 3, 3)

    def fn(v, mask, r):
        return ts.where(mask, F.relu(F.conv2d(v, w, None, 1, 1) + r), 0.5)
    rng = np.random.default_rng(9)

    def args(n):
        return (ts.from_numpy(rng.standard_normal((n, 3, 9, 9)).astype(np.float32)),
                ts.from_numpy(rng.random((n, 6, 9, 9)) < 0.5), ts.from_numpy(rng.standard_normal((n, 6, 9, 9)).astype(np.float32)))
    cm = ts.jit.compile(fn, args(2), dynamic={0: [0], 1: [0], 2: [0]})
    assert conv_groups(cm.graph)
    for n in (1, 4):
        a = args(n)
        np.testing.assert_allclose(cm(*a).numpy(), fn(*a).numpy(), rtol=1e-5, atol=1e-5)
    assert entry_ran(cm), cm.explain()
