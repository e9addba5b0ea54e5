"""Library surface of issue 18 beyond math: finfo/iinfo, the legacy tensor types, memory formats,
resize_, new_empty/new, random_, multinomial, `size=` in the factories, linalg.vector_norm, the
_foreach functions, torch.compile, testing.assert_close. By hand, then against PyTorch when it is
installed."""
import math

import numpy as np
import pytest

import tscript as ts
from tests.conftest import assert_close

F = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)


# -- finfo / iinfo -------------------------------------------------------------------------------------

FINFO_ATTRS = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_finfo_by_hand(name):
    info, ref = ts.finfo(getattr(ts, name)), np.finfo(name)
    assert (info.bits, info.eps, info.max, info.min, info.tiny, info.dtype) == \
        (ref.bits, float(ref.eps), float(ref.max), float(ref.min), float(ref.smallest_normal), name)
    assert info.smallest_normal == info.tiny and info.resolution == {"float32": 1e-06, "float64": 1e-15}[name]
    assert ts.finfo() == ts.finfo(ts.float32) and ts.finfo(ts.float32) != ts.finfo(ts.float64)


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_finfo_matches_torch(name, oracle):
    info, ref = ts.finfo(getattr(ts, name)), oracle.finfo(getattr(oracle, name))
    assert [getattr(info, a) for a in FINFO_ATTRS] == [getattr(ref, a) for a in FINFO_ATTRS]
    assert repr(info) == repr(ref)


@pytest.mark.parametrize("name", ["int32", "int64"])
def test_iinfo_matches_torch(name, oracle):
    info = ts.iinfo(getattr(ts, name))
    assert (info.bits, info.max, info.min, info.dtype) == (np.iinfo(name).bits, np.iinfo(name).max,
                                                           np.iinfo(name).min, name)
    ref = oracle.iinfo(getattr(oracle, name))
    assert (info.bits, info.max, info.min, info.dtype, repr(info)) == (ref.bits, ref.max, ref.min, ref.dtype, repr(ref))


def test_finfo_iinfo_errors():
    with pytest.raises(TypeError, match="torch.finfo\\(\\) requires a floating point input type"):
        ts.finfo(ts.int32)
    with pytest.raises(TypeError, match="torch.iinfo\\(\\) requires an integer input type"):
        ts.iinfo(ts.float32)
    with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
        ts.iinfo(ts.bool)
    with pytest.raises(TypeError, match="must be torch.dtype, not str"):
        ts.finfo("float32")


# -- legacy tensor types ------------------------------------------------------------------------------

def test_legacy_constructors():
    t = ts.FloatTensor(2, 3)
    assert t.shape == (2, 3) and t.dtype == ts.float32
    assert ts.FloatTensor([1, 2]).tolist() == [1.0, 2.0] and ts.FloatTensor((2, 3)).tolist() == [2.0, 3.0]
    assert ts.LongTensor([1.5, 2]).tolist() == [1, 2] and ts.LongTensor().shape == (0,)
    assert ts.DoubleTensor([1]).dtype == ts.float64 and ts.IntTensor(2).dtype == ts.int32
    assert ts.BoolTensor([1, 0]).tolist() == [True, False]
    assert ts.FloatTensor(ts.Size([4])).shape == (4,) and ts.FloatTensor(np.zeros(2)).dtype == ts.float32
    src = ts.ones(2)
    alias = ts.FloatTensor(src)
    alias[0] = 5
    assert src[0].item() == 5.0  # shares memory
    assert ts.ones(2).new(3).shape == (3,) and ts.ones(2, dtype=ts.int64).new([1, 2]).dtype == ts.int64


def test_legacy_types_in_isinstance_and_type():
    assert isinstance(ts.ones(2), ts.FloatTensor) and not isinstance(ts.ones(2, dtype=ts.int64), ts.FloatTensor)
    assert isinstance(ts.ones(2, dtype=ts.int64), ts.LongTensor) and isinstance(ts.FloatTensor(1), ts.Tensor)
    assert not isinstance(np.ones(2), ts.FloatTensor)
    assert ts.ones(2).type(ts.LongTensor).dtype == ts.int64
    assert ts.ones(2).type("torch.DoubleTensor").dtype == ts.float64
    assert ts.ones(2).type(ts.int32).dtype == ts.int32 and ts.ones(2).type() == "tscript.FloatTensor"


