"""3-D convolution and pooling, 1-D and 3-D transposed convolution, adaptive max pooling (1-D, 2-D,
3-D) and adaptive average pooling in 3-D: F.conv3d, conv_transpose1d/3d, max_pool3d, avg_pool3d,
adaptive_max_pool1d/2d/3d, adaptive_avg_pool3d and their modules. Checked by hand, against a
tap-by-tap numpy definition, by adjoint identities and finite differences, through trace / compile /
save / the runtime, and against PyTorch with identical inputs (values, indices and gradients)."""
import itertools
import math

import numpy as np
import pytest

import tscript as ts
import tscript.nn.functional as F
import tscript_runtime as rt
from tests.conftest import assert_close
from tests.nn.compiled_grads import eager_and_compiled_grads
from tests.nn.torch_modules import ours_and_theirs
from tests.seeded import Seeded, f32
from tscript import nn
from tscript.autograd import gradcheck, gradgradcheck

_DATA = Seeded(3)
randn, _fresh_rng = _DATA.randn, _DATA.fixture()


def reference_conv3d(x, w, b, stride, padding, dilation, groups):
    """The definition, one kernel tap at a time: out[n, o] += w[o, c, taps] * x_pad[n, c, i*s + tap*d]."""
    n, c = x.shape[:2]
    o, cg, *kernel = w.shape
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    out_size = [(s + 2 * p - d * (k - 1) - 1) // st + 1
                for s, k, st, p, d in zip(x.shape[2:], kernel, stride, padding, dilation)]
    out, og = np.zeros((n, o, *out_size), x.dtype), o // groups
    for g, *tap in itertools.product(range(groups), *map(range, kernel)):
        where = tuple(slice(t * d, t * d + st * (m - 1) + 1, st)
                      for t, d, st, m in zip(tap, dilation, stride, out_size))
        patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + where]
        out[:, g * og:(g + 1) * og] += np.einsum("ncdhw,oc->nodhw", patch, w[(slice(g * og, (g + 1) * og), slice(None))
                                                                              + tuple(tap)])
    return out + b.reshape(-1, 1, 1, 1)


def _dot(a, b) -> float:
    return float((a * b).sum().item())


# -- by hand ----------------------------------------------------------------------------------------

def test_conv3d_by_hand():
    x = ts.arange(27.0).reshape(1, 1, 3, 3, 3)
    box = F.conv3d(x, ts.ones(1, 1, 2, 2, 2))  # each 2x2x2 block: 8 * its mean, 13 apart per step in (9, 3, 1)
    assert_close(box, f32([[[[[52, 60], [76, 84]], [[124, 132], [148, 156]]]]]))
    assert_close(F.conv3d(x[0], ts.ones(2, 1, 1, 1, 1), ts.tensor([0.0, 1.0]), stride=2)[1], f32(
        [[[1, 3], [7, 9]], [[19, 21], [25, 27]]]))


def test_conv_transposes_by_hand():
    x = ts.tensor([[[1.0, 2.0]]])
    w = ts.tensor([[[1.0, 10.0, 100.0]]])
    assert_close(F.conv_transpose1d(x, w), f32([[[1, 12, 120, 200]]]))
    assert_close(F.conv_transpose1d(x, w, stride=2), f32([[[1, 10, 102, 20, 200]]]))
    assert_close(F.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1), f32([[[10, 102, 20, 200]]]))
    cube = F.conv_transpose3d(ts.ones(1, 1, 1, 1, 1) * 2, ts.ones(1, 3, 2, 2, 2), ts.tensor([0.0, 1.0, 2.0]))
    assert cube.shape == (1, 3, 2, 2, 2) and cube[0, :, 1, 1, 1].tolist() == [2, 3, 4]


