"""The float32 math library (exp, log, tanh, sigmoid, erf as inline polynomial code): accuracy over
wide ranges against float64 numpy, and the vectorization it exists for (the optimized IR of a float32
kernel has a `vector.body` on 16-float vectors and no scalar libm calls)."""
import math

import numpy as np
import pytest

import tscript as ts
from tscript_runtime.native.mathlib import F32_FUNCTIONS
from tscript_runtime.native import target

from tests.codegen.helpers import compile_native

F32 = np.float32
TINY, HUGE = float(np.finfo(F32).tiny), float(np.finfo(F32).max)


def _wide(lo: float, hi: float, n: int = 200_001) -> np.ndarray:
    """A dense uniform grid on [lo, hi] plus float32 magnitudes from the denormals to max(|lo|, |hi|)."""
    grid = np.linspace(lo, hi, n)
    top = math.log10(max(abs(lo), abs(hi)))
    mags = np.logspace(-45, top, 20_001)
    signed = np.concatenate([mags, -mags]) if lo < 0 else mags
    return np.concatenate([grid, signed[(signed >= lo) & (signed <= hi)]]).astype(F32)


def _sigmoid(x):
    e = np.exp(-np.abs(x))  # stable on both sides, no overflow
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


# function -> (tscript method, float64 reference, input range, bound on the max ulp error where the
# reference is a normal float32; measured: exp 0.87, log 2.09, tanh 4.31, sigmoid 2.28, erf 2.46)
FUNCTIONS = {
    "exp": (lambda x: x.exp(), np.exp, (-104.0, 89.0), 1),
    "log": (lambda x: x.log(), np.log, (1e-45, HUGE), 3),
    "tanh": (lambda x: x.tanh(), np.tanh, (-20.0, 20.0), 5),
    "sigmoid": (lambda x: x.sigmoid(), _sigmoid, (-110.0, 110.0), 3),
    "erf": (lambda x: x.erf(), np.vectorize(math.erf, otypes=[np.float64]), (-6.0, 6.0), 3),
}


def test_every_inline_function_is_measured():
    assert set(FUNCTIONS) == set(F32_FUNCTIONS)


@pytest.fixture(scope="module")
def compiled():
    fns = [f for f, *_ in FUNCTIONS.values()]
    return compile_native(lambda x: tuple(f(x) for f in fns), (ts.randn(8),), dynamic={0: [0]},
                          min_groups=len(fns))


def error_stats(got: np.ndarray, ref: np.ndarray) -> dict:
    """Max ulp error (where the reference is a normal float32) and max relative error; the worst
    excess over the SPEC tolerance |got - ref| <= 1e-6 + 1e-5 |ref| (<= 0 is within)."""
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(got == ref.astype(F32), 0.0, np.abs(got.astype(np.float64) - ref))  # inf == inf
    normal = (np.abs(ref) >= TINY) & (np.abs(ref) <= HUGE)
    ulps = err[normal] / np.spacing(np.abs(ref[normal]).astype(F32)).astype(np.float64)
    rel = err[normal] / np.abs(ref[normal])
    return {"max_ulp": float(ulps.max()), "max_rel": float(rel.max()),
            "excess": float(np.max(err - (1e-6 + 1e-5 * np.abs(ref))))}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_accuracy_over_wide_ranges(compiled, name):
    _, ref_fn, (lo, hi), max_ulp = FUNCTIONS[name]
    x = _wide(lo, hi)
    got = compiled(ts.from_numpy(x))[list(FUNCTIONS).index(name)].numpy()
    with np.errstate(over="ignore", divide="ignore"):
        ref = ref_fn(x.astype(np.float64))
    stats = error_stats(got, ref)
    assert stats["excess"] <= 0, stats
    assert stats["max_ulp"] <= max_ulp, stats


def test_exp_edges():
    """exp reaches the denormals, overflows to inf just where float32 does, keeps NaN."""
    cm = ts.jit.compile(lambda x: x.exp(), (ts.randn(4),), dynamic={0: [0]})
    x = np.array([88.72, 88.7229, 88.73, -87.5, -100.0, -103.0, -104.0, -1000.0, np.inf, -np.inf, np.nan], F32)
    got = cm(ts.from_numpy(x)).numpy()
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64)).astype(F32)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_allclose(got[:7], ref[:7], rtol=3e-7, atol=2e-45)


# -- vectorization -------------------------------------------------------------------------------------

ROWS = ((64, 256), (64, 256))
# name -> (fn, input shapes)
KERNELS = {
    "x*2+1": (lambda x, y: x * 2 + 1, ROWS), "x*y+x": (lambda x, y: x * y + x, ROWS),
    **{name: (lambda x, y, f=f: f(x), ROWS) for name, (f, *_) in FUNCTIONS.items()},
    "gelu (tanh form)": (lambda x, y: 0.5 * x * (1 + (0.7978845608 * (x + 0.044715 * x * x * x)).tanh()), ROWS),
    "softmax rows": (lambda x, y: x.softmax(-1), ROWS),
    "x * row (D,)": (lambda x, w: (x * w).exp(), ((64, 256), (256,))),
    "x * column (N, 1)": (lambda x, c: (x * c).exp(), ((64, 256), (64, 1))),
    "softmax(x * column)": (lambda x, c: (x * c).softmax(-1), ((64, 256), (64, 1))),
}
# inputs broadcast along the inner dim (static size 1) are read as splats, not through a runtime stride
SPLAT = {"x * column (N, 1)", "softmax(x * column)"}


@pytest.mark.parametrize("name", KERNELS)
def test_float32_kernels_vectorize(name):
    fn, shapes = KERNELS[name]
    cm = compile_native(fn, tuple(ts.randn(*s) for s in shapes))
    opt = target.optimized_ir(cm.llvm_ir)
    assert "vector.body" in opt
    assert "<16 x float>" in opt or "<8 x float>" in opt
    calls = {c for c in ("expf", "logf", "tanhf", "erff", "powf") if f"@{c}(" in opt}
    assert not calls, f"scalar libm calls {calls} in a float32 kernel"
    if name in SPLAT:
        assert "broadcast.splat" in opt


@pytest.mark.parametrize("scalef", [True, False], ids=["vscalefps", "two multiplies"])
def test_both_forms_of_exp_scaling(monkeypatch, scalef):
    """exp's 2**n step is one ldexp (vscalefps) on AVX-512 hosts and two exponent-bit multiplies
    elsewhere: both are accurate over the whole range and its edges."""
    from tscript_runtime.native import mathlib
    if scalef and not mathlib.has_scalef():
        pytest.skip("this host has no AVX-512")
    monkeypatch.setattr(mathlib, "has_scalef", lambda: scalef)
    cm = compile_native(lambda x: x.exp(), (ts.randn(8),), dynamic={0: [0]})
    assert ("llvm.ldexp" in cm.llvm_ir) == scalef
    x = np.concatenate([_wide(-104.0, 89.0, 20_001), np.array([88.7229, 88.73, -103.0, -1e4, np.inf, np.nan], F32)])
    got = cm(ts.from_numpy(x)).numpy()
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
    stats = error_stats(got[:-1], ref[:-1])
    assert stats["excess"] <= 0 and stats["max_ulp"] <= 1, stats
    assert np.isnan(got[-1])
