"""Large float32 add, mul and relu (and add_, mul_, relu_) on the native kernels (native/eager_pointwise.py):
the same values as numpy's (add and mul exactly, relu NaN kept) for same-shape operands and per-channel
ones on either side, on one core and split over both, written in place for the in-place ops (the same
tensor returned, one version newer); non-contiguous inputs, other broadcasts, other dtypes, small arrays
and an in-place target overlapping the other operand stay on numpy. Eval-mode batch norm built on them
matches a numpy reference and PyTorch, values and gradients. Float32 max pooling's two halves of planes
(the library's pooling on a range of planes, eager_kernels.py) give the one-call values."""
import numpy as np
import pytest

import tscript as ts
import tscript.nn.functional as F
from tests.conftest import assert_close
from tscript_runtime.native import eager_pointwise as P
from tscript_runtime.ops import accelerated

pytestmark = pytest.mark.skipif(P.kernels() is None, reason="the kernel library cannot be built here")

RNG = np.random.default_rng(0)
# element counts: below both native cut-overs, native in place only, native and split over both cores (odd
# sizes: unequal halves)
SHAPES = [(3, 50, 40), (2, 64, 17, 19), (8, 64, 56, 56)]


def _x(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _numpy_only(f, *args):
    previous = accelerated.set_enabled(False)
    try:
        return f(*args)
    finally:
        accelerated.set_enabled(previous)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name,ufunc", [("add", np.add), ("mul", np.multiply)])
def test_same_shape(shape, name, ufunc):
    a, b = _x(*shape), _x(*shape)
    got = P.binary(name, a, b)
    assert (got is None) == (a.size < P.MIN_NATIVE)
    op = (lambda x, y: x + y) if name == "add" else (lambda x, y: x * y)
    out = op(ts.from_numpy(a), ts.from_numpy(b)).numpy()
    assert out.dtype == np.float32 and np.array_equal(out, ufunc(a, b))


@pytest.mark.parametrize("shape,vector", [((8, 64, 56, 56), (1, 64, 1, 1)), ((2, 3, 120, 100), (3, 1, 1)),
                                          ((5, 64, 400), (5, 1, 1)), ((4, 7, 33, 85), (1, 7, 1, 1))])
@pytest.mark.parametrize("name,ufunc", [("add", np.add), ("mul", np.multiply)])
def test_per_channel_either_side(shape, vector, name, ufunc):
    a, v = _x(*shape), _x(*vector)
    for left, right in ((a, v), (v, a)):
        got = P.binary(name, left, right)
        assert got is not None and np.array_equal(got, ufunc(left, right))
        tensor = ts.from_numpy(left) + ts.from_numpy(right) if name == "add" else \
            ts.from_numpy(left) * ts.from_numpy(right)
        assert np.array_equal(tensor.numpy(), ufunc(left, right))


def test_per_channel_from_a_strided_vector():
    a, v = _x(4, 64, 30, 30), _x(64, 2)[:, :1, None]  # (64, 1, 1), its values 8 bytes apart
    assert np.array_equal(P.binary("mul", a, v), a * v)


@pytest.mark.parametrize("shape", SHAPES)
def test_relu_keeps_nan_and_infinities(shape):
    x = _x(*shape)
    x.reshape(-1)[:4] = [np.nan, -np.inf, np.inf, -0.0]
    got = ts.from_numpy(x).relu().numpy()
    want = np.maximum(x, np.float32(0))
    assert np.array_equal(got, want, equal_nan=True)
    assert np.isnan(got.reshape(-1)[0]) and got.reshape(-1)[1] == 0 and got.reshape(-1)[2] == np.inf


@pytest.mark.parametrize("shape", SHAPES)
def test_in_place_ops_write_their_target(shape):
    x, y, v = _x(*shape), _x(*shape), _x(shape[1], *(1,) * (len(shape) - 2))
    for apply, want in ((lambda t: t.relu_(), np.maximum(x, 0)), (lambda t: t.add_(ts.from_numpy(y)), x + y),
                        (lambda t: t.mul_(ts.from_numpy(v)), x * v), (lambda t: t.add_(t), x + x)):
        t = ts.from_numpy(x.copy())
        data, version = t._data, t._version
        assert apply(t) is t and t._data is data and t._version == version + 1
        assert np.array_equal(t.numpy(), want)


def test_cut_overs():
    a, v = _x(2, 64, 17, 19), _x(1, 64, 1, 1)  # between MIN_IN_PLACE and MIN_NATIVE elements
    assert P.binary("add", a, a) is None and P.binary("mul", a, v) is None and P.relu(a) is None
    assert P.binary("add", a, a, out=a) is a and P.binary("mul", a, v, out=a) is a and P.relu(a, out=a) is a
    small = _x(3, 50, 40)
    assert P.binary("add", small, small, out=small) is None and P.relu(small, out=small) is None


def test_tiny_tensors_do_not_ask_for_the_native_kernel():
    calls, saved = [], accelerated.KERNELS["add"]
    accelerated.install("add", lambda *args, **kw: calls.append(args) or saved(*args, **kw), writes_into=True)
    try:
        t = ts.ones(4)
        t + t, t.add_(t), 1.0 + t
        assert not calls
        big = ts.ones(P.MIN_NATIVE)
        big + big, big.add_(big)
        assert len(calls) == 2
    finally:
        accelerated.install("add", saved, writes_into=True)


def test_in_place_add_through_a_view_of_the_target():
    x = _x(8, 64, 40, 40)
    t = ts.from_numpy(x.copy())
    t += t.view(8, 64, 1600).view(8, 64, 40, 40)  # another view of the same memory: elementwise, safe
    assert np.array_equal(t.numpy(), x + x)


def test_overlapping_in_place_target_stays_on_numpy():
    x = _x(64, 4096)
    assert P.binary("add", x[1:], x[:-1], out=x[1:]) is None
    t = ts.from_numpy(x.copy())
    t[1:] += t[:-1]
    want = x.copy()
    want[1:] += x[:-1].copy()
    assert np.array_equal(t.numpy(), want)


def test_what_stays_on_numpy():
    a = _x(8, 64, 40, 40)
    assert P.binary("add", a.astype(np.float64), a.astype(np.float64)) is None
    assert P.binary("add", a, a.astype(np.float64)) is None
    assert P.binary("add", np.swapaxes(a, 2, 3), a) is None  # non-contiguous
    assert P.binary("add", a, _x(1, 64, 40, 1)) is None      # more than one broadcast dim
    assert P.binary("add", a, _x(40)) is None                # per last-dim element: rows too short
    assert P.binary("add", a, a, alpha=2) is None
    assert P.binary("add", a[:1, :1], a[:1, :1]) is None      # small
    assert P.relu(a.astype(np.float64)) is None and P.relu(np.swapaxes(a, 2, 3)) is None
    assert P.binary("add", a[:, :1], a, out=a[:, :1]) is None  # the result does not fit the target


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_non_contiguous_and_float64_give_numpy_values(dtype):
    a, b = _x(8, 64, 30, 40, dtype=dtype), _x(8, 64, 40, 30, dtype=dtype)
    bt = np.swapaxes(b, 2, 3)
    for f in (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: (x + y).relu()):
        got = f(ts.from_numpy(a), ts.from_numpy(bt)).numpy()
        want = _numpy_only(f, ts.from_numpy(a), ts.from_numpy(bt)).numpy()
        assert got.dtype == dtype and np.array_equal(got, want)


def test_gradients_through_the_native_ops():
    x, s, y = _x(2, 16, 32, 32), _x(1, 16, 1, 1), _x(2, 16, 32, 32)
    tx, ts_, ty = (ts.tensor(a, requires_grad=True) for a in (x, s, y))
    g = _x(2, 16, 32, 32)
    (tx * ts_ + ty).relu().backward(ts.from_numpy(g))
    mask = (x * s + y) > 0
    assert_close(tx.grad, g * mask * s)
    assert_close(ts_.grad, (g * mask * x).sum((0, 2, 3), keepdims=True), rtol=1e-4, atol=1e-4)
    assert_close(ty.grad, g * mask)


# -- eval-mode batch norm -------------------------------------------------------------------------

def _bn_reference(x, mean, var, weight, bias, eps=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = weight / np.sqrt(var.astype(np.float64) + eps)
    return (x * scale.reshape(shape) + (bias - mean * scale).reshape(shape)).astype(x.dtype)


@pytest.mark.parametrize("shape,dtype", [((8, 64, 56, 56), np.float32), ((2, 32, 20, 20), np.float64),
                                         ((3, 5, 7, 9), np.float32)])
def test_batch_norm_eval(shape, dtype):
    c = shape[1]
    x = _x(*shape, dtype=dtype)
    mean, var = _x(c, dtype=dtype) * 0.1, RNG.uniform(0.5, 1.5, c).astype(dtype)
    weight, bias = RNG.uniform(0.5, 1.5, c).astype(dtype), _x(c, dtype=dtype) * 0.1
    running_mean, running_var = ts.from_numpy(mean.copy()), ts.from_numpy(var.copy())
    got = F.batch_norm(ts.from_numpy(x), running_mean, running_var, ts.from_numpy(weight), ts.from_numpy(bias))
    assert got.dtype == ts.from_numpy(x).dtype
    assert_close(got, _bn_reference(x, mean, var, weight, bias), rtol=1e-5, atol=1e-5)
    assert np.array_equal(running_mean.numpy(), mean) and np.array_equal(running_var.numpy(), var)


def test_batch_norm_eval_against_torch(oracle):
    torch = oracle
    x = _x(4, 64, 30, 30)
    bn, tbn = ts.nn.BatchNorm2d(64), torch.nn.BatchNorm2d(64)
    state = {"weight": RNG.uniform(0.5, 1.5, 64), "bias": _x(64) * 0.1, "running_mean": _x(64) * 0.1,
             "running_var": RNG.uniform(0.5, 1.5, 64)}
    bn.load_state_dict({k: ts.tensor(np.asarray(v, np.float32)) for k, v in state.items()}, strict=False)
    tbn.load_state_dict({k: torch.tensor(np.asarray(v, np.float32)) for k, v in state.items()}, strict=False)
    bn.eval(), tbn.eval()
    tx, xx = ts.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, want = F.relu(bn(tx), inplace=True), torch.nn.functional.relu(tbn(xx), inplace=True)
    assert_close(out, want.detach().numpy(), rtol=1e-5, atol=1e-5)
    g = _x(4, 64, 30, 30)
    out.backward(ts.from_numpy(g))
    want.backward(torch.from_numpy(g))
    assert_close(tx.grad, xx.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert_close(bn.weight.grad, tbn.weight.grad.numpy(), rtol=1e-4, atol=1e-3)
    assert_close(bn.bias.grad, tbn.bias.grad.numpy(), rtol=1e-4, atol=1e-3)


# -- max pooling's halves of planes on both cores ----------------------------------------------------

@pytest.mark.parametrize("shape,args", [((4, 16, 80, 80), dict(kernel_size=3, stride=2, padding=1)),
                                        ((3, 7, 120, 121), dict(kernel_size=2)),
                                        ((3, 5, 150, 150), dict(kernel_size=3, stride=2, dilation=2, ceil_mode=True))])
def test_max_pool2d_halves(shape, args):
    from tscript_runtime.native import eager
    x = _x(*shape)
    x.reshape(-1)[::997] = np.nan  # NaN propagates through a window
    got = F.max_pool2d(ts.from_numpy(x), **args).numpy()
    want = _numpy_only(lambda t: F.max_pool2d(t, **args), ts.from_numpy(x)).numpy()
    assert got.size >= eager.POOL_SPLIT and np.array_equal(got, want, equal_nan=True)
    y = np.empty_like(got)
    n, c, h, w = shape
    k, s = args["kernel_size"], args.get("stride", args["kernel_size"])
    p, d = args.get("padding", 0), args.get("dilation", 1)
    assert eager._pool_halves(x, y, (n * c, h, w, k, k, s, s, p, p, d, d) + got.shape[2:])
    assert np.array_equal(y, want, equal_nan=True)


def test_max_pool2d_float64_and_small_stay_on_one_call():
    from tscript_runtime.native import eager
    x = _x(4, 16, 80, 80, dtype=np.float64)
    dims = (64, 80, 80, 2, 2, 2, 2, 0, 0, 1, 1, 40, 40)
    assert not eager._pool_halves(x, np.empty((4, 16, 40, 40)), dims)
    assert not eager._pool_halves(x[:1, :1].astype(np.float32), np.empty((1, 1, 40, 40), np.float32),
                                  (1,) + dims[1:])
    got = F.max_pool2d(ts.from_numpy(x), 2).numpy()
    assert got.dtype == np.float64 and np.array_equal(got, x.reshape(4, 16, 40, 2, 40, 2).max((3, 5)))