def test_pools_by_hand():
    x = ts.arange(64.0).reshape(1, 1, 4, 4, 4)
    values, indices = F.max_pool3d(x, 2, return_indices=True)
    corners = [[[21, 23], [29, 31]], [[53, 55], [61, 63]]]
    assert values.tolist() == [[corners]] and indices.tolist() == [[corners]]
    assert_close(F.avg_pool3d(x, 2), np.array([[[[[10.5, 12.5], [18.5, 20.5]], [[42.5, 44.5], [50.5, 52.5]]]]],
                                             np.float32))
    one = ts.ones(1, 1, 2, 2, 2)
    assert_close(F.avg_pool3d(one, 2, 1, 1)[0, 0, 0, 0], f32([1 / 8, 2 / 8, 1 / 8]))  # 1, 2, 1 inputs inside
    assert_close(F.avg_pool3d(one, 2, 1, 1, count_include_pad=False)[0, 0, 0, 0], f32([1, 1, 1]))
    assert_close(F.avg_pool3d(one, 2, divisor_override=2), np.full((1, 1, 1, 1, 1), 4, np.float32))


def test_adaptive_pools_by_hand():
    x = ts.tensor([[[1.0, 5.0, 2.0, 0.0, 7.0]]])
    values, indices = F.adaptive_max_pool1d(x, 2, return_indices=True)  # windows [0, 3) and [2, 5)
    assert values.tolist() == [[[5, 7]]] and indices.tolist() == [[[1, 4]]]
    plane = ts.tensor([[[3.0, 1.0, 4.0], [1.0, 5.0, 9.0]]])
    values, indices = F.adaptive_max_pool2d(plane, (1, 2), return_indices=True)  # columns [0, 2) and [1, 3)
    assert values.tolist() == [[[5, 9]]] and indices.tolist() == [[[4, 5]]]
    assert F.adaptive_max_pool2d(plane, (2, None)).tolist() == plane.tolist()
    volume = ts.arange(24.0).reshape(1, 2, 3, 4)
    assert_close(F.adaptive_avg_pool3d(volume, 1), np.full((1, 1, 1, 1), 11.5, np.float32))
    assert_close(F.adaptive_avg_pool3d(volume, (1, 3, 2))[0, 0], f32([[6.5, 8.5], [10.5, 12.5], [14.5, 16.5]]))
    assert F.adaptive_max_pool3d(volume, (1, 1, 2), return_indices=True)[1].tolist() == [[[[21, 23]]]]


def test_max_gradients_go_to_the_maximum():
    x = ts.tensor(randn(1, 2, 4, 5, 3), requires_grad=True)
    F.max_pool3d(x, 2, stride=1).sum().backward()
    _, indices = F.max_pool3d(x.detach(), 2, stride=1, return_indices=True)
    counts = np.bincount(indices.numpy().reshape(2, -1)[0], minlength=60)
    assert_close(x.grad[0, 0].reshape(-1), counts.astype(np.float32))
    x.grad = None
    F.adaptive_max_pool2d(x[:, :, 0], (2, 3)).sum().backward()
    assert x.grad.sum().item() == 2 * 6


# -- against the definition, adjoints, finite differences (no PyTorch needed) --------------------------

CONV3D_CASES = [(1, 0, 1, 1), (2, 1, 1, 1), ((1, 2, 1), (0, 1, 2), (2, 1, 1), 2), (3, 2, 2, 4), (2, (1, 0, 1), 1, 2)]


