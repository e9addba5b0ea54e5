"""F.interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area), the deprecated
F.upsample* and the Upsample modules. Checked by hand, against a loop-per-output definition of
PyTorch's coordinate rules, by finite differences and adjoint identities, through trace / compile /
save / the runtime, and against PyTorch with identical inputs (values and gradients)."""
import math

import numpy as np
import pytest

import tscript as ts
import tscript.nn.functional as F
import tscript_runtime as rt
from tests.conftest import assert_close
from tests.nn.compiled_grads import eager_and_compiled_grads
from tests.seeded import Seeded, f32
from tscript import nn
from tscript.autograd import gradcheck, gradgradcheck

_DATA = Seeded(0)
randn, _fresh_rng = _DATA.randn, _DATA.fixture()


# -- the definition, one output position at a time ---------------------------------------------------

def _cubic(t):
    a = -0.75
    near = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1  # noqa: E731
    far = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a  # noqa: E731
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def reference_matrix(mode, n_in, n_out, align_corners=False, scale=None):
    """(n_out, n_in): how much each output reads each input along one dim (PyTorch's UpSample.h rules)."""
    m = np.zeros((n_out, n_in))
    ratio = 1 / scale if scale else n_in / n_out
    if align_corners:
        ratio = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    for i in range(n_out):
        if mode == "nearest":
            m[i, min(math.floor(ratio * i), n_in - 1)] = 1
        elif mode == "nearest-exact":
            m[i, min(math.floor(ratio * (i + 0.5)), n_in - 1)] = 1
        elif mode == "linear" and n_in == n_out:
            m[i, i] = 1
        else:
            src = ratio * i if align_corners else ratio * (i + 0.5) - 0.5
            if mode == "linear":
                src = max(src, 0.0)
                j = min(math.floor(src), n_in - 1)
                t = min(max(src - j, 0.0), 1.0)
                m[i, j] += 1 - t
                m[i, min(j + 1, n_in - 1)] += t
            else:
                j = math.floor(src)
                for k, w in enumerate(_cubic(src - j)):
                    m[i, min(max(j - 1 + k, 0), n_in - 1)] += w
    return m