def test_legacy_constructor_errors():
    with pytest.raises(TypeError, match="expected"):
        ts.FloatTensor(ts.ones(2, dtype=ts.int64))
    with pytest.raises(TypeError, match="data must be a sequence \\(got float\\)"):
        ts.FloatTensor(2.5)
    with pytest.raises(TypeError):
        ts.FloatTensor(3, dtype=ts.int64)


def test_legacy_types_match_torch(oracle):
    for name in ("FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "BoolTensor"):
        assert_close(getattr(ts, name)([1, 0, 2]), getattr(oracle, name)([1, 0, 2]))
        assert getattr(ts, name)(2, 3).shape == getattr(oracle, name)(2, 3).shape


# -- memory formats -------------------------------------------------------------------------------------

def test_memory_formats_are_accepted_as_hints():
    x = ts.tensor(np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5))
    for fmt in (ts.preserve_format, ts.contiguous_format, ts.channels_last):
        y = x.contiguous(memory_format=fmt)
        assert ts.equal(y, x) and y.is_contiguous()
        assert ts.equal(x.clone(memory_format=fmt), x) and ts.equal(ts.clone(x, memory_format=fmt), x)
        assert ts.equal(x.to(memory_format=fmt), x) and x.to(ts.float64, memory_format=fmt).dtype == ts.float64
        for like in (ts.zeros_like, ts.ones_like, ts.empty_like, ts.rand_like, ts.randn_like):
            assert like(x, memory_format=fmt).shape == x.shape
        assert ts.full_like(x, 2.0, memory_format=fmt).shape == x.shape
    assert ts.empty(2, 3, 4, 5, memory_format=ts.channels_last).shape == (2, 3, 4, 5)
    assert ts.empty(2, 3, 4, 5, 6, memory_format=ts.channels_last_3d).shape == (2, 3, 4, 5, 6)
    assert repr(ts.channels_last) == "tscript.channels_last" and isinstance(ts.channels_last, ts.memory_format)


