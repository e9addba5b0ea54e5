"""Transposed convolutions in the whole-graph entry (native/conv_transpose.py, the library's overlap-add)
and in eager (native/eager.py) against the reference kernels: random shapes, strides, paddings, output
paddings, dilations, groups, batch 1 and several, float32 and float64; 1x1 inputs whose columns are the
output; batches computed a few images at a time; a DCGAN-style generator as one native call, in the
standalone runtime too."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
import tscript.nn.functional as F
import tscript_runtime
from tscript import nn
from tscript_runtime.ops import accelerated

from tests.codegen.test_window_steps import entry_ran
from tests.conftest import assert_close


def check(fn, *args, dtype=np.float32):
    """`fn` compiled and run on `args` (numpy arrays) through the whole-graph entry equals eager on the
    numpy reference kernels (eager float32 runs the entry's kernels otherwise)."""
    tensors = [ts.from_numpy(a.astype(dtype)) for a in args]
    cm = ts.jit.compile(fn, tuple(tensors))
    got = cm(*tensors)
    assert entry_ran(cm), cm.graph
    previous = accelerated.set_enabled(False)
    try:
        expected = fn(*tensors)
    finally:
        accelerated.set_enabled(previous)
    assert_close(got, expected, rtol=1e-5, atol=1e-5)


@st.composite
def transposed_cases(draw):
    """(x shape, weight shape, stride, padding, output_padding, dilation, groups) of a valid conv_transpose2d."""
    groups = draw(st.integers(1, 3))
    kernel = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.integers(0, d * (k - 1))) for k, d in zip(kernel, dilation))
    out_pad = tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation))
    size = (draw(st.integers(1, 9)), draw(st.integers(1, 9)))
    if any((h - 1) * s - 2 * p + d * (k - 1) + q + 1 < 1
           for h, s, p, d, k, q in zip(size, stride, padding, dilation, kernel, out_pad)):
        padding = (0, 0)
    x = (draw(st.sampled_from([1, 2, 5])), groups * draw(st.integers(1, 6))) + size
    w = (x[1], draw(st.integers(1, 6))) + kernel
    return x, w, stride, padding, out_pad, dilation, groups


def _arrays(case, seed: int):
    x_shape, w_shape, *_, groups = case
    rng = np.random.default_rng(seed)
    return rng.standard_normal(x_shape), rng.standard_normal(w_shape), rng.standard_normal(w_shape[1] * groups)


