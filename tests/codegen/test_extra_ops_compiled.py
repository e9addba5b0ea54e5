"""The functions of issue 18 inside traced and compiled models: they record as rows of the op table
(or as the core ops they are written with), compile (the new elementwise ops fuse), save, reload in the
standalone runtime and give eager's results, forward and backward."""
import numpy as np
import pytest

import tscript as ts
import tscript_runtime
from tests.conftest import assert_close

from tests.codegen.helpers import compile_native, native_groups

X = np.random.default_rng(18).standard_normal((4, 6)).astype(np.float32)
X[0, 1], X[2, 3], X[3, 0] = np.nan, np.inf, -np.inf


def _cleanup(x):
    """Elementwise extras and composites: should become fusion groups."""
    clean = ts.nan_to_num(x, nan=0.0, posinf=1.0, neginf=-1.0)
    bad = ts.isnan(x) | ts.isinf(x)
    y = ts.addcmul(clean, clean, clean, value=0.5) + ts.square(clean)
    z = ts.copysign(ts.atan(y), clean) + ts.fmod(y, 0.7) + ts.log2(y.abs() + 1) * ts.isfinite(x)
    return ts.where(bad, ts.zeros_like(z), z).clamp_min(-3)


def _shuffle(x):
    """Shape composites and rows: roll, repeat_interleave, tile, trace, meshgrid, diag."""
    a = ts.roll(x, (1, -2), (0, 1)).repeat_interleave(2, dim=0)
    b = a.tile((1, 2)) * 0.5
    gx, gy = ts.meshgrid(ts.arange(3.0), ts.arange(2.0), indexing="xy")
    return b.sum(0) + ts.trace(x[:, :4]) + (gx * gy).sum() + ts.diag(x[0, :3]).sum()


def test_elementwise_extras_fuse_and_match_eager():
    x = ts.tensor(X)
    cm = compile_native(_cleanup, (x,), dynamic={0: [0, 1]})
    kinds = {n.kind for n in cm.graph.nodes}
    assert not kinds & {"aten::nan_to_num", "aten::isnan", "aten::copysign", "aten::fmod", "aten::log2"}, cm.graph
    assert_close(cm(x), _cleanup(x))
    other = ts.tensor(np.concatenate([X, -X[:1]]))  # another batch size
    assert_close(cm(other), _cleanup(other))


def test_traced_shape_functions_match_eager():
    finite = np.nan_to_num(X, posinf=5.0, neginf=-5.0)
    x = ts.tensor(finite)
    traced = ts.jit.trace(_shuffle, (x,))
    kinds = {n.kind for n in traced.graph.nodes}
    assert "aten::roll" in kinds and "aten::repeat" in kinds
    y = ts.tensor(finite * 2)
    assert_close(traced(y), _shuffle(y))
    cm = ts.jit.compile(_shuffle, (x,))
    assert_close(cm(y), _shuffle(y))


def test_saved_model_runs_in_the_standalone_runtime(tmp_path):
    x = ts.tensor(X)
    cm = compile_native(_cleanup, (x,))
    path = tmp_path / "extras.tsm"
    ts.jit.save(cm, str(path))
    model = tscript_runtime.load(str(path))
    assert_close(model.run(X), _cleanup(x).numpy())


class Net(ts.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = ts.nn.Parameter(ts.tensor(np.linspace(-1, 1, 6, dtype=np.float32)))

    def forward(self, x):
        h = ts.addcdiv(x, self.w, self.w.abs() + 1, value=0.3)
        h = ts.roll(h, 1, 1) + ts.square(self.w).repeat_interleave(1)
        return ts.linalg.vector_norm(ts.nan_to_num(h), 2, dim=1).sum()


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_backward_through_extras(mode, oracle):
    data = np.nan_to_num(X, posinf=2.0, neginf=-2.0)
    net = Net()
    x = ts.tensor(data, requires_grad=True)
    run = net if mode == "eager" else ts.jit.compile(net, (x,), backward=True)
    run(x).backward()
    w = oracle.tensor(np.linspace(-1, 1, 6, dtype=np.float32), requires_grad=True)
    t = oracle.tensor(data, requires_grad=True)
    h = oracle.addcdiv(t, w, w.abs() + 1, value=0.3)
    h = oracle.roll(h, 1, 1) + oracle.square(w).repeat_interleave(1)
    oracle.linalg.vector_norm(oracle.nan_to_num(h), 2, dim=1).sum().backward()
    assert_close(x.grad, t.grad, rtol=1e-4, atol=1e-5)
    assert_close(net.w.grad, w.grad, rtol=1e-4, atol=1e-5)
    if mode == "compiled":
        assert native_groups(run.graph)
