"""Convolutions: F.conv1d / conv2d / conv_transpose2d, F.unfold / fold and the Conv1d, Conv2d,
ConvTranspose2d, Unfold, Fold modules. Checked by hand, against a direct numpy definition, by
adjoint identities, and against PyTorch with identical inputs (values and gradients)."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
import tscript.nn.functional as F
from tests.conftest import assert_close
from tests.nn.torch_modules import ours_and_theirs
from tests.seeded import Seeded, f32
from tscript import nn
from tscript_runtime.ops import OPS, TensorMeta

_DATA = Seeded(0)
randn, _fresh_rng = _DATA.randn, _DATA.fixture()


def reference_conv2d(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    """The definition, one kernel tap at a time: out[n, o] += w[o, c, p, q] * x_pad[n, c, i*s + p*d, j*s + q*d]."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out, og = np.zeros((n, o, oh, ow), x.dtype), o // groups
    for g, p, q in itertools.product(range(groups), range(kh), range(kw)):
        r, s = p * dilation[0], q * dilation[1]
        rows = slice(r, r + stride[0] * (oh - 1) + 1, stride[0])
        patch = xp[:, g * cg:(g + 1) * cg, rows, s:s + stride[1] * (ow - 1) + 1:stride[1]]
        out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, p, q])
    return out if b is None else out + b.reshape(-1, 1, 1)


def _grads(y, inputs):
    (y * y).sum().backward()
    return [t.grad for t in inputs]


def _pair(*arrays, requires_grad=True):
    """The same arrays as tscript and torch tensors (None stays None)."""
    import torch
    ours = [None if a is None else ts.tensor(a, requires_grad=requires_grad) for a in arrays]
    theirs = [None if a is None else torch.tensor(a, requires_grad=requires_grad) for a in arrays]
    return ours, theirs


def _check_against_torch(ts_fn, torch_fn, arrays, rtol=1e-4, atol=1e-5):
    """Forward values and the gradients of sum(y**2) w.r.t. every input agree."""
    ours, theirs = _pair(*arrays)
    y, y_ref = ts_fn(*ours), torch_fn(*theirs)
    assert_close(y, y_ref, rtol=rtol, atol=atol)
    live = [(a, b) for a, b in zip(ours, theirs) if a is not None]
    for g, g_ref in zip(_grads(y, [a for a, _ in live]), _grads(y_ref, [b for _, b in live])):
        assert_close(g, g_ref, rtol=rtol, atol=1e-4)


# -- by hand ----------------------------------------------------------------------------------------

def test_conv2d_by_hand():
    x = ts.arange(16.0).reshape(1, 1, 4, 4)
    w = ts.tensor([[[[1.0, 0.0], [0.0, -1.0]]]])  # x[i, j] - x[i+1, j+1] = -5 everywhere inside
    assert_close(F.conv2d(x, w), np.full((1, 1, 3, 3), -5, np.float32))
    assert_close(F.conv2d(x, w, ts.tensor([0.5])), np.full((1, 1, 3, 3), -4.5, np.float32))
    assert_close(F.conv2d(x, w, stride=2), np.full((1, 1, 2, 2), -5, np.float32))
    padded = F.conv2d(x, w, padding=1)
    assert padded.shape == (1, 1, 5, 5)
    assert_close(padded[0, 0, 0], f32([0.0, -1.0, -2.0, -3.0, 0.0]))  # only the -x[0, j] tap sees data
    assert_close(padded[0, 0, 1:4, 1:4], np.full((3, 3), -5, np.float32))


def test_conv1d_by_hand():
    x = ts.tensor([[[1.0, 2.0, 4.0, 7.0]]])
    w = ts.tensor([[[1.0, -1.0]]])
    assert_close(F.conv1d(x, w), f32([[[-1.0, -2.0, -3.0]]]))
    assert_close(F.conv1d(x, w, dilation=2), f32([[[-3.0, -5.0]]]))
    two = ts.cat([x, x * 10], 1)  # groups=2: each channel with its own filter
    assert_close(F.conv1d(two, ts.cat([w, -w], 0), groups=2), f32([[[-1.0, -2.0, -3.0], [10.0, 20.0, 30.0]]]))
    assert_close(F.conv1d(x[0], w), f32([[-1.0, -2.0, -3.0]]))  # unbatched


