"""Padding: the reflection_pad / replication_pad ops (numpy reference, adjoint identity, gradcheck),
F.pad in every mode incl. negative sizes (crop) and circular wrap, the Reflection-, Replication-,
Circular-, Constant- and ZeroPad{1,2,3}d layers (reprs, errors), against PyTorch (values and
gradients) when installed, and a padded model traced, compiled with a dynamic batch and backward,
saved and run by the standalone runtime."""
import numpy as np
import pytest

import tscript as ts
import tscript.nn.functional as F
import tscript_runtime as rt
from tscript import nn
from tscript.autograd import gradcheck, gradgradcheck
from tscript_runtime.ops import OPS
from tests.conftest import assert_close

RNG = np.random.default_rng(3)
NP_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap", "constant": "constant"}


def data(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def np_pad(x, pad, mode):
    """numpy's pad of the trailing dims named by a PyTorch-style `pad` (non-negative sizes)."""
    pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]
    return np.pad(x, [(0, 0)] * (x.ndim - len(pairs)) + pairs[::-1], mode=NP_MODES[mode])


# -- the ops ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, mode", [("reflection", "reflect"), ("replication", "replicate")])
@pytest.mark.parametrize("shape, pad", [((2, 3, 5), (2, 1)), ((3, 6), (0, 4)), ((1, 2, 4, 5), (1, 2, 3, 0)),
                                        ((2, 4, 5), (3, 3, 1, 2)), ((1, 1, 3, 4, 5), (1, 2, 2, 1, 0, 2))])
def test_pad_ops_match_numpy(kind, mode, shape, pad):
    x = data(*shape)
    k = len(pad) // 2
    out = OPS[f"aten::{kind}_pad{k}d"].kernel(x, pad)
    np.testing.assert_array_equal(out, np_pad(x, pad, mode))


@pytest.mark.parametrize("kind", ["reflection", "replication"])
@pytest.mark.parametrize("shape, pad", [((2, 3, 5), (2, -1)), ((1, 4, 5), (-2, 3, 1, -1)), ((2, 2, 3, 4), (1, 1, 2, 2)),
                                        ((1, 3, 3, 3), (2, 2, 1, 1, 2, 0))])
def test_backward_is_the_adjoint(kind, shape, pad):
    """<pad(x), g> == <x, pad_backward(g)> for random x and g: the backward adds every copy back."""
    x = data(*shape).astype(np.float64)
    k = len(pad) // 2
    y = OPS[f"aten::{kind}_pad{k}d"].kernel(x, pad)
    g = RNG.standard_normal(y.shape)
    back = OPS[f"aten::{kind}_pad{k}d_backward"].kernel(g, x, pad)
    assert back.shape == x.shape
    np.testing.assert_allclose((y * g).sum(), (x * back).sum(), rtol=1e-12)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "constant"])
def test_pad_gradcheck_and_gradgradcheck(mode):
    x = ts.tensor(data(2, 3, 4, dtype=np.float64), requires_grad=True)
    fn = lambda t: F.pad(t, (2, 1, -1, 2), mode=mode)  # noqa: E731
    assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


def test_pad_by_hand_negative_and_integer_inputs():
    x = ts.tensor([[[1, 2, 3, 4]]])
    assert F.pad(x, (-1, 2), mode="reflect").tolist() == [[[2, 3, 4, 3, 2]]]
    assert F.pad(x, (2, -1), mode="replicate").tolist() == [[[1, 1, 1, 2, 3]]]
    assert F.pad(x, (-1, 2), mode="circular").tolist() == [[[2, 3, 4, 2, 3]]]  # wraps the cropped dim
    assert F.pad(x, (2, -1), mode="circular").tolist() == [[[2, 3, 1, 2, 3]]]
    assert F.pad(x, (1, 1), mode="reflect").dtype == ts.int64
    y = ts.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    assert F.pad(y, (1, 0, 0, 1), mode="reflect").tolist() == [[[2, 1, 2], [4, 3, 4], [2, 1, 2]]]


def test_pad_grad_fn_names_and_gradient_by_hand():
    x = ts.tensor([[[1.0, 2.0, 3.0]]], requires_grad=True)
    y = F.pad(x, (2, 2), mode="reflect")  # [3, 2, 1, 2, 3, 2, 1]
    assert y.grad_fn.name() == "ReflectionPad1DBackward0"
    y.backward(ts.tensor([[[1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0]]]))
    assert x.grad.tolist() == [[[100.0 + 1000000.0, 10.0 + 1000.0 + 100000.0, 1.0 + 10000.0]]]
    z = F.pad(ts.ones(1, 1, 2, 2, requires_grad=True), (1, 1, 1, 1), mode="replicate")
    assert z.grad_fn.name() == "ReplicationPad2DBackward0"


