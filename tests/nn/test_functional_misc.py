"""one_hot, pad (constant / reflect / replicate / circular), interpolate (nearest, nearest-exact,
linear family), normalize, cosine_similarity and pairwise_distance: against PyTorch (values and
gradients), by hand, and every error case."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
import tscript.nn.functional as F
from tests.conftest import assert_close

RNG = np.random.default_rng(0)


def _both(oracle, ts_fn, torch_fn, x, *others, rtol=1e-5, atol=1e-6):
    """Compare outputs and the gradient of x for a non-uniform loss."""
    a, b = ts.tensor(x, requires_grad=True), oracle.tensor(x, requires_grad=True)
    out_a = ts_fn(a, *[ts.tensor(o) for o in others])
    out_b = torch_fn(b, *[oracle.tensor(o) for o in others])
    assert_close(out_a, out_b, rtol=rtol, atol=atol)
    scale = np.cos(np.arange(out_b.numel())).reshape(tuple(out_b.shape)).astype(x.dtype)
    (out_a * ts.tensor(scale)).sum().backward()
    (out_b * oracle.tensor(scale)).sum().backward()
    assert_close(a.grad, b.grad, rtol=rtol, atol=atol)


# -- one_hot -----------------------------------------------------------------------------------------

def test_one_hot():
    out = F.one_hot(ts.tensor([[0, 2], [1, 0]]))
    assert out.dtype == ts.int64 and out.tolist() == [[[1, 0, 0], [0, 0, 1]], [[0, 1, 0], [1, 0, 0]]]
    assert F.one_hot(ts.tensor([1]), num_classes=4).tolist() == [[0, 1, 0, 0]]
    assert F.one_hot(ts.tensor(2), 3).tolist() == [0, 0, 1]
    assert F.one_hot(ts.zeros(0, dtype=ts.int64), 3).shape == (0, 3)


def test_one_hot_errors():
    cases = [(lambda: F.one_hot(ts.tensor([1.0])), "one_hot is only applicable to index tensor of type LongTensor."),
             (lambda: F.one_hot(ts.tensor([1], dtype=ts.int32)), "only applicable to index tensor of type LongTensor"),
             (lambda: F.one_hot(ts.tensor([-1])), "Class values must be non-negative."),
             (lambda: F.one_hot(ts.tensor([3]), 3), "Class values must be smaller than num_classes."),
             (lambda: F.one_hot(ts.tensor([1]), -2), "Class values must be smaller than num_classes."),
             (lambda: F.one_hot(ts.zeros(0, dtype=ts.int64)),
              "Can not infer total number of classes from empty tensor.")]
    for call, message in cases:
        with pytest.raises(RuntimeError, match=message):
            call()


# -- pad ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, pad", [((2, 3), (1, 2)), ((2, 3, 4), (0, 1, 2, 0, 1, 1)), ((2, 3), (-1, 2, 1, -1)),
                                        ((1, 2, 3, 4), (1, 1, 1, 1)), ((4,), (-2, -1)), ((2, 3), (0, 0))])
def test_constant_pad_matches_pytorch(oracle, shape, pad):
    x = RNG.standard_normal(shape).astype(np.float32)
    _both(oracle, lambda t: F.pad(t, pad, value=1.5), lambda t: oracle.nn.functional.pad(t, pad, value=1.5), x)
    _both(oracle, lambda t: F.pad(t, pad), lambda t: oracle.nn.functional.pad(t, pad), x)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape, pad", [((3, 5), (2, 1)), ((2, 3, 5), (0, 3)), ((2, 4, 5), (1, 2, 3, 0)),
                                        ((1, 2, 4, 5), (2, 2, 1, 3)), ((1, 2, 3, 4, 5), (1, 0, 2, 1, 1, 2)),
                                        ((2, 3, 4, 5), (1, 2, 0, 1, 2, 1))])
def test_non_constant_pad_matches_pytorch(oracle, mode, shape, pad):
    x = RNG.standard_normal(shape).astype(np.float32)
    _both(oracle, lambda t: F.pad(t, pad, mode=mode), lambda t: oracle.nn.functional.pad(t, pad, mode=mode), x)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_pad_property_matches_numpy(shape, data):
    dims = data.draw(st.integers(1, len(shape)))
    pairs = [data.draw(st.tuples(st.integers(0, 3), st.integers(0, 3))) for _ in range(dims)]
    mode = data.draw(st.sampled_from(["constant", "replicate", "circular"] if len(shape) > dims else ["constant"]))
    if mode == "circular":
        pairs = [(min(a, s), min(b, s)) for (a, b), s in zip(pairs, reversed(shape))]
    if mode != "constant" and (dims > 3 or len(shape) > dims + 2):
        mode = "constant"
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    pad = [v for pair in pairs for v in pair]
    widths = [(0, 0)] * (len(shape) - dims) + list(reversed(pairs))
    expected = np.pad(x, widths, mode={"constant": "constant", "replicate": "edge", "circular": "wrap"}[mode])
    np.testing.assert_array_equal(F.pad(ts.tensor(x), pad, mode=mode).numpy(), expected)


def test_pad_by_hand():
    x = ts.tensor([[1, 2, 3]])
    assert F.pad(x, (2, 1)).tolist() == [[0, 0, 1, 2, 3, 0]] and F.pad(x, (1, 0)).dtype == ts.int64
    assert F.pad(x, (1, 1, 1, 0), value=9).tolist() == [[9, 9, 9, 9, 9], [9, 1, 2, 3, 9]]
    assert F.pad(x, (-1, 0)).tolist() == [[2, 3]]
    assert F.pad(x, (2, 2), mode="reflect").tolist() == [[3, 2, 1, 2, 3, 2, 1]]
    assert F.pad(x, (2, 1), mode="replicate").tolist() == [[1, 1, 1, 2, 3, 3]]
    assert F.pad(x, (3, 2), mode="circular").tolist() == [[1, 2, 3, 1, 2, 3, 1, 2]]


def test_pad_errors():
    x = ts.ones(4, 3)
    cases = [
        (lambda: F.pad(x, (1,)), RuntimeError, "Padding length must be divisible by 2"),
        (lambda: F.pad(x, (1,) * 6), RuntimeError, "Padding length should be less than or equal to two times the "
                                                   "input dimension but got padding length 6 and input of dimension 2"),
        (lambda: F.pad(ts.ones(1, 1, 3), (3, 3), mode="reflect"), RuntimeError,
         r"Argument #4: Padding size should be less than the corresponding input dimension, but got: padding \(3, 3\) "
         r"at dimension 2 of input \[1, 1, 3\]"),
        (lambda: F.pad(ts.ones(3), (1, 1), mode="reflect"), NotImplementedError,
         "Padding size 2 is not supported for 1D input tensor.\nSupported combinations for non-constant padding:"),
        (lambda: F.pad(ts.ones(3, 3), (1, 1, 1, 1), mode="replicate"), NotImplementedError,
         "Padding size 4 is not supported for 2D input tensor."),
        (lambda: F.pad(x, (1, 1), mode="foo"), NotImplementedError, "Unrecognised padding mode foo"),
        (lambda: F.pad(ts.ones(1, 3, 3), (1, 1), mode="reflect", value=2.0), RuntimeError,
         "Padding mode \"reflect\" doesn't take in value argument"),
        (lambda: F.pad(x, (-4, 1)), RuntimeError, "length must be non-negative"),
        (lambda: F.pad(ts.ones(1, 1, 3), (4, 0), mode="circular"), RuntimeError,
         "Padding value causes wrapping around more than once."),
        (lambda: F.pad(ts.ones(1, 1, 0), (1, 1), mode="reflect"), RuntimeError,
         r"Expected 2D or 3D \(batch mode\) tensor with possibly 0 batch size and other non-zero dimensions for "
         r"input, but got: \[1, 1, 0\]"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()


# -- interpolate -------------------------------------------------------------------------------------

NEAREST = [((1, 2, 5), dict(size=8)), ((1, 2, 5), dict(size=3)), ((2, 1, 4), dict(scale_factor=2)),
           ((1, 2, 3, 4), dict(size=(5, 7))), ((1, 2, 3, 4), dict(scale_factor=(1.7, 0.6))),
           ((1, 1, 5, 5), dict(scale_factor=2.5)), ((1, 1, 2, 3, 4), dict(size=(3, 3, 6))),
           ((1, 1, 2, 3, 4), dict(scale_factor=1.5)), ((1, 2, 6), dict(scale_factor=0.5)),
           ((1, 1, 4, 4), dict(scale_factor=1.3, recompute_scale_factor=True)), ((1, 1, 7), dict(size=7))]


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("shape, kwargs", NEAREST, ids=[f"{s}-{k}" for s, k in NEAREST])
def test_nearest_interpolation_matches_pytorch(oracle, mode, shape, kwargs):
    x = RNG.standard_normal(shape).astype(np.float32)
    _both(oracle, lambda t: F.interpolate(t, mode=mode, **kwargs),
          lambda t: oracle.nn.functional.interpolate(t, mode=mode, **kwargs), x)


LINEAR = [("linear", (1, 2, 5), dict(size=8)), ("linear", (2, 1, 6), dict(scale_factor=0.7)),
          ("bilinear", (1, 2, 3, 4), dict(size=(5, 7))), ("bilinear", (1, 1, 4, 4), dict(scale_factor=2)),
          ("bilinear", (1, 1, 5, 3), dict(size=(2, 1))), ("trilinear", (1, 1, 2, 3, 4), dict(scale_factor=1.5)),
          ("bilinear", (1, 1, 3, 3), dict(size=(3, 6)))]


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode, shape, kwargs", LINEAR, ids=[f"{m}-{s}-{k}" for m, s, k in LINEAR])
def test_linear_interpolation_matches_pytorch(oracle, mode, shape, kwargs, align_corners):
    x = RNG.standard_normal(shape).astype(np.float32)
    _both(oracle, lambda t: F.interpolate(t, mode=mode, align_corners=align_corners, **kwargs),
          lambda t: oracle.nn.functional.interpolate(t, mode=mode, align_corners=align_corners, **kwargs), x)


def test_nearest_interpolation_by_hand():
    x = ts.tensor([[[1.0, 2.0, 3.0]]])
    assert F.interpolate(x, scale_factor=2).tolist() == [[[1.0, 1.0, 2.0, 2.0, 3.0, 3.0]]]
    assert F.interpolate(x, size=2).tolist() == [[[1.0, 2.0]]]
    assert F.interpolate(x, size=5, mode="nearest-exact").tolist() == [[[1.0, 1.0, 2.0, 3.0, 3.0]]]
    assert F.interpolate(x, size=5, mode="linear", align_corners=True).tolist() == [[[1.0, 1.5, 2.0, 2.5, 3.0]]]
    grid = ts.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    assert F.interpolate(grid, scale_factor=2).tolist() == \
        [[[[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]]]


def test_interpolate_errors():
    x3 = ts.ones(1, 1, 3)
    cases = [
        (lambda: F.interpolate(ts.ones(4, 3), size=3), NotImplementedError,
         r"Input Error: Only 3D, 4D and 5D input Tensors supported \(got 2D\) for the modes: nearest \| linear \| "
         r"bilinear \| bicubic \| trilinear \| lanczos \| area \| nearest-exact \(got nearest\)"),
        (lambda: F.interpolate(x3, size=3, mode="bicubic"), NotImplementedError, r"\(got bicubic\)"),
        (lambda: F.interpolate(x3, size=3, mode="bilinear"), NotImplementedError,
         "Got 3D input, but bilinear mode needs 4D input"),
        (lambda: F.interpolate(x3, size=3, scale_factor=2), ValueError,
         "only one of size or scale_factor should be defined"),
        (lambda: F.interpolate(x3), ValueError, "either size or scale_factor should be defined"),
        (lambda: F.interpolate(x3, size=(3, 3)), ValueError,
         r"Input and output must have the same number of spatial dimensions, but got input with spatial dimensions "
         r"of \[3\] and output size of \(3, 3\)"),
        (lambda: F.interpolate(x3, scale_factor=(2, 2)), ValueError,
         "Input and scale_factor must have the same number of spatial dimensions"),
        (lambda: F.interpolate(x3, size=(2.5,)), TypeError, "expected size to be one of int or Tuple"),
        (lambda: F.interpolate(x3, size=3, align_corners=True), ValueError,
         "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear"),
        (lambda: F.interpolate(x3, size=0), RuntimeError,
         r"Input and output sizes should be greater than 0, but got input \(W: 3\) and output \(W: 0\)"),
        (lambda: F.interpolate(ts.ones(1, 1, 2, 3), scale_factor=-1.0), RuntimeError,
         r"but got input \(H: 2, W: 3\) output \(H: -2, W: -3\)"),  # "and" only in PyTorch's 1-D message
        (lambda: F.interpolate(x3, size=3, recompute_scale_factor=True), ValueError,
         "recompute_scale_factor is not meaningful with an explicit size."),
        (lambda: F.interpolate(ts.ones(1, 1, 3, dtype=ts.int64), size=4, mode="linear"), NotImplementedError,
         "not implemented for 'Long'"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()


# -- normalize and similarities ------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [{}, dict(p=1.0), dict(dim=0), dict(p=3.0, dim=-1, eps=1e-3)])
def test_normalize_matches_pytorch(oracle, kwargs):
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    x[1] = 0.0  # the eps clamp
    _both(oracle, lambda t: F.normalize(t, **kwargs), lambda t: oracle.nn.functional.normalize(t, **kwargs), x)


def test_normalize_by_hand_and_errors():
    out = F.normalize(ts.tensor([[3.0, 4.0], [0.0, 0.0]], dtype=ts.float64))
    assert out.tolist() == [[0.6, 0.8], [0.0, 0.0]]
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        F.normalize(ts.ones(2, 2, dtype=ts.int64))


@pytest.mark.parametrize("shapes, kwargs", [(((4, 3), (4, 3)), {}), (((4, 3), (1, 3)), {}),
                                            (((2, 3, 4), (2, 3, 4)), dict(dim=-1)), (((5,), (5,)), dict(dim=0))])
def test_cosine_similarity_matches_pytorch(oracle, shapes, kwargs):
    x, y = (RNG.standard_normal(s).astype(np.float32) for s in shapes)
    _both(oracle, lambda a, b: F.cosine_similarity(a, b, **kwargs),
          lambda a, b: oracle.nn.functional.cosine_similarity(a, b, **kwargs), x, y)
    _both(oracle, lambda b, a: F.cosine_similarity(a, b, **kwargs),
          lambda b, a: oracle.nn.functional.cosine_similarity(a, b, **kwargs), y, x)


def test_cosine_similarity_by_hand():
    out = F.cosine_similarity(ts.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]]),
                              ts.tensor([[0.0, 2.0], [2.0, 2.0], [1.0, 0.0]]))
    np.testing.assert_allclose(out.numpy(), [0.0, 1.0, 0.0], atol=1e-7)


@pytest.mark.parametrize("kwargs", [{}, dict(p=1.0), dict(keepdim=True), dict(p=3.0, eps=1e-3)])
def test_pairwise_distance_matches_pytorch(oracle, kwargs):
    x, y = RNG.standard_normal((4, 3)).astype(np.float32), RNG.standard_normal((4, 3)).astype(np.float32)
    _both(oracle, lambda a, b: F.pairwise_distance(a, b, **kwargs),
          lambda a, b: oracle.nn.functional.pairwise_distance(a, b, **kwargs), x, y)