@settings(max_examples=40, deadline=None)
@given(transposed_cases(), st.booleans(), st.sampled_from([np.float32, np.float64]))
def test_entry_matches_the_reference(case, bias, dtype):
    _, _, stride, padding, out_pad, dilation, groups = case
    x, w, b = _arrays(case, sum(case[0]) + sum(case[1]))
    args = (stride, padding, out_pad, groups, dilation)
    if bias:
        check(lambda t, u, v: F.conv_transpose2d(t, u, v, *args), x, w, b, dtype=dtype)
    else:
        check(lambda t, u: F.conv_transpose2d(t, u, None, *args), x, w, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, groups, padding, out_pad, bias", [
    (1, 1, 0, 0, True), (4, 1, 0, 0, False), (3, 2, 0, 0, True),   # the columns are the output
    (2, 1, 1, 0, True), (2, 1, 0, 1, False),                        # 1x1 input, but cropped or grown: overlap-add
])
def test_one_pixel_inputs(n, groups, padding, out_pad, bias, dtype):
    """DCGAN's first layer (a latent vector to 4x4 planes): one product of all images into the output."""
    rng = np.random.default_rng(n + groups)
    x, w, b = rng.standard_normal((n, 6 * groups, 1, 1)), rng.standard_normal((6 * groups, 5, 4, 4)), \
        rng.standard_normal(5 * groups)
    fn = lambda t, u, v: F.conv_transpose2d(t, u, v if bias else None, 2, padding, out_pad, groups)  # noqa: E731
    check(fn, x, w, b, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_images_a_few_at_a_time(dtype, monkeypatch):
    """Columns over the budget: the batch goes in groups of images (the last one smaller), and the
    overlap-add splits its output channels over two threads."""
    from tscript_runtime.native.library import transposed
    image_bytes = 16 * (64 * 16 + transposed.COLUMN_PAD) * np.dtype(dtype).itemsize  # 4x4 pixels, 64 channels
    monkeypatch.setattr(transposed, "COLUMN_BYTES", 3 * image_bytes)
    rng = np.random.default_rng(3)
    x, w, b = rng.standard_normal((7, 24, 4, 4)), rng.standard_normal((24, 64, 4, 4)), rng.standard_normal(64)
    check(lambda t, u, v: F.conv_transpose2d(t, u, v, 2, 1), x, w, b, dtype=dtype)


@pytest.mark.parametrize("bias", [True, False])
def test_blas_where_the_packed_gemm_is_not_tuned(bias, monkeypatch, tmp_path):
    """float32 products by BLAS on hosts without AVX-512 (code compiled afresh)."""
    from tscript_runtime.native import entry
    monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(entry, "packed_gemm_here", lambda: False)
    rng = np.random.default_rng(6)
    x, w, b = rng.standard_normal((2, 12, 5, 4)), rng.standard_normal((12, 5, 3, 4)), rng.standard_normal(10)
    check(lambda t, u, v: F.conv_transpose2d(t, u, v if bias else None, (2, 1), 1, 0, 2), x, w, b)


def test_generator_is_one_native_call_in_the_runtime_too(tmp_path):
    """A DCGAN-style generator (transposed 4x4 convolutions, BatchNorm, in-place ReLU, Tanh)."""
    ts.manual_seed(0)

    def up(cin, cout, stride, padding):
        return [nn.ConvTranspose2d(cin, cout, 4, stride, padding, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True)]
    net = nn.Sequential(*up(20, 32, 1, 0), *up(32, 16, 2, 1), *up(16, 8, 2, 1), nn.ConvTranspose2d(8, 3, 4, 2, 1),
                        nn.Tanh()).eval()
    z = ts.from_numpy(np.random.default_rng(1).standard_normal((3, 20, 1, 1)).astype(np.float32))
    previous = accelerated.set_enabled(False)
    try:
        with ts.no_grad():
            expected = net(z).numpy()
    finally:
        accelerated.set_enabled(previous)
    compiled = ts.jit.compile(net, (z,))
    got = compiled(z).numpy()
    assert got.shape == (3, 3, 32, 32)
    assert entry_ran(compiled), compiled.explain()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    path = str(tmp_path / "generator.tsm")
    ts.jit.save(compiled, path)
    loaded = tscript_runtime.load(path)
    assert loaded.executables["forward"].entry is not None
    np.testing.assert_allclose(loaded.run(z.numpy()), got, rtol=1e-6, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(transposed_cases(), st.booleans())
def test_eager_library_kernel_matches_numpy(case, bias):
    """Eager float32 conv_transpose2d on the kernel library equals the numpy reference kernel."""
    _, _, stride, padding, out_pad, dilation, groups = case
    x, w, b = (ts.from_numpy(a.astype(np.float32)) for a in _arrays(case, sum(case[0])))
    args = (b if bias else None, stride, padding, out_pad, groups, dilation)
    fast = F.conv_transpose2d(x, w, *args).numpy()
    previous = accelerated.set_enabled(False)
    try:
        slow = F.conv_transpose2d(x, w, *args).numpy()
    finally:
        accelerated.set_enabled(previous)
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(slow).max()))


def test_eager_against_pytorch(oracle):
    rng = np.random.default_rng(4)
    x, w, b = rng.standard_normal((2, 64, 8, 8)), rng.standard_normal((64, 32, 4, 4)), rng.standard_normal(32)
    got = F.conv_transpose2d(*(ts.from_numpy(a.astype(np.float32)) for a in (x, w, b)), 2, 1).numpy()
    want = oracle.nn.functional.conv_transpose2d(*(oracle.from_numpy(a.astype(np.float32)) for a in (x, w, b)), 2, 1)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)