def test_pad_op_errors():
    cases = [
        (lambda: F.pad(ts.ones(1, 2, 3), (3, 0), mode="reflect"), RuntimeError,
         r"Argument #4: Padding size should be less than the corresponding input dimension, but got: padding "
         r"\(3, 0\) at dimension 2 of input \[1, 2, 3\]"),
        (lambda: F.pad(ts.ones(1, 3, 2), (0, 0, 0, 3), mode="reflect"), RuntimeError, r"Argument #6: .*\(0, 3\) at "
                                                                                       r"dimension 1"),
        (lambda: F.pad(ts.ones(1, 2, 3), (-2, -1), mode="replicate"), RuntimeError,
         r"input \(W: 3\) is too small. Calculated output W: 0"),
        (lambda: F.pad(ts.ones(2, 3, dtype=ts.bool), (1, 1), mode="reflect"), NotImplementedError,
         "\"reflection_pad1d\" not implemented for 'Bool'"),
        (lambda: F.pad(ts.ones(2, 0, 3), (1, 1), mode="replicate"), RuntimeError,
         r"Expected 2D or 3D \(batch mode\) tensor with possibly 0 batch size and other non-zero dimensions"),
        (lambda: F.pad(ts.ones(1, 2, 3), (-2, 3), mode="circular"), RuntimeError,
         "Padding value causes wrapping around more than once."),
        (lambda: F.pad(ts.ones(1, 2, 3), (1, 1, 2, 2), mode="reflect"), RuntimeError,
         r"Argument #6: .*\(2, 2\) at dimension 1 of input \[1, 2, 3\]"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
    with pytest.raises(RuntimeError, match="padding size is expected to be 4"):
        OPS["aten::reflection_pad2d"].kernel(np.ones((1, 2, 3)), (1, 1))


def test_zero_batch_pads():
    assert F.pad(ts.ones(0, 2, 3), (1, 2), mode="reflect").shape == (0, 2, 6)
    assert F.pad(ts.ones(0, 2, 3), (1, 2), mode="circular").shape == (0, 2, 6)


# -- modules ------------------------------------------------------------------------------------------

MODULES = [
    (lambda L: L.nn.ReflectionPad1d(2), (2, 3, 5)), (lambda L: L.nn.ReflectionPad1d((1, 3)), (3, 5)),
    (lambda L: L.nn.ReflectionPad2d(1), (1, 2, 4, 5)), (lambda L: L.nn.ReflectionPad2d((1, 0, 2, 1)), (2, 4, 5)),
    (lambda L: L.nn.ReflectionPad3d(1), (1, 2, 3, 3, 3)),
    (lambda L: L.nn.ReplicationPad1d((3, 1)), (2, 3, 4)), (lambda L: L.nn.ReplicationPad2d((2, 1, 0, 3)), (1, 2, 3, 4)),
    (lambda L: L.nn.ReplicationPad3d((1, 0, 0, 1, 1, 1)), (2, 2, 2, 3)),
    (lambda L: L.nn.CircularPad1d(2), (2, 3, 4)), (lambda L: L.nn.CircularPad2d((1, 2, 2, 0)), (1, 2, 3, 4)),
    (lambda L: L.nn.CircularPad3d(1), (1, 1, 2, 3, 3)),
    (lambda L: L.nn.ZeroPad1d((1, 2)), (2, 3)), (lambda L: L.nn.ZeroPad2d(2), (1, 2, 3, 3)),
    (lambda L: L.nn.ZeroPad2d((1, -1, 0, 2)), (2, 3, 4)), (lambda L: L.nn.ZeroPad3d((1, 1, 0, 0, 2, 0)), (1, 2, 2, 2)),
    (lambda L: L.nn.ConstantPad1d(2, 3.5), (2, 4)), (lambda L: L.nn.ConstantPad2d((1, 0, 2, 1), -1.0), (1, 2, 3, 3)),
    (lambda L: L.nn.ConstantPad3d(1, 0.5), (1, 2, 2, 2)),
]


@pytest.mark.parametrize("make, shape", MODULES)
def test_modules_match_numpy(make, shape):
    module = make(ts)
    x = data(*shape)
    pad = module.padding
    mode = {"Reflection": "reflect", "Replication": "replicate", "Circular": "circular"}.get(
        type(module).__name__[:-5].rstrip("Pad"), "constant")
    pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)][::-1]
    widths = [(0, 0)] * (x.ndim - len(pairs)) + [(max(b, 0), max(a, 0)) for b, a in pairs]
    expected = np.pad(x, widths, mode=NP_MODES[mode], **({"constant_values": module.value} if mode == "constant"
                                                            else {}))
    crop = [slice(None)] * (x.ndim - len(pairs)) + [slice(max(-b, 0), n - max(-a, 0)) for (b, a), n in
                                                    zip(pairs, expected.shape[-len(pairs):])]
    assert_close(module(ts.tensor(x)), expected[tuple(crop)].astype(np.float32))