def test_conv_transpose2d_by_hand():
    x = ts.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    ones = ts.ones(1, 1, 2, 2)
    assert_close(F.conv_transpose2d(x, ones), f32([[[[1.0, 3.0, 2.0], [4.0, 10.0, 6.0], [3.0, 7.0, 4.0]]]]))
    blocks = [[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 4.0, 4.0], [3.0, 3.0, 4.0, 4.0]]
    assert_close(F.conv_transpose2d(x, ones, stride=2), f32([[blocks]]))
    assert_close(F.conv_transpose2d(x, ones, stride=2, output_padding=1)[0, 0, :4, :4], f32(blocks))
    assert F.conv_transpose2d(x, ones, stride=2, output_padding=1).shape == (1, 1, 5, 5)


def test_unfold_and_fold_by_hand():
    x = ts.arange(9.0).reshape(1, 1, 3, 3)
    cols = F.unfold(x, 2)
    assert_close(cols, f32([[[0.0, 1.0, 3.0, 4.0], [1.0, 2.0, 4.0, 5.0], [3.0, 4.0, 6.0, 7.0], [4.0, 5.0, 7.0, 8.0]]]))
    coverage = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], np.float32)
    assert_close(F.fold(cols, (3, 3), 2), x.numpy() * coverage)
    assert_close(nn.Fold((3, 3), 2)(nn.Unfold(2)(x)), x.numpy() * coverage)


# -- against the definition and adjoint identities (no PyTorch needed) -------------------------------

_conv_cases = st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 2), st.integers(3, 7), st.integers(3, 7),
                        st.integers(1, 3), st.integers(1, 3), st.integers(1, 2), st.integers(0, 2), st.integers(1, 2))


