"""The model zoo: compiled with backward=True, every model gives eager autograd's outputs, parameter
gradients and input gradients (float32, 1e-4 relative), at the example batch size and at others
when the batch dim is dynamic; BatchNorm in train mode updates its running statistics as eager."""
import numpy as np
import pytest

import tscript as ts
from tscript import nn
from tscript_runtime.errors import InputError
from tests.autodiff.helpers import assert_same_run, check_model, clone, compile_twin, run


def test_mlp_at_several_batch_sizes():
    ts.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    check_model(model, (ts.randn(5, 8),), (ts.randn(1, 8),), (ts.randn(7, 8),), dynamic={0: [0]})


def test_cnn_with_batchnorm_in_train_mode():
    ts.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 4 * 4, 5))
    compiled = check_model(model, (ts.randn(4, 3, 8, 8),), (ts.randn(6, 3, 8, 8),), dynamic={0: [0]})
    assert "aten::var" in str(compiled.graph)  # batch statistics, not the running ones


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, 7, num_layers=2, batch_first=True)
        self.out = nn.Linear(7, 3)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return self.out(y), h


def test_lstm_unrolled_by_the_trace():
    ts.manual_seed(2)
    check_model(Tagger(), (ts.randn(3, 4, 5),), (ts.randn(2, 4, 5),), dynamic={0: [0]})


def test_transformer_encoder_layer_in_eval_mode_at_several_batch_sizes_and_lengths():
    ts.manual_seed(3)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
    check_model(layer, (ts.randn(2, 5, 8),), (ts.randn(3, 7, 8),), dynamic={0: [0, 1]})


class TwoHeads(nn.Module):
    """Broadcast operands that require grad, and nested tuple outputs."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 3), nn.Linear(4, 2)

    def forward(self, x, shift, scale):
        h = self.a(x) * scale + shift
        return (h, ts.relu(self.b(x))), h.sum(1)


def test_broadcast_inputs_and_tuple_outputs():
    ts.manual_seed(4)
    example = (ts.randn(5, 4, requires_grad=True), ts.randn(3, requires_grad=True), ts.randn(1, 1, requires_grad=True))
    check_model(TwoHeads(), example)


def test_input_gradients_only_where_required():
    ts.manual_seed(5)
    model = TwoHeads()
    example = (ts.randn(5, 4), ts.randn(3, requires_grad=True), ts.randn(1, 1))
    compiled = check_model(model, example)
    x = ts.randn(5, 4, requires_grad=True)
    weighted = compiled(x, ts.randn(3), ts.randn(1, 1))[1]
    weighted.sum().backward()
    assert x.grad is not None and x.grad.shape == (5, 4)


class Bag(nn.Module):
    """Integer indices next to a float input."""

    def __init__(self):
        super().__init__()
        self.emb, self.fc = nn.Embedding(10, 4), nn.Linear(4, 2)

    def forward(self, idx, weights):
        return self.fc(self.emb(idx) * weights.unsqueeze(1))


def test_integer_inputs_mixed_with_float_ones():
    ts.manual_seed(6)
    idx = ts.tensor([1, 3, 3, 9, 0])
    check_model(Bag(), (idx, ts.randn(5, requires_grad=True)))


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 3), nn.Linear(4, 3)

    def forward(self, x):
        if bool(x.sum() > 0):
            y = self.a(x)
        else:
            y = ts.tanh(self.b(x)) * x.sum()
        return y


@pytest.mark.parametrize("sign", [1, -1])
def test_scripted_if_differentiates_the_branch_taken_at_run_time(sign):
    ts.manual_seed(7)
    x = ts.randn(5, 4).abs()
    check_model(Branchy(), (x * sign,), (-x * sign,), (ts.randn(3, 4).abs(),), script=True,
                unreached_zero=True, dynamic={0: [0]})


def test_dropout_in_train_mode_draws_like_eager_and_differentiates_through_its_mask():
    ts.manual_seed(9)
    model = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.3), nn.Linear(8, 2))
    compiled, twin, eager = compile_twin(model, (ts.randn(4, 6),))
    x = ts.randn(4, 6)
    ts.manual_seed(10)
    ran = run(compiled, list(twin.parameters()), clone((x,)))
    ts.manual_seed(10)
    assert_same_run(ran, run(eager, list(eager.parameters()), clone((x,))))


def test_parameters_the_outputs_do_not_reach_get_no_gradient():
    class Unused(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.unused = nn.Linear(3, 2), nn.Linear(3, 2)

        def forward(self, x):
            return self.used(x)

    model = Unused()
    compiled = ts.jit.compile(model, ts.randn(4, 3), backward=True)
    compiled(ts.randn(4, 3)).sum().backward()
    assert model.used.weight.grad is not None and model.unused.weight.grad is None


@pytest.fixture(scope="module")
def mlp():
    ts.manual_seed(8)
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2))
    return model, ts.jit.compile(model, ts.randn(3, 6), backward=True, dynamic={0: [0]})


def test_autograd_grad_and_retain_graph(mlp):
    model, compiled = mlp
    x = ts.randn(3, 6, requires_grad=True)
    out = compiled(x).sum()
    (gx, gw) = ts.autograd.grad(out, (x, model[0].weight), retain_graph=True)
    ex = x.detach().requires_grad_()
    (rx, rw) = ts.autograd.grad(model(ex).sum(), (ex, model[0].weight))
    np.testing.assert_allclose(gx.numpy(), rx.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gw.numpy(), rw.numpy(), rtol=1e-5, atol=1e-6)
    out.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        out.backward()


def test_grad_fn_only_when_a_gradient_is_needed(mlp):
    model, compiled = mlp
    out = compiled(ts.randn(3, 6))
    assert out.grad_fn is not None and out.grad_fn.name() == "CompiledBackward"
    with ts.no_grad():
        assert compiled(ts.randn(3, 6)).grad_fn is None
    model.requires_grad_(False)
    try:
        quiet = compiled(ts.randn(3, 6))
        assert quiet.grad_fn is None and not quiet.requires_grad
    finally:
        model.requires_grad_(True)


def test_double_backward_through_a_compiled_model_is_refused(mlp):
    _, compiled = mlp
    x = ts.randn(3, 6, requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable"):
        ts.autograd.grad(compiled(x).pow(2).sum(), x, create_graph=True)


def test_compiled_training_checks_its_inputs(mlp):
    _, compiled = mlp
    with pytest.raises(InputError, match="dimension 1 must be 6"):
        compiled(ts.randn(3, 7))


def test_gradients_accumulate_like_eager(mlp):
    model, compiled = mlp
    x = ts.randn(4, 6)
    model.zero_grad(set_to_none=True)
    compiled(x).sum().backward()
    once = [p.grad.numpy().copy() for p in model.parameters()]
    compiled(x).sum().backward()
    for p, g in zip(model.parameters(), once):
        np.testing.assert_allclose(p.grad.numpy(), 2 * g, rtol=1e-6)
