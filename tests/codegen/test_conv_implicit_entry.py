"""float32 convolutions of the whole-graph entry on the implicit-im2col GEMM (hosts with the packed GEMM:
its columns packed straight from the image, never written out) against the reference kernels through
one native call: random shapes, strides, paddings (past the kernel's reach), dilations, groups and
batch sizes (one image at a time, and small images side by side in one product), kernels larger than
the image, ConvGroup epilogues (bias, batch norm, ReLU, the residual add) on both paths; the shapes
where im2col measured faster (1x1 kernels, strided products of more rows than columns) still taking
it; and the call plan reserves no im2col columns where there are none."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
import tscript.nn.functional as F
from tscript_runtime.native.library.conv import images_per_gemm, implicit_columns, packs_from_image
from tscript_runtime.native.library.blocking import pack_bytes

from tests.codegen.test_conv_epilogue import run_case
from tests.codegen.test_window_steps import check

pytestmark = pytest.mark.skipif(not implicit_columns(np.float32), reason="the packed GEMM is not used on this CPU")


@st.composite
def convolutions(draw):
    kernel = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.integers(0, d * (k - 1) + 2)) for k, d in zip(kernel, dilation))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    size = tuple(draw(st.integers(max(1, d * (k - 1) + 1 - 2 * p), 26)) for k, p, d in zip(kernel, padding, dilation))
    groups = draw(st.integers(1, 3))
    shape = (draw(st.integers(1, 5)), groups * draw(st.integers(2, 6))) + size
    out = groups * draw(st.sampled_from([1, 4, 7, 16, 33]))
    return shape, out, kernel, stride, padding, dilation, groups, draw(st.booleans())


@settings(max_examples=40, deadline=None)
@given(convolutions())
def test_random_convolutions(case):
    shape, out, kernel, stride, padding, dilation, groups, bias = case
    rng = np.random.default_rng(sum(shape) + out)
    x, w = rng.standard_normal(shape), rng.standard_normal((out, shape[1] // groups) + kernel)
    if bias:
        check(lambda t, u, v: F.conv2d(t, u, v, stride, padding, dilation, groups), x, w, rng.standard_normal(out))
    else:
        check(lambda t, u: F.conv2d(t, u, None, stride, padding, dilation, groups), x, w)


@pytest.mark.parametrize("n, c, out, size, kernel, stride, padding", [
    (1, 3, 16, 64, 7, 2, 3),   # a stem: K 147, columns over several NC blocks, both cores
    (2, 16, 32, 27, 3, 1, 1),  # SqueezeNet's fire 3x3 at 27x27
    (8, 24, 40, 7, 3, 1, 1),   # ResNet's last layers' size: all 8 images in one product
    (3, 8, 12, 13, 4, 2, 1),   # a DCGAN discriminator's 4x4 stride 2
    (2, 5, 6, 3, 5, 1, 2),     # a kernel larger than the image
])
def test_layer_shapes(n, c, out, size, kernel, stride, padding):
    rng = np.random.default_rng(n + c + out)
    x, w = rng.standard_normal((n, c, size, size)), rng.standard_normal((out, c, kernel, kernel))
    check(lambda t, u, v: F.conv2d(t, u, v, stride, padding), x, w, rng.standard_normal(out))


@pytest.mark.parametrize("n, c, out, size, kernel, stride", [
    (1, 32, 96, 14, 3, 2),   # stride 2, more output channels than columns (ResNet's layer4, first)
    (2, 16, 40, 9, 1, 2),    # 1x1 stride 2: a strided copy of the input
    (6, 8, 300, 7, 3, 2),    # small images side by side, stride 2, more rows than columns
])
def test_where_im2col_measured_faster(n, c, out, size, kernel, stride):
    length = ((size + 2 * (kernel // 2) - kernel) // stride + 1) ** 2
    assert not packs_from_image((kernel, kernel), stride, out, images_per_gemm(n, 1, length) * length)
    rng = np.random.default_rng(n + c + out)
    x, w = rng.standard_normal((n, c, size, size)), rng.standard_normal((out, c, kernel, kernel))
    check(lambda t, u, v: F.conv2d(t, u, v, stride, kernel // 2), x, w, rng.standard_normal(out))


def test_which_products_pack_from_the_image():
    assert packs_from_image(False, 1, 512, 49)         # stride 1: always
    assert packs_from_image(False, 2, 64, 12544)       # strided, more columns than rows
    assert not packs_from_image(False, 2, 512, 49)     # strided, more rows: both cores would pack all of B
    assert not packs_from_image(True, 1, 64, 3136)     # pointwise, one image: the GEMM reads the image itself
    assert packs_from_image(True, 1, 64, 980, 5)       # pointwise, several images: not copied side by side
    assert packs_from_image(False, 2, 128, 784)        # a strided 1x1 (ResNet's downsample): not im2col'd


@pytest.mark.parametrize("epilogue", ["bn_residual", "residual_relu", "scale_shift_relu", "relu"])
@pytest.mark.parametrize("shape, out, kernel, stride, padding, groups", [
    ((1, 12, 30, 30), 20, (3, 3), (1, 1), (1, 1), 1),   # one image: the epilogue inside the GEMM
    ((2, 12, 30, 30), 24, (3, 3), (2, 2), (1, 1), 2),   # groups: a product per image and group
    ((6, 8, 9, 9), 16, (3, 3), (1, 1), (1, 1), 1),      # small images side by side: spread from the GEMM
    ((1, 12, 13, 13), 64, (3, 3), (2, 2), (1, 1), 1),   # im2col, then the product (more rows than columns)
])
def test_epilogues(shape, out, kernel, stride, padding, groups, epilogue):
    run_case(shape, out, kernel, stride, padding, (1, 1), groups, True, epilogue, np.float32)


def test_the_plan_holds_no_columns():
    """A 3x3 convolution of 64 channels at 56x56: its im2col columns would be 7.2 MB; the arena holds
    the output and the GEMM's panels only."""
    rng = np.random.default_rng(6)
    x = ts.from_numpy(rng.standard_normal((1, 64, 56, 56)).astype(np.float32))
    w, b = (ts.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in ((64, 64, 3, 3), (64,)))
    cm = ts.jit.compile(lambda t: F.relu(F.conv2d(t, w, b, 1, 1)), (x,))
    np.testing.assert_allclose(cm(x).numpy(), F.relu(F.conv2d(x, w, b, 1, 1)).numpy(), rtol=1e-4, atol=1e-4)
    plan = next(p for p in cm.executable.entry._plans.values() if p is not None)
    columns = 64 * 9 * 56 * 56 * 4
    assert plan.arena <= 64 * 56 * 56 * 4 + pack_bytes(64, 56 * 56, 64 * 9) + 4096 < columns
