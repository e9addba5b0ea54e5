"""Every op of codegen's LOWERINGS table, compiled natively, against eager tscript (the reference
kernels): random broadcast shapes (size 0 and 1 dims, stride-0 inner dims), non-contiguous inputs,
every claimed dtype, PyTorch promotion of mixed dtypes, Python scalars and 0-dim tensors, NaN/inf.

Each dtype compiles ONE model returning every op's result (one LLVM module, one compile), shared
by the tests of this file through module-scope fixtures.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tscript as ts
from tscript_runtime.native.lowering import LOWERINGS

from tests.codegen.helpers import (DTYPES, LAYOUTS, broadcast_shapes, check_outputs, compile_native, laid_out, shapes,
                                   unfused, values)

FLOATS, INTS = ("float32", "float64"), ("int64", "int32")
ALL, NUMERIC = FLOATS + INTS + ("bool",), FLOATS + INTS
MATH = ("exp", "log", "tanh", "sigmoid", "erf", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "log1p", "expm1")

# (op kind, label, fn(L, x, y) with L the library (tscript or torch), dtypes where PyTorch accepts it).
# Several rows per op cover its variants.
CASES = [
    ("aten::add", "x + y", lambda L, x, y: x + y, ALL),
    ("aten::add", "add alpha", lambda L, x, y: L.add(x, y, alpha=3), NUMERIC),
    ("aten::sub", "x - y", lambda L, x, y: x - y, NUMERIC),
    ("aten::sub", "sub alpha", lambda L, x, y: L.sub(x, y, alpha=2), NUMERIC),
    ("aten::mul", "x * y", lambda L, x, y: x * y, ALL),
    ("aten::div", "x / y", lambda L, x, y: x / y, ALL),
    ("aten::maximum", "maximum", lambda L, x, y: L.maximum(x, y), ALL),
    ("aten::minimum", "minimum", lambda L, x, y: L.minimum(x, y), ALL),
    ("aten::neg", "neg", lambda L, x, y: -x, NUMERIC),
    ("aten::abs", "abs", lambda L, x, y: x.abs(), NUMERIC),
    ("aten::relu", "relu", lambda L, x, y: L.relu(x), NUMERIC),
    *[(f"aten::{name}", name, lambda L, x, y, name=name: getattr(L, name)(x), ALL) for name in MATH],
    *[(f"aten::{name}", name, lambda L, x, y, name=name: getattr(L, name)(x), NUMERIC)
      for name in ("floor", "ceil", "trunc", "round")],
    ("aten::where", "where", lambda L, x, y: L.where(x > y, x, y), ALL),
    ("aten::where", "where scalar", lambda L, x, y: L.where(y > x, x, 2), NUMERIC),
    ("aten::masked_fill", "masked_fill", lambda L, x, y: x.masked_fill(x > y, -2), ALL),
    ("aten::masked_fill", "masked_fill by 0-dim tensor", lambda L, x, y: x.masked_fill(y < 0, L.tensor(3)), NUMERIC),
    ("aten::contiguous", "contiguous of a transpose", lambda L, x, y: (x * 2).transpose(0, 2).contiguous(), NUMERIC),
    ("aten::clone", "clone", lambda L, x, y: (x + y).clone(), ALL),
    ("aten::clamp", "clamp tensors", lambda L, x, y: x.clamp(y, y + 1), NUMERIC),
    ("aten::clamp", "clamp min", lambda L, x, y: x.clamp(min=-1), NUMERIC),
    ("aten::clamp", "clamp max", lambda L, x, y: x.clamp(max=2), NUMERIC),
    *[(f"aten::{name}", name, lambda L, x, y, name=name: getattr(L, name)(x, y), ALL)
      for name in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor")],
    *[("aten::to", f"to {d}", lambda L, x, y, d=d: x.to(getattr(L, d)), ALL) for d in ALL],
    ("aten::pow", "x ** y", lambda L, x, y: x ** y, FLOATS),
    *[("aten::pow", f"x ** {e}", lambda L, x, y, e=e: x ** e, FLOATS) for e in (0, 1, 2, 3, 0.5, -0.5, -1, -2, 1.7)],
    *[("aten::pow", f"x ** {e} (int)", lambda L, x, y, e=e: x ** e, INTS) for e in (0, 1, 2, 3, 7)],
    *[(f"aten::{name}", name, lambda L, x, y, name=name: getattr(L, name)(x), ALL)
      for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "log2", "tan", "asin", "acos", "atan")],
    ("aten::nan_to_num", "nan_to_num", lambda L, x, y: L.nan_to_num(x), FLOATS),
    ("aten::nan_to_num", "nan_to_num values", lambda L, x, y: L.nan_to_num(x, nan=1.5, posinf=2.0, neginf=-3), FLOATS),
    ("aten::copysign", "copysign", lambda L, x, y: L.copysign(x, y), ALL),
    ("aten::fmod", "fmod", lambda L, x, y: L.fmod(x, y), FLOATS),
    *[(f"aten::bitwise_{name}", f"bitwise_{name}", lambda L, x, y, name=name: getattr(L, f"bitwise_{name}")(x, y),
       ("bool", *INTS)) for name in ("and", "or", "xor")],
]


def _cases(dtype: str) -> list:
    return [c for c in CASES if dtype in c[3]]


def _model_fn(dtype: str, lib=ts):
    cases = _cases(dtype)
    return lambda x, y: tuple(fn(lib, x, y) for _, _, fn, _ in cases)


def test_every_lowering_has_cases():
    assert {c[0] for c in CASES} == set(LOWERINGS)


DYNAMIC = {0: [0, 1, 2], 1: [0, 1, 2]}


@pytest.fixture(scope="module", params=ALL)
def same_dtype(request):
    """(dtype, compiled model of every op on two rank-3 inputs with all dims dynamic)."""
    d = request.param
    rng = np.random.default_rng(0)
    ex = [ts.from_numpy(values(rng, (2, 3, 4), d)) for _ in range(2)]
    cm = compile_native(_model_fn(d), tuple(ex), dynamic=DYNAMIC)
    return d, cm


def test_every_op_is_fused(same_dtype):
    d, cm = same_dtype
    assert unfused(cm.graph, LOWERINGS) == []


@settings(max_examples=30, deadline=None)
@given(shapes=broadcast_shapes(2, 3), layouts=st.tuples(st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS)),
       seed=st.integers(0, 2**32 - 1))
def test_ops_match_eager(same_dtype, shapes, layouts, seed):
    d, cm = same_dtype
    rng = np.random.default_rng(seed)
    x, y = (ts.from_numpy(laid_out(values(rng, s, d), lay)) for s, lay in zip(shapes, layouts))
    check_outputs(cm(x, y), _model_fn(d)(x, y), [c[1] for c in _cases(d)])


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 1e-30, 88.7, 88.73, 89.0, -87.0, -88.0,
                    -100.0, -104.0, 20.0, -20.0, 9.0, -9.0, 0.4, -0.4, 0.5, 1.0, 3.5, 1e30, -1e30, 1.5, -2.5])


# numpy's power (the eager kernel) gives pow(-inf, -0.5) = 0 and pow(-0, -0.5) = inf; PyTorch computes
# x ** -0.5 as rsqrt (nan, -inf), and so does the native code (checked against PyTorch below).
EAGER_DIFFERS_FROM_PYTORCH = {"x ** -0.5"}
# PyTorch's vectorized fmod gives NaN for a denormal divisor (fmod(88.7, 1e-40)) where its scalar loop and
# C's fmod (the eager kernel and the native code) give the exact remainder.
PYTORCH_VECTOR_QUIRKS = {"fmod"}


def _special_inputs(dtype: str, layout: str, lib=ts):
    x = SPECIAL.astype(dtype)
    return [lib.from_numpy(laid_out(a.reshape(1, 4, 7), layout)) for a in (x, np.roll(x, 3))]


def _special_labels(dtype: str, skip: set) -> list[int]:
    """Indices of the cases to compare (float -> int conversion of NaN/inf is undefined)."""
    return [i for i, c in enumerate(_cases(dtype)) if not c[1].startswith("to int") and c[1] not in skip]


@pytest.mark.parametrize("layout", ["contiguous", "sliced"])
def test_special_values(same_dtype, layout):
    """NaN and infinities propagate as in the reference (exp/log/tanh/sigmoid/erf, max/min with NaN...)."""
    d, cm = same_dtype
    if d not in FLOATS:
        pytest.skip("special values are floating point")
    keep = _special_labels(d, EAGER_DIFFERS_FROM_PYTORCH)
    got, expected = cm(*_special_inputs(d, layout)), _model_fn(d)(*_special_inputs(d, layout))
    check_outputs(tuple(got[i] for i in keep), tuple(expected[i] for i in keep), [_cases(d)[i][1] for i in keep])


def test_special_values_match_pytorch(same_dtype, oracle):
    d, cm = same_dtype
    if d not in FLOATS:
        pytest.skip("special values are floating point")
    keep = _special_labels(d, PYTORCH_VECTOR_QUIRKS)
    got = cm(*_special_inputs(d, "contiguous"))
    expected = _model_fn(d, oracle)(*_special_inputs(d, "contiguous", oracle))
    check_outputs(tuple(got[i] for i in keep), tuple(expected[i] for i in keep), [_cases(d)[i][1] for i in keep])


# -- broadcasting against lower ranks, 0-dim tensors and Python scalars ---------------------------------

BROADCAST_CASES = ("x + y", "sub alpha", "x / y", "maximum", "exp", "where", "clamp tensors", "lt", "to int64",
                   "x ** y")


def _broadcast_cases() -> list:
    return [c for c in _cases("float32") if c[1] in BROADCAST_CASES]


def _broadcast_fn(lib=ts):
    return lambda x, y: tuple(fn(lib, x, y) for _, _, fn, _ in _broadcast_cases())


@pytest.fixture(scope="module")
def lower_rank():
    """float32 models: (rank 3, rank 1) and (rank 3, 0-dim) operands."""
    rng = np.random.default_rng(1)
    x = ts.from_numpy(values(rng, (2, 3, 4), "float32"))
    models = {}
    for name, y in (("rank1", values(rng, (4,), "float32")), ("0-dim", values(rng, (), "float32"))):
        models[name] = compile_native(_broadcast_fn(), (x, ts.from_numpy(np.asarray(y))), dynamic={0: [0, 1]})
    return models


@settings(max_examples=15, deadline=None)
@given(shape=shapes(3), seed=st.integers(0, 2**32 - 1), layout=st.sampled_from(LAYOUTS))
def test_lower_rank_operands(lower_rank, shape, seed, layout):
    rng = np.random.default_rng(seed)
    shape = shape[:2] + (4,)  # the rank-1 operand fixes the last dim
    x = ts.from_numpy(laid_out(values(rng, shape, "float32"), layout))
    for name, y in (("rank1", values(rng, (4,), "float32")), ("0-dim", np.asarray(values(rng, (), "float32")))):
        y = ts.from_numpy(y)
        check_outputs(lower_rank[name](x, y), _broadcast_fn()(x, y), [c[1] for c in _broadcast_cases()])


SCALAR_FNS = [
    ("x * 2.5", lambda x: x * 2.5), ("x + 3", lambda x: x + 3), ("2 - x", lambda x: 2 - x),
    ("x / 2", lambda x: x / 2), ("x > 1.5", lambda x: x > 1.5), ("x == 2", lambda x: x == 2),
    ("max(x, 1)", lambda x: x.clamp(min=1)), ("x ** 2", lambda x: x ** 2), ("where(x>0, 1.5, -1)", lambda x: ts.where(x > 0, 1.5, -1)),
    ("(x + 1) * 0.5", lambda x: (x + 1) * 0.5), ("True & x", lambda x: ts.logical_and(x, True)),
]


@pytest.fixture(scope="module", params=NUMERIC + ("bool",))
def scalar_model(request):
    d = request.param
    fns = [(label, fn) for label, fn in SCALAR_FNS if d != "bool" or label in ("x * 2.5", "x + 3", "x > 1.5",
                                                                               "True & x", "x / 2")]
    x = ts.from_numpy(values(np.random.default_rng(2), (3, 4), d))
    fn = lambda x: tuple(f(x) for _, f in fns)  # noqa: E731
    return d, fn, [label for label, _ in fns], compile_native(fn, (x,), dynamic={0: [0, 1]})


def test_python_scalars_promote_like_pytorch(scalar_model):
    """int tensor * 2.5 is float32, int tensor + 3 stays int, float32 + int stays float32..."""
    d, fn, labels, cm = scalar_model
    x = ts.from_numpy(laid_out(values(np.random.default_rng(3), (5, 3), d), "transposed"))
    check_outputs(cm(x), fn(x), labels)


PAIRS = [("float32", "float64"), ("int64", "float32"), ("int32", "int64"), ("bool", "float32"),
         ("bool", "int64"), ("int32", "float32"), ("float64", "int32")]
MIXED = [c for c in CASES if c[0] in ("aten::add", "aten::mul", "aten::div", "aten::maximum", "aten::lt",
                                       "aten::where", "aten::logical_or") and c[1] != "add alpha"]


@pytest.fixture(scope="module")
def mixed_models():
    rng = np.random.default_rng(4)
    fn = lambda x, y, lib=ts: tuple(f(lib, x, y) for _, _, f, _ in MIXED)  # noqa: E731
    out = {}
    for a, b in PAIRS:
        ex = (ts.from_numpy(values(rng, (2, 3), a)), ts.from_numpy(values(rng, (3,), b)))
        out[a, b] = compile_native(fn, ex, dynamic={0: [0, 1], 1: [0]})
    return fn, out


@pytest.mark.parametrize("pair", PAIRS, ids="-".join)
def test_mixed_dtypes_promote_like_pytorch(mixed_models, pair):
    fn, models = mixed_models
    rng = np.random.default_rng(5)
    x, y = ts.from_numpy(values(rng, (4, 5), pair[0])), ts.from_numpy(values(rng, (5,), pair[1]))
    check_outputs(models[pair](x, y), fn(x, y), [c[1] for c in MIXED])


def test_mixed_dtypes_match_pytorch(mixed_models, oracle):
    """The dtypes eager picks (and so the compiled model) are PyTorch's."""
    fn, models = mixed_models
    rng = np.random.default_rng(6)
    for a, b in PAIRS:
        xa, ya = values(rng, (2, 3), a), values(rng, (3,), b)
        got = models[a, b](ts.from_numpy(xa), ts.from_numpy(ya))
        want = fn(oracle.from_numpy(xa), oracle.from_numpy(ya), oracle)
        for label, g, w in zip([c[1] for c in MIXED], got, want):
            assert str(g.dtype).split(".")[1] == str(w.dtype).split(".")[1], (a, b, label)
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6, equal_nan=True)