@settings(max_examples=40, deadline=None)
@given(_conv_cases)
def test_conv2d_matches_the_definition(case):
    n, groups, per_group, h, w, kh, kw, stride, pad, dil = case
    if h + 2 * pad < dil * (kh - 1) + 1 or w + 2 * pad < dil * (kw - 1) + 1:
        return
    x = randn(n, groups * per_group, h, w, dtype=np.float64)
    weight, bias = randn(2 * groups, per_group, kh, kw, dtype=np.float64), randn(2 * groups, dtype=np.float64)
    expected = reference_conv2d(x, weight, bias, (stride, 1), (pad, pad), (dil, 1), groups)
    out = F.conv2d(ts.tensor(x), ts.tensor(weight), ts.tensor(bias), (stride, 1), pad, (dil, 1), groups)
    assert_close(out, expected, rtol=1e-10, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(_conv_cases, st.integers(0, 1))
def test_conv_transpose2d_is_the_adjoint_of_conv2d(case, extra):
    """<conv2d(x, w), y> == <x, conv_transpose2d(y, w)> when the transposed conv restores x's size."""
    n, groups, per_group, h, w, kh, kw, stride, pad, dil = case
    if h + 2 * pad < dil * (kh - 1) + 1 or w + 2 * pad < dil * (kw - 1) + 1:
        return
    x = randn(n, groups * per_group, h, w, dtype=np.float64)
    weight = randn(2 * groups, per_group, kh, kw, dtype=np.float64)
    y = F.conv2d(ts.tensor(x), ts.tensor(weight), None, stride, pad, dil, groups)
    lost = [(size + 2 * pad - dil * (k - 1) - 1) % stride for size, k in ((h, kh), (w, kw))]
    if extra and min(lost) < 1:
        return
    cot = randn(*y.shape, dtype=np.float64)
    back = F.conv_transpose2d(ts.tensor(cot), ts.tensor(weight), None, stride, pad, lost, groups, dil)
    assert back.shape == x.shape
    assert math.isclose(float((y.numpy() * cot).sum()), float((x * back.numpy()).sum()), rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=25, deadline=None)
@given(st.integers(3, 7), st.integers(3, 7), st.integers(1, 3), st.integers(1, 3), st.integers(0, 1),
       st.integers(1, 2), st.integers(1, 2))
def test_fold_is_the_adjoint_of_unfold(h, w, kh, kw, pad, dil, stride):
    if h + 2 * pad < dil * (kh - 1) + 1 or w + 2 * pad < dil * (kw - 1) + 1:
        return
    x = randn(2, 3, h, w, dtype=np.float64)
    cols = F.unfold(ts.tensor(x), (kh, kw), dil, pad, stride)
    c = randn(*cols.shape, dtype=np.float64)
    back = F.fold(ts.tensor(c), (h, w), (kh, kw), dil, pad, stride)
    assert math.isclose(float((cols.numpy() * c).sum()), float((x * back.numpy()).sum()), rel_tol=1e-9, abs_tol=1e-9)


def test_gradients_match_the_definition_numerically():
    """Autograd through the convolutions agrees with finite differences (float64)."""
    from tscript.autograd import gradcheck
    x = ts.tensor(randn(1, 4, 5, 4, dtype=np.float64), requires_grad=True)
    w = ts.tensor(randn(2, 2, 2, 3, dtype=np.float64), requires_grad=True)
    b = ts.tensor(randn(2, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, (2, 1), 1, (1, 2), 2), (x, w, b))
    wt = ts.tensor(randn(4, 1, 2, 3, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x, w: F.conv_transpose2d(x, w, None, 2, 1, 1, 2), (x, wt))


def test_unbatched_and_dtypes():
    x, w = randn(2, 6, 5), randn(3, 2, 3, 2)
    batched = F.conv2d(ts.tensor(x[None]), ts.tensor(w))
    assert_close(F.conv2d(ts.tensor(x), ts.tensor(w)), batched.numpy()[0])
    out64 = F.conv2d(ts.tensor(x.astype(np.float64)), ts.tensor(w.astype(np.float64)))
    assert out64.dtype == ts.float64
    ints = F.conv2d(ts.arange(16).reshape(1, 1, 4, 4), ts.ones(1, 1, 2, 2, dtype=ts.int64))
    assert ints.dtype == ts.int64 and ints.tolist() == [[[[10, 14, 18], [26, 30, 34], [42, 46, 50]]]]


def test_padding_strings():
    x, w = ts.tensor(randn(1, 2, 6, 7)), ts.tensor(randn(3, 2, 4, 3))
    assert F.conv2d(x, w, padding="same").shape == (1, 3, 6, 7)
    assert F.conv2d(x, w, padding="same", dilation=2).shape == (1, 3, 6, 7)
    assert_close(F.conv2d(x, w, padding="valid"), F.conv2d(x, w))
    # "same" with an even kernel pads one more at the end: the output starts like padding (1, 1)
    assert_close(F.conv2d(x, w, padding="same")[..., :5, :], F.conv2d(x, w, padding=(1, 1))[..., :5, :7])
    assert F.conv1d(ts.tensor(randn(2, 9)), ts.tensor(randn(4, 2, 4)), padding="same").shape == (4, 9)


def test_shape_rules_on_metas_and_symbolic_batch():
    op = OPS["aten::conv2d"]
    meta = op.meta(TensorMeta(("N", 3, 32, 32), np.dtype(np.float32)), TensorMeta((16, 3, 3, 3), np.dtype(np.float32)),
                   None, 2, 1, 1, 1)
    assert meta.shape == ("N", 16, 16, 16) and meta.dtype == np.float32
    with pytest.raises(RuntimeError, match="expected input\\[N, 5, 8, 8\\] to have 3 channels"):
        op.shape(TensorMeta(("N", 5, 8, 8), np.dtype(np.float32)), TensorMeta((4, 3, 3, 3), np.dtype(np.float32)))


# -- against PyTorch ---------------------------------------------------------------------------------

@pytest.mark.parametrize("stride,padding", [(1, 0), (2, 1), ((2, 1), (0, 2)), (3, 2)])
@pytest.mark.parametrize("dilation,groups", [(1, 1), (2, 1), (1, 2), ((1, 2), 2)])
def test_conv2d_matches_torch(oracle, stride, padding, dilation, groups):
    x, w = randn(2, 4, 9, 8), randn(6, 4 // groups, 3, 2)
    for bias in (randn(6), None):
        _check_against_torch(lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups),
                             lambda x, w, b: oracle.nn.functional.conv2d(x, w, b, stride, padding, dilation, groups),
                             (x, w, bias))


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2), (3, 1, 2, 4)])
def test_conv1d_matches_torch(oracle, stride, padding, dilation, groups):
    x, w, b = randn(3, 4, 11), randn(8, 4 // groups, 3), randn(8)
    _check_against_torch(lambda x, w, b: F.conv1d(x, w, b, stride, padding, dilation, groups),
                         lambda x, w, b: oracle.nn.functional.conv1d(x, w, b, stride, padding, dilation, groups),
                         (x, w, b))
    _check_against_torch(lambda x, w: F.conv1d(x, w, None, stride, padding, dilation, groups),
                         lambda x, w: oracle.nn.functional.conv1d(x, w, None, stride, padding, dilation, groups),
                         (x[0], w))


@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation",
                         [(1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (2, 0, 1, 2, 2), ((3, 2), (1, 0), (2, 1), 1, 1),
                          (1, 1, 1, 2, 2)])
def test_conv_transpose2d_matches_torch(oracle, stride, padding, output_padding, groups, dilation):
    x, w = randn(2, 4, 5, 4), randn(4, 6 // groups, 3, 2)
    for bias in (randn(6), None):
        _check_against_torch(
            lambda x, w, b: F.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation),
            lambda x, w, b: oracle.nn.functional.conv_transpose2d(x, w, b, stride, padding, output_padding, groups,
                                                                  dilation), (x, w, bias))
    _check_against_torch(lambda x, w: F.conv_transpose2d(x, w, None, stride, padding, output_padding, groups, dilation),
                         lambda x, w: oracle.nn.functional.conv_transpose2d(x, w, None, stride, padding,
                                                                            output_padding, groups, dilation),
                         (x[0], w))


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # PyTorch's note on even kernels
@pytest.mark.parametrize("kernel,dilation", [(3, 1), (4, 1), ((2, 5), (3, 1)), (4, 2)])
def test_padding_strings_match_torch(oracle, kernel, dilation):
    kernel = kernel if isinstance(kernel, tuple) else (kernel, kernel)
    x, w, b = randn(2, 3, 7, 8), randn(4, 3, *kernel), randn(4)
    for padding in ("same", "valid"):
        _check_against_torch(lambda x, w, b: F.conv2d(x, w, b, padding=padding, dilation=dilation),
                             lambda x, w, b: oracle.nn.functional.conv2d(x, w, b, padding=padding, dilation=dilation),
                             (x, w, b))
    dil = dilation if isinstance(dilation, int) else dilation[1]
    _check_against_torch(lambda x, w: F.conv1d(x, w, padding="same", dilation=dil),
                         lambda x, w: oracle.nn.functional.conv1d(x, w, padding="same", dilation=dil),
                         (x[:, :, 0], w[:, :, 0]))


@pytest.mark.parametrize("kernel,dilation,padding,stride",
                         [(2, 1, 0, 1), ((2, 3), (1, 2), (1, 0), (2, 1)), (3, 2, 2, 3)])
def test_unfold_fold_match_torch(oracle, kernel, dilation, padding, stride):
    x = randn(2, 3, 7, 6)
    _check_against_torch(lambda x: F.unfold(x, kernel, dilation, padding, stride),
                         lambda x: oracle.nn.functional.unfold(x, kernel, dilation, padding, stride), (x,))
    cols = F.unfold(ts.tensor(x), kernel, dilation, padding, stride).numpy()
    _check_against_torch(lambda c: F.fold(c, (7, 6), kernel, dilation, padding, stride),
                         lambda c: oracle.nn.functional.fold(c, (7, 6), kernel, dilation, padding, stride), (cols,))
    _check_against_torch(lambda x: F.unfold(x, kernel, dilation, padding, stride),
                         lambda x: oracle.nn.functional.unfold(x, kernel, dilation, padding, stride), (x[0],))


def test_second_derivatives_match_torch(oracle):
    """In float64: float32 rounding through the chained GEMMs would hide nothing but blur the check."""
    x, w, b = (randn(*shape, dtype=np.float64) for shape in ((2, 3, 6, 6), (4, 3, 3, 3), (4,)))
    results = []
    for lib, grad_fn, conv in ((ts, ts.autograd.grad, F.conv2d),
                               (oracle, oracle.autograd.grad, oracle.nn.functional.conv2d)):
        xs, ws, bs = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        y = conv(xs, ws, bs, 2, 1).tanh()
        gx, = grad_fn((y * y).sum(), xs, create_graph=True)
        (gx * gx).sum().backward()
        results.append((gx, ws.grad, bs.grad, xs.grad))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs, rtol=1e-10, atol=1e-10)


