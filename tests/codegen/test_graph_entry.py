"""The whole-graph native entry (tscript_runtime.graph_entry + tscript_runtime.native.entry): graphs
whose every node lowers run as one native call over a planned arena — GEMMs and GEMVs through BLAS,
views sharing their input's buffer, kernels in order — and give the values of numpy / eager."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
import tscript_runtime
from tscript import nn
from tscript.nn import functional as F
from tscript_runtime.entry_plan import make_plan
from tscript_runtime.entry_steps import GEMM_SLOTS, GemmStep
from tscript_runtime.native.library.blocking import pack_bytes
from tscript.jit.compiled import CompiledModel

from tests.conftest import assert_close, run_in_threads


def _entry_ran(cm: CompiledModel, *args) -> bool:
    """Did the last call's signature run through the entry (a plan, not the executor)?"""
    assert cm.executable.entry is not None, f"no whole-graph entry for:\n{cm.graph}"
    return any(p is not None for p in cm.executable.entry._plans.values())


def _mlp(sizes=(6, 5, 4, 3)):
    ts.manual_seed(0)
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1]).eval()


def _numpy_mlp(model, x):
    h = x
    linears = [m for m in model if isinstance(m, nn.Linear)]
    for i, m in enumerate(linears):
        h = h @ m.weight.detach().numpy().T + m.bias.detach().numpy()
        if i < len(linears) - 1:
            h = np.maximum(h, 0)
    return h


@pytest.fixture(scope="module")
def mlp():
    model = _mlp()
    return model, ts.jit.compile(model, (ts.randn(2, 6),), dynamic={0: [0]})


@pytest.mark.parametrize("batch", [1, 2, 7, 0])
def test_mlp_runs_as_one_native_call(mlp, batch):
    model, cm = mlp
    x = np.random.default_rng(batch).standard_normal((batch, 6)).astype(np.float32)
    out = cm(ts.from_numpy(x))
    assert _entry_ran(cm)
    assert out.shape == (batch, 3)
    np.testing.assert_allclose(out.numpy(), _numpy_mlp(model, x), rtol=1e-5, atol=1e-5)


def test_non_contiguous_input(mlp):
    model, cm = mlp
    x = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32).T
    np.testing.assert_allclose(cm(ts.from_numpy(x)).numpy(), _numpy_mlp(model, x), rtol=1e-5, atol=1e-5)


def test_parameter_changes_are_seen():
    model = _mlp()
    cm = ts.jit.compile(model, (ts.randn(2, 6),))
    x = ts.randn(2, 6)
    with ts.no_grad():
        model[0].weight.mul_(2)  # in place
    np.testing.assert_allclose(cm(x).numpy(), _numpy_mlp(model, x.numpy()), rtol=1e-5, atol=1e-5)
    model[2].weight = nn.Parameter(ts.randn(4, 5))  # a new parameter
    np.testing.assert_allclose(cm(x).numpy(), _numpy_mlp(model, x.numpy()), rtol=1e-5, atol=1e-5)
    model[4].bias.data = ts.randn(3)  # new data for the same parameter
    np.testing.assert_allclose(cm(x).numpy(), _numpy_mlp(model, x.numpy()), rtol=1e-5, atol=1e-5)
    model[4].weight = nn.Parameter(ts.randn(4, 3).t())  # a non-contiguous parameter
    np.testing.assert_allclose(cm(x).numpy(), _numpy_mlp(model, x.numpy()), rtol=1e-5, atol=1e-5)
    assert _entry_ran(cm)