def test_is_contiguous_reads_the_strides():
    x = ts.tensor(np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5))
    assert x.is_contiguous() and x.is_contiguous(memory_format=ts.contiguous_format)
    assert not x.is_contiguous(memory_format=ts.channels_last)
    nhwc = ts.from_numpy(np.ascontiguousarray(x.numpy().transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
    assert nhwc.is_contiguous(memory_format=ts.channels_last) and not nhwc.is_contiguous()


@pytest.mark.parametrize("call", [
    lambda: ts.ones(2, 3).contiguous(memory_format=ts.channels_last),
    lambda: ts.ones(2, 3).clone(memory_format=ts.channels_last),
    lambda: ts.ones(2, 3).to(memory_format=ts.channels_last),
    lambda: ts.zeros_like(ts.ones(2, 3), memory_format=ts.channels_last),
    lambda: ts.empty(2, 3, memory_format=ts.channels_last),
    lambda: ts.ones(2, 3, 4, 5).contiguous(memory_format=ts.channels_last_3d),
])
def test_memory_format_rank_errors(call):
    with pytest.raises(RuntimeError, match="required rank (4|5) tensor to use channels_last(_3d)? format"):
        call()


def test_memory_format_type_errors():
    with pytest.raises(TypeError, match="must be torch.memory_format, not str"):
        ts.ones(2).contiguous(memory_format="x")
    with pytest.raises(TypeError, match="unexpected keyword argument 'memory_format'"):
        ts.zeros(2, memory_format=ts.contiguous_format)


def test_contiguous_and_clone_keep_autograd():
    x = ts.tensor(F, requires_grad=True)
    (x.t().contiguous(memory_format=ts.contiguous_format) * 2).sum().backward()
    assert_close(x.grad, np.full(F.shape, 2.0, np.float32))
    assert x.clone(memory_format=ts.preserve_format).grad_fn.name() == "CloneBackward0"


# -- resize_, new_empty ------------------------------------------------------------------------------------

def test_resize_by_hand():
    a = ts.arange(6.0)
    assert a.resize_(2, 3) is a and a.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert a.resize_(4).tolist() == [0, 1, 2, 3] and a.resize_((2, 2)).shape == (2, 2)
    grown = a.resize_(3, 3)
    assert grown.shape == (3, 3) and grown.flatten()[:4].tolist() == [0, 1, 2, 3]
    version = a._version
    a.resize_(9)
    assert a._version == version + 1
    b = ts.arange(4.0)
    assert b.resize_as_(ts.ones(2, 2)).shape == (2, 2)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        ts.ones(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        ts.ones(2).resize_(-1)


def test_new_empty():
    x = ts.ones(2, dtype=ts.int64)
    assert x.new_empty(3, 4).shape == (3, 4) and x.new_empty((2,)).dtype == ts.int64
    assert x.new_empty(2, dtype=ts.float64).dtype == ts.float64
    assert ts.ones(1).new_empty(2, requires_grad=True).requires_grad


# -- random_, multinomial -----------------------------------------------------------------------------------

def test_random_forms():
    ts.manual_seed(0)
    x = ts.empty(1000).random_(10)
    assert x.min().item() >= 0 and x.max().item() <= 9 and x.dtype == ts.float32
    assert set(ts.empty(1000, dtype=ts.int64).random_(3, 6).tolist()) == {3, 4, 5}
    assert set(ts.empty(200, dtype=ts.int64).random_(to=2).tolist()) == {0, 1}
    assert set(ts.empty(200, dtype=ts.bool).random_().tolist()) == {False, True}
    wide = ts.empty(1000).random_()
    assert wide.max().item() <= 2 ** 24 and wide.max().item() > 2 ** 20
    assert ts.empty(100, dtype=ts.int32).random_().min().item() >= 0
    g1, g2 = ts.Generator().manual_seed(3), ts.Generator().manual_seed(3)
    assert ts.equal(ts.empty(5).random_(100, generator=g1), ts.empty(5).random_(100, generator=g2))
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=6 >= to=3"):
        ts.empty(5).random_(6, 3)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds"):
        ts.empty(3, dtype=ts.int32).random_(0, 2 ** 40)
    with pytest.warns(UserWarning, match="out of bounds"):
        ts.empty(3).random_(0, 2 ** 25)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        ts.ones(3, requires_grad=True).random_()


def test_multinomial_by_hand():
    ts.manual_seed(0)
    p = ts.tensor([0.1, 0.2, 0.7])
    draws = ts.multinomial(p, 20000, replacement=True)
    counts = np.bincount(draws.numpy(), minlength=3) / 20000
    np.testing.assert_allclose(counts, [0.1, 0.2, 0.7], atol=0.02)
    without = ts.multinomial(p, 3)
    assert sorted(without.tolist()) == [0, 1, 2] and without.dtype == ts.int64
    assert p.multinomial(2).shape == (2,) and ts.multinomial(ts.ones(4, 3), 2).shape == (4, 2)
    assert ts.multinomial(ts.tensor([0.0, 1.0, 0.0]), 5, True).tolist() == [1] * 5
    assert ts.multinomial(ts.tensor([1.0, 0.0, 0.0]), 2)[0].item() == 0  # then a zero-probability one
    rows = ts.multinomial(ts.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=ts.float64), 3, True)
    assert rows.tolist() == [[0, 0, 0], [1, 1, 1]]
    g1, g2 = ts.Generator().manual_seed(9), ts.Generator().manual_seed(9)
    assert ts.equal(ts.multinomial(p, 10, True, generator=g1), ts.multinomial(p, 10, True, generator=g2))
    assert not ts.multinomial(ts.ones(3, requires_grad=True), 1).requires_grad


def test_multinomial_draws_without_replacement_in_proportion():
    """The first draw without replacement follows the probabilities (the exponential race)."""
    ts.manual_seed(1)
    firsts = [ts.multinomial(ts.tensor([1.0, 3.0]), 2)[0].item() for _ in range(4000)]
    assert abs(np.mean(firsts) - 0.75) < 0.03


@pytest.mark.parametrize("args, match", [
    ((ts.tensor([0.1, 0.9]), 3), "cannot sample n_sample > prob_dist.size\\(-1\\) samples without replacement"),
    ((ts.tensor([-1.0, 1.0]), 1), "probability tensor contains either `inf`, `nan` or element < 0"),
    ((ts.tensor([1.0, math.inf]), 1), "probability tensor contains either `inf`, `nan` or element < 0"),
    ((ts.tensor([0.0, 0.0]), 1), "invalid multinomial distribution \\(sum of probabilities <= 0\\)"),
    ((ts.tensor([1, 2]), 1), "multinomial only supports floating-point dtypes for input, got: Long"),
    ((ts.ones(2, 2, 2), 1), "prob_dist must be 1 or 2 dim"),
    ((ts.ones(3), 0), "cannot sample n_sample <= 0 samples"),
])
def test_multinomial_errors(args, match):
    with pytest.raises(RuntimeError, match=match):
        ts.multinomial(*args)


# -- size= forms ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_keyword(name):
    fn = getattr(ts, name)
    assert fn(size=(2, 3)).shape == (2, 3) and fn(size=[4]).shape == (4,) and fn(size=()).shape == ()
    assert fn(size=(2,), dtype=ts.float64).dtype == ts.float64
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        fn(2, size=(2,))


def test_size_keyword_of_new_tensors():
    x = ts.ones(1, dtype=ts.int32)
    for method in (x.new_zeros, x.new_ones, x.new_empty):
        out = method(size=(2, 3))
        assert out.shape == (2, 3) and out.dtype == ts.int32
    assert x.new_zeros(size=(2,)).tolist() == [0, 0] and x.new_ones((1, 2)).tolist() == [[1, 1]]


def test_size_keyword_of_full_and_randint():
    assert ts.full(size=(2, 3), fill_value=1.5).tolist() == [[1.5] * 3] * 2
    assert ts.randint(0, 5, size=(3,)).shape == (3,)


# -- linalg.vector_norm ---------------------------------------------------------------------------------------

def test_vector_norm_by_hand():
    x = ts.tensor([[3.0, -4.0], [0.0, 1.0]])
    vn = ts.linalg.vector_norm
    assert vn(x).item() == pytest.approx(math.sqrt(26))
    assert vn(x, 1).item() == 8.0 and vn(x, 0).item() == 3.0
    assert vn(x, math.inf).item() == 4.0 and vn(x, -math.inf).item() == 0.0
    assert vn(x, 2, dim=1).tolist() == [5.0, 1.0] and vn(x, dim=1, keepdim=True).shape == (2, 1)
    assert vn(x, dim=()).item() == pytest.approx(math.sqrt(26))
    assert vn(x, dtype=ts.float64).dtype == ts.float64


@pytest.mark.parametrize("ord", [2, 1, 0, math.inf, -math.inf, 3, 0.5, -1])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (1, False), ((0, 1), True), (-1, True)])
def test_vector_norm_matches_torch(ord, dim, keepdim, oracle):
    data = np.array([[3.0, -4.0, 0.5], [0.0, 1.0, -2.0]], np.float32)
    got = ts.linalg.vector_norm(ts.tensor(data), ord, dim, keepdim)
    expected = oracle.linalg.vector_norm(oracle.tensor(data), ord, dim, keepdim)
    assert_close(got, expected)
    assert_close(ts.linalg.vector_norm(ts.tensor(data), ord, dim, keepdim, dtype=ts.float64),
                 oracle.linalg.vector_norm(oracle.tensor(data), ord, dim, keepdim, dtype=oracle.float64))