def test_integer_and_double_conv_match_torch(oracle):
    x, w = np.arange(2 * 3 * 5 * 5).reshape(2, 3, 5, 5) % 7 - 3, np.arange(2 * 3 * 2 * 2).reshape(2, 3, 2, 2) % 5 - 2
    ours = F.conv2d(ts.tensor(x), ts.tensor(w), None, 1, 1)
    assert_close(ours, oracle.nn.functional.conv2d(oracle.tensor(x), oracle.tensor(w), None, 1, 1))
    xd, wd = randn(1, 3, 5, 5, dtype=np.float64), randn(3, 2, 2, 2, dtype=np.float64)
    assert_close(F.conv_transpose2d(ts.tensor(xd), ts.tensor(wd), stride=2),
                 oracle.nn.functional.conv_transpose2d(oracle.tensor(xd), oracle.tensor(wd), stride=2),
                 rtol=1e-12, atol=1e-12)


class _SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3, padding=1)
        self.c2 = nn.Conv2d(4, 6, 3, stride=2, groups=2)
        self.t = nn.ConvTranspose2d(6, 2, 2, stride=2, output_padding=1)
        self.c3 = nn.Conv1d(2, 3, 3, padding="same")

    def forward(self, x):
        y = F.max_pool2d(self.c1(x).relu(), 2, ceil_mode=True)
        y = F.avg_pool2d(self.c2(y), 2, 1, 1, count_include_pad=False)
        y = self.t(F.adaptive_avg_pool2d(y, 3))
        return self.c3(y.flatten(2)).sum(dim=1)


