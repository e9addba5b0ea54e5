"""The direct stride-1 convolution (native/library/direct_conv.py: output channels in the vector lanes,
pixels broadcast from zero-padded planes) against a float64 numpy reference written out here: called
through the library on random and chosen shapes (channel counts that fill no whole block of 16, rows
of 8 to 40 pixels in tiles of 8 to 16 and a shorter last one, dilations, paddings down and across,
several images, with and without a bias; nothing written outside the output, every padded float
written), and through the whole-graph entry, which takes it where `uses_direct` says (ResNet's 3x3
layers), with its epilogue (batch norm, residual add, ReLU) run on each finished row."""
import ctypes

import numpy as np
import pytest

import tscript as ts
import tscript.nn.functional as F
from tscript_runtime.entry_steps import CONV_SLOTS
from tscript_runtime.native import library
from tscript_runtime.native.library.conv import implicit_columns
from tscript_runtime.native.library.direct_conv import TILE, scratch_bytes, uses_direct

pytestmark = pytest.mark.skipif(not implicit_columns(np.float32), reason="the direct kernel is built for AVX-512 hosts")


def reference(x, w, bias, padding, dilation):
    """conv2d of stride 1, in float64."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = h + 2 * padding[0] - dilation[0] * (kh - 1), wd + 2 * padding[1] - dilation[1] * (kw - 1)
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    out = np.zeros((n, o, oh, ow)) + (0 if bias is None else bias.astype(np.float64)[:, None, None])
    for i in range(kh):
        for j in range(kw):
            window = padded[:, :, i * dilation[0]:i * dilation[0] + oh, j * dilation[1]:j * dilation[1] + ow]
            out += np.einsum("oc,nchw->nohw", w[:, :, i, j].astype(np.float64), window)
    return out


def geometry(x, w, padding, dilation) -> dict:
    _, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    return dict(C=c, H=h, W=wd, kh=kh, kw=kw, sh=1, sw=1, ph=padding[0], pw=padding[1], dh=dilation[0],
                dw=dilation[1], OH=h + 2 * padding[0] - dilation[0] * (kh - 1),
                OW=wd + 2 * padding[1] - dilation[1] * (kw - 1))


def native(x, w, bias, padding, dilation):
    """The library function into an output between NaN guards (which must stay NaN), its scratch full of
    NaN (the padded planes' borders must be zeros it writes)."""
    library.parallel2()
    g = geometry(x, w, padding, dilation)
    n, o = x.shape[0], w.shape[0]
    slots = dict(g, N=n, O=o, K=x.shape[1] * w.shape[2] * w.shape[3], L=g["OH"] * g["OW"], G=1, scratch=0, pack=0)
    dims = (ctypes.c_int64 * len(CONV_SLOTS))(*(slots[s] for s in CONV_SLOTS))
    size = n * o * g["OH"] * g["OW"]
    guarded = np.full(size + 2 * TILE, np.nan, np.float32)
    scratch = np.full(scratch_bytes(g, o) // 4 + 1, np.nan, np.float32)
    direct = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 8)(library.addresses()["tscript_conv_stride1_f32"])
    direct(ctypes.addressof(dims), x.ctypes.data, w.ctypes.data, None if bias is None else bias.ctypes.data,
           guarded[TILE:].ctypes.data, scratch.ctypes.data, None, None)
    assert np.isnan(guarded[:TILE]).all() and np.isnan(guarded[TILE + size:]).all(), "written outside the output"
    return guarded[TILE:TILE + size].reshape(n, o, g["OH"], g["OW"])


def check(n, c, o, h, wd, kernel, padding, dilation, bias, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, wd), dtype=np.float32)
    w = (rng.standard_normal((o, c) + kernel) / np.sqrt(c * kernel[0] * kernel[1])).astype(np.float32)
    b = rng.standard_normal(o, dtype=np.float32) if bias else None
    got = native(x, w, b, padding, dilation)
    want = reference(x, w, b, padding, dilation)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("n, c, o, h, wd, kernel, padding, dilation", [
    (1, 64, 64, 20, 20, (3, 3), (1, 1), (1, 1)),    # ResNet's layer, smaller
    (2, 3, 17, 16, 18, (3, 3), (1, 1), (1, 1)),     # one channel past a block; few input channels
    (1, 8, 40, 9, 30, (5, 5), (2, 2), (1, 1)),      # 5x5, O = 2.5 blocks
    (3, 5, 16, 12, 24, (3, 3), (0, 2), (2, 1)),     # paddings down and across differ, dilation down
    (2, 6, 20, 9, 10, (3, 3), (1, 0), (1, 1)),      # rows of 8 pixels: the fewest a tile has
    (1, 9, 18, 5, 35, (3, 3), (1, 1), (1, 1)),      # 35 = tiles of 12, 12 and 11
    (1, 6, 33, 15, 17, (2, 3), (1, 0), (1, 2)),     # a non-square window, dilation across
    (2, 4, 24, 31, 16, (3, 3), (1, 1), (1, 1)),     # a tile from the last row's end past the image
])
def test_chosen_shapes(n, c, o, h, wd, kernel, padding, dilation):
    for bias in (True, False):
        check(n, c, o, h, wd, kernel, padding, dilation, bias, seed=n + c + o)