def reference(x, mode, size, align_corners=False, scales=None):
    """`x` resampled one spatial dim at a time by reference matrices."""
    kind = {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    scales = scales or [None] * len(size)
    for d, (n_out, s) in enumerate(zip(size, scales)):
        m = reference_matrix(kind, x.shape[2 + d], n_out, align_corners, s)
        x = np.moveaxis(np.tensordot(x, m, axes=([2 + d], [1])), -1, 2 + d)
    return x


# -- by hand ----------------------------------------------------------------------------------------

def test_nearest_by_hand():
    x = ts.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    assert F.interpolate(x, scale_factor=2).tolist() == [[[[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]]]
    assert F.interpolate(x, size=(1, 3)).tolist() == [[[[1, 1, 2]]]]
    row = ts.tensor([[[0.0, 1.0, 2.0]]])
    assert F.interpolate(row, size=5).tolist() == [[[0, 0, 1, 1, 2]]]               # floor(i * 3/5)
    assert F.interpolate(row, size=5, mode="nearest-exact").tolist() == [[[0, 0, 1, 2, 2]]]  # floor((i + .5) * 3/5)


def test_linear_modes_by_hand():
    x = ts.tensor([[[[0.0, 1.0], [2.0, 3.0]]]])
    assert_close(F.interpolate(x, size=3, mode="bilinear", align_corners=True),
                 f32([[[[0, .5, 1], [1, 1.5, 2], [2, 2.5, 3]]]]))
    # align_corners=False: sources (i + .5) / 2 - .5 = -.25 (clamped to 0), .25, .75, 1.25 (past the end)
    assert_close(F.interpolate(ts.tensor([[[0.0, 10.0]]]), size=4, mode="linear"), f32([[[0, 2.5, 7.5, 10]]]))
    volume = ts.arange(8.0).reshape(1, 1, 2, 2, 2)
    assert_close(F.interpolate(volume, size=3, mode="trilinear", align_corners=True)[0, 0, 1], f32(
        [[2, 2.5, 3], [3, 3.5, 4], [4, 4.5, 5]]))


def test_bicubic_by_hand():
    """Keys' kernel (a = -0.75) keeps a ramp inside; at the ends the clamped neighbour makes it
    overshoot: between 0 and 1 it reads 0, 0, 1, 2 with weights -3/32, 19/32, 19/32, -3/32."""
    ramp = ts.tensor([[[[0.0, 1.0, 2.0, 3.0]]]])
    y = F.interpolate(ramp, size=(1, 7), mode="bicubic", align_corners=True)
    assert_close(y, f32([[[[0, 0.40625, 1, 1.5, 2, 2.59375, 3]]]]))


def test_area_is_adaptive_average_pooling():
    x = ts.tensor(randn(2, 3, 6, 9))
    assert_close(F.interpolate(x, size=(3, 4), mode="area"), F.adaptive_avg_pool2d(x, (3, 4)))
    assert_close(F.interpolate(x, scale_factor=0.5, mode="area"), F.adaptive_avg_pool2d(x, (3, 4)))
    assert_close(F.interpolate(x[:, :, 0], size=4, mode="area"), F.adaptive_avg_pool1d(x[:, :, 0], 4))


def test_gradients_by_hand():
    x = ts.ones(1, 1, 2, 2, requires_grad=True)
    F.interpolate(x, scale_factor=2).sum().backward()
    assert x.grad.tolist() == [[[[4, 4], [4, 4]]]]  # every input is copied four times
    x.grad = None
    F.interpolate(x, size=3, mode="bilinear", align_corners=True).sum().backward()
    assert_close(x.grad, np.full((1, 1, 2, 2), 1.5 * 1.5, np.float32))  # outputs at 0, .5, 1 per dim


CASES = [  # (mode, input shape, size, scale_factor, align_corners)
    ("nearest", (2, 3, 5), (8,), None, None), ("nearest", (1, 2, 4, 5), (7, 3), None, None),
    ("nearest", (1, 2, 3, 4, 2), None, (1.5, 0.5, 2.5), None), ("nearest-exact", (1, 2, 5, 4), None, 1.7, None),
    ("nearest-exact", (2, 2, 7), (3,), None, None), ("linear", (2, 3, 5), (9,), None, False),
    ("linear", (2, 3, 5), None, 0.6, True), ("bilinear", (1, 2, 4, 5), (7, 3), None, False),
    ("bilinear", (1, 2, 4, 5), None, (2.3, 1.5), False), ("bilinear", (1, 2, 4, 5), (1, 6), None, True),
    ("bicubic", (1, 2, 4, 5), (9, 4), None, False), ("bicubic", (1, 2, 4, 5), None, 1.6, True),
    ("trilinear", (1, 2, 3, 4, 2), (5, 2, 3), None, False), ("trilinear", (1, 1, 3, 4, 2), None, 1.5, True),
]


def _target(x_shape, size, scale_factor):
    """The output size and the scales PyTorch's kernels see."""
    if scale_factor is None:
        return list(size), None
    factors = scale_factor if isinstance(scale_factor, tuple) else (scale_factor,) * (len(x_shape) - 2)
    return [int(n * s) for n, s in zip(x_shape[2:], factors)], list(factors)


@pytest.mark.parametrize("mode,shape,size,scale_factor,align_corners", CASES)
def test_matches_the_definition(mode, shape, size, scale_factor, align_corners):
    x = randn(*shape, dtype=np.float64)
    out_size, scales = _target(shape, size, scale_factor)
    y = F.interpolate(ts.tensor(x), size, scale_factor, mode, align_corners)
    assert_close(y, reference(x, mode, out_size, bool(align_corners), scales), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode,shape,size,scale_factor,align_corners", CASES)
def test_gradients_are_finite_differences_and_adjoints(mode, shape, size, scale_factor, align_corners):
    x = ts.tensor(randn(*shape, dtype=np.float64), requires_grad=True)
    fn = lambda t: F.interpolate(t, size, scale_factor, mode, align_corners)  # noqa: E731
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))
    g = ts.tensor(randn(*fn(x).shape, dtype=np.float64))
    grad, = ts.autograd.grad(fn(x), x, g)
    assert math.isclose((fn(x) * g).sum().item(), (x * grad).sum().item(), rel_tol=1e-12)


def test_the_gradient_is_the_adjoint_even_where_pytorch_skips_the_scale():
    """PyTorch's nearest backward copies when the output has the input's size, whatever the scale
    factor; the forward (here and in PyTorch, for 1-D) reads floor(i / 1.1) there. Our gradient is
    the forward's exact adjoint."""
    x = ts.arange(4.0).reshape(1, 1, 4).requires_grad_()
    y = F.interpolate(x, scale_factor=1.1)
    assert y.tolist() == [[[0, 0, 1, 2]]]
    y.backward(ts.tensor([[[1.0, 10.0, 100.0, 1000.0]]]))
    assert x.grad.tolist() == [[[11, 100, 1000, 0]]]


def test_dtypes_and_the_empty_batch():
    x = randn(0, 2, 3, 3)
    assert F.interpolate(ts.tensor(x), scale_factor=2, mode="bilinear").shape == (0, 2, 6, 6)
    y = F.interpolate(ts.tensor(randn(1, 1, 3, 3, dtype=np.float64)), size=5, mode="bicubic")
    assert y.dtype == ts.float64
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.interpolate(ts.ones(1, 1, 2, 2, dtype=ts.int64), scale_factor=2, mode="bilinear")
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.interpolate(ts.ones(1, 1, 2, 2, dtype=ts.int64), scale_factor=2)


ERRORS = [
    (dict(), ValueError, "either size or scale_factor should be defined"),
    (dict(size=2, scale_factor=2), ValueError, "only one of size or scale_factor should be defined"),
    (dict(size=(2,)), ValueError, "same number of spatial dimensions"),
    (dict(size=(2.0, 3)), TypeError, "expected size to be one of int"),
    (dict(scale_factor=(2.0, 1.0, 3.0)), ValueError, "Input and scale_factor must have the same number"),
    (dict(size=2, recompute_scale_factor=True), ValueError, "recompute_scale_factor is not meaningful"),
    (dict(size=2, align_corners=True), ValueError, "align_corners option can only be set"),
    (dict(size=2, mode="linear"), NotImplementedError, "Got 4D input, but linear mode needs 3D input"),
    (dict(size=2, mode="trilinear"), NotImplementedError, "Got 4D input, but trilinear mode needs 5D input"),
    (dict(size=2, mode="cubic"), NotImplementedError, r"Only 3D, 4D and 5D input Tensors supported \(got 4D\)"),
    (dict(size=2, mode="nearest", antialias=True), ValueError, "Anti-alias option is restricted"),
    (dict(size=2, mode="bilinear", antialias=True), NotImplementedError, "antialias=True"),
    (dict(size=2, mode="lanczos"), ValueError, "Lanczos mode requires antialias=True"),
    (dict(scale_factor=0.1), RuntimeError, r"Input and output sizes should be greater than 0, but got input "
                                           r"\(H: 3, W: 4\) output \(H: 0, W: 0\)"),
]


@pytest.mark.parametrize("kwargs,error,fragment", ERRORS)
def test_argument_errors(kwargs, error, fragment):
    with pytest.raises(error, match=fragment):
        F.interpolate(ts.randn(1, 2, 3, 4), **kwargs)


def test_input_rank_errors():
    with pytest.raises(NotImplementedError, match=r"Only 3D, 4D and 5D input Tensors supported \(got 2D\)"):
        F.interpolate(ts.randn(3, 4), size=2)
    with pytest.raises(NotImplementedError, match="Got 3D input, but bilinear mode needs 4D input"):
        F.interpolate(ts.randn(1, 3, 4), size=2, mode="bilinear")
    with pytest.raises(RuntimeError, match="Non-empty 4D data tensor expected"):
        F.interpolate(ts.randn(1, 0, 3, 4), size=2)


def test_modules_and_deprecated_functions():
    x = ts.tensor(randn(1, 2, 3, 4))
    up = nn.Upsample(scale_factor=2, mode="bilinear")
    assert repr(up) == "Upsample(scale_factor=2.0, mode='bilinear')" and up.name == "Upsample"
    assert_close(up(x), F.interpolate(x, scale_factor=2.0, mode="bilinear"))
    assert repr(nn.Upsample(size=(5, 6))) == "Upsample(size=(5, 6), mode='nearest')"
    assert nn.Upsample(scale_factor=(2, 3)).scale_factor == (2.0, 3.0)
    assert repr(nn.UpsamplingNearest2d(scale_factor=2)) == "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"
    assert_close(nn.UpsamplingBilinear2d(size=5)(x), F.interpolate(x, size=5, mode="bilinear", align_corners=True))
    assert list(up.parameters()) == []
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        assert_close(F.upsample_bilinear(x, scale_factor=2), nn.UpsamplingBilinear2d(scale_factor=2)(x))
    with pytest.warns(UserWarning, match="upsample_nearest` is deprecated"):
        assert_close(F.upsample_nearest(x, size=(4, 4)), F.interpolate(x, size=(4, 4)))
    with pytest.warns(UserWarning, match="upsample` is deprecated"):
        assert_close(F.upsample(x, scale_factor=3, mode="bicubic"), F.interpolate(x, scale_factor=3, mode="bicubic"))


# -- compiled, saved, scripted ------------------------------------------------------------------------

class _Decoder(nn.Module):
    """A small decoder: every resampling mode between convolutions."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear")

    def forward(self, x):
        y = self.up(self.conv(x).relu())
        y = F.interpolate(y, size=(7, 5), mode="bicubic", align_corners=True) + F.interpolate(y, size=(7, 5))
        y = F.interpolate(y, scale_factor=(0.6, 1.3), mode="nearest-exact")
        return F.interpolate(y.flatten(2), scale_factor=1.5, mode="linear")


def test_trace_save_and_run_in_the_runtime(tmp_path):
    ts.manual_seed(0)
    model, x = _Decoder(), ts.randn(2, 2, 4, 3)
    path = tmp_path / "decoder.tsm"
    ts.jit.save(ts.jit.trace(model, (x,)), path)
    loaded = rt.load(path)
    assert "aten::upsample_bicubic2d" in loaded.ir() and "aten::_upsample_nearest_exact2d" in loaded.ir()
    for batch in (x, ts.randn(3, 2, 4, 3)):
        assert_close(loaded.run(batch.numpy()), model(batch).detach(), rtol=1e-6, atol=1e-6)


def test_compiled_backward_matches_eager():
    ts.manual_seed(0)
    model, x = _Decoder(), ts.randn(2, 2, 4, 3)
    for eager, compiled in zip(*eager_and_compiled_grads(model, x)):
        assert_close(compiled, eager, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make", [lambda: nn.Upsample(scale_factor=2), lambda: nn.UpsamplingBilinear2d(scale_factor=2),
                                  lambda: nn.Upsample(scale_factor=(1.5, 2.0), mode="bicubic"),
                                  lambda: nn.Upsample(size=(3, 7), mode="bilinear", align_corners=True),
                                  lambda: nn.UpsamplingNearest2d(size=6)])
def test_modules_script(make):
    module, x = make(), ts.randn(2, 3, 4, 5)
    assert_close(ts.jit.script(module)(x), module(x))


# -- against PyTorch ----------------------------------------------------------------------------------

TORCH_CASES = [(mode, shape, size, scale, ac, recompute) for mode, shape, size, scale, ac in CASES
               for recompute in (None, True) if scale is not None or not recompute]


@pytest.mark.parametrize("mode,shape,size,scale_factor,align_corners,recompute", TORCH_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_torch(oracle, mode, shape, size, scale_factor, align_corners, recompute, dtype):
    x = randn(*shape, dtype=dtype)
    ours, theirs = ts.tensor(x, requires_grad=True), oracle.tensor(x, requires_grad=True)
    y = F.interpolate(ours, size, scale_factor, mode, align_corners, recompute)
    y_ref = oracle.nn.functional.interpolate(theirs, size, scale_factor, mode, align_corners, recompute)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert_close(y, y_ref, rtol=tol, atol=tol)
    w = randn(*y.shape, dtype=dtype)
    (y * ts.tensor(w)).sum().backward()
    (y_ref * oracle.tensor(w)).sum().backward()
    assert_close(ours.grad, theirs.grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
@pytest.mark.parametrize("scale_factor", [2, 3.3, 0.7, (1.25, 0.45), 1.0 / 3])
@pytest.mark.parametrize("align_corners", [None, True])
def test_many_sizes_match_torch(oracle, mode, scale_factor, align_corners):
    if align_corners and mode.startswith("nearest"):
        return
    factors = scale_factor if isinstance(scale_factor, tuple) else (scale_factor,) * 2
    for h, w in ((1, 1), (2, 5), (7, 3), (12, 9)):
        if int(h * factors[0]) < 1 or int(w * factors[1]) < 1:
            continue
        x = randn(1, 2, h, w)
        kwargs = dict(scale_factor=scale_factor, mode=mode, align_corners=align_corners)
        assert_close(F.interpolate(ts.tensor(x), **kwargs),
                     oracle.nn.functional.interpolate(oracle.tensor(x), **kwargs), rtol=1e-5, atol=1e-5)


def test_large_nearest_outputs_match_torch(oracle):
    """PyTorch's 2-D nearest kernel treats small and large outputs differently when a scale factor
    disagrees with the sizes (a copy for equal sizes only when H_out + W_out <= 128)."""
    for w in (40, 100):
        x = randn(1, 1, 2, w)
        for kwargs in (dict(scale_factor=1.01), dict(scale_factor=2.004), dict(size=(3, w + 7))):
            assert_close(F.interpolate(ts.tensor(x), **kwargs),
                         oracle.nn.functional.interpolate(oracle.tensor(x), **kwargs))


def test_module_reprs_match_torch(oracle):
    for name, kwargs in (("Upsample", dict(scale_factor=2)), ("Upsample", dict(size=(3, 4), mode="bicubic")),
                         ("Upsample", dict(scale_factor=(2, 1.5), mode="bilinear", align_corners=True)),
                         ("UpsamplingNearest2d", dict(size=5)), ("UpsamplingBilinear2d", dict(scale_factor=3))):
        assert repr(getattr(nn, name)(**kwargs)) == repr(getattr(oracle.nn, name)(**kwargs))
