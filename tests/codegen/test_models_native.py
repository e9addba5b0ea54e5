"""The model zoo compiled with `tscript.jit.compile` matches eager: inference (MLP, CNN with
BatchNorm2d in eval and max-pooling, an LSTM model, a TransformerEncoderLayer) with a dynamic batch dim
at two batch sizes, and training (`backward=True`): outputs and parameter gradients of a loss through
the compiled model equal eager autograd (MLP, CNN with train-mode BatchNorm, a broadcasting model)."""
import numpy as np
import pytest

import tscript as ts
import tscript_runtime
from tscript import nn

from tests.codegen.helpers import check_outputs, native_groups


class LSTMHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, num_layers=2, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1]).log_softmax(-1)


class Broadcasting(nn.Module):
    """Parameters broadcast per column, per column (rank 1) and per row (a size-1 last dim)."""
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(ts.randn(1, 6))
        self.shift = nn.Parameter(ts.randn(6))
        self.gate = nn.Parameter(ts.randn(4, 1))

    def forward(self, x):
        return ((x * self.scale + self.shift).tanh() * self.gate.sigmoid()).softmax(-1) * 3 - x.exp()


def _cnn():
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Linear(8 * 4 * 4, 5))
    bn = m[1]
    bn.running_mean._data[:] = np.linspace(-1, 1, 8)
    bn.running_var._data[:] = np.linspace(0.5, 2, 8)
    return m


# name -> (model factory, per-sample input shape)
ZOO = {
    "mlp": (lambda: nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 4)),
            (10,)),
    "cnn": (_cnn, (3, 8, 8)),
    "lstm": (LSTMHead, (5, 6)),
    "transformer": (lambda: nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True), (7, 16)),
}


@pytest.fixture(scope="module", params=list(ZOO))
def inference(request):
    ts.manual_seed(0)
    factory, shape = ZOO[request.param]
    model = factory().eval()
    cm = ts.jit.compile(model, (ts.randn(2, *shape),), dynamic={0: [0]})
    return model, shape, cm


def test_inference_uses_native_kernels(inference):
    _, _, cm = inference
    assert native_groups(cm.graph), cm.graph


@pytest.mark.parametrize("batch", [1, 6])
def test_inference_matches_eager(inference, batch):
    model, shape, cm = inference
    x = ts.randn(batch, *shape)
    with ts.no_grad():
        check_outputs(cm(x), model(x), ["output"], rtol=1e-4, atol=1e-5)


def test_fixed_dims_are_checked(inference):
    _, shape, cm = inference
    with pytest.raises(ValueError, match="not declared dynamic"):
        cm(ts.randn(2, *shape[:-1], shape[-1] + 1))


def test_the_saved_model_gives_the_compiled_outputs(inference, tmp_path):
    """The runtime builds the same Executable from the file: the same outputs, to the bit."""
    _, shape, cm = inference
    ts.jit.save(cm, tmp_path / "m.tsm")
    loaded = tscript_runtime.load(tmp_path / "m.tsm")
    assert loaded.executables["forward"].plan.to_json() == cm.plan
    x = ts.randn(3, *shape)
    np.testing.assert_array_equal(loaded.run(x.numpy()), cm(x).numpy())


# -- training ------------------------------------------------------------------------------------------

TRAIN = {"mlp": (ZOO["mlp"][0], (10,)), "cnn (train-mode BatchNorm)": (_cnn, (3, 8, 8)),
         "broadcasting": (Broadcasting, (4, 6))}


@pytest.fixture(scope="module", params=list(TRAIN))
def training(request):
    ts.manual_seed(1)
    factory, shape = TRAIN[request.param]
    model = factory().train()
    cm = ts.jit.compile(model, (ts.randn(3, *shape),), backward=True, dynamic={0: [0]})
    return model, shape, cm


def _loss_and_grads(fn, model, x):
    for p in model.parameters():
        p.grad = None
    out = fn(x)
    (out * out).sum().backward()
    return out.detach(), tuple(p.grad for p in model.parameters())


@pytest.mark.parametrize("batch", [3, 8])
def test_gradients_match_eager(training, batch):
    model, shape, cm = training
    assert native_groups(cm.graph) and native_groups(cm.backward_graph)
    x = ts.randn(batch, *shape)
    out, grads = _loss_and_grads(cm, model, x)
    out_eager, grads_eager = _loss_and_grads(model, model, x)
    names = [name for name, _ in model.named_parameters()]
    check_outputs((out,) + grads, (out_eager,) + grads_eager, ["output"] + names, rtol=1e-4, atol=1e-5)


def test_the_saved_training_model_gives_the_compiled_gradients(training, tmp_path):
    model, shape, cm = training
    ts.jit.save(cm, tmp_path / "t.tsm")
    loaded = tscript_runtime.load(tmp_path / "t.tsm")
    x = ts.randn(4, *shape)
    out, grads = _loss_and_grads(cm, model, x)
    got, got_grads = loaded.run_with_grad(x.numpy(), grad_outputs=2 * out.numpy())
    names = [name for name, _ in model.named_parameters()]
    check_outputs((ts.tensor(got),) + tuple(ts.tensor(got_grads[n]) for n in names), (out,) + grads,
                  ["output"] + names, rtol=1e-5, atol=1e-6)


def test_input_gradient_matches_eager(training):
    model, shape, cm = training
    x = ts.randn(5, *shape).requires_grad_()
    (cm(x) ** 2).sum().backward()
    got, x.grad = x.grad, None
    (model(x) ** 2).sum().backward()
    check_outputs(got, x.grad, ["d loss / d x"], rtol=1e-4, atol=1e-5)
