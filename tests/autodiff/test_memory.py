"""What the compiled forward keeps for the backward: only values the backward reads, and none that
a cheap elementwise op recomputes from values kept anyway (BatchNorm's normalized activations and
the ReLU after it are recomputed from the convolution's output and per-channel statistics)."""
import numpy as np

import tscript as ts
from tscript import nn
from tscript.autodiff import differentiate
from tscript.jit.driver import training_graph
from tscript.ir.graph_json import graph_to_json
from tscript_runtime.executor import ArrayDomain, Program

FLOAT = 4


def per_sample(compiled, make_input, batches=(4, 8)) -> tuple[float, float]:
    """(activation bytes kept per sample, bytes kept whatever the batch size)."""
    small, large = (compiled.saved_bytes(make_input(b))["activations"] for b in batches)
    slope = (large - small) / (batches[1] - batches[0])
    return slope, small - slope * batches[0]


def activation_bytes(model, x, recompute: bool) -> int:
    """Bytes of the values the forward computes and keeps for the backward."""
    graph, wrt, examples, _, _ = training_graph(ts.jit.trace(model, x), model, (x,), None)
    d = differentiate(graph, wrt, examples, recompute=recompute)
    outs = Program(graph_to_json(d.forward), ArrayDomain(d.forward.constants)).run(examples)
    held = {id(a) for a in examples}
    return sum(o.nbytes for o in outs[len(outs) - len(d.saved):] if isinstance(o, np.ndarray) and id(o) not in held)


def test_mlp_keeps_the_hidden_activations_only():
    ts.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, 3))
    compiled = ts.jit.compile(model, ts.randn(4, 20), backward=True, dynamic={0: [0]})
    assert per_sample(compiled, lambda b: ts.randn(b, 20)) == ((16 + 12) * FLOAT, 0)


def test_cnn_recomputes_batchnorm_and_relu_in_the_backward():
    ts.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 4 * 4, 5))
    compiled = ts.jit.compile(model, ts.randn(4, 3, 8, 8), backward=True, dynamic={0: [0]})
    slope, constant = per_sample(compiled, lambda b: ts.randn(b, 3, 8, 8))
    assert slope == (8 * 8 * 8 + 8 * 4 * 4) * FLOAT  # the convolution's output, the pooled features
    assert constant <= 4 * 8 * FLOAT  # per-channel statistics
    assert "aten::relu" in str(compiled.backward_graph)  # recomputed
    x = ts.randn(4, 3, 8, 8)
    assert activation_bytes(model, x, recompute=False) > 2.5 * activation_bytes(model, x, recompute=True)