@pytest.mark.parametrize("make, shape", MODULES)
def test_modules_match_pytorch(oracle, make, shape):
    ours, theirs = make(ts), make(oracle)
    assert repr(ours) == repr(theirs)
    x = data(*shape)
    a, b = ts.tensor(x, requires_grad=True), oracle.tensor(x, requires_grad=True)
    out_a, out_b = ours(a), theirs(b)
    assert_close(out_a, out_b.detach())
    scale = np.cos(np.arange(out_b.numel())).reshape(tuple(out_b.shape)).astype(np.float32)
    (out_a * ts.tensor(scale)).sum().backward()
    (out_b * oracle.tensor(scale)).sum().backward()
    assert_close(a.grad, b.grad)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape, pad", [((2, 3, 6), (-2, 3)), ((1, 2, 5, 6), (2, -1, -2, 3)), ((4, 5), (0, -3))])
def test_negative_pads_match_pytorch(oracle, mode, shape, pad):
    x = data(*shape)
    a, b = ts.tensor(x, requires_grad=True), oracle.tensor(x, requires_grad=True)
    out_a, out_b = F.pad(a, pad, mode=mode), oracle.nn.functional.pad(b, pad, mode=mode)
    assert_close(out_a, out_b.detach())
    out_a.pow(2).sum().backward()
    out_b.pow(2).sum().backward()
    assert_close(a.grad, b.grad)


def test_module_reprs_and_errors():
    assert repr(nn.ReflectionPad2d(2)) == "ReflectionPad2d((2, 2, 2, 2))"
    assert repr(nn.ConstantPad1d(1, 2.5)) == "ConstantPad1d(padding=(1, 1), value=2.5)"
    assert repr(nn.ZeroPad2d((1, 2, 3, 4))) == "ZeroPad2d((1, 2, 3, 4))"
    assert isinstance(nn.ZeroPad2d(1), nn.ConstantPad2d) and nn.ZeroPad2d(1).value == 0.0
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.CircularPad2d(1)(ts.ones(3, 3))
    with pytest.raises(NotImplementedError, match="Padding size 4 is not supported for 2D input tensor"):
        nn.ReflectionPad2d(1)(ts.ones(3, 4))


# -- compiled ------------------------------------------------------------------------------------------

class Padded(nn.Module):
    """Every padding family around a convolution, as a style-transfer network pads."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(2, 3, 3), nn.ReplicationPad2d((1, 0, 2, 1)),
                                  nn.ReLU(), nn.ZeroPad2d(1), nn.CircularPad2d((1, 1, 0, 1)),
                                  nn.ConstantPad2d((0, 1, 1, 0), 0.5))

    def forward(self, x):
        return self.body(x).tanh()


def test_padded_model_traces_compiles_saves_and_runs_in_the_runtime(tmp_path):
    ts.manual_seed(0)
    model = Padded().eval()
    x, x3 = ts.randn(2, 2, 5, 6), ts.randn(3, 2, 5, 6)
    with ts.no_grad():
        expected, expected3 = model(x), model(x3)
    traced = ts.jit.trace(model, (x,))
    assert "aten::reflection_pad2d" in str(traced.inlined_graph)
    assert_close(traced(x).detach(), expected, atol=1e-6)
    compiled = ts.jit.compile(model, (x,), dynamic={0: [0]})
    assert_close(compiled(x3), expected3, rtol=1e-5, atol=1e-6)
    path = str(tmp_path / "padded.tsm")
    ts.jit.save(compiled, path)
    assert_close(rt.load(path).run(x3.numpy()), expected3, rtol=1e-5, atol=1e-6)


def test_padded_model_compiled_backward_matches_eager():
    ts.manual_seed(1)
    model = Padded()
    x = ts.randn(2, 2, 5, 6, requires_grad=True)
    compiled = ts.jit.compile(model, (x,), backward=True)
    compiled(x).pow(2).sum().backward()
    got = [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]
    model.zero_grad()
    x.grad = None
    model(x).pow(2).sum().backward()
    for g, p in zip(got, list(model.parameters()) + [x]):
        assert_close(g, p.grad, rtol=1e-4, atol=1e-5)
