"""Row kernels (tscript::RowGroup): every last-dim reduction the row fusion supports (sum, mean, amax,
amin, var with any correction; softmax and log_softmax decomposed) with elementwise ops fused around
them, compiled natively and compared with eager tscript: random shapes (rows of length 0, 1 and long
enough for the vector loop), broadcast operands (per-column, per-row, 0-dim), non-contiguous inputs,
float32 and float64 (and ints converted inside the group), NaN/inf rows.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tscript as ts
import tscript.nn.functional as F
from tscript.ir.passes.fuse import ROW_GROUP

from tests.codegen.helpers import LAYOUTS, check_outputs, compile_native, laid_out, shapes, values

# label -> fn(L, x, w, r): x (..., D) the rows, w (1.., D) a per-column operand, r (..., 1) a per-row operand
CASES = {
    "sum": lambda L, x, w, r: x.sum(-1, keepdim=True),
    "mean": lambda L, x, w, r: x.mean(-1, keepdim=True),
    "amax": lambda L, x, w, r: x.amax(-1, keepdim=True),
    "amin": lambda L, x, w, r: x.amin(-1, keepdim=True),
    "var": lambda L, x, w, r: x.var(-1, keepdim=True),
    "var unbiased=False": lambda L, x, w, r: x.var(-1, keepdim=True, unbiased=False),
    "var correction=2": lambda L, x, w, r: L.var(x, -1, correction=2, keepdim=True),
    "softmax": lambda L, x, w, r: L.softmax(x, -1),
    "log_softmax": lambda L, x, w, r: L.log_softmax(x, 1 if x.dim() == 2 else 2),
    "sum of (x*w+r)": lambda L, x, w, r: (x * w + r).sum(-1, keepdim=True),
    "x - mean": lambda L, x, w, r: x - x.mean(-1, keepdim=True),
    "softmax(2x+w)*r": lambda L, x, w, r: L.softmax(x * 2 + w, -1) * r,
    "relu(x) / amax": lambda L, x, w, r: L.relu(x) / (x.amax(-1, keepdim=True) + 100),
    "layer norm by hand": lambda L, x, w, r: (x - x.mean(-1, keepdim=True)) / (
        x.var(-1, keepdim=True, unbiased=False) + 1e-5).sqrt() * w + r,
    "exp(x - amax).sum": lambda L, x, w, r: (x - x.amax(-1, keepdim=True)).exp().sum(-1, keepdim=True),
    "sigmoid softmax tanh": lambda L, x, w, r: L.softmax(x.sigmoid(), -1).tanh(),
    "x > mean (bool)": lambda L, x, w, r: x > x.mean(-1, keepdim=True),
    "var(2x) - mean(x)": lambda L, x, w, r: x.mul(2).var(-1, keepdim=True) - x.mean(-1, keepdim=True),
    "softmax * sum": lambda L, x, w, r: L.softmax(x, -1) * x.exp().sum(-1, keepdim=True),
    "all(x*w > r) (bool)": lambda L, x, w, r: (x * w > r).all(-1, keepdim=True),
    "any(x > r) | all(x) (bool)": lambda L, x, w, r: (x > r).any(-1, keepdim=True) | x.all(-1, keepdim=True),
    "softmax, rows all -inf to 0": lambda L, x, w, r: L.softmax(x, -1).masked_fill((x > r).all(-1, keepdim=True), 0),
}
LABELS = list(CASES)


def _fn(lib=ts):
    return lambda x, w, r: tuple(f(lib, x, w, r) for f in CASES.values())


def _examples(rng, shape, dtype, layout="contiguous", lib=ts):
    x = laid_out(values(rng, shape, dtype), layout)
    w = values(rng, (1,) * (len(shape) - 1) + shape[-1:], dtype)
    r = laid_out(values(rng, shape[:-1] + (1,), dtype), layout)
    return tuple(lib.from_numpy(np.asarray(a)) for a in (x, w, r))


@pytest.fixture(scope="module", params=[("float32", 2), ("float64", 2), ("float32", 3)], ids=str)
def model(request):
    dtype, rank = request.param
    shape = (2, 3, 5)[-rank:]
    ex = _examples(np.random.default_rng(0), shape, dtype)
    dyn = {0: list(range(rank)), 1: [rank - 1], 2: list(range(rank - 1))}
    cm = compile_native(_fn(), ex, dynamic=dyn)
    return dtype, rank, cm


def test_everything_is_native(model):
    """No op is left to the reference kernels but amax/amin (their rows may be empty here: the last
    dim is dynamic, and only eager can raise for an empty row); reductions shared by several outputs
    (after CSE) form their own row group."""
    _, _, cm = model
    kinds = {n.kind for n in cm.graph.nodes if n.kind.startswith("aten::")}
    groups = [n for n in cm.graph.nodes if n.kind == ROW_GROUP]
    assert kinds <= {"aten::amax", "aten::amin"} and len(groups) >= 10, cm.graph


def test_amax_amin_rows_of_static_length_are_native():
    fn = lambda x: (x.amax(-1, keepdim=True), x.amin(-1, keepdim=True) * 2)  # noqa: E731
    cm = compile_native(fn, (ts.randn(3, 40),), dynamic={0: [0]}, min_groups=2)
    assert not [n.kind for n in cm.graph.nodes if n.kind.startswith("aten::")], cm.graph
    x = ts.from_numpy(laid_out(values(np.random.default_rng(8), (5, 40), "float32"), "transposed"))
    check_outputs(cm(x), fn(x), ["amax", "amin * 2"])


@settings(max_examples=25, deadline=None)
@given(data=st.data(), layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2**32 - 1))
def test_rows_match_eager(model, data, layout, seed):
    dtype, rank, cm = model
    shape = data.draw(shapes(rank))
    if shape[-1] == 0:  # amax/amin of an empty row raise in eager (see test_empty_rows)
        shape = shape[:-1] + (1,)
    args = _examples(np.random.default_rng(seed), shape, dtype, layout)
    x, w, r = (np.abs(a.numpy()).max(initial=0) for a in args)
    # a row sum in another order differs by up to ~n * eps * the terms' size (cancellation can leave less)
    atol = max(1e-5, 4 * np.finfo(dtype).eps * shape[-1] * (x * w + r))
    check_outputs(cm(*args), _fn()(*args), LABELS, rtol=1e-4 if dtype == "float32" else 1e-7, atol=atol)


@pytest.mark.parametrize("shape", [(1, 1000), (7, 4099)])
def test_long_rows(model, shape):
    dtype, rank, cm = model
    shape = (1,) * (rank - 2) + shape
    args = _examples(np.random.default_rng(1), shape, dtype, "sliced")
    check_outputs(cm(*args), _fn()(*args), LABELS, rtol=1e-4, atol=1e-5)


def test_special_values(model, oracle):
    """NaN/inf rows: amax/amin propagate NaN, softmax of a row with inf is NaN, -inf entries get 0."""
    dtype, rank, cm = model
    if rank != 2:
        pytest.skip("rank 2 is enough")
    rows = np.array([[np.nan, 1.0, 2.0, 3.0], [np.inf, 1.0, 2.0, 3.0], [-np.inf, 1.0, 2.0, 3.0],
                     [-np.inf] * 4, [1e30, 1.0, 0.0, -2.0], [0.5, 0.5, 0.5, 0.5]], dtype)
    w, r = np.ones((1, 4), dtype), np.ones((6, 1), dtype)
    got = cm(*(ts.from_numpy(a) for a in (rows, w, r)))
    check_outputs(got, _fn()(*(ts.from_numpy(a) for a in (rows, w, r))), LABELS)
    check_outputs(got, _fn(oracle)(*(oracle.from_numpy(a) for a in (rows, w, r))), LABELS)


@pytest.mark.parametrize("at", [0, 17, 70, 99])
def test_nan_anywhere_in_long_rows(model, at):
    """A NaN in the vector body or the tail of a long row makes amax/amin (and softmax) NaN; infinities
    and signed zeros elsewhere give eager's values (the max/min pass runs vectorized)."""
    dtype, rank, cm = model
    rng = np.random.default_rng(at)
    rows = values(rng, (4, 100), dtype)
    rows[0, at] = np.nan
    rows[1, at] = np.inf
    rows[2, at] = -np.inf
    rows[3] = -0.0
    rows[3, at] = 0.0
    rows = rows.reshape((1,) * (rank - 2) + rows.shape)
    args = (ts.from_numpy(rows), ts.from_numpy(np.ones((1,) * (rank - 1) + rows.shape[-1:], dtype)), ts.from_numpy(np.ones(rows.shape[:-1] + (1,), dtype)))
    got, want = cm(*args), _fn()(*args)
    check_outputs(got, want, LABELS)
    amax = np.asarray(got[LABELS.index("amax")].numpy()).reshape(4)
    assert np.isnan(amax[0]) and amax[1] == np.inf and amax[3] == 0.0