def _products():
    rng = np.random.default_rng(0)
    r = lambda *s: ts.from_numpy(rng.standard_normal(s).astype(np.float32))
    return {
        "linear, no bias": (lambda x, w: ts.nn.functional.linear(x, w), (r(3, 5), r(4, 5))),
        "linear 3-D input": (lambda x, w, b: ts.nn.functional.linear(x, w, b), (r(2, 3, 5), r(4, 5), r(4))),
        "matmul 2-D": (lambda a, b: a @ b, (r(3, 5), r(5, 4))),
        "matmul 3-D @ 2-D": (lambda a, b: a @ b, (r(2, 3, 5), r(5, 4))),
        "matmul vector @ matrix": (lambda a, b: a @ b, (r(5), r(5, 4))),
        "matmul matrix @ vector": (lambda a, b: a @ b, (r(3, 5), r(5))),
        "matmul vector @ vector": (lambda a, b: (a @ b) * 2, (r(5), r(5))),
        "matmul 1 row": (lambda a, b: a @ b, (r(1, 5), r(5, 4))),
        "matmul 1 column": (lambda a, b: a @ b, (r(3, 5), r(5, 1))),
        "mm": (lambda a, b: ts.mm(a, b), (r(3, 5), r(5, 4))),
        "addmm row bias": (lambda c, a, b: ts.addmm(c, a, b), (r(4), r(3, 5), r(5, 4))),
        "addmm full bias": (lambda c, a, b: ts.addmm(c, a, b), (r(3, 4), r(3, 5), r(5, 4))),
        "float64": (lambda a, b: (a @ b).tanh(), (r(3, 5).double(), r(5, 4).double())),
        "empty K": (lambda a, b: a @ b + 1, (r(3, 0), r(0, 4))),
        "empty M": (lambda a, b: a @ b + 1, (r(0, 5), r(5, 4))),
        "views": (lambda a, b: (a @ b).reshape(2, 6).relu().flatten().unsqueeze(0), (r(3, 5), r(5, 4))),
        "output is a view": (lambda a, b: (a @ b).relu().view(-1), (r(3, 5), r(5, 4))),
        "two outputs, one buffer": (lambda a, b: ((a @ b).relu(), (a @ b).relu().view(12)), (r(3, 5), r(5, 4))),
        "chain": (lambda a, b: ((a @ b).sigmoid() @ b.t()).softmax(-1), (r(3, 5), r(5, 4))),
        "matmul b.t()": (lambda a, b: a @ b.t(), (r(3, 5), r(4, 5))),
        "matmul a.t()": (lambda a, b: (a.t() @ b).relu(), (r(5, 3), r(5, 4))),
        "matmul a.t() @ b.t()": (lambda a, b: a.transpose(0, 1) @ b.t(), (r(5, 3), r(4, 5))),
        "matmul a.t(), one column": (lambda a, b: a.t() @ b, (r(5, 3), r(5, 1))),
        "matmul a.t(), one row": (lambda a, b: a.t() @ b.t(), (r(5, 1), r(4, 5))),
        "linear of a transposed weight": (lambda x, w: ts.nn.functional.linear(x, w.t()), (r(3, 5), r(5, 4))),
        "transposed output": (lambda a, b: (a @ b).relu().t(), (r(3, 5), r(5, 4))),
        "permuted kernel input": (lambda a, b: (a @ b).reshape(3, 2, 2).permute(2, 0, 1) * 2, (r(3, 5), r(5, 4))),
        "expanded kernel input": (lambda a, b, c: (a @ b) + c.expand(3, 4), (r(3, 5), r(5, 4), r(1, 4))),
        "expanded bias": (lambda c, a, b: ts.addmm(c.expand(3, 4), a, b), (r(4), r(3, 5), r(5, 4))),
    }