@pytest.mark.parametrize("stride,padding,dilation,groups", CONV3D_CASES)
def test_conv3d_matches_the_definition(stride, padding, dilation, groups):
    x, w, b = randn(2, 4, 7, 8, 6, dtype=np.float64), randn(8, 4 // groups, 3, 2, 2, dtype=np.float64), randn(8)
    triple = lambda v: v if isinstance(v, tuple) else (v,) * 3  # noqa: E731
    expected = reference_conv3d(x, w, b.astype(np.float64), triple(stride), triple(padding), triple(dilation), groups)
    out = F.conv3d(ts.tensor(x), ts.tensor(w), ts.tensor(b.astype(np.float64)), stride, padding, dilation, groups)
    assert_close(out, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("nd", [1, 3])
@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 2), (3, 1, 2, 1), (2, 2, 3, 2)])
def test_conv_transpose_is_the_adjoint_of_conv(nd, stride, padding, dilation, groups):
    """<conv(x, w), y> = <x, conv_transpose(y, w)>, with output_padding giving back x's size."""
    size = (9,) if nd == 1 else (7, 6, 5)
    x, w = randn(2, 4, *size, dtype=np.float64), randn(6, 4 // groups, *(3,) * nd, dtype=np.float64)
    conv, transposed = (F.conv1d, F.conv_transpose1d) if nd == 1 else (F.conv3d, F.conv_transpose3d)
    y = conv(ts.tensor(x), ts.tensor(w), None, stride, padding, dilation, groups)
    extra = [n - ((o - 1) * stride - 2 * padding + dilation * 2 + 1) for n, o in zip(size, y.shape[2:])]
    g = ts.tensor(randn(*y.shape, dtype=np.float64))
    back = transposed(g, ts.tensor(w), None, stride, padding, extra, groups, dilation)
    assert back.shape == x.shape
    assert math.isclose(_dot(y, g), _dot(ts.tensor(x), back), rel_tol=1e-10)


GRAD_CASES = [  # (function, input shape, weight shape, arguments after the bias)
    (F.conv3d, (1, 4, 4, 3, 4), (2, 2, 2, 1, 2), ((2, 1, 1), 1, (1, 2, 1), 2)),
    (F.conv_transpose1d, (2, 4, 3), (4, 3, 2), (2, 1, 1, 2, 2)),        # output_padding >= stride: < dilation
    (F.conv_transpose1d, (4, 5), (4, 2, 3), (1, 0, 1, 1, 2)),           # unbatched
    (F.conv_transpose3d, (1, 2, 2, 3, 2), (2, 2, 2, 1, 2), ((2, 1, 1), (0, 1, 0), (1, 0, 0), 1, 1)),
]


@pytest.mark.parametrize("fn,x_shape,w_shape,args", GRAD_CASES)
def test_convolution_gradients_are_finite_differences(fn, x_shape, w_shape, args):
    x, w = (ts.tensor(randn(*s, dtype=np.float64), requires_grad=True) for s in (x_shape, w_shape))
    channels = w_shape[0] if fn is F.conv3d else w_shape[1] * args[3]
    b = ts.tensor(randn(channels, dtype=np.float64), requires_grad=True)
    call = lambda x, w, b: fn(x, w, b, *args)  # noqa: E731
    assert gradcheck(call, (x, w, b))
    assert gradgradcheck(call, (x, w, b))


@pytest.mark.parametrize("call", [
    lambda t: F.max_pool3d(t, 2, 1, 1, 1, True), lambda t: F.max_pool3d(t, (2, 3, 1), dilation=(1, 1, 2)),
    lambda t: F.avg_pool3d(t, 3, 2, 1, True, False), lambda t: F.avg_pool3d(t, (2, 1, 2), divisor_override=3),
    lambda t: F.adaptive_max_pool3d(t, (2, 3, 2)), lambda t: F.adaptive_avg_pool3d(t, (3, 2, 1)),
    lambda t: F.adaptive_max_pool2d(t[0], (3, 2)), lambda t: F.adaptive_max_pool1d(t[0, 0], 3),
])
def test_pooling_gradients_are_finite_differences(call):
    x = ts.tensor(np.sin(np.arange(2 * 4 * 5 * 4) * 1.3).reshape(2, 4, 5, 4), requires_grad=True)  # no ties
    assert gradcheck(call, (x[None],)) and gradgradcheck(call, (x[None],))


def test_modules_parameters_and_default_init():
    ts.manual_seed(0)
    conv = nn.Conv3d(4, 6, (3, 2, 1), groups=2)
    assert {k: tuple(p.shape) for k, p in conv.named_parameters()} == {"weight": (6, 2, 3, 2, 1), "bias": (6,)}
    assert np.abs(conv.weight.detach().numpy()).max() <= 1 / math.sqrt(2 * 3 * 2)
    t = nn.ConvTranspose1d(4, 6, 3, groups=2, bias=False)
    assert tuple(t.weight.shape) == (4, 3, 3) and t.bias is None
    assert tuple(nn.ConvTranspose3d(2, 3, 2).weight.shape) == (2, 3, 2, 2, 2)


def test_conv_transpose_output_size():
    t = nn.ConvTranspose1d(2, 3, 3, stride=3)
    x = ts.randn(1, 2, 4)
    assert t(x).shape == (1, 3, 12)
    assert t(x, output_size=[14]).shape == (1, 3, 14) and t(x, output_size=[1, 3, 13]).shape == (1, 3, 13)
    with pytest.raises(ValueError, match=r"requested an output size of \[15\], but valid sizes range from \[12\] to "
                                         r"\[14\]"):
        t(x, output_size=[15])
    assert nn.ConvTranspose3d(2, 1, 2, stride=2)(ts.randn(2, 1, 2, 3), output_size=(3, 5, 7)).shape == (1, 3, 5, 7)


def test_module_reprs():
    assert repr(nn.Conv3d(2, 4, 3, stride=2, padding=1)) == \
        "Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1))"
    assert repr(nn.ConvTranspose1d(2, 4, 3, stride=2, output_padding=1)) == \
        "ConvTranspose1d(2, 4, kernel_size=(3,), stride=(2,), output_padding=(1,))"
    assert repr(nn.MaxPool3d(2)) == "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool3d(3, 2, 1)) == "AvgPool3d(kernel_size=3, stride=2, padding=1)"
    assert repr(nn.AdaptiveMaxPool2d((3, None))) == "AdaptiveMaxPool2d(output_size=(3, None))"
    assert repr(nn.AdaptiveAvgPool3d(1)) == "AdaptiveAvgPool3d(output_size=1)"


ERRORS = [
    (lambda: F.conv3d(ts.randn(4, 5, 6), ts.randn(3, 4, 2, 2, 2)),
     r"Expected 4D \(unbatched\) or 5D \(batched\) input to conv3d, but got input of size: \[4, 5, 6\]"),
    (lambda: F.conv3d(ts.randn(1, 2, 4, 5, 6), ts.randn(3, 2, 5, 2, 2)),
     r"Calculated padded input size per channel: \(4 x 5 x 6\). Kernel size: \(5 x 2 x 2\)"),
    (lambda: F.conv3d(ts.randn(1, 2, 4, 5, 6), ts.randn(3, 2, 2, 2, 2), stride=(1, 2)),
     "expected stride to be a single integer value or a list of 3 values"),
    (lambda: F.conv3d(ts.randn(1, 2, 4, 5, 6), ts.randn(4, 2, 2, 2, 2), groups=3), "Given groups=3"),
    (lambda: F.conv_transpose1d(ts.randn(1, 4, 5), ts.randn(4, 3, 3), stride=2, output_padding=2),
     "output padding must be smaller than either stride or dilation, but got output_padding_height: 0 "
     "output_padding_width: 2 stride_height: 1 stride_width: 2"),
    (lambda: F.conv_transpose1d(ts.randn(1, 4, 5), ts.randn(4, 3, 3), padding=5),
     r"Given input size per channel: \(1 x 5\). Calculated output size per channel: \(1 x -3\)"),
    (lambda: F.conv_transpose3d(ts.randn(1, 5, 2, 2, 2), ts.randn(4, 3, 2, 2, 2)), "Given transposed=1"),
    (lambda: F.conv_transpose3d(ts.randn(1, 4, 2, 2, 2), ts.randn(4, 3, 2, 2, 2), bias=ts.randn(2)),
     "expected bias to be 1-dimensional with 3 elements"),
    (lambda: F.max_pool3d(ts.randn(5, 6), 2), r"non-empty 4D or 5D \(batch mode\) tensor expected for input"),
    (lambda: F.max_pool3d(ts.randn(1, 0, 4, 4, 4), 2), "non-batch dimension 0 has length zero"),
    (lambda: F.max_pool3d(ts.randn(1, 2, 4, 5, 6), 2, padding=2), "pad should be at most half of effective kernel"),
    (lambda: F.max_pool3d(ts.randn(1, 2, 4, 5, 6), (2, 2)), "max_pool3d: kernel_size must either be a single int, "
                                                           "or a tuple of three ints"),
    (lambda: F.max_pool3d(ts.randn(1, 2, 4, 5, 6), 2, stride=-1), "stride should be greater than zero, but got dT: -1"),
    (lambda: F.max_pool3d(ts.randn(1, 2, 4, 5, 6), 5), r"Given input size: \(2x4x5x6\). Calculated output size: "
                                                       r"\(2x0x1x1\). Output size is too small"),
    (lambda: F.max_pool3d(ts.ones(1, 2, 2, 2, 2, dtype=ts.bool), 2), "not implemented for 'Bool'"),
    (lambda: F.avg_pool3d(ts.randn(1, 2, 4, 5, 6), 2, divisor_override=0), "divisor must be not zero"),
    (lambda: F.avg_pool3d(ts.randn(1, 2, 4, 5, 6), (2, 2)), "avg_pool3d: kernel_size must be a single int"),
    (lambda: F.adaptive_max_pool2d(ts.randn(5, 6), 2), r"adaptive_max_pool2d\(\): Expected 3D or 4D tensor"),
    (lambda: F.adaptive_max_pool2d(ts.randn(1, 0, 3, 3), 2), "with dimension 1 being empty"),
    (lambda: F.adaptive_max_pool2d(ts.arange(9).reshape(1, 3, 3), 2), "not implemented for 'Long'"),
    (lambda: F.adaptive_max_pool2d(ts.randn(1, 3, 3), -1), "elements of output_size must be greater than or equal"),
    (lambda: F.adaptive_max_pool1d(ts.randn(1, 2, 3, 5), 2), "Expected 2 to 3 dimensions, but got 4-dimensional"),
    (lambda: F.adaptive_max_pool1d(ts.randn(1, 2, 5), (2, 2)), "should contain one int"),
    (lambda: F.adaptive_avg_pool3d(ts.randn(4, 5, 6), 2), r"adaptive_avg_pool3d\(\): Expected 4D or 5D tensor"),
    (lambda: F.adaptive_avg_pool3d(ts.randn(1, 4, 5, 6), (2, 2)), "adaptive_avg_pool3d: output_size must be 3"),
]


@pytest.mark.parametrize("call,fragment", ERRORS)
def test_errors(call, fragment):
    with pytest.raises(RuntimeError, match=fragment):
        call()


# -- compiled, saved, scripted ------------------------------------------------------------------------

class _VideoNet(nn.Module):
    """A small volumetric net: every 3-D layer, then the 2-D and 1-D adaptive max pools."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 4, 3, padding=1, stride=(1, 2, 1))
        self.up = nn.ConvTranspose3d(4, 2, 2, stride=2)
        self.head = nn.ConvTranspose1d(2, 3, 3, stride=2, output_padding=1)

    def forward(self, x):
        y = F.max_pool3d(self.conv(x).relu(), 2, ceil_mode=True)
        y = F.avg_pool3d(y, 2, 1, 1, count_include_pad=False)
        y = self.up(F.adaptive_avg_pool3d(y, (2, 3, 2)))
        planes = F.adaptive_max_pool2d(y.flatten(1, 2), (3, 2))
        return planes.flatten(1).sum(1, keepdim=True) + F.adaptive_max_pool1d(self.head(y.flatten(2)), 4).sum(1)


def test_trace_save_and_run_in_the_runtime(tmp_path):
    ts.manual_seed(0)
    model, x = _VideoNet(), ts.randn(2, 2, 6, 8, 5)
    path = tmp_path / "video.tsm"
    ts.jit.save(ts.jit.trace(model, (x,)), path)
    loaded = rt.load(path)
    for op in ("conv3d", "conv_transpose3d", "conv_transpose1d", "max_pool3d", "avg_pool3d", "adaptive_max_pool2d"):
        assert f"aten::{op}(" in loaded.ir()
    for batch in (x, ts.randn(3, 2, 6, 8, 5)):
        assert_close(loaded.run(batch.numpy()), model(batch).detach(), rtol=1e-5, atol=1e-5)


def test_compiled_backward_matches_eager():
    ts.manual_seed(0)
    model, x = _VideoNet(), ts.randn(2, 2, 6, 8, 5)
    for eager, compiled in zip(*eager_and_compiled_grads(model, x)):
        assert_close(compiled, eager, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("make,shape", [
    (lambda: nn.Conv3d(3, 2, 2, padding=1), (2, 3, 4, 5, 4)),
    (lambda: nn.ConvTranspose1d(3, 2, 2, stride=2), (2, 3, 4)),
    (lambda: nn.ConvTranspose3d(3, 2, 2), (2, 3, 3, 3, 3)), (lambda: nn.MaxPool3d(2), (2, 3, 4, 4, 4)),
    (lambda: nn.AvgPool3d(2, 1), (2, 3, 4, 4, 4)), (lambda: nn.AdaptiveMaxPool2d(2), (2, 3, 5, 4)),
    (lambda: nn.AdaptiveMaxPool1d(3), (2, 3, 7)), (lambda: nn.AdaptiveAvgPool3d(2), (2, 3, 5, 4, 3)),
])
def test_modules_script(make, shape):
    ts.manual_seed(0)
    module, x = make(), ts.randn(*shape)
    assert_close(ts.jit.script(module)(x), module(x).detach())


# -- against PyTorch ----------------------------------------------------------------------------------

def _check_against_torch(oracle, ours_fn, torch_fn, arrays, rtol=1e-4, atol=1e-4):
    """Values and the gradients of sum(y * w) w.r.t. every (non-None) input agree."""
    ours = [None if a is None else ts.tensor(a, requires_grad=True) for a in arrays]
    theirs = [None if a is None else oracle.tensor(a, requires_grad=True) for a in arrays]
    y, y_ref = ours_fn(*ours), torch_fn(*theirs)
    assert_close(y, y_ref, rtol=rtol, atol=atol)
    w = randn(*y.shape)
    (y * ts.tensor(w)).sum().backward()
    (y_ref * oracle.tensor(w)).sum().backward()
    for a, b in zip(ours, theirs):
        if a is not None:
            assert_close(a.grad, b.grad, rtol=rtol, atol=atol)


@pytest.mark.parametrize("stride,padding,dilation,groups", CONV3D_CASES)
def test_conv3d_matches_torch(oracle, stride, padding, dilation, groups):
    x, w, b = randn(2, 4, 7, 8, 6), randn(8, 4 // groups, 3, 2, 2), randn(8)
    for bias in (b, None):
        _check_against_torch(oracle, lambda x, w, b: F.conv3d(x, w, b, stride, padding, dilation, groups),
                             lambda x, w, b: oracle.nn.functional.conv3d(x, w, b, stride, padding, dilation, groups),
                             (x, w, bias))
    _check_against_torch(oracle, lambda x, w: F.conv3d(x, w, None, stride, padding, dilation, groups),
                         lambda x, w: oracle.nn.functional.conv3d(x, w, None, stride, padding, dilation, groups),
                         (x[0], w))


@pytest.mark.parametrize("nd", [1, 3])
@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation",
                         [(1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (2, 0, 1, 2, 2), (3, 1, 2, 1, 1), (1, 1, 1, 2, 2)])
def test_conv_transpose_matches_torch(oracle, nd, stride, padding, output_padding, groups, dilation):
    size = (6,) if nd == 1 else (4, 3, 5)
    x, w, b = randn(2, 4, *size), randn(4, 6 // groups, *(3,) * nd), randn(6)
    ours, theirs = getattr(F, f"conv_transpose{nd}d"), getattr(oracle.nn.functional, f"conv_transpose{nd}d")
    args = (stride, padding, output_padding, groups, dilation)
    for bias in (b, None):
        _check_against_torch(oracle, lambda x, w, b: ours(x, w, b, *args), lambda x, w, b: theirs(x, w, b, *args),
                             (x, w, bias))
    _check_against_torch(oracle, lambda x, w: ours(x, w, None, *args), lambda x, w: theirs(x, w, None, *args),
                         (x[0], w))


# (kernel, stride, padding, dilation, ceil_mode)
MAX3D_GRID = [(2, None, 0, 1, False), (3, 2, 1, 1, True), ((2, 3, 1), (1, 2, 1), (1, 1, 0), (2, 1, 1), False),
              (3, 2, 1, 2, True), (2, 3, 1, 1, True), (3, 1, 0, 1, False)]


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", MAX3D_GRID)
def test_max_pool3d_matches_torch(oracle, kernel, stride, padding, dilation, ceil_mode):
    x = randn(2, 3, 7, 6, 5)
    args = (kernel, stride, padding, dilation, ceil_mode)
    assert_close(F.max_pool3d(ts.tensor(x), *args, return_indices=True)[1],
                 oracle.nn.functional.max_pool3d(oracle.tensor(x), *args, return_indices=True)[1])
    _check_against_torch(oracle, lambda t: F.max_pool3d(t, *args), lambda t: oracle.nn.functional.max_pool3d(t, *args),
                         (x,))
    ints = (x[0] * 10).astype(np.int64)
    assert_close(F.max_pool3d(ts.tensor(ints), *args), oracle.nn.functional.max_pool3d(oracle.tensor(ints), *args))


# (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
AVG3D_GRID = [(2, None, 0, False, True, None), (3, 2, 1, True, False, None), ((2, 3, 1), (1, 2, 1), (1, 1, 0), False,
                                                                                True, None),
              (3, 2, 1, True, True, 5), (2, 3, 1, True, False, None), (2, 1, 1, False, True, -3)]


@pytest.mark.parametrize("kernel,stride,padding,ceil_mode,count_include_pad,divisor_override", AVG3D_GRID)
def test_avg_pool3d_matches_torch(oracle, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x = randn(2, 3, 7, 6, 5)
    args = (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    _check_against_torch(oracle, lambda t: F.avg_pool3d(t, *args), lambda t: oracle.nn.functional.avg_pool3d(t, *args),
                         (x,))
    ints = (x[0] * 10).astype(np.int64)
    assert_close(F.avg_pool3d(ts.tensor(ints), *args), oracle.nn.functional.avg_pool3d(oracle.tensor(ints), *args))


@pytest.mark.parametrize("shape,output_size", [((2, 3, 7, 5), (3, 2)), ((2, 3, 7, 5), (7, 5)), ((3, 9, 10), (4, None)),
                                               ((2, 3, 6, 4), (10, 12)), ((1, 2, 5, 5), 1)])
def test_adaptive_pools_match_torch(oracle, shape, output_size):
    x = randn(*shape)
    torch_f = oracle.nn.functional
    for ours, theirs in zip(F.adaptive_max_pool2d(ts.tensor(x), output_size, True),
                            torch_f.adaptive_max_pool2d(oracle.tensor(x), output_size, True)):
        assert_close(ours, theirs)
    _check_against_torch(oracle, lambda t: F.adaptive_max_pool2d(t, output_size),
                         lambda t: torch_f.adaptive_max_pool2d(t, output_size), (x,))
    volume = randn(*shape[:-1], 4, shape[-1])
    triple = (2, output_size, output_size) if isinstance(output_size, int) else (2,) + output_size
    for name in ("adaptive_max_pool3d", "adaptive_avg_pool3d"):
        _check_against_torch(oracle, lambda t: getattr(F, name)(t, triple),
                             lambda t: getattr(torch_f, name)(t, triple), (volume,))
    row = x.reshape(-1, x.shape[-2], x.shape[-1])[0]
    length = output_size if isinstance(output_size, int) else output_size[0]
    for ours, theirs in zip(F.adaptive_max_pool1d(ts.tensor(row), length, True),
                            torch_f.adaptive_max_pool1d(oracle.tensor(row), length, True)):
        assert_close(ours, theirs)


def test_special_values_match_torch(oracle):
    """NaN wins (the last NaN's index); a window of -inf points at its first position in the input."""
    x = np.array([[[[1, np.nan, 3, np.nan], [-np.inf, -np.inf, 2, 5], [-np.inf] * 4]]], np.float32)
    for size in ((1, 1), (2, 2), (3, 2), (1, 3)):
        for ours, theirs in zip(F.adaptive_max_pool2d(ts.tensor(x), size, True),
                                oracle.nn.functional.adaptive_max_pool2d(oracle.tensor(x), size, True)):
            assert_close(ours, theirs)
    volume = np.full((1, 1, 2, 2, 2), -np.inf, np.float32)
    volume[0, 0, 1, 0, 1] = np.nan
    for args in ((2, 1, 1), (2, 2, 1, 1, True)):
        for ours, theirs in zip(F.max_pool3d(ts.tensor(volume), *args, return_indices=True),
                                oracle.nn.functional.max_pool3d(oracle.tensor(volume), *args, return_indices=True)):
            assert_close(ours, theirs)


def test_second_derivatives_match_torch(oracle):
    x, w, w1 = randn(2, 2, 4, 5, 4, dtype=np.float64), randn(3, 2, 2, 2, 2, dtype=np.float64), \
        randn(3, 3, 3, dtype=np.float64)
    results = []
    for lib, fn in ((ts, F), (oracle, oracle.nn.functional)):
        xs, ws, w1s = (lib.tensor(a, requires_grad=True) for a in (x, w, w1))
        y = fn.max_pool3d(fn.conv3d(xs, ws, None, 1, 1).tanh(), 2, ceil_mode=True)
        z = fn.conv_transpose1d(fn.avg_pool3d(y, 1, 1).flatten(2), w1s, stride=2)
        z = fn.adaptive_max_pool1d(z, 5) + fn.adaptive_avg_pool3d(y, (2, 1, 2)).flatten(2).sum(-1, keepdim=True)
        gx, = lib.autograd.grad((z * z).sum(), xs, create_graph=True)
        (gx * gx).sum().backward()
        results.append((gx, ws.grad, w1s.grad, xs.grad))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs, rtol=1e-9, atol=1e-9)


MODULE_CASES = [
    ("Conv3d", (4, 6, 3), {}), ("Conv3d", (4, 4, (3, 1, 2)), dict(stride=2, padding=1, dilation=(1, 2, 1), groups=2)),
    ("Conv3d", (4, 6, 2), dict(padding="same", bias=False)),
    ("Conv3d", (4, 4, 3), dict(padding=1, padding_mode="reflect")),
    ("Conv3d", (4, 4, 3), dict(padding=(1, 0, 2), padding_mode="circular")),
    ("ConvTranspose1d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1)),
    ("ConvTranspose3d", (4, 8, 3), dict(groups=2, dilation=2, bias=False)),
    ("MaxPool3d", (3,), dict(stride=2, padding=1)), ("MaxPool3d", ((2, 3, 1),), dict(ceil_mode=True)),
    ("AvgPool3d", (3,), dict(stride=2, padding=1, count_include_pad=False)), ("AdaptiveAvgPool3d", ((2, None, 3),), {}),
    ("AdaptiveMaxPool3d", (2,), {}), ("AdaptiveMaxPool2d", ((3, None),), {}), ("AdaptiveMaxPool1d", (4,), {}),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("name,args,kwargs", MODULE_CASES)
def test_modules_load_torch_state_and_match(oracle, name, args, kwargs):
    ours, theirs = ours_and_theirs(oracle, name, args, kwargs)
    shape = {"1d": (2, 4, 11), "2d": (2, 4, 9, 8), "3d": (2, 4, 7, 8, 6)}[name[-2:]]
    x = randn(*shape)
    xs, xt = ts.tensor(x, requires_grad=True), oracle.tensor(x, requires_grad=True)
    y, y_ref = ours(xs), theirs(xt)
    assert_close(y, y_ref, rtol=1e-4, atol=1e-5)
    (y * y).sum().backward()
    (y_ref * y_ref).sum().backward()
    assert_close(xs.grad, xt.grad, rtol=1e-4, atol=1e-4)
    for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-3)