def test_rounding_mode_division_is_not_lowered():
    """div with rounding_mode has no lowering: it stays an aten::div node and still computes right."""
    x, y = ts.randn(3, 4), ts.randn(3, 4)
    cm = ts.jit.compile(lambda x, y: ts.div(x, y, rounding_mode="floor") + 1, (x, y))
    assert "aten::div" in unfused(cm.graph, {"aten::div"})
    check_outputs(cm(x, y), ts.div(x, y, rounding_mode="floor") + 1, ["floor div"])


@pytest.mark.parametrize("dtype", INTS)
def test_integer_pow_with_tensor_exponent_is_not_lowered(dtype):
    """PyTorch raises for negative integer exponents at run time; a kernel cannot, so that pow stays
    an aten::pow node (and raises like eager)."""
    rng = np.random.default_rng(7)
    x, y = (ts.from_numpy(values(rng, (3, 4), dtype)) for _ in range(2))
    y = y.abs()
    cm = ts.jit.compile(lambda x, y: (x ** y) + 1, (x, y))
    assert unfused(cm.graph, {"aten::pow"}) == ["aten::pow"]
    check_outputs(cm(x, y), (x ** y) + 1, ["x ** y + 1"])
    with pytest.raises(RuntimeError, match="negative integer powers"):
        cm(x, -y - 1)