PRODUCTS = _products()


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_products_match_eager(name):
    fn, args = PRODUCTS[name]
    cm = ts.jit.compile(fn, args)
    got = cm(*args)
    assert _entry_ran(cm), f"{name} did not run through the entry:\n{cm.graph}"
    want = fn(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert_close(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)


def test_addmm_with_other_beta_runs_in_the_executor():
    rng = np.random.default_rng(0)
    c, a, b = (ts.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in ((4,), (3, 5), (5, 4)))
    fn = lambda c, a, b: ts.addmm(c, a, b, beta=0.5, alpha=2.0)
    cm = ts.jit.compile(fn, (c, a, b))
    assert_close(cm(c, a, b).numpy(), fn(c, a, b).numpy(), rtol=1e-5, atol=1e-5)
    assert not _entry_ran(cm)  # no plan for it: the executor ran it


def test_reshape_of_a_transpose_copies_inside_the_entry():
    """reshape of a transposed view is a copy: explicit (a fused copy kernel), then a view."""
    rng = np.random.default_rng(0)
    a, b = (ts.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in ((3, 4), (4, 6)))
    fn = lambda a, b: ((a.t() @ a).t().reshape(2, 8) @ b.t().reshape(8, 3)).relu()
    cm = ts.jit.compile(fn, (a, b))
    assert_close(cm(a, b).numpy(), fn(a, b).numpy(), rtol=1e-5, atol=1e-5)
    assert _entry_ran(cm)


BATCHED = {  # name -> (fn, shapes): products of batched, broadcast, transposed and sliced operands
    "bmm": (lambda a, b: ts.bmm(a, b).relu(), ((2, 3, 5), (2, 5, 4))),
    "4-d attention scores": (lambda q, k: (q @ k.transpose(-2, -1)).softmax(-1), ((2, 3, 6, 4), (2, 3, 6, 4))),
    "broadcast batch": (lambda a, b: (a @ b) * 2, ((2, 1, 3, 5), (4, 5, 2))),
    "matrix @ batch": (lambda a, b: (a @ b) + 1, ((3, 5), (2, 5, 4))),
    "vector @ batch": (lambda a, b: (a @ b) + 1, ((5,), (2, 5, 4))),
    "batch @ vector": (lambda a, b: (a @ b) + 1, ((2, 3, 5), (5,))),
    "linear of a transposed 3-d input": (lambda a, w: F.linear(a.transpose(0, 1), w).relu(), ((3, 2, 5), (4, 5))),
    "split heads": (lambda x, w: _heads(F.linear(x, w)), ((2, 6, 8), (24, 8))),
}


def _heads(qkv):
    """GPT's attention shapes: q, k, v split from one projection, viewed as heads, scores, weights @ v."""
    q, k, v = qkv.split(8, dim=2)
    q, k, v = (t.view(2, 6, 2, 4).transpose(1, 2) for t in (q, k, v))
    y = (q @ k.transpose(-2, -1) * 0.5).softmax(-1) @ v
    return y.transpose(1, 2).contiguous().view(2, 6, 8)


@pytest.mark.parametrize("name", list(BATCHED))
def test_batched_and_strided_products_run_in_the_entry(name):
    fn, shapes = BATCHED[name]
    rng = np.random.default_rng(len(name))
    args = [ts.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    cm = ts.jit.compile(fn, tuple(args))
    assert_close(cm(*args).numpy(), fn(*args).numpy(), rtol=1e-5, atol=1e-5)
    assert _entry_ran(cm), cm.explain()


@pytest.mark.parametrize("view", ["slice", "narrow", "select", "chunk", "unbind"])
def test_views_that_start_inside_their_input(view):
    """Pieces of a tensor read in place (their offset from the root is a plan slot), in kernels, GEMMs
    and as outputs."""
    take = {"slice": lambda x: x[:, 1:3], "narrow": lambda x: x.narrow(1, 2, 2), "select": lambda x: x[:, 2:4][1],
            "chunk": lambda x: x.chunk(3, dim=1)[1], "unbind": lambda x: x.unbind(0)[1][None, 1:3]}[view]
    fn = lambda x, w: (take(x.relu() + 1) @ w, take(x * 2))  # noqa: E731
    rng = np.random.default_rng(1)
    x, w = (ts.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in ((3, 6), (2, 4)))
    cm = ts.jit.compile(fn, (x, w))
    for got, want in zip(cm(x, w), fn(x, w)):
        assert_close(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    assert _entry_ran(cm), cm.explain()


GATHERS = {  # name: (source shape, dim, index values)
    "rows": ((7, 5), 0, [3, 0, 6, 6, 1]),
    "columns": ((4, 6), 1, [5, 0, 2]),
    "middle": ((2, 5, 3), 1, [4, 4, 0, 2]),
    "last": ((2, 3, 4), -1, [1, 3]),
    "none": ((5, 3), 0, []),
    "vector": ((9,), 0, [8, 0, 4]),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("name", list(GATHERS))
def test_index_select_runs_in_the_entry(name, index_dtype, dtype):
    shape, dim, picks = GATHERS[name]
    rng = np.random.default_rng(len(name))
    source = (rng.standard_normal(shape) * 10).astype(dtype)
    index = np.array(picks, index_dtype)
    fn = lambda x, i: ts.index_select(x * 2, dim, i) + 1  # noqa: E731
    x, i = ts.from_numpy(source), ts.from_numpy(index)
    cm = ts.jit.compile(fn, (x, i))
    np.testing.assert_array_equal(cm(x, i).numpy(), np.take(source * 2, index, axis=dim) + 1)
    assert _entry_ran(cm), cm.explain()


@pytest.mark.parametrize("bad", [5, -1, 1 << 40])
def test_index_out_of_range_in_the_entry_raises(bad):
    model = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 2)).eval()
    good = ts.tensor([[0, 4], [2, 1]])
    cm = ts.jit.compile(model, (good,))
    assert_close(cm(good).numpy(), model(good).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert _entry_ran(cm), cm.explain()
    with pytest.raises(IndexError, match="index out of range in self"):
        cm(ts.tensor([[0, bad], [2, 1]]))
    assert_close(cm(good).numpy(), model(good).detach().numpy(), rtol=1e-5, atol=1e-6)  # still fine after


def test_embedding_language_model_runs_as_one_native_call(tmp_path):
    """Token and position embeddings, a linear head: one native call, compiled and in the runtime."""
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens, self.places, self.head = nn.Embedding(50, 8), nn.Embedding(16, 8), nn.Linear(8, 50)

        def forward(self, idx):
            places = ts.arange(0, idx.shape[1], dtype=ts.long)
            return self.head(self.tokens(idx) + self.places(places))

    ts.manual_seed(0)
    model = LM().eval()
    idx = ts.from_numpy(np.random.default_rng(0).integers(0, 50, (3, 16)))
    cm = ts.jit.compile(model, (idx,))
    want = model(idx).detach().numpy()
    assert_close(cm(idx).numpy(), want, rtol=1e-5, atol=1e-5)
    assert _entry_ran(cm), cm.explain()
    ts.jit.save(cm, tmp_path / "lm.tsm")
    loaded = tscript_runtime.load(tmp_path / "lm.tsm")
    assert_close(loaded.run(idx.numpy()), want, rtol=1e-5, atol=1e-5)
    assert any(p is not None for p in loaded.executables["forward"].entry._plans.values())


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack_runs_in_the_entry(dim):
    fn = lambda a, b: ts.stack([a.relu(), b * 2, a + b], dim)  # noqa: E731
    rng = np.random.default_rng(dim + 5)
    a, b = (ts.from_numpy(rng.standard_normal((3, 4)).astype(np.float32)) for _ in range(2))
    cm = ts.jit.compile(fn, (a, b))
    assert_close(cm(a, b).numpy(), fn(a, b).numpy(), rtol=1e-6, atol=1e-6)
    assert _entry_ran(cm), cm.explain()


REDUCTIONS = {  # name: (function of x, shape of x)
    "leading": (lambda x: (x * 2).sum(0), (5, 3, 4)),
    "leading two, keepdim": (lambda x: (x * 2).sum((0, 1), keepdim=True), (5, 3, 4)),
    "middle": (lambda x: (x + 1).sum(1), (2, 7, 3)),
    "last (rows)": (lambda x: (x + 1).sum(-1), (4, 9)),
    "all": (lambda x: (x * x).sum(), (3, 4, 5)),
    "mean of middle": (lambda x: (x - 1).mean((1, 2)), (2, 3, 4, 5)),
    "mean of all": (lambda x: (x - 1).mean(), (6, 7)),
    "around size-1 dims": (lambda x: (x * 3).sum((0, 2)), (4, 1, 5, 3)),
    "empty": (lambda x: (x * 2).sum(0), (0, 3)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_sums_and_means_run_in_the_entry(name, dtype):
    fn, shape = REDUCTIONS[name]
    x = ts.from_numpy(np.random.default_rng(len(name)).standard_normal(shape).astype(dtype))
    cm = ts.jit.compile(fn, (x,))
    assert_close(cm(x).numpy(), fn(x).numpy(), rtol=1e-5, atol=1e-5)
    assert cm(x).dtype == fn(x).dtype
    assert _entry_ran(cm), cm.explain()


def test_sum_over_dims_that_are_not_adjacent_runs_in_the_executor():
    fn = lambda x: (x * 2).sum((0, 2))  # noqa: E731
    x = ts.randn(3, 4, 5)
    cm = ts.jit.compile(fn, (x,))
    assert_close(cm(x).numpy(), fn(x).numpy(), rtol=1e-5, atol=1e-5)


INDEXED = {  # name: (function of x (float) and i (int64), shapes, index values' bound)
    "gather rows": (lambda x, i: ts.gather(x * 2, 1, i), ((4, 6), (4, 2)), 6),
    "gather dim 0": (lambda x, i: ts.gather(x + 1, 0, i), ((5, 3), (2, 3)), 5),
    "gather middle": (lambda x, i: ts.gather(x + 1, 1, i), ((2, 5, 3), (2, 4, 3)), 5),
    "scatter_add": (lambda x, i: ts.zeros(4, 6).scatter_add(1, i, x[:, :2] * 2), ((4, 6), (4, 2)), 6),
    "scatter_add dim 0": (lambda x, i: (x * 1).scatter_add(0, i, x[:2] + 1), ((5, 3), (2, 3)), 5),
    "index_put accumulate": (lambda x, i: ts.zeros(6, 3).index_put((i.flatten(),), x * 2, accumulate=True),
                             ((8, 3), (8,)), 6),
    "index_put": (lambda x, i: ts.zeros(9, 3).index_put((i.flatten(),), x * 2), ((1, 3), (1,)), 9),
}


@pytest.mark.parametrize("name", list(INDEXED))
def test_gathers_and_scatters_run_in_the_entry(name):
    fn, (xs, ishape), bound = INDEXED[name]
    rng = np.random.default_rng(len(name))
    x = ts.from_numpy(rng.standard_normal(xs).astype(np.float32))
    i = ts.from_numpy(rng.integers(0, bound, ishape))
    cm = ts.jit.compile(fn, (x, i))
    assert_close(cm(x, i).numpy(), fn(x, i).numpy(), rtol=1e-5, atol=1e-5)
    assert _entry_ran(cm), cm.explain()
    bad = i.numpy().copy()
    bad.flat[-1] = bound
    with pytest.raises((IndexError, RuntimeError), match="out of"):
        cm(x, ts.from_numpy(bad))


def test_index_put_wraps_negative_indices_in_the_entry():
    fn = INDEXED["index_put accumulate"][0]
    x, i = ts.randn(8, 3), ts.tensor([0, -1, 2, -6, 5, 5, 1, 0])
    cm = ts.jit.compile(fn, (x, i))
    assert_close(cm(x, i).numpy(), fn(x, i).numpy(), rtol=1e-5, atol=1e-5)
    assert _entry_ran(cm), cm.explain()


def test_outputs_that_are_inputs_or_parameters_or_views_of_them():
    model = nn.Linear(3, 2)
    fn = lambda x: (model(x), x, x.t(), model.weight, model.weight.t())  # noqa: E731
    x = ts.randn(4, 3)
    cm = ts.jit.compile(fn, (x,))
    for got, want in zip(cm(x), fn(x)):
        assert_close(got.numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert _entry_ran(cm), cm.explain()


def test_a_language_model_training_step_runs_as_two_native_calls():
    """Forward (saving what backward needs: inputs, parameters, views) and backward (embedding and
    cross-entropy gradients: index_put, scatter_add; bias gradients: sums over the batch) each run as
    one native call and give eager autograd's loss and gradients."""
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens, self.norm, self.head = nn.Embedding(40, 16), nn.LayerNorm(16), nn.Linear(16, 40)

        def forward(self, idx, targets):
            logits = self.head(F.gelu(self.norm(self.tokens(idx))))
            return F.cross_entropy(logits.view(-1, 40), targets.view(-1))

    ts.manual_seed(0)
    model = LM()
    rng = np.random.default_rng(0)
    idx, targets = (ts.from_numpy(rng.integers(0, 40, (3, 8))) for _ in range(2))
    cm = ts.jit.compile(model, (idx, targets), backward=True)
    loss = cm(idx, targets)
    loss.backward()
    grads = {n: p.grad.numpy().copy() for n, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = None
    want = model(idx, targets)
    want.backward()
    assert_close(float(loss), float(want), rtol=1e-5)
    for n, p in model.named_parameters():
        assert_close(grads[n], p.grad.numpy(), rtol=1e-4, atol=1e-6)
    for executable in (cm.executable, cm.backward_executable):
        assert executable.entry is not None, executable.describe()
        assert any(p is not None for p in executable.entry._plans.values())


@pytest.mark.parametrize("mask", ["causal", "none", "bool", "float", "a row fully masked"])
def test_scaled_dot_product_attention_is_two_products_and_one_row_kernel(mask):
    """Q K^T, scale, mask and softmax in one row kernel (rows with nothing allowed give 0, as in
    PyTorch), the products batched GEMMs: one native call."""
    rng = np.random.default_rng(3)
    q, k, v = (ts.from_numpy(rng.standard_normal((2, 3, 9, 8)).astype(np.float32)) for _ in range(3))
    allowed = rng.random((9, 9)) > 0.3
    if mask == "a row fully masked":
        allowed[4] = False
    masks = {"none": None, "causal": None, "bool": ts.from_numpy(allowed), "a row fully masked": ts.from_numpy(allowed),
             "float": ts.from_numpy(rng.standard_normal((9, 9)).astype(np.float32))}
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=masks[mask],  # noqa: E731
                                                        is_causal=mask == "causal")
    cm = ts.jit.compile(fn, (q, k, v))
    assert_close(cm(q, k, v).numpy(), fn(q, k, v).numpy(), rtol=1e-5, atol=1e-6)
    assert _entry_ran(cm), cm.explain()
    assert len(cm.executable.plan.kernels) == 1, cm.graph


PACKED = {  # products of more rows than the register-blocked GEMMs take: the kernel library's packed GEMM
    "linear": (lambda x, w: F.linear(x, w) * 1, ((150, 70), (90, 70))),
    "x @ w": (lambda x, w: (x @ w) + 1, ((97, 33), (33, 130))),
    "transposed A": (lambda x, w: (x.t() @ w) + 1, ((40, 100), (40, 77))),
    "batched, transposed B": (lambda x, w: (x @ w.transpose(-2, -1)) + 1, ((3, 70, 16), (3, 81, 16))),
    "3-d linear with bias": (lambda x, w: F.linear(x, w, w.sum(1)), ((4, 33, 20), (130, 20))),
    # the bias added to each finished block of C (the GEMM's epilogue): K over two blocks, both cores
    "linear with bias, long K": (lambda x, w: F.linear(x, w, w.sum(1)), ((300, 600), (530, 600))),
    "addmm full bias": (lambda c, a, b: ts.addmm(c, a, b), ((70, 90), (70, 40), (40, 90))),
    "addmm bias rows of a wider matrix": (lambda c, a, b: ts.addmm(c[:, 5:95], a, b), ((70, 100), (70, 40), (40, 90))),
    "addmm one bias row": (lambda c, a, b: ts.addmm(c, a, b), ((1, 90), (70, 40), (40, 90))),
    # few rows but K from LONG_K (a convolution's weight gradient: K its output positions): B streamed once,
    # not once per 4 rows; a transposed B and a row-major one, rows not a multiple of the micro-panel's
    "few rows, long K, transposed B": (lambda a, b: a @ b.t() + 0, ((16, 5000), (27, 5000))),
    "few rows, long K": (lambda a, b: a @ b + 0, ((7, 4100), (4100, 40))),
}


@pytest.mark.parametrize("name", list(PACKED))
def test_products_of_many_rows_use_the_packed_gemm(name):
    fn, shapes = PACKED[name]
    rng = np.random.default_rng(len(name))
    args = [ts.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    cm = ts.jit.compile(fn, tuple(args))
    assert_close(cm(*args).numpy(), fn(*args).numpy(), rtol=1e-4, atol=1e-4)
    assert _entry_ran(cm), cm.explain()
    step = next(s for s in cm.executable.entry.layout.steps if isinstance(s, GemmStep))
    plan = next(p for p in cm.executable.entry._plans.values() if p is not None)
    m, n, k = (plan.ints[step.dims + GEMM_SLOTS.index(d)] for d in "MNK")
    assert plan.arena >= pack_bytes(m, n, k)  # the packed GEMM's panels are in the arena


@pytest.mark.parametrize("n, k", [(1, 1), (7, 3), (10, 64), (200, 512), (1000, 100), (70, 2000)])
@pytest.mark.parametrize("bias", [True, False])
def test_one_row_linear_layers(n, k, bias):
    """One row times a transposed weight (a classifier at batch 1), split or not: the library GEMM."""
    rng = np.random.default_rng(n + k)
    x, w, b = (ts.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in ((1, k), (n, k), (n,)))
    fn = (lambda x, w, b: F.linear(x, w, b)) if bias else (lambda x, w, b: F.linear(x, w) + 0 * b)
    cm = ts.jit.compile(fn, (x, w, b))
    assert_close(cm(x, w, b).numpy(), fn(x, w, b).numpy(), rtol=1e-4, atol=1e-4)
    assert _entry_ran(cm), cm.explain()


@pytest.mark.parametrize("out_channels", [80, 130])
def test_convolutions_with_many_output_channels_use_the_packed_gemm(out_channels):
    rng = np.random.default_rng(out_channels)
    x = ts.from_numpy(rng.standard_normal((2, 5, 9, 11)).astype(np.float32))
    w = ts.from_numpy(rng.standard_normal((out_channels, 5, 3, 3)).astype(np.float32))
    b = ts.from_numpy(rng.standard_normal(out_channels).astype(np.float32))
    fn = lambda x: F.conv2d(x, w, b, padding=1).relu()  # noqa: E731
    cm = ts.jit.compile(fn, (x,))
    assert_close(cm(x).numpy(), fn(x).numpy(), rtol=1e-4, atol=1e-4)
    assert _entry_ran(cm), cm.explain()


def test_graphs_with_other_ops_have_no_entry_and_still_run():
    x = ts.randn(2, 3, 8, 8)
    fn = lambda x: ts.cumsum(F.conv2d(x, ts.ones(4, 3, 3, 3)).relu(), 1)  # noqa: E731 (cumsum does not lower)
    cm = ts.jit.compile(fn, (x,))
    assert cm.executable.entry is None
    assert_close(cm(x).numpy(), fn(x).numpy(), rtol=1e-4, atol=1e-5)
    line = fn.__code__.co_firstlineno
    why = f"no whole-graph call: aten::cumsum at test_graph_entry.py:{line} (node 5): no native lowering for this op yet"
    assert why in cm.explain() and cm.plan["why_no_entry"] in why


F = ts.nn.functional
WINDOWS = {
    "conv 3x3 pad 1 + relu + pool": (lambda x, w, b: F.max_pool2d(F.conv2d(x, w, b, padding=1).relu(), 2),
                                     ((2, 3, 9, 9), (4, 3, 3, 3), (4,))),
    "conv stride 2, no bias": (lambda x, w: F.conv2d(x, w, stride=2), ((2, 3, 9, 8), (5, 3, 3, 3))),
    "conv dilation 2, padding (1, 2)": (lambda x, w, b: F.conv2d(x, w, b, padding=(1, 2), dilation=2),
                                        ((1, 2, 7, 7), (3, 2, 3, 2), (3,))),
    "conv 1x1": (lambda x, w, b: F.conv2d(x, w, b), ((3, 4, 5, 5), (6, 4, 1, 1), (6,))),
    "conv 64 channels": (lambda x, w, b: F.conv2d(x, w, b), ((2, 3, 11, 13), (64, 3, 3, 3), (64,))),
    "conv 70 channels, no bias": (lambda x, w: F.conv2d(x, w, padding=1), ((2, 3, 9, 7), (70, 3, 3, 3))),
    "conv unbatched": (lambda x, w, b: F.conv2d(x, w, b, padding=1), ((3, 6, 6), (2, 3, 3, 3), (2,))),
    "conv then linear": (lambda x, w, v: F.linear(F.conv2d(x, w).flatten(1), v),
                         ((4, 2, 5, 5), (3, 2, 3, 3), (7, 27))),
    "pool 3x3 stride 2 pad 1": (lambda x: F.max_pool2d(x, 3, 2, 1), ((2, 3, 9, 9),)),
    "pool ceil_mode": (lambda x: F.max_pool2d(x, 2, ceil_mode=True) * 2, ((2, 3, 7, 5),)),
    "pool dilation 2": (lambda x: F.max_pool2d(x, 2, 1, 0, 2), ((1, 2, 6, 6),)),
    "pool unbatched": (lambda x: F.max_pool2d(x, 2), ((3, 6, 6),)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(WINDOWS))
def test_conv_and_pool_match_eager(name, dtype):
    fn, shapes = WINDOWS[name]
    rng = np.random.default_rng(len(name))
    args = tuple(ts.from_numpy(rng.standard_normal(s).astype(dtype)) for s in shapes)
    cm = ts.jit.compile(fn, args)
    got = cm(*args)
    assert _entry_ran(cm), f"{name} did not run through the entry:\n{cm.graph}"
    assert_close(got.numpy(), fn(*args).numpy(), rtol=1e-4 if dtype == "float32" else 1e-10, atol=1e-5)


def test_grouped_conv_runs_in_the_entry():
    rng = np.random.default_rng(0)
    x, w = (ts.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in ((2, 4, 6, 6), (4, 2, 3, 3)))
    fn = lambda x, w: F.conv2d(x, w, groups=2).relu()
    cm = ts.jit.compile(fn, (x, w))
    assert_close(cm(x, w).numpy(), fn(x, w).numpy(), rtol=1e-4, atol=1e-5)
    assert _entry_ran(cm)


def test_cnn_model_with_dynamic_batch():
    ts.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 4, 3),
                          nn.ReLU(), nn.Flatten(), nn.Linear(4 * 2 * 2, 5)).eval()
    cm = ts.jit.compile(model, (ts.randn(2, 3, 8, 8),), dynamic={0: [0]})
    for batch in (1, 3, 0):
        x = ts.randn(batch, 3, 8, 8)
        with ts.no_grad():
            assert_close(cm(x).numpy(), model(x).numpy(), rtol=1e-4, atol=1e-5)
    assert _entry_ran(cm)


def test_shape_errors_name_the_op():
    cm = ts.jit.compile(lambda a, b: (a @ b).relu(), (ts.randn(3, 5), ts.randn(5, 4)), dynamic={0: [1], 1: [0]})
    assert_close(cm(ts.ones(3, 2), ts.ones(2, 4)).numpy(), np.full((3, 4), 2, np.float32))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        cm(ts.ones(3, 2), ts.ones(6, 4))


def test_threads_share_a_compiled_model(mlp):
    model, cm = mlp
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((b, 6)).astype(np.float32) for b in (1, 3, 5, 8)]
    results, errors = {}, []

    def work(k):
        try:
            for _ in range(200):
                out = cm(ts.from_numpy(xs[k])).numpy()
                if not np.allclose(out, _numpy_mlp(model, xs[k]), rtol=1e-5, atol=1e-5):
                    errors.append(k)
            results[k] = True
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    run_in_threads(work)
    assert not errors and len(results) == 4


def test_saved_model_runs_the_entry_in_the_runtime(mlp, tmp_path):
    model, cm = mlp
    ts.jit.save(cm, tmp_path / "mlp.tsm")
    loaded = tscript_runtime.load(tmp_path / "mlp.tsm")
    state = loaded.executables["forward"]
    assert state.entry is not None and "one native call" in state.describe()
    assert list(state.entry._plans.values())[0] is not None  # planned at load for the example shapes
    x = np.random.default_rng(4).standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(loaded.run(x), _numpy_mlp(model, x), rtol=1e-5, atol=1e-5)
    assert any(p is not None for p in state.entry._plans.values())
    loaded.params["0.weight"] *= 0  # the runtime's parameters are read on every run
    with ts.no_grad():
        model[0].weight.mul_(0)
    np.testing.assert_allclose(loaded.run(x), _numpy_mlp(model, x), rtol=1e-5, atol=1e-5)


def test_arena_reuses_memory():
    model = _mlp((8,) * 12)
    cm = ts.jit.compile(model, (ts.randn(16, 8),))
    layout = cm.executable.entry.layout
    tree = [cm._tree[0], ts.randn(16, 8).numpy()]
    fixed = cm.executable.entry._read(tree[0])
    plan = make_plan(layout, cm.executable.entry.launchers, tree, fixed)
    one = 16 * 8 * 4
    n_buffers = sum(1 for r in layout.roots.values() if r.base == 0)
    assert n_buffers >= 15 and plan.arena <= 3 * one  # ~21 intermediates live in 2-3 buffers


def test_the_plan_names_every_step_and_the_layout_follows_it(mlp):
    _, cm = mlp
    steps = [(s["node"], s["template"]) for s in cm.plan["entry"]]
    kinds = {"aten::linear": "gemm", "tscript::FusionGroup": "kernel"}
    nodes = list(cm.graph.nodes)
    assert [(kinds[nodes[i].kind], t) for i, t in steps] == [(t, t) for _, t in steps]
    assert [t for _, t in steps] == ["gemm", "kernel", "gemm", "kernel", "gemm"]
    assert [s.node for s in cm.executable.plan.layout.steps] == [i for i, _ in steps]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["linear", "relu", "reshape", "tanh", "matmul_t"]), min_size=1, max_size=6),
       st.integers(1, 4), st.integers(0, 10**6))
def test_random_chains_match_eager(ops, batch, seed):
    rng = np.random.default_rng(seed)
    ws = [ts.from_numpy(rng.standard_normal((6, 6)).astype(np.float32)) for _ in ops]

    def fn(x):
        for op, w in zip(ops, ws):
            if op == "linear":
                x = ts.nn.functional.linear(x, w, w[0])
            elif op == "matmul_t":
                x = x @ w.t()
            elif op == "reshape":
                x = x.reshape(-1, 6)
            else:
                x = getattr(x, op)()
        return x
    x = ts.from_numpy(rng.standard_normal((batch, 6)).astype(np.float32))
    cm = ts.jit.compile(fn, (x,))  # the weights are traced as tensor constants
    assert_close(cm(x).numpy(), fn(x).numpy(), rtol=1e-4, atol=1e-5)


STRIDED = {"transposed": lambda b: b.T, "reversed rows": lambda b: b.T[::-1],
           "every other column": lambda b: np.repeat(b.T, 2, 1)[:, ::2]}


@pytest.mark.parametrize("layout", STRIDED)
@pytest.mark.parametrize("fn", [lambda x: (x * 2.0).tanh() + 1.0, lambda x: x.softmax(-1),
                                lambda x: (x + 1.0).t(), lambda x: x.t() * 3.0],
                         ids=["elementwise", "softmax", "result transposed", "input transposed"])
def test_strided_inputs_are_read_in_place(fn, layout):
    """Kernels read strided inputs as they are: the plan is for those strides, with no copy first."""
    cm = ts.jit.compile(fn, (ts.randn(16, 12),))
    a = STRIDED[layout](np.random.default_rng(2).standard_normal((12, 16)).astype(np.float32))
    assert not a.flags.c_contiguous
    got = cm(ts.from_numpy(a)).numpy()
    np.testing.assert_allclose(got, fn(ts.from_numpy(np.ascontiguousarray(a))).numpy(), rtol=1e-6, atol=1e-6)
    (key,) = [k for k, p in cm.executable.entry._plans.items() if p is not None]
    assert key[0][0] == (a.shape, a.strides, a.dtype.num)


def test_strided_input_a_plan_cannot_take_is_copied():
    """A reshape of a non-contiguous input would copy: that signature runs on a contiguous copy."""
    cm = ts.jit.compile(lambda x: x.reshape(-1) * 2.0, (ts.randn(16, 12),))
    a = np.random.default_rng(3).standard_normal((12, 16)).astype(np.float32).T
    np.testing.assert_array_equal(cm(ts.from_numpy(a)).numpy(), a.reshape(-1) * 2)
    assert _entry_ran(cm)
    assert [p is None for p in cm.executable.entry._plans.values()] == [True, False]


def test_kernels_with_the_same_code_share_one_function():
    """Repeated layers (an unrolled loop, a stack of blocks) emit each distinct kernel once."""
    from tscript_runtime.native.emit import symbols
    fn = lambda x, w: (((x @ w).tanh() * 2 @ w).tanh() * 2 @ w).sigmoid()  # noqa: E731
    x, w = ts.randn(4, 5), ts.randn(5, 5)
    cm = ts.jit.compile(fn, (x, w))
    names = symbols(cm.executable.plan)
    assert len(names) == 3 and len(set(names.values())) == 2, names  # tanh * 2 twice, sigmoid
    assert_close(cm(x, w).numpy(), fn(x, w).numpy(), rtol=1e-5, atol=1e-5)
    assert _entry_ran(cm), cm.explain()


def test_transposed_convolutions_with_and_without_bias():
    """A generator whose last transposed convolution has no bias (its bias pointer is null: never read)."""
    rng = np.random.default_rng(7)
    w1, w2 = (ts.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in ((16, 8, 4, 4), (8, 3, 4, 4)))
    b1 = ts.from_numpy(rng.standard_normal(8).astype(np.float32))
    fn = lambda z: F.conv_transpose2d(F.conv_transpose2d(z, w1, b1).relu(), w2, None, stride=2, padding=1).tanh()  # noqa: E731
    z = ts.from_numpy(rng.standard_normal((2, 16, 1, 1)).astype(np.float32))
    cm = ts.jit.compile(fn, (z,))
    assert_close(cm(z).numpy(), fn(z).numpy(), rtol=1e-5, atol=1e-5)
    assert _entry_ran(cm), cm.explain()
