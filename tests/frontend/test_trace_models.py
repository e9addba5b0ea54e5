"""Tracing whole models: the ScriptModule equals eager (values and shapes) on the example and on
another batch size; BatchNorm running statistics update exactly as eager; autograd through a traced
module gives eager's gradients; nested modules, ModuleLists and shared submodules."""
import copy

import numpy as np
import pytest

import tscript as ts
from tscript import nn
from tests.conftest import assert_close
from tests.frontend.tracing_helpers import assert_same, clone, kinds


def trace_and_compare(model, example, *others, rtol=1e-5, atol=1e-6):
    """Trace a copy of `model`; the trace and the original agree on every input (in no_grad, so
    the fast array path runs). Both see the same calls, so module state (BatchNorm stats) agrees."""
    reference = copy.deepcopy(model)
    traced = ts.jit.trace(model, clone(example))
    with ts.no_grad():
        reference(*clone(example))  # the trace ran forward once
        for args in (example, *others):
            assert_same(traced(*clone(args)), reference(*clone(args)), rtol, atol)
    assert_states_equal(model, reference)
    return traced, reference


def assert_states_equal(a, b):
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert_close(x, y, rtol=1e-5, atol=1e-6), name


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.relu, self.fc2 = nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 10)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.MaxPool2d(2))
        self.head = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        x = self.features(x)
        return self.head(x.view(x.size(0), -1))


class LSTMTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, 7, num_layers=2, batch_first=True)
        self.out = nn.Linear(7, 3)

    def forward(self, x):
        seq, (h, c) = self.lstm(x)
        return self.out(seq[:, -1]), h


def test_mlp():
    traced, _ = trace_and_compare(MLP(), (ts.randn(8, 20),), (ts.randn(3, 20),), (ts.randn(1, 20),))
    assert traced(ts.randn(3, 20)).shape == (3, 10)


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_cnn_with_batchnorm(mode):
    model = CNN().train(mode == "train")
    bn = model.features[1]
    before = bn.running_mean.numpy().copy()
    trace_and_compare(model, (ts.randn(4, 3, 8, 8),), (ts.randn(6, 3, 8, 8),), (ts.randn(2, 3, 8, 8),),
                      rtol=1e-4, atol=1e-5)
    updated = not np.array_equal(bn.running_mean.numpy(), before)
    assert updated == (mode == "train")
    assert int(bn.num_batches_tracked) == (4 if mode == "train" else 0)  # trace run + 3 calls


def test_batchnorm_train_stats_with_grad_path():
    """With parameters requiring grad the trace runs through autograd; the stats still update."""
    model = CNN().train()
    reference = copy.deepcopy(model)
    x = ts.randn(4, 3, 8, 8)
    traced = ts.jit.trace(model, x)
    reference(x)
    for batch in (ts.randn(4, 3, 8, 8), ts.randn(7, 3, 8, 8)):
        assert_close(traced(batch), reference(batch), rtol=1e-4, atol=1e-5)
    assert_states_equal(model, reference)


def test_check_trace_leaves_batchnorm_stats_as_one_forward_does():
    model = CNN().train()
    reference = copy.deepcopy(model)
    x = ts.randn(4, 3, 8, 8)
    ts.jit.trace(model, x)  # check_trace reruns, then restores the buffers
    reference(x)
    assert_states_equal(model, reference)


def test_lstm_model():
    traced, _ = trace_and_compare(LSTMTagger(), (ts.randn(2, 4, 5),), (ts.randn(6, 4, 5),), rtol=1e-4,
                                  atol=1e-5)
    assert kinds(traced.inlined_graph).count("aten::_lstm_sequence") == 2  # one time loop per layer


def test_lstm_trace_runs_any_sequence_length():
    """The time loop is one op (as PyTorch's aten::lstm), not unrolled: a trace taken at length 4
    runs length 6 and 1 as eager does."""
    model = LSTMTagger()
    traced = ts.jit.trace(model, ts.randn(2, 4, 5))
    with ts.no_grad():
        for length in (6, 1):
            x = ts.randn(2, length, 5)
            assert_same(traced(x), model(x), 1e-5, 1e-6)


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, width))
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(3)])
        self.shared = nn.Linear(width, width)

    def forward(self, x):
        x = self.seq(x)
        for layer in self.layers:
            x = ts.relu(layer(x)) + x
        return self.shared(self.shared(x))  # one module, called twice: shared weights


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(6), Block(6))
        self.head = nn.Linear(6, 2)

    def forward(self, x, scale: float):
        return self.head(self.blocks(x)) * scale