def test_compiled_backward_matches_eager():
    """The derivative rows replayed by symbolic autodiff (compile(backward=True)) give eager's gradients."""
    ts.manual_seed(0)
    model, x = _SmallCNN(), ts.randn(2, 3, 10, 9)
    grads = []
    for run in (model, ts.jit.compile(model, (x,), backward=True)):
        model.zero_grad()
        xs = x.clone().requires_grad_()
        out = run(xs)
        out.backward(ts.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32).reshape(tuple(out.shape))))
        grads.append([out.detach(), xs.grad] + [p.grad.clone() for p in model.parameters()])
    for eager, compiled in zip(*grads):
        assert_close(compiled, eager, rtol=1e-4, atol=1e-5)


# -- modules ---------------------------------------------------------------------------------------

MODULE_CASES = [
    ("Conv1d", (4, 6, 3), {}), ("Conv1d", (4, 4, 3), dict(stride=2, padding=2, padding_mode="reflect")),
    ("Conv1d", (4, 4, 4), dict(padding="same", dilation=3, groups=2)),
    ("Conv2d", (4, 6, 3), {}), ("Conv2d", (4, 4, (3, 5)), dict(stride=2, padding=1, dilation=2, groups=2, bias=False)),
    ("Conv2d", (4, 6, (2, 4)), dict(padding="same", padding_mode="replicate")),
    ("Conv2d", (4, 4, 3), dict(padding=1, padding_mode="circular")), ("Conv2d", (4, 4, 3), dict(padding="valid")),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1)),
    ("ConvTranspose2d", (4, 8, 3), dict(groups=2, dilation=2, bias=False)),
]