def test_empty_rows(model):
    """Rows of length 0: amax/amin raise as in eager (they stay reference ops when the last dim is
    dynamic); without them, sums are 0, means and variances NaN, softmax empty."""
    dtype, rank, cm = model
    args = _examples(np.random.default_rng(2), (3,) * (rank - 1) + (0,), dtype)
    with pytest.raises(IndexError, match="non-zero size"):
        cm(*args)
    keep = {k: f for k, f in CASES.items() if "amax" not in k and "amin" not in k}
    fn = lambda x, w, r: tuple(f(ts, x, w, r) for f in keep.values())  # noqa: E731
    example = _examples(np.random.default_rng(0), (2, 3, 5)[-rank:], dtype)
    cm_empty = compile_native(fn, example, dynamic={0: list(range(rank)), 1: [rank - 1], 2: list(range(rank - 1))})
    check_outputs(cm_empty(*args), fn(*args), list(keep))


def test_zero_rows(model):
    dtype, rank, cm = model
    args = _examples(np.random.default_rng(3), (0,) * (rank - 1) + (5,), dtype)
    check_outputs(cm(*args), _fn()(*args), LABELS)


@pytest.fixture(scope="module")
def library_norms():
    """softmax/log_softmax/layer_norm through the functional API, on (N, D) float32 with int input cast."""
    def fn(x, n, w, b):
        y = F.layer_norm(x, (x.shape[-1],), w, b)
        return (y, F.softmax(y, -1), F.log_softmax(x * 3, -1), F.softmax(n.float(), -1))
    rng = np.random.default_rng(4)
    ex = (ts.from_numpy(values(rng, (4, 33), "float32")), ts.from_numpy(values(rng, (4, 33), "int64")),
          ts.randn(33), ts.randn(33))
    return fn, compile_native(fn, ex, dynamic={0: [0], 1: [0]}, min_groups=3)


