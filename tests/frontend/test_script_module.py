"""What a traced module shows: `.graph` keeps the submodule structure (prim::CallMethod, GetAttr
chains on %self, parameters never baked in), `.inlined_graph` is flat, submodules have their own
graphs, `.code` reads like Python; the printed IR of a 2-layer MLP is pinned so changes to it are
deliberate. A ScriptModule keeps the module API."""
import inspect
import os

import numpy as np
import pytest

import tscript as ts
from tscript import nn
from tests.frontend.tracing_helpers import kinds


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def _forward_line() -> str:
    """`file:line` of MLP.forward's return, as the tracer records it in source comments."""
    lines, start = inspect.getsourcelines(MLP.forward)
    return f"{os.path.basename(__file__)}:{start + len(lines) - 1}"


GRAPH = """\
graph(%self : __module__.MLP,
      %x : Float(8, 784)):
  %fc1 : __module__.Linear = prim::GetAttr[name="fc1"](%self)
  %0 : Float(8, 128) = prim::CallMethod[name="forward"](%fc1, %x) # {src}
  %relu : __module__.ReLU = prim::GetAttr[name="relu"](%self)
  %1 : Float(8, 128) = prim::CallMethod[name="forward"](%relu, %0) # {src}
  %fc2 : __module__.Linear = prim::GetAttr[name="fc2"](%self)
  %2 : Float(8, 10) = prim::CallMethod[name="forward"](%fc2, %1) # {src}
  return (%2)
"""

INLINED = """\
graph(%self : __module__.MLP,
      %x : Float(8, 784)):
  %fc1 : __module__.Linear = prim::GetAttr[name="fc1"](%self)
  %weight : Float(128, 784) = prim::GetAttr[name="weight"](%fc1)
  %bias : Float(128) = prim::GetAttr[name="bias"](%fc1)
  %0 : Float(8, 128) = aten::linear(%x, %weight, %bias) # scope: fc1, {src}
  %relu : __module__.ReLU = prim::GetAttr[name="relu"](%self)
  %1 : Float(8, 128) = aten::relu(%0) # scope: relu, {src}
  %fc2 : __module__.Linear = prim::GetAttr[name="fc2"](%self)
  %weight.1 : Float(10, 128) = prim::GetAttr[name="weight"](%fc2)
  %bias.1 : Float(10) = prim::GetAttr[name="bias"](%fc2)
  %2 : Float(8, 10) = aten::linear(%1, %weight.1, %bias.1) # scope: fc2, {src}
  return (%2)
"""

FC1 = """\
graph(%self : __module__.Linear,
      %input : Float(8, 784)):
  %weight : Float(128, 784) = prim::GetAttr[name="weight"](%self)
  %bias : Float(128) = prim::GetAttr[name="bias"](%self)
  %0 : Float(8, 128) = aten::linear(%input, %weight, %bias) # scope: fc1, {src}
  return (%0)
"""

CODE = """\
def forward(self: __module__.MLP, x: Tensor):
    _0 = torch.linear(x, self.fc1.weight, self.fc1.bias)
    _1 = torch.relu(_0)
    _2 = torch.linear(_1, self.fc2.weight, self.fc2.bias)
    return _2
"""


@pytest.fixture(scope="module")
def traced_mlp():
    return ts.jit.trace(MLP(), ts.randn(8, 784))


def test_mlp_graph_is_pinned(traced_mlp):
    assert str(traced_mlp.graph) == GRAPH.format(src=_forward_line())


def test_mlp_inlined_graph_is_pinned(traced_mlp):
    assert str(traced_mlp.inlined_graph) == INLINED.format(src=_forward_line())


def test_submodule_graph_is_pinned(traced_mlp):
    assert str(traced_mlp.fc1.graph) == FC1.format(src=_forward_line())


def test_mlp_code_is_pinned(traced_mlp):
    assert traced_mlp.code == CODE