def _input_for(name):
    return randn(2, 4, 11) if name == "Conv1d" else randn(2, 4, 9, 10)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("name,args,kwargs", MODULE_CASES)
def test_modules_load_torch_state_and_match(oracle, name, args, kwargs):
    ours, theirs = ours_and_theirs(oracle, name, args, kwargs)
    x = _input_for(name)
    xs, xt = ts.tensor(x, requires_grad=True), oracle.tensor(x, requires_grad=True)
    y, y_ref = ours(xs), theirs(xt)
    assert_close(y, y_ref, rtol=1e-4, atol=1e-5)
    (y * y).sum().backward()
    (y_ref * y_ref).sum().backward()
    assert_close(xs.grad, xt.grad, rtol=1e-4, atol=1e-4)
    for (k, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-3)


def test_module_parameters_and_default_init():
    ts.manual_seed(0)
    conv = nn.Conv2d(6, 8, (3, 2), groups=2)
    assert dict((k, tuple(p.shape)) for k, p in conv.named_parameters()) == {"weight": (8, 3, 3, 2), "bias": (8,)}
    bound = 1 / math.sqrt(3 * 3 * 2)  # kaiming_uniform(a=sqrt(5)) and the bias both give 1/sqrt(fan_in)
    for p in (conv.weight, conv.bias):
        assert float(p.abs().max()) <= bound and float(p.abs().max()) > bound / 2
    transposed = nn.ConvTranspose2d(4, 6, 3, groups=2, bias=False)
    assert tuple(transposed.weight.shape) == (4, 3, 3, 3) and transposed.bias is None
    assert dict(transposed.named_parameters()).keys() == {"weight"}
    assert float(transposed.weight.abs().max()) <= 1 / math.sqrt(3 * 9)
    assert tuple(nn.Conv1d(2, 4, 5).weight.shape) == (4, 2, 5)


def test_module_reprs():
    assert repr(nn.Conv2d(3, 8, 3)) == "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))"
    assert repr(nn.Conv2d(4, 4, (3, 5), 2, 1, 2, 2, False)) == \
        "Conv2d(4, 4, kernel_size=(3, 5), stride=(2, 2), padding=(1, 1), dilation=(2, 2), groups=2, bias=False)"
    assert repr(nn.Conv1d(4, 4, 3, padding="same", padding_mode="reflect")) == \
        "Conv1d(4, 4, kernel_size=(3,), stride=(1,), padding=same, padding_mode=reflect)"
    assert repr(nn.ConvTranspose2d(4, 4, 3, 2, 1, 1)) == \
        "ConvTranspose2d(4, 4, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), output_padding=(1, 1))"
    assert repr(nn.Unfold(3)) == "Unfold(kernel_size=3, dilation=1, padding=0, stride=1)"
    assert repr(nn.Fold((4, 5), 3, padding=1)) == \
        "Fold(output_size=(4, 5), kernel_size=3, dilation=1, padding=1, stride=1)"


def test_conv_transpose2d_output_size():
    m = nn.ConvTranspose2d(4, 2, 3, stride=2)
    x = ts.randn(1, 4, 8, 8)
    assert m(x).shape == (1, 2, 17, 17)
    assert m(x, output_size=(18, 18)).shape == (1, 2, 18, 18)
    assert m(x, output_size=[1, 2, 18, 17]).shape == (1, 2, 18, 17)
    assert m(x[0], output_size=(18, 18)).shape == (2, 18, 18)
    with pytest.raises(ValueError, match=r"requested an output size of \(19, 19\), but valid sizes range from "
                                         r"\[17, 17\] to \[18, 18\]"):
        m(x, output_size=(19, 19))
    with pytest.raises(ValueError, match="output_size must have 2 or 4 elements"):
        m(x, output_size=(18,))


# -- errors ------------------------------------------------------------------------------------------

def _raises(fn, error, fragment):
    with pytest.raises(error, match=fragment):
        fn()