@pytest.mark.parametrize("rows", [0, 1, 9])
def test_functional_norms(library_norms, rows):
    fn, cm = library_norms
    rng = np.random.default_rng(rows)
    args = (ts.from_numpy(laid_out(values(rng, (rows, 33), "float32"), "transposed")),
            ts.from_numpy(values(rng, (rows, 33), "int64")), ts.randn(33), ts.randn(33))
    assert sum(n.kind == ROW_GROUP for n in cm.graph.nodes) == 4, cm.graph
    check_outputs(cm(*args), fn(*args), ["layer_norm", "softmax(layer_norm)", "log_softmax(3x)", "softmax(int)"],
                  rtol=1e-4, atol=1e-5)


def test_other_reductions_run_unfused():
    """Reductions not over the last dim, without keepdim or with a dtype stay reference ops and agree."""
    def fn(x):
        return x.sum(0, keepdim=True) + 1, x.sum(-1) * 2, x.mean(-1, keepdim=True, dtype=ts.float64), x.softmax(0)
    x = ts.randn(4, 6)
    cm = ts.jit.compile(fn, (x,), dynamic={0: [0, 1]})
    y = ts.randn(3, 20)
    check_outputs(cm(y), fn(y), ["sum(0)", "sum(-1)", "mean dtype", "softmax(0)"])