def test_parameters_are_read_with_getattr_never_baked(traced_mlp):
    for graph in (traced_mlp.graph, traced_mlp.inlined_graph, traced_mlp.fc1.graph, traced_mlp.fc2.graph):
        assert graph.constants == {}
        assert all(not str(n.output.type).startswith("Float(") for n in graph.nodes if n.kind == "prim::Constant")
    getattrs = [n for n in traced_mlp.graph.nodes if n.kind == "prim::GetAttr"]
    assert all(n.inputs[0] is traced_mlp.graph.inputs[0] for n in getattrs)  # on %self


def test_parameter_updates_reach_the_trace(traced_mlp):
    x = ts.randn(2, 784)
    with ts.no_grad():
        before = traced_mlp(x)
        traced_mlp.fc2.bias.add_(1.0)
        after = traced_mlp(x)
        traced_mlp.fc2.bias.sub_(1.0)
    np.testing.assert_allclose(after.numpy(), before.numpy() + 1, rtol=1e-5, atol=1e-5)


def test_code_of_sequential_uses_getattr_for_numeric_names():
    traced = ts.jit.trace(nn.Sequential(nn.Linear(3, 3), nn.ReLU()), ts.randn(2, 3))
    assert 'getattr(self, "0").weight' in traced.code
    assert '%_0 : __module__.Linear = prim::GetAttr[name="0"](%self)' in str(traced.graph)


def test_nested_graphs_and_inlining():
    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Linear(4, 4), nn.Sigmoid())
            self.out = nn.Linear(4, 1)

        def forward(self, x):
            return self.out(self.inner(x))

    traced = ts.jit.trace(Outer(), ts.randn(2, 4))
    assert kinds(traced.graph).count("prim::CallMethod") == 2
    assert kinds(traced.inner.graph).count("prim::CallMethod") == 2
    assert kinds(traced.inner[0].graph) == ["prim::GetAttr", "prim::GetAttr", "aten::linear"]
    flat = kinds(traced.inlined_graph)
    assert "prim::CallMethod" not in flat and flat.count("aten::linear") == 2
    scopes = [n.scope for n in traced.inlined_graph.nodes if n.kind.startswith("aten::")]
    assert scopes == ["inner.0", "inner.1", "out"]


# -- the module API --------------------------------------------------------------------------------
def test_script_module_keeps_the_module_api(traced_mlp):
    assert traced_mlp.original_name == "MLP"
    assert [name for name, _ in traced_mlp.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight",
                                                                   "fc2.bias"]
    assert list(traced_mlp.state_dict()) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [name for name, _ in traced_mlp.named_children()] == ["fc1", "relu", "fc2"]
    assert traced_mlp.eval() is traced_mlp and not traced_mlp.training
    traced_mlp.train()
    assert traced_mlp.training and traced_mlp.fc1.training


def test_containers_index_and_iterate():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))
    traced = ts.jit.trace(model, ts.randn(2, 3))
    assert len(traced) == 3
    assert [m.original_name for m in traced] == ["Linear", "ReLU", "Linear"]
    assert str(traced[2].graph).startswith("graph(%self : __module__.Linear,\n      %input : Float(2, 3)):")


def test_submodule_that_was_not_called_has_no_graph():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.unused = nn.Linear(2, 2), nn.Linear(2, 2)

        def forward(self, x):
            return self.used(x)

    traced = ts.jit.trace(Net(), ts.randn(1, 2))
    assert traced.unused.original_name == "Linear"
    with pytest.raises(RuntimeError, match="Method 'forward' is not defined"):
        traced.unused.graph


def test_trace_of_a_script_module_is_itself(traced_mlp):
    assert ts.jit.trace(traced_mlp, ts.randn(1, 784)) is traced_mlp


def test_trace_rejects_non_callables():
    with pytest.raises(TypeError, match="expects a function or an nn.Module"):
        ts.jit.trace(42, ts.randn(1))
