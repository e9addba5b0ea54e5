"""PixelShuffle / PixelUnshuffle, InstanceNorm1d/2d/3d, Tensor.unfold, and the activations PReLU, Mish,
Hardswish, Hardsigmoid compiled: numpy references and hand checks, errors, gradcheck, against PyTorch
(values, gradients, running statistics, reprs, state dicts) when installed, and each family traced,
compiled with a dynamic batch, saved and run by the standalone runtime."""
import warnings

import numpy as np
import pytest

import tscript as ts
import tscript.nn.functional as F
import tscript_runtime as rt
from tscript import nn
from tscript.autograd import gradcheck, gradgradcheck
from tests.codegen.helpers import native_groups
from tests.conftest import assert_close

RNG = np.random.default_rng(5)


def data(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def copy_weights(torch_module, ours):
    ours.load_state_dict({k: ts.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()})


def check_saved(model, example, other, tmp_path, rtol=1e-5, atol=1e-6):
    """trace == eager; compile (dynamic batch) == eager on another batch size; the saved file run by
    the standalone runtime == eager."""
    with ts.no_grad():
        expected, expected_other = model(example), model(other)
    assert_close(ts.jit.trace(model, (example,))(example).detach(), expected, rtol=rtol, atol=atol)
    compiled = ts.jit.compile(model, (example,), dynamic={0: [0]})
    assert_close(compiled(other), expected_other, rtol=rtol, atol=atol)
    path = str(tmp_path / "model.tsm")
    ts.jit.save(compiled, path)
    assert_close(rt.load(path).run(other.numpy()), expected_other, rtol=rtol, atol=atol)
    return compiled


# -- pixel shuffle ----------------------------------------------------------------------------------------

def np_pixel_shuffle(x, r):
    *lead, c, h, w = x.shape
    out = np.empty(tuple(lead) + (c // (r * r), h * r, w * r), x.dtype)
    for k in range(c // (r * r)):
        for i in range(r):
            for j in range(r):
                out[..., k, i::r, j::r] = x[..., k * r * r + i * r + j, :, :]
    return out


@pytest.mark.parametrize("shape, r", [((1, 4, 2, 3), 2), ((2, 18, 2, 2), 3), ((8, 1, 1), 2), ((2, 1, 9, 2, 2), 3),
                                      ((1, 5, 3, 4), 1)])
def test_pixel_shuffle_matches_numpy_and_unshuffle_inverts_it(shape, r):
    x = data(*shape)
    out = F.pixel_shuffle(ts.tensor(x), r)
    assert_close(out, np_pixel_shuffle(x, r))
    assert_close(nn.PixelUnshuffle(r)(out), x)
    assert_close(nn.PixelShuffle(r)(ts.tensor(x)), out)


def test_pixel_shuffle_by_hand_and_gradients():
    x = ts.arange(8.0).reshape(1, 4, 1, 2)
    assert F.pixel_shuffle(x, 2).tolist() == [[[[0, 2, 1, 3], [4, 6, 5, 7]]]]
    t = ts.tensor(data(2, 8, 2, 4, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda v: F.pixel_shuffle(v, 2), (t,)) and gradgradcheck(lambda v: F.pixel_unshuffle(v, 2), (t,))


def test_pixel_shuffle_errors_and_reprs():
    cases = [(lambda: F.pixel_shuffle(ts.ones(2, 3), 2), RuntimeError,
              r"pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension\(s\)"),
             (lambda: F.pixel_shuffle(ts.ones(3, 2, 3), 2), RuntimeError,
              r"input.size\(-3\)=3 is not divisible by 4"),
             (lambda: F.pixel_shuffle(ts.ones(4, 2, 3), 0), RuntimeError,
              "pixel_shuffle expects a positive upscale_factor, but got 0"),
             (lambda: F.pixel_shuffle(ts.ones(4, 2, 3), 2.0), TypeError,
              r"pixel_shuffle\(\): argument 'upscale_factor' \(position 2\) must be int, not float"),
             (lambda: F.pixel_unshuffle(ts.ones(4, 3, 4), 2), RuntimeError,
              r"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size\(-2\)=3"),
             (lambda: F.pixel_unshuffle(ts.ones(4, 4, 3), 2), RuntimeError,
              r"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size\(-1\)=3")]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
    assert repr(nn.PixelShuffle(3)) == "PixelShuffle(upscale_factor=3)"
    assert repr(nn.PixelUnshuffle(2)) == "PixelUnshuffle(downscale_factor=2)"


@pytest.mark.parametrize("shape, r", [((2, 8, 3, 2), 2), ((9, 2, 3), 3), ((2, 1, 4, 2, 2), 2)])
def test_pixel_shuffle_matches_pytorch(oracle, shape, r):
    x = data(*shape)
    a, b = ts.tensor(x, requires_grad=True), oracle.tensor(x, requires_grad=True)
    assert_close(F.pixel_shuffle(a, r), oracle.nn.functional.pixel_shuffle(b, r).detach())
    up = np_pixel_shuffle(x, r)
    assert_close(F.pixel_unshuffle(ts.tensor(up), r), oracle.nn.functional.pixel_unshuffle(oracle.tensor(up), r))
    w = ts.tensor(np.cos(np.arange(up.size)).reshape(up.shape).astype(np.float32))
    (F.pixel_shuffle(a, r) * w).sum().backward()
    (oracle.nn.functional.pixel_shuffle(b, r) * oracle.tensor(w.numpy())).sum().backward()
    assert_close(a.grad, b.grad)


def test_super_resolution_model_compiles_and_runs_in_the_runtime(tmp_path):
    ts.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 3, padding=1),
                          nn.PixelShuffle(2), nn.PixelUnshuffle(2), nn.PixelShuffle(2)).eval()
    check_saved(model, ts.randn(1, 1, 5, 6), ts.randn(3, 1, 5, 6), tmp_path)


# -- instance norm ----------------------------------------------------------------------------------------

def np_instance_norm(x, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    mean, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


@pytest.mark.parametrize("cls, shape", [(nn.InstanceNorm1d, (2, 3, 5)), (nn.InstanceNorm2d, (2, 3, 4, 5)),
                                        (nn.InstanceNorm3d, (1, 3, 2, 3, 4)), (nn.InstanceNorm2d, (3, 4, 5))])
def test_instance_norm_matches_numpy(cls, shape):
    x = data(*shape)
    batched = x if len(shape) == cls._no_batch_dim + 1 else x[None]
    expected = np_instance_norm(batched.astype(np.float64)).reshape(shape)
    assert_close(cls(3)(ts.tensor(x)), expected.astype(np.float32), rtol=1e-4, atol=1e-5)
    affine = cls(3, affine=True)
    with ts.no_grad():
        affine.weight.copy_(ts.tensor([1.0, 2.0, -1.0]))
        affine.bias.copy_(ts.tensor([0.5, 0.0, 1.0]))
    scale = np.array([1.0, 2.0, -1.0]).reshape((3,) + (1,) * (len(shape) - (len(shape) == cls._no_batch_dim + 1) - 1))
    shift = np.array([0.5, 0.0, 1.0]).reshape(scale.shape)
    assert_close(affine(ts.tensor(x)), (expected * scale + shift).astype(np.float32), rtol=1e-4, atol=1e-5)


def test_instance_norm_running_statistics_by_hand():
    m = nn.InstanceNorm1d(2, track_running_stats=True, momentum=0.5)
    x = data(3, 2, 4)
    m(ts.tensor(x))
    per_sample_mean, per_sample_var = x.mean(2), x.var(2, ddof=1)
    assert_close(m.running_mean, (0.5 * per_sample_mean.mean(0)).astype(np.float32), atol=1e-6)
    assert_close(m.running_var, (0.5 + 0.5 * per_sample_var.mean(0)).astype(np.float32), atol=1e-6)
    assert int(m.num_batches_tracked) == 0  # as PyTorch: instance norm does not count batches
    m.eval()
    y = data(1, 2, 4)
    expected = (y - m.running_mean.numpy()[:, None]) / np.sqrt(m.running_var.numpy()[:, None] + 1e-5)
    assert_close(m(ts.tensor(y)), expected.astype(np.float32), atol=1e-6)
    assert_close(nn.InstanceNorm1d(2).eval()(ts.tensor(y)), np_instance_norm(y), rtol=1e-4, atol=1e-5)


def test_instance_norm_gradcheck():
    x = ts.tensor(data(2, 3, 4, dtype=np.float64), requires_grad=True)
    w = ts.tensor(data(3, dtype=np.float64), requires_grad=True)
    b = ts.tensor(data(3, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), (x, w, b))


def test_instance_norm_structure_errors_and_warnings():
    m = nn.InstanceNorm2d(3)
    assert repr(m) == "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)"
    assert list(m.state_dict()) == [] and m.weight is None and m.running_mean is None
    full = nn.InstanceNorm2d(3, affine=True, track_running_stats=True)
    assert list(full.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 1D input\)"):
        nn.InstanceNorm1d(3)(ts.ones(3))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        nn.InstanceNorm1d(3)(ts.ones(2, 3, 1))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(3\), but got: 4."):
        nn.InstanceNorm1d(3, affine=True)(ts.randn(2, 4, 5))
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        nn.InstanceNorm1d(3)(ts.randn(2, 4, 5))
    with pytest.raises(RuntimeError, match="Expected running_mean and running_var to be defined"):
        F.instance_norm(ts.randn(2, 3, 4), use_input_stats=False)


@pytest.mark.parametrize("name, shape", [("InstanceNorm1d", (3, 4, 5)), ("InstanceNorm2d", (2, 4, 3, 5)),
                                         ("InstanceNorm2d", (4, 3, 5)), ("InstanceNorm3d", (2, 4, 2, 3, 2))])
@pytest.mark.parametrize("kw", [{}, {"affine": True}, {"track_running_stats": True},
                                {"affine": True, "track_running_stats": True, "momentum": None}])
def test_instance_norm_matches_pytorch(oracle, name, shape, kw):
    theirs, ours = getattr(oracle.nn, name)(4, **kw), getattr(nn, name)(4, **kw)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    if kw.get("affine"):
        with oracle.no_grad():
            theirs.weight.uniform_()
            theirs.bias.uniform_()
    copy_weights(theirs, ours)
    for mode in ("train", "eval", "train"):
        getattr(theirs, mode)()
        getattr(ours, mode)()
        x, g = data(*shape), data(*shape)
        a, b = ts.tensor(x, requires_grad=True), oracle.tensor(x, requires_grad=True)
        out_a, out_b = ours(a), theirs(b)
        assert_close(out_a, out_b.detach(), rtol=1e-4, atol=1e-5)
        out_a.backward(ts.tensor(g))
        out_b.backward(oracle.tensor(g))
        assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-4)
        for p, q in zip(ours.parameters(), theirs.parameters()):
            assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4)
        for p, q in zip(ours.buffers(), theirs.buffers()):
            assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_style_transfer_block_compiles_and_runs_in_the_runtime(tmp_path):
    ts.manual_seed(0)
    model = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(3, 4, 3), nn.InstanceNorm2d(4, affine=True), nn.ReLU(),
                          nn.InstanceNorm2d(4)).eval()
    check_saved(model, ts.randn(2, 3, 6, 6), ts.randn(3, 3, 6, 6), tmp_path, rtol=1e-4, atol=1e-5)


# -- Tensor.unfold ----------------------------------------------------------------------------------------

def np_unfold(x, dim, size, step):
    dim %= max(x.ndim, 1)
    count = (x.shape[dim] - size) // step + 1
    windows = [np.take(x, range(k * step, k * step + size), axis=dim) for k in range(count)]
    return np.moveaxis(np.stack(windows, axis=dim), dim + 1, -1)


@pytest.mark.parametrize("shape, dim, size, step", [((10,), 0, 3, 2), ((2, 7, 3), 1, 3, 1), ((2, 7, 3), -1, 2, 2),
                                                    ((4, 5), 0, 4, 3), ((3, 8), 1, 8, 1), ((3, 8), 1, 2, 5)])
def test_tensor_unfold_matches_numpy_and_is_a_view(shape, dim, size, step):
    x = data(*shape)
    t = ts.tensor(x)
    out = t.unfold(dim, size, step)
    assert_close(out, np_unfold(x, dim, size, step))
    assert out._base is t
    t.add_(1)
    assert_close(out, np_unfold(x + 1, dim, size, step))


def test_tensor_unfold_by_hand_gradients_and_errors():
    x = ts.arange(6.0)
    assert x.unfold(0, 2, 2).tolist() == [[0, 1], [2, 3], [4, 5]]
    assert ts.tensor(5.0).unfold(0, 1, 1).tolist() == [5.0]
    v = ts.tensor(data(2, 7, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda t: t.unfold(1, 3, 2), (v,)) and gradgradcheck(lambda t: t.unfold(1, 3, 1), (v,))
    g = ts.arange(6.0, requires_grad=True)
    g.unfold(0, 3, 1).sum().backward()  # how many windows hold each element
    assert g.grad.tolist() == [1, 2, 3, 3, 2, 1]
    assert g.unfold(0, 3, 1).grad_fn.name() == "UnfoldBackward0"
    for args, message in [((0, 7, 1), "maximum size for tensor at dimension 0 is 6 but size is 7"),
                          ((0, 2, 0), "step is 0 but must be > 0"), ((0, -1, 1), "size is -1 but must be >= 0")]:
        with pytest.raises(RuntimeError, match=message):
            x.unfold(*args)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.unfold(1, 2, 1)


def test_tensor_unfold_matches_pytorch(oracle):
    x = data(3, 9, 4)
    for dim, size, step in ((1, 3, 2), (0, 2, 1), (-1, 4, 1)):
        a, b = ts.tensor(x, requires_grad=True), oracle.tensor(x, requires_grad=True)
        out_a, out_b = a.unfold(dim, size, step), b.unfold(dim, size, step)
        assert_close(out_a, out_b.detach())
        out_a.pow(3).sum().backward()
        out_b.pow(3).sum().backward()
        assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-5)


def test_sliding_windows_compile_and_run_in_the_runtime(tmp_path):
    def windows(x):
        return (x.unfold(1, 3, 2) * 2.0).sum(-1).tanh()
    check_saved(windows, ts.randn(2, 9), ts.randn(5, 9), tmp_path)


# -- activations ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda: nn.Mish(), lambda: nn.Hardswish(), lambda: nn.Hardsigmoid(),
                                  lambda: nn.PReLU(3, init=0.1), lambda: nn.Softplus()])
def test_activations_fuse_into_one_native_kernel(make, tmp_path):
    model = make().eval()
    x, other = ts.randn(2, 3, 5) * 4, ts.randn(4, 3, 5) * 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback from native code warns
        compiled = check_saved(model, x, other, tmp_path, rtol=1e-5, atol=1e-6)
    groups = native_groups(compiled.graph)
    assert len(groups) == 1 and not [n.kind for n in compiled.graph.nodes if n.kind.startswith("aten::")
                                     and n.kind != "aten::reshape"], compiled.graph


@pytest.mark.parametrize("fn", [F.mish, F.hardswish, F.hardsigmoid])
def test_activation_inplace_forms(fn):
    x = data(2, 7) * 4
    t = ts.tensor(x)
    out = fn(t, inplace=True)
    assert out is t
    assert_close(t, fn(ts.tensor(x)))