def test_random_shapes():
    rng = np.random.default_rng(7)
    for case in range(60):
        kh, kw = int(rng.integers(1, 6)), int(rng.integers(2, 6))
        dh, dw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        ph, pw = int(rng.integers(0, 3)), int(rng.integers(0, 3))
        h = int(rng.integers(dh * (kh - 1) + 1, 24))
        wd = int(rng.integers(dw * (kw - 1) + 8 - 2 * pw, 40))
        check(int(rng.integers(1, 4)), int(rng.integers(2, 12)), int(rng.integers(16, 50)), h, wd, (kh, kw),
              (ph, pw), (dh, dw), bool(rng.integers(0, 2)), seed=case)


def test_where_the_entry_takes_it():
    g = dict(C=64, H=56, W=56, kh=3, kw=3, sh=1, sw=1, ph=1, pw=1, dh=1, dw=1, OH=56, OW=56)
    assert uses_direct(np.float32, g, 64, 1)
    assert not uses_direct(np.float64, g, 64, 1)
    assert not uses_direct(np.float32, g, 64, 2)            # grouped
    assert not uses_direct(np.float32, g, 8, 1)             # fewer channels than a vector
    assert not uses_direct(np.float32, dict(g, C=32), 64, 1)  # 288 taps: the packed GEMM is faster
    assert uses_direct(np.float32, dict(g, C=256, H=14, W=14, OH=14, OW=14), 256, 1)  # a row of 14: one tile
    assert not uses_direct(np.float32, dict(g, C=48, H=13, W=13, OH=13, OW=13), 192, 1)  # 14M multiply-adds
    assert not uses_direct(np.float32, dict(g, sh=2, sw=2), 64, 1)
    assert not uses_direct(np.float32, dict(g, kh=1, kw=1, ph=0, pw=0), 64, 1)
    assert not uses_direct(np.float32, dict(g, W=7, OW=7), 64, 1)   # rows of fewer than 8 pixels


class Block(ts.nn.Module):
    """conv-bn-relu, conv-bn, + the input, relu: a ResNet basic block."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = ts.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = ts.nn.BatchNorm2d(channels)
        self.conv2 = ts.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = ts.nn.BatchNorm2d(channels)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)), inplace=True)
        return F.relu(self.bn2(self.conv2(y)) + x)


@pytest.mark.parametrize("batch, size", [(1, 24), (2, 21)])
def test_a_compiled_block_runs_it_with_its_epilogues(batch, size):
    ts.manual_seed(0)
    block = Block(96).eval()
    for bn in (block.bn1, block.bn2):
        bn.running_mean.copy_(ts.randn(96) * 0.1)
        bn.running_var.copy_(ts.rand(96) + 0.5)
        bn.weight.data.copy_(ts.rand(96) + 0.5)
        bn.bias.data.copy_(ts.randn(96) * 0.1)
    x = ts.randn(batch, 96, size, size)
    g = dict(C=96, H=size, W=size, kh=3, kw=3, sh=1, sw=1, ph=1, pw=1, dh=1, dw=1, OH=size, OW=size)
    assert uses_direct(np.float32, g, 96, 1)
    cm = ts.jit.compile(block, (x,))
    got = cm(x)
    assert cm.executable.entry is not None and cm.executable.entry.run(
        (list(cm._tree) if cm.executable.graph["inputs"][0].get("type", "").startswith("__module__") else [])
        + [x.numpy()]) is not None
    with ts.no_grad():
        want = block(x)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