@pytest.mark.parametrize("ord", [2, 1, math.inf, 3])
def test_vector_norm_gradient_matches_torch(ord, oracle):
    data = np.array([[3.0, -4.0, 0.5], [0.2, 1.0, -2.0]])
    x, t = ts.tensor(data, requires_grad=True), oracle.tensor(data, requires_grad=True)
    ts.linalg.vector_norm(x, ord, dim=1).sum().backward()
    oracle.linalg.vector_norm(t, ord, dim=1).sum().backward()
    assert_close(x.grad, t.grad)
    assert ts.linalg.vector_norm(x, ord).grad_fn.name() == "LinalgVectorNormBackward0"


def test_vector_norm_errors():
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        ts.linalg.vector_norm(ts.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="dtype should be floating point or complex, but got Long"):
        ts.linalg.vector_norm(ts.ones(2), dtype=ts.int64)
    with pytest.raises(RuntimeError, match="should be convertible without narrowing"):
        ts.linalg.vector_norm(ts.ones(2, dtype=ts.float64), dtype=ts.float32)
    with pytest.raises(TypeError, match="argument 'ord' must be Number, not str"):
        ts.linalg.vector_norm(ts.ones(2), "fro")


# -- _foreach, compile, testing --------------------------------------------------------------------------------

def test_foreach_functions():
    a = [ts.ones(2), ts.ones(3)]
    assert [t.tolist() for t in ts._foreach_add(a, 1)] == [[2.0, 2.0], [2.0] * 3]
    assert [t.tolist() for t in ts._foreach_mul(a, [2, 3])] == [[2.0, 2.0], [3.0] * 3]
    assert [t.tolist() for t in ts._foreach_add(a, a, alpha=2)] == [[3.0, 3.0], [3.0] * 3]
    assert ts._foreach_add_(a, ts.tensor(2.0)) is a and a[1].tolist() == [3.0] * 3
    ts._foreach_addcdiv_(a, a, a, ts.tensor([1.0, 2.0]))
    assert a[0].tolist() == [4.0, 4.0] and a[1].tolist() == [5.0] * 3
    ts._foreach_addcmul_(a, a, a, value=-0.25)
    assert a[0].tolist() == [0.0, 0.0]
    ts._foreach_maximum_(a, 1.0)
    assert a[0].tolist() == [1.0, 1.0]
    assert [t.item() for t in ts._foreach_norm([ts.tensor([3.0, 4.0])])] == [5.0]
    assert ts._foreach_sqrt([ts.tensor([4.0])])[0].item() == 2.0
    ts._foreach_lerp_(a, [ts.zeros(2), ts.zeros(3)], 0.5)
    ts._foreach_zero_(a)
    assert a[1].tolist() == [0.0] * 3
    with pytest.raises(RuntimeError, match="same number of elements as scalar list"):
        ts._foreach_add([ts.ones(2)], [1, 2])
    with pytest.raises(RuntimeError, match="at least one tensor"):
        ts._foreach_add([], 1)


