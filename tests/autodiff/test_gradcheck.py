"""Float64 models: the compiled backward agrees with central finite differences
(`tscript.autograd.gradcheck` of a function calling the compiled model), for input gradients and,
through the parameters the compiled model reads, for parameter gradients."""
import pytest

import tscript as ts
from tscript import nn
from tests.autodiff.test_models import Branchy, Tagger


def check(model, *example, dynamic=None, script=False):
    """gradcheck of the inputs and of the first and last two parameters (finite differences over
    every parameter of the larger models would take long)."""
    model = model.double()
    params = list(model.parameters())
    params = params if len(params) <= 4 else params[:2] + params[-2:]
    compiled = ts.jit.compile(ts.jit.script(model) if script else model, example, backward=True, dynamic=dynamic)
    inputs = tuple(x.detach().requires_grad_(x.dtype == ts.float64) for x in example)
    n = len(inputs)
    assert ts.autograd.gradcheck(lambda *a: compiled(*a[:n]), inputs + tuple(params), eps=1e-6, atol=1e-6)


def test_mlp():
    ts.manual_seed(0)
    check(nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3), nn.Softmax(-1)), ts.randn(3, 4).double())


def test_cnn_with_batchnorm_in_train_mode():
    ts.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.AvgPool2d(2),
                          nn.Flatten(), nn.Linear(3 * 2 * 2, 2))
    check(model, ts.randn(3, 2, 4, 4).double(), dynamic={0: [0]})


def test_lstm():
    ts.manual_seed(2)
    check(Tagger(), ts.randn(2, 3, 5).double())


def test_transformer_encoder_layer():
    ts.manual_seed(3)
    check(nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True).eval(), ts.randn(2, 3, 4).double())


@pytest.mark.parametrize("sign", [1, -1])
def test_scripted_if(sign):
    ts.manual_seed(4)
    check(Branchy(), (ts.randn(3, 4).abs() * sign).double(), script=True)
