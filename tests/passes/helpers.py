"""Shared by the pass tests: IR text in / IR text out, running graphs with the executor, and the model
zoo every pass must preserve (MLP, CNN+BN in eval, LSTM, transformer encoder layer)."""
import numpy as np

import tscript as ts
from tscript import nn
from tscript.frontend.modules import _attr_tree
from tscript.ir import parse_ir, verify
from tscript.ir.graph_json import graph_to_json
from tscript_runtime.executor import ArrayDomain, Program


def canonical(graph_or_text) -> str:
    """The printed graph with every value renamed in definition order (%v0, %v1, ...) and no
    source comments, so a test's expected IR need not guess the numbers a pass picks."""
    g = parse_ir(graph_or_text) if isinstance(graph_or_text, str) else graph_or_text.copy()
    values = list(g.inputs)
    for n in g.all_nodes():
        n.scope, n.source = "", None
        values += n.outputs
        for b in n.blocks:
            values += b.params
    for i, v in enumerate(values):
        v.name = f"v{i}"
    return str(g)


def check_pass(fn, before: str, after: str, constants: dict | None = None, changed: bool = True):
    """Parse `before`, run the pass, verify, and compare with `after` (names canonicalized)."""
    g = parse_ir(before)
    g.constants.update(constants or {})
    verify(g)
    assert fn(g) is changed
    verify(g)
    assert canonical(g) == canonical(after), f"got:\n{g}"
    return g


def run_graph(graph, inputs, module=None) -> list:
    """Run `graph` with the executor on arrays (`module` is `%self`, for module graphs)."""
    program = Program(graph_to_json(graph), ArrayDomain(graph.constants))
    args = ([_attr_tree(module)] if module is not None else []) + [np.array(a, copy=True) for a in inputs]
    return program.run(args)


def assert_same_outputs(got: list, expected: list, rtol=1e-5, atol=1e-6) -> None:
    assert len(got) == len(expected)
    for a, e in zip(got, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, a.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True)


def _randomize_norm_stats(model) -> None:
    """Batch-norm statistics and affine parameters away from 0/1, so folding them is visible."""
    rng = np.random.default_rng(0)
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            c = m.running_mean.shape[0]
            m.running_mean._data[:] = rng.standard_normal(c)
            m.running_var._data[:] = rng.uniform(0.5, 2.0, c)
            m.weight._data[:] = rng.standard_normal(c)
            m.bias._data[:] = rng.standard_normal(c)


def mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 3)), (ts.randn(4, 6),)


def cnn_bn():
    m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                      nn.Conv2d(4, 6, 3, bias=False), nn.BatchNorm2d(6), nn.ReLU(), nn.Flatten(),
                      nn.Linear(6 * 4 * 4, 5), nn.BatchNorm1d(5))
    _randomize_norm_stats(m)
    return m, (ts.randn(2, 3, 6, 6),)


def lstm():
    return nn.LSTM(4, 5, num_layers=2, batch_first=True), (ts.randn(2, 3, 4),)


def transformer_layer():
    return nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True), (ts.randn(2, 5, 8),)


ZOO = {"mlp": mlp, "cnn_bn": cnn_bn, "lstm": lstm, "transformer": transformer_layer}


def traced(name: str):
    """(traced eval-mode module of the zoo, its example inputs as arrays, the eager outputs)."""
    ts.manual_seed(0)
    model, inputs = ZOO[name]()
    model.eval()
    with ts.no_grad():
        module = ts.jit.trace(model, inputs)
        expected = model(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    return module, [x.numpy() for x in inputs], _flat_arrays(expected)


def _flat_arrays(x) -> list:
    if isinstance(x, ts.Tensor):
        return [x.numpy()]
    return [a for v in x for a in _flat_arrays(v)]


def flat(outputs) -> list:
    """Executor outputs (tuples of arrays, nested) flattened to a list of arrays."""
    out = []
    for v in outputs:
        out += flat(v) if isinstance(v, (list, tuple)) else [np.asarray(v)]
    return out