def test_foreach_matches_torch(oracle):
    arrays = [F, F[0] * 3]
    for name, args in (("add", (2.5,)), ("mul", ([2.0, -1.0],)), ("div", ("self",)), ("sub", ("self",)),
                       ("maximum", (0.1,)), ("addcdiv", ("self", "self")), ("lerp", ("self", 0.3)), ("neg", ()),
                       ("sqrt", ()), ("reciprocal", ())):
        outs = []
        for lib in (ts, oracle):
            xs = [lib.tensor(np.abs(x) + 0.5) for x in arrays]
            call = [[lib.tensor(np.abs(x) + 1) for x in arrays] if a == "self" else a for a in args]
            getattr(lib, f"_foreach_{name}_")(xs, *call)
            outs.append(xs)
        for g, e in zip(*outs):
            assert_close(g, e)


def test_compile_is_a_pass_through():
    model = ts.nn.Linear(2, 2)
    assert ts.compile(model) is model and ts.compile(mode="max-autotune")(model) is model
    fn = ts.compile(lambda x: x * 2)
    assert fn(ts.ones(1)).item() == 2.0
    assert ts.compiler.is_compiling() is False and ts.compiler.disable(fn) is fn
    with pytest.raises(RuntimeError, match="expects a callable"):
        ts.compile(3)


def test_testing_assert_close():
    ts.testing.assert_close(ts.ones(2), ts.ones(2) + 1e-7)
    ts.testing.assert_close({"a": [ts.tensor(1.0), 2.0]}, {"a": [ts.tensor(1.0), 2.0]})
    ts.testing.assert_close(ts.tensor([math.nan]), ts.tensor([math.nan]), equal_nan=True)
    with pytest.raises(AssertionError, match="Tensor-likes are not close!\n\nMismatched elements: 1 / 3"):
        ts.testing.assert_close(ts.tensor([1.0, 2.0, 3.0]), ts.tensor([1.0, 2.1, 3.0]))
    with pytest.raises(AssertionError, match="Tensor-likes are not equal"):
        ts.testing.assert_close(ts.tensor([1, 2]), ts.tensor([1, 3]))
    with pytest.raises(AssertionError, match="attribute 'dtype' do not match: torch.float32 != torch.float64"):
        ts.testing.assert_close(ts.ones(2), ts.ones(2, dtype=ts.float64))
    with pytest.raises(AssertionError, match="attribute 'shape' do not match"):
        ts.testing.assert_close(ts.ones(2), ts.ones(3))
    with pytest.raises(AssertionError, match="item \\['a'\\]"):
        ts.testing.assert_close({"a": ts.ones(1)}, {"a": ts.zeros(1)})
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        ts.testing.assert_close(ts.ones(1), ts.ones(1), rtol=1)
    ts.testing.assert_close(ts.ones(2), ts.ones(2) * 1.1, rtol=0.2, atol=0)
    with pytest.warns(FutureWarning, match="assert_allclose\\(\\)` is deprecated"):
        ts.testing.assert_allclose(ts.ones(2), [1.0, 1.0])


def test_testing_messages_match_torch(oracle):
    pairs = [(np.array([1.0, 2.0, 3.0], np.float32), np.array([1.0, 2.5, 3.0], np.float32)),
             (np.array([1, 2]), np.array([1, 4]))]
    for a, b in pairs:
        with pytest.raises(AssertionError) as ours:
            ts.testing.assert_close(ts.tensor(a), ts.tensor(b))
        with pytest.raises(AssertionError) as theirs:
            oracle.testing.assert_close(oracle.tensor(a), oracle.tensor(b))
        assert str(ours.value) == str(theirs.value)