def test_nested_modules_list_and_shared_weights():
    traced, _ = trace_and_compare(Net(), (ts.randn(3, 6), 2.0), (ts.randn(5, 6), -1.5))
    block = traced.blocks[0]
    calls = [n for n in block.graph.nodes if n.kind == "prim::CallMethod"]
    assert len(calls) == 1 + 3 + 2  # seq, three layers, shared twice
    shared = [n for n in block.graph.nodes if n.kind == "prim::GetAttr" and n.attrs["name"] == "shared"]
    assert len(shared) == 1 and len(shared[0].output.uses) == 2
    assert "prim::CallMethod" not in kinds(traced.inlined_graph)


def test_submodule_receives_sizes_and_tensors_from_its_parent():
    class Pad(nn.Module):
        def forward(self, x, rows):
            return ts.cat([x, ts.zeros(rows, x.shape[1])])

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.pad = Pad()
            self.bias = nn.Parameter(ts.randn(4))

        def forward(self, x):
            return self.pad(x, x.shape[0]) + ts.ones(2 * x.shape[0], 1) * self.bias

    traced, _ = trace_and_compare(Outer(), (ts.randn(2, 4),), (ts.randn(5, 4),))
    inputs = [str(v.type) for v in traced.pad.graph.inputs]
    assert inputs == ["__module__.Pad", "Float(2, 4)", "int"]


def test_parameters_of_the_parent_used_in_a_child_are_inputs_not_constants():
    class Child(nn.Module):
        def forward(self, x):
            return x * self.owner_weight

    class Parent(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(ts.randn(3))
            self.child = Child()

        def forward(self, x):
            self.child.__dict__["owner_weight"] = self.weight  # not registered on the child
            return self.child(x)

    model = Parent()
    traced = ts.jit.trace(model, ts.randn(2, 3))
    assert traced.graph.constants == {} and traced.child.graph.constants == {}
    assert [v.name for v in traced.child.graph.inputs] == ["self", "x", "captured"]
    call = next(n for n in traced.graph.nodes if n.kind == "prim::CallMethod")
    assert call.inputs[-1].node.kind == "prim::GetAttr" and call.inputs[-1].node.attrs["name"] == "weight"
    with ts.no_grad():
        model.weight.mul_(2)  # the trace reads the parameter, it did not copy it
        assert_close(traced(ts.ones(2, 3)), ts.ones(2, 3) * model.weight)


# -- autograd ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, shape", [(MLP, (5, 20)), (CNN, (3, 3, 8, 8))], ids=["mlp", "cnn"])
def test_backward_through_a_traced_module_matches_eager(make, shape):
    model = make()
    reference = copy.deepcopy(model)
    x = ts.randn(*shape)
    traced = ts.jit.trace(model, x)
    reference(x)
    batch = ts.randn(*shape)
    traced(batch).pow(2).sum().backward()
    reference(batch).pow(2).sum().backward()
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
        assert p.grad is not None, name
        assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)


def test_input_gradient_through_a_traced_function():
    def f(x, w):
        return (x @ w).tanh().sum(1)

    traced = ts.jit.trace(f, (ts.randn(4, 3), ts.randn(3, 2)))
    x, w = ts.randn(6, 3, requires_grad=True), ts.randn(3, 2, requires_grad=True)
    x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    traced(x, w).sum().backward()
    f(x2, w2).sum().backward()
    assert_close(x.grad, x2.grad)
    assert_close(w.grad, w2.grad)


def test_no_grad_runs_the_array_path_without_dispatch(monkeypatch):
    import tscript.frontend.modules as modules
    traced = ts.jit.trace(MLP(), ts.randn(2, 20))
    calls = []
    real = modules.dispatch
    monkeypatch.setattr(modules, "dispatch", lambda *a: calls.append(a[0].name) or real(*a))
    with ts.no_grad():
        out = traced(ts.randn(2, 20))
    assert calls == [] and out.grad_fn is None and not out.requires_grad
    out = traced(ts.randn(2, 20))  # parameters require grad: ops go through dispatch and autograd
    assert "aten::linear" in calls and out.grad_fn is not None