@pytest.mark.parametrize("call,fragment", [
    (lambda: F.conv2d(ts.randn(1, 5, 8, 8), ts.randn(4, 3, 3, 3), groups=2),
     r"Given groups=2, weight of size \[4, 3, 3, 3\], expected input\[1, 5, 8, 8\] to have 6 channels, but got 5 "
     r"channels instead"),
    (lambda: F.conv2d(ts.randn(5, 8, 8), ts.randn(4, 3, 3, 3)), r"expected input\[1, 5, 8, 8\] to have 3 channels"),
    (lambda: F.conv2d(ts.randn(5, 8), ts.randn(4, 5, 3, 3)),
     r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[5, 8\]"),
    (lambda: F.conv1d(ts.randn(1, 5, 8, 8), ts.randn(4, 5, 3)),
     r"Expected 2D \(unbatched\) or 3D \(batched\) input to conv1d, but got input of size: \[1, 5, 8, 8\]"),
    (lambda: F.conv2d(ts.randn(1, 5, 2, 2), ts.randn(4, 5, 3, 3)),
     r"Calculated padded input size per channel: \(2 x 2\). Kernel size: \(3 x 3\). Kernel size can't be greater"),
    (lambda: F.conv2d(ts.randn(1, 5, 4, 4), ts.randn(4, 5, 2, 2), dilation=4),
     r"Kernel size: \(5 x 5\)"),
    (lambda: F.conv2d(ts.randn(1, 5, 8, 8), ts.randn(4, 5, 3)), r"conv2d: expected weight to be 4-dimensional"),
    (lambda: F.conv2d(ts.randn(1, 5, 8, 8), ts.randn(4, 5, 3, 3), ts.randn(3)),
     r"expected bias to be 1-dimensional with 4 elements, but got bias of size \[3\] instead"),
    (lambda: F.conv2d(ts.randn(1, 6, 8, 8), ts.randn(5, 3, 3, 3), groups=2),
     r"Given groups=2, expected weight to be divisible by 2 at dimension 0"),
    (lambda: F.conv2d(ts.randn(1, 5, 8, 8), ts.randn(4, 5, 3, 3), stride=0), "non-positive stride is not supported"),
    (lambda: F.conv2d(ts.randn(1, 5, 8, 8), ts.randn(4, 5, 3, 3), padding=-1), "negative padding is not supported"),
    (lambda: F.conv2d(ts.randn(1, 5, 8, 8), ts.randn(4, 5, 3, 3), dilation=0), "dilation should be greater than zero"),
    (lambda: F.conv2d(ts.randn(1, 6, 8, 8), ts.randn(4, 3, 3, 3), groups=0), "non-positive groups is not supported"),
    (lambda: F.conv2d(ts.randn(1, 5, 8, 8), ts.randn(4, 5, 3, 3), stride=(1, 2, 3)),
     r"expected stride to be a single integer value or a list of 2 values to match the convolution dimensions, but "
     r"got stride=\[1, 2, 3\]"),
    (lambda: F.conv2d(ts.randn(1, 5, 8, 8), ts.randn(4, 5, 3, 3), padding="same", stride=2),
     "padding='same' is not supported for strided convolutions"),
    (lambda: F.conv2d(ts.randn(1, 5, 8, 8), ts.randn(4, 5, 3, 3), padding="full"), "Invalid padding string: 'full'"),
    (lambda: F.conv2d(ts.randn(1, 5, 8, 8, dtype=ts.float64), ts.randn(4, 5, 3, 3)),
     "expected scalar type Double but found Float"),
    (lambda: F.conv2d(ts.randn(1, 5, 8, 8), ts.randn(4, 5, 3, 3), ts.randn(4, dtype=ts.float64)),
     r"Input type \(float\) and bias type \(double\) should be the same"),
    (lambda: F.conv2d(ts.ones(1, 5, 8, 8, dtype=ts.bool), ts.ones(4, 5, 3, 3, dtype=ts.bool)),
     "not implemented for 'Bool'"),
    (lambda: F.conv_transpose2d(ts.randn(1, 4, 8, 8), ts.randn(5, 5, 3, 3)),
     r"Given transposed=1, weight of size \[5, 5, 3, 3\], expected input\[1, 4, 8, 8\] to have 5 channels"),
    (lambda: F.conv_transpose2d(ts.randn(1, 4, 8, 8), ts.randn(4, 5, 3, 3), output_padding=1),
     "output padding must be smaller than either stride or dilation, but got output_padding_height: 1"),
    (lambda: F.conv_transpose2d(ts.randn(1, 4, 1, 1), ts.randn(4, 5, 3, 3), padding=3),
     r"Calculated output size per channel: \(-3 x -3\). Output size is too small"),
    (lambda: F.conv_transpose2d(ts.randn(1, 4, 8, 8), ts.randn(4, 5, 3, 3), ts.randn(4)),
     r"expected bias to be 1-dimensional with 5 elements"),
    (lambda: F.unfold(ts.randn(1, 4, 2, 2), 3), r"calculated shape of the array of sliding blocks as \(0, 0\)"),
    (lambda: F.unfold(ts.randn(4, 8), 3), "Expected 3D or 4D"),
    (lambda: F.unfold(ts.randn(1, 4, 8, 8), 0), "kernel size should be greater than zero"),
    (lambda: F.unfold(ts.randn(1, 4, 8, 8), (2, 3, 4)), "It is expected kernel_size equals to 2, but got size 3"),
    (lambda: F.fold(ts.randn(1, 35, 36), (8, 8), 3), r"divisible by the product of kernel_size, but got "
                                                       r"input.size\(1\)=35"),
    (lambda: F.fold(ts.randn(1, 36, 35), (8, 8), 3), r"calculated number of sliding blocks 6 \* 6 = 36, but got "
                                                       r"input.size\(2\)=35"),
    (lambda: F.unfold(ts.arange(64).reshape(1, 1, 8, 8), 2), "not implemented for 'Long'"),
])
def test_functional_errors(call, fragment):
    _raises(call, RuntimeError, fragment)


def test_type_errors():
    _raises(lambda: F.conv2d(ts.randn(1, 5, 8, 8), ts.randn(4, 5, 3, 3), stride="2"), TypeError,
            r"conv2d\(\): argument 'stride' \(position 4\) must be tuple of ints, not str")
    _raises(lambda: F.max_pool2d(ts.randn(1, 5, 8, 8), 2.5), TypeError, "argument 'kernel_size'")
    _raises(lambda: F.conv_transpose2d(ts.randn(1, 4, 8, 8), ts.randn(4, 5, 3, 3), padding="same"), TypeError,
            r"argument 'padding' \(position 5\) must be tuple of ints, not str")
    _raises(lambda: F.conv2d(np.zeros((1, 5, 8, 8)), ts.randn(4, 5, 3, 3)), TypeError,
            "argument 'input' \\(position 1\\) must be Tensor, not ndarray")


@pytest.mark.parametrize("make,error,fragment", [
    (lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError, "in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 3, 3, groups=2), ValueError, "out_channels must be divisible by groups"),
    (lambda: nn.Conv1d(4, 4, 3, groups=0), ValueError, "groups must be a positive integer"),
    (lambda: nn.Conv2d(4, 4, 3, padding="full"), ValueError, r"Invalid padding string 'full', should be one of "
                                                             r"\{'same', 'valid'\}"),
    (lambda: nn.Conv2d(4, 4, 3, padding="same", stride=2), ValueError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: nn.Conv2d(4, 4, 3, padding_mode="mirror"), ValueError,
     r"padding_mode must be one of \{'circular', 'reflect', 'replicate', 'zeros'\}, but got padding_mode='mirror'"),
    (lambda: nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect"), ValueError,
     'Only "zeros" padding mode is supported for ConvTranspose2d'),
])
def test_module_errors(make, error, fragment):
    _raises(make, error, fragment)


def test_module_reports_wrong_input():
    conv = nn.Conv2d(4, 4, 3)
    _raises(lambda: conv(ts.randn(1, 3, 8, 8)), RuntimeError, r"expected input\[1, 3, 8, 8\] to have 4 channels")
    _raises(lambda: conv(ts.randn(8, 8)), RuntimeError, "input to conv2d, but got input of size: \\[8, 8\\]")
