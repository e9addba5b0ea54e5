"""The nn layers script as they are (their forward and the nn.functional code it calls compile
from source, with library.py's stand-ins where the source goes beyond the language), in training
and in evaluation mode, and give what they give eagerly."""
import pytest

import tscript as ts
from tscript import nn
from tests.script.helpers import assert_same, clone
from tests.script.programs import T

LAYERS = [
    ("conv1d", lambda: nn.Conv1d(3, 4, 3, padding=1), (T(2, 3, 8),)),
    ("conv2d", lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), (T(2, 3, 8, 8),)),
    ("conv_transpose2d", lambda: nn.ConvTranspose2d(3, 2, 3, stride=2), (T(1, 3, 4, 4),)),
    ("batch_norm1d", lambda: nn.BatchNorm1d(3), (T(4, 3),)),
    ("batch_norm2d", lambda: nn.BatchNorm2d(3), (T(2, 3, 4, 4),)),
    ("layer_norm", lambda: nn.LayerNorm(4), (T(2, 4),)),
    ("group_norm", lambda: nn.GroupNorm(2, 4), (T(2, 4, 3),)),
    ("max_pool2d", lambda: nn.MaxPool2d(2), (T(1, 2, 4, 4),)),
    ("avg_pool2d", lambda: nn.AvgPool2d(2, stride=1), (T(1, 2, 4, 4),)),
    ("adaptive_avg_pool2d", lambda: nn.AdaptiveAvgPool2d((1, 2)), (T(1, 2, 4, 4),)),
    ("embedding", lambda: nn.Embedding(10, 3, padding_idx=0), (ts.tensor([[1, 0], [9, 4]]),)),
    ("flatten", lambda: nn.Flatten(), (T(2, 3, 4),)),
    ("identity", lambda: nn.Identity(), (T(2),)),
    ("sequential", lambda: nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)), (T(2, 3),)),
] + [(name, factory, (T(2, 5),)) for name, factory in [
    ("relu", nn.ReLU), ("relu6", nn.ReLU6), ("tanh", nn.Tanh), ("sigmoid", nn.Sigmoid), ("gelu", nn.GELU),
    ("gelu_tanh", lambda: nn.GELU(approximate="tanh")), ("leaky_relu", lambda: nn.LeakyReLU(0.1)), ("elu", nn.ELU),
    ("silu", nn.SiLU), ("softplus", nn.Softplus), ("hardtanh", nn.Hardtanh), ("mish", nn.Mish),
    ("softmax", lambda: nn.Softmax(dim=1)), ("log_softmax", lambda: nn.LogSoftmax(dim=-1)),
]]


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("name, factory, args", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer(name, factory, args, training):
    ts.manual_seed(0)
    eager = factory().train(training)
    ts.manual_seed(0)
    module = factory().train(training)
    scripted = ts.jit.script(module)
    assert_same(scripted(*clone(args)), eager(*clone(args)))
    for (buffer, a), b in zip(eager.named_buffers(), module.buffers()):  # e.g. BatchNorm's statistics
        assert_same(b, a, buffer)


@pytest.mark.parametrize("factory", [lambda: nn.Dropout(0.4), lambda: nn.Dropout2d(0.4)], ids=["dropout", "dropout2d"])
def test_dropout_draws_like_eager(factory):
    eager, scripted = factory(), ts.jit.script(factory())
    x = T(2, 3, 4, 4)
    ts.manual_seed(7)
    expected = eager(x)
    ts.manual_seed(7)
    assert_same(scripted(x), expected)
    eager.eval(), scripted.eval()
    assert_same(scripted(x), x)
