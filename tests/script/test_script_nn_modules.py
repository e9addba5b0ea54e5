"""Every module class `tscript.nn` exports scripts, in training and in evaluation mode, and gives
what it gives eagerly (same seed, so dropout draws alike; buffers such as BatchNorm's statistics
are updated alike). The classes come from the package itself: a module added to `tscript.nn`
without a row in CASES fails `test_every_exported_module_has_a_case`."""
from __future__ import annotations

from typing import List

import numpy as np
import pytest

import tscript as ts
from tscript import Tensor, nn
from tests.script.helpers import assert_same, clone
from tests.script.programs import T


def I(*shape, high: int = 5, seed: int = 0):
    """Deterministic random class indices."""
    return ts.tensor(np.random.RandomState(seed).randint(0, high, size=shape).astype(np.int64))


def P(*shape, seed: int = 0):
    """Deterministic probabilities in (0, 1)."""
    return ts.tensor(np.random.RandomState(seed).uniform(0.05, 0.95, size=shape).astype(np.float32))


# -- containers are scripted through a module that uses them -------------------------------------------------
class UsesModuleList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x + self.layers[0].bias.sum()


class UsesModuleDict(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 2)})

    def forward(self, x):
        out: List[Tensor] = []
        for name, head in self.heads.items():
            out.append(head(x))
        return self.heads["b"](x) + out[0]


class UsesParameterList(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = nn.ParameterList([nn.Parameter(ts.ones(4) * k) for k in range(3)])

    def forward(self, x):
        for s in self.scales:
            x = x * s
        return x


class UsesParameterDict(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = nn.ParameterDict({"a": nn.Parameter(ts.ones(4)), "b": nn.Parameter(ts.ones(4) * 2)})

    def forward(self, x):
        return x + self.shift["a"] * self.shift["b"]


class UsesModule(nn.Module):
    """The base class itself: a user's module."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x).relu()


class UsesCellBase(nn.RNNCellBase):
    """RNNCellBase has no forward of its own: a cell written on it."""

    def __init__(self):
        super().__init__(3, 4, True, num_chunks=1)

    def forward(self, x, h):
        return ts.tanh(x @ self.weight_ih.t() + self.bias_ih + h @ self.weight_hh.t() + self.bias_hh)


def _lstm_state(layers: int = 1, batch: int = 2, hidden: int = 4):
    return T(layers, batch, hidden, seed=1), T(layers, batch, hidden, seed=2)


# class name -> [(constructor, arguments of forward)]; a class may have several rows
def _pads(name: str, *args) -> list:
    """The three padding modules of a family (1d, 2d, 3d), each with its input."""
    inputs = {"1d": (1, 2, 5), "2d": (1, 2, 4, 4), "3d": (1, 1, 3, 3, 3)}
    return [(f"{name}{d}", [(lambda d=d: getattr(nn, f"{name}{d}")(*args), lambda shape=shape: (T(*shape),))])
            for d, shape in inputs.items()]


CASES = {
    **dict(row for family, args in [("CircularPad", (1,)), ("ConstantPad", (1, 0.5)), ("ReflectionPad", (1,)),
                                     ("ReplicationPad", (2,)), ("ZeroPad", (1,))] for row in _pads(family, *args)),
    "AdaptiveAvgPool1d": [(lambda: nn.AdaptiveAvgPool1d(3), lambda: (T(2, 4, 7),))],
    "AdaptiveAvgPool3d": [(lambda: nn.AdaptiveAvgPool3d(2), lambda: (T(1, 2, 4, 4, 4),))],
    "AdaptiveMaxPool1d": [(lambda: nn.AdaptiveMaxPool1d(3), lambda: (T(2, 4, 7),))],
    "AdaptiveMaxPool2d": [(lambda: nn.AdaptiveMaxPool2d((2, 3)), lambda: (T(1, 2, 5, 6),)),
                          (lambda: nn.AdaptiveMaxPool2d(2, return_indices=True), lambda: (T(1, 2, 5, 5),))],
    "AdaptiveMaxPool3d": [(lambda: nn.AdaptiveMaxPool3d(2), lambda: (T(1, 2, 4, 4, 4),))],
    "AvgPool3d": [(lambda: nn.AvgPool3d(2), lambda: (T(1, 2, 4, 4, 4),))],
    "Conv3d": [(lambda: nn.Conv3d(2, 3, 2), lambda: (T(1, 2, 4, 4, 4),))],
    "ConvTranspose1d": [(lambda: nn.ConvTranspose1d(3, 2, 3, stride=2), lambda: (T(1, 3, 5),))],
    "ConvTranspose3d": [(lambda: nn.ConvTranspose3d(2, 2, 2, stride=2), lambda: (T(1, 2, 3, 3, 3),))],
    "DataParallel": [(lambda: nn.DataParallel(nn.Linear(3, 2)), lambda: (T(2, 3),))],
    "InstanceNorm1d": [(lambda: nn.InstanceNorm1d(3), lambda: (T(2, 3, 5),))],
    "InstanceNorm2d": [(lambda: nn.InstanceNorm2d(3, affine=True), lambda: (T(2, 3, 4, 4),)),
                       (lambda: nn.InstanceNorm2d(3, track_running_stats=True), lambda: (T(2, 3, 4, 4),))],
    "InstanceNorm3d": [(lambda: nn.InstanceNorm3d(2), lambda: (T(2, 2, 3, 3, 3),))],
    "MaxPool3d": [(lambda: nn.MaxPool3d(2), lambda: (T(1, 2, 4, 4, 4),))],
    "PixelShuffle": [(lambda: nn.PixelShuffle(2), lambda: (T(1, 8, 3, 3),))],
    "PixelUnshuffle": [(lambda: nn.PixelUnshuffle(2), lambda: (T(1, 2, 4, 6),))],
    "SyncBatchNorm": [(lambda: nn.SyncBatchNorm(3), lambda: (T(2, 3, 4, 4),))],
    "Transformer": [(lambda: nn.Transformer(8, 2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16),
                     lambda: (T(5, 2, 8), T(4, 2, 8, seed=1)))],
    "TransformerDecoder": [(lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 2),
                            lambda: (T(4, 2, 8), T(5, 2, 8, seed=1)))],
    "TransformerDecoderLayer": [(lambda: nn.TransformerDecoderLayer(8, 2, 16), lambda: (T(4, 2, 8), T(5, 2, 8, seed=1))),
                                (lambda: nn.TransformerDecoderLayer(8, 2, 16, batch_first=True, norm_first=True),
                                 lambda: (T(2, 4, 8), T(2, 5, 8, seed=1)))],
    "Upsample": [(lambda: nn.Upsample(scale_factor=2), lambda: (T(1, 2, 3, 3),)),
                 (lambda: nn.Upsample(size=(5, 7), mode="bilinear", align_corners=False), lambda: (T(1, 2, 3, 3),))],
    "UpsamplingBilinear2d": [(lambda: nn.UpsamplingBilinear2d(scale_factor=2), lambda: (T(1, 2, 3, 3),))],
    "UpsamplingNearest2d": [(lambda: nn.UpsamplingNearest2d(size=(4, 5)), lambda: (T(1, 2, 3, 3),))],
    "AdaptiveAvgPool2d": [(lambda: nn.AdaptiveAvgPool2d((1, 2)), lambda: (T(1, 2, 4, 4),)),
                          (lambda: nn.AdaptiveAvgPool2d(1), lambda: (T(2, 3, 5, 5),))],
    "AvgPool1d": [(lambda: nn.AvgPool1d(2), lambda: (T(2, 3, 8),))],
    "AvgPool2d": [(lambda: nn.AvgPool2d(2, stride=1), lambda: (T(1, 2, 4, 4),)),
                  (lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), lambda: (T(1, 2, 5, 5),))],
    "BCELoss": [(lambda: nn.BCELoss(), lambda: (P(4, 3), P(4, 3, seed=1))),
                (lambda: nn.BCELoss(reduction="sum"), lambda: (P(4, 3), P(4, 3, seed=1)))],
    "BCEWithLogitsLoss": [(lambda: nn.BCEWithLogitsLoss(), lambda: (T(4, 3), P(4, 3))),
                          (lambda: nn.BCEWithLogitsLoss(pos_weight=ts.ones(3) * 2), lambda: (T(4, 3), P(4, 3)))],
    "BatchNorm1d": [(lambda: nn.BatchNorm1d(3), lambda: (T(4, 3),)),
                    (lambda: nn.BatchNorm1d(3, affine=False, momentum=None), lambda: (T(4, 3, 5),))],
    "BatchNorm2d": [(lambda: nn.BatchNorm2d(3), lambda: (T(2, 3, 4, 4),))],
    "BatchNorm3d": [(lambda: nn.BatchNorm3d(2), lambda: (T(2, 2, 3, 3, 3),))],
    "CELU": [(lambda: nn.CELU(0.5), lambda: (T(2, 5),))],
    "Conv1d": [(lambda: nn.Conv1d(3, 4, 3, padding=1), lambda: (T(2, 3, 8),))],
    "Conv2d": [(lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), lambda: (T(2, 3, 8, 8),)),
               (lambda: nn.Conv2d(4, 4, 3, padding="same", groups=2, bias=False), lambda: (T(1, 4, 6, 6),))],
    "ConvTranspose2d": [(lambda: nn.ConvTranspose2d(3, 2, 3, stride=2), lambda: (T(1, 3, 4, 4),)),
                        (lambda: nn.ConvTranspose2d(3, 2, 4, stride=2, padding=1, bias=False),
                         lambda: (T(1, 3, 4, 4),))],
    "CrossEntropyLoss": [(lambda: nn.CrossEntropyLoss(), lambda: (T(4, 5), I(4))),
                         (lambda: nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=2), lambda: (T(4, 5), I(4)))],
    "Dropout": [(lambda: nn.Dropout(0.3), lambda: (T(4, 5),))],
    "Dropout1d": [(lambda: nn.Dropout1d(0.3), lambda: (T(2, 4, 5),))],
    "Dropout2d": [(lambda: nn.Dropout2d(0.3), lambda: (T(2, 4, 3, 3),))],
    "Dropout3d": [(lambda: nn.Dropout3d(0.3), lambda: (T(2, 4, 2, 3, 3),))],
    "ELU": [(lambda: nn.ELU(), lambda: (T(2, 5),))],
    "Embedding": [(lambda: nn.Embedding(10, 3, padding_idx=0), lambda: (ts.tensor([[1, 0], [9, 4]]),))],
    "Flatten": [(lambda: nn.Flatten(), lambda: (T(2, 3, 4),))],
    "Fold": [(lambda: nn.Fold((4, 5), 2), lambda: (T(2, 12, 12),))],
    "GELU": [(lambda: nn.GELU(), lambda: (T(2, 5),)), (lambda: nn.GELU(approximate="tanh"), lambda: (T(2, 5),))],
    "GLU": [(lambda: nn.GLU(), lambda: (T(2, 6),))],
    "GRU": [(lambda: nn.GRU(3, 4), lambda: (T(5, 2, 3),)),
            (lambda: nn.GRU(3, 4, num_layers=2, batch_first=True, bidirectional=True),
             lambda: (T(2, 5, 3), T(4, 2, 4, seed=1)))],
    "GRUCell": [(lambda: nn.GRUCell(3, 4), lambda: (T(2, 3), T(2, 4, seed=1)))],
    "GroupNorm": [(lambda: nn.GroupNorm(2, 4), lambda: (T(2, 4, 3),))],
    "Hardsigmoid": [(lambda: nn.Hardsigmoid(), lambda: (T(2, 5) * 4,))],
    "Hardswish": [(lambda: nn.Hardswish(), lambda: (T(2, 5) * 4,))],
    "Hardtanh": [(lambda: nn.Hardtanh(), lambda: (T(2, 5),))],
    "HuberLoss": [(lambda: nn.HuberLoss(delta=0.5), lambda: (T(4, 3), T(4, 3, seed=1)))],
    "Identity": [(lambda: nn.Identity(), lambda: (T(2),))],
    "KLDivLoss": [(lambda: nn.KLDivLoss(reduction="batchmean"), lambda: (T(4, 3).log_softmax(1), P(4, 3)))],
    "L1Loss": [(lambda: nn.L1Loss(), lambda: (T(4, 3), T(4, 3, seed=1)))],
    "LSTM": [(lambda: nn.LSTM(3, 4), lambda: (T(5, 2, 3),)),
             (lambda: nn.LSTM(3, 4, num_layers=2, batch_first=True), lambda: (T(2, 5, 3), _lstm_state(2))),
             (lambda: nn.LSTM(3, 4, bidirectional=True, proj_size=2), lambda: (T(5, 2, 3),))],
    "LSTMCell": [(lambda: nn.LSTMCell(3, 4), lambda: (T(2, 3),)),
                 (lambda: nn.LSTMCell(3, 4), lambda: (T(2, 3), (T(2, 4, seed=1), T(2, 4, seed=2))))],
    "LayerNorm": [(lambda: nn.LayerNorm(4), lambda: (T(2, 4),)),
                  (lambda: nn.LayerNorm((3, 4), elementwise_affine=False), lambda: (T(2, 3, 4),))],
    "LeakyReLU": [(lambda: nn.LeakyReLU(0.1), lambda: (T(2, 5),))],
    "Linear": [(lambda: nn.Linear(3, 4), lambda: (T(2, 3),)), (lambda: nn.Linear(3, 4, bias=False),
                                                               lambda: (T(5, 2, 3),))],
    "LogSigmoid": [(lambda: nn.LogSigmoid(), lambda: (T(2, 5),))],
    "LogSoftmax": [(lambda: nn.LogSoftmax(dim=-1), lambda: (T(2, 5),))],
    "MSELoss": [(lambda: nn.MSELoss(), lambda: (T(4, 3), T(4, 3, seed=1)))],
    "MaxPool1d": [(lambda: nn.MaxPool1d(2), lambda: (T(2, 3, 8),))],
    "MaxPool2d": [(lambda: nn.MaxPool2d(2), lambda: (T(1, 2, 4, 4),)),
                  (lambda: nn.MaxPool2d(3, stride=2, padding=1), lambda: (T(1, 2, 5, 5),))],
    "Mish": [(lambda: nn.Mish(), lambda: (T(2, 5),))],
    "Module": [(UsesModule, lambda: (T(3, 4),))],
    "ModuleDict": [(UsesModuleDict, lambda: (T(3, 4),))],
    "ModuleList": [(UsesModuleList, lambda: (T(3, 4),))],
    "MultiheadAttention": [(lambda: nn.MultiheadAttention(8, 2), lambda: (T(5, 2, 8), T(5, 2, 8, seed=1),
                                                                         T(5, 2, 8, seed=2))),
                           (lambda: nn.MultiheadAttention(8, 2, batch_first=True),
                            lambda: (T(2, 5, 8), T(2, 5, 8), T(2, 5, 8)))],
    "NLLLoss": [(lambda: nn.NLLLoss(), lambda: (T(4, 5).log_softmax(1), I(4)))],
    "PReLU": [(lambda: nn.PReLU(), lambda: (T(2, 5),)), (lambda: nn.PReLU(3), lambda: (T(2, 3, 4),))],
    "ParameterDict": [(UsesParameterDict, lambda: (T(3, 4),))],
    "ParameterList": [(UsesParameterList, lambda: (T(3, 4),))],
    "RMSNorm": [(lambda: nn.RMSNorm(4), lambda: (T(2, 4),))],
    "RNN": [(lambda: nn.RNN(3, 4), lambda: (T(5, 2, 3),)),
            (lambda: nn.RNN(3, 4, nonlinearity="relu", num_layers=2), lambda: (T(5, 3), T(2, 4, seed=1)))],
    "RNNBase": [(lambda: nn.RNNBase("GRU", 3, 4), lambda: (T(5, 2, 3),))],
    "RNNCell": [(lambda: nn.RNNCell(3, 4), lambda: (T(2, 3),))],
    "RNNCellBase": [(UsesCellBase, lambda: (T(2, 3), T(2, 4, seed=1)))],
    "ReLU": [(lambda: nn.ReLU(), lambda: (T(2, 5),)), (lambda: nn.ReLU(inplace=True), lambda: (T(2, 5),))],
    "ReLU6": [(lambda: nn.ReLU6(), lambda: (T(2, 5) * 5,)), (lambda: nn.ReLU6(inplace=True), lambda: (T(2, 5) * 5,))],
    "SELU": [(lambda: nn.SELU(), lambda: (T(2, 5),))],
    "Sequential": [(lambda: nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)), lambda: (T(2, 3),))],
    "SiLU": [(lambda: nn.SiLU(), lambda: (T(2, 5),))],
    "Sigmoid": [(lambda: nn.Sigmoid(), lambda: (T(2, 5),))],
    "SmoothL1Loss": [(lambda: nn.SmoothL1Loss(beta=0.5), lambda: (T(4, 3), T(4, 3, seed=1)))],
    "Softmax": [(lambda: nn.Softmax(dim=1), lambda: (T(2, 5),))],
    "Softmin": [(lambda: nn.Softmin(dim=1), lambda: (T(2, 5),))],
    "Softplus": [(lambda: nn.Softplus(), lambda: (T(2, 5),))],
    "Softsign": [(lambda: nn.Softsign(), lambda: (T(2, 5),))],
    "Tanh": [(lambda: nn.Tanh(), lambda: (T(2, 5),))],
    "Tanhshrink": [(lambda: nn.Tanhshrink(), lambda: (T(2, 5),))],
    "Threshold": [(lambda: nn.Threshold(0.1, 20.0), lambda: (T(2, 5),))],
    "TransformerEncoder": [(lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1), 2),
                            lambda: (T(5, 2, 8),))],
    "TransformerEncoderLayer": [(lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1), lambda: (T(5, 2, 8),)),
                                (lambda: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True,
                                                                    activation="gelu"),
                                 lambda: (T(2, 5, 8),))],
    "Unflatten": [(lambda: nn.Unflatten(1, (2, 3)), lambda: (T(4, 6),))],
    "Unfold": [(lambda: nn.Unfold(2), lambda: (T(2, 3, 4, 5),))],
}


def _exported_modules() -> list:
    return sorted(name for name, obj in vars(nn).items()
                  if isinstance(obj, type) and issubclass(obj, nn.Module) and not name.startswith("_"))


def _rows() -> list:
    return [pytest.param(name, k, id=f"{name}-{k}" if len(CASES[name]) > 1 else name)
            for name in _exported_modules() if name in CASES for k in range(len(CASES[name]))]


def test_every_exported_module_has_a_case():
    missing = [name for name in _exported_modules() if name not in CASES]
    assert not missing, (f"tscript.nn exports {', '.join(missing)} without a row in CASES of {__file__}: add one "
                         f"(typical constructor arguments and forward inputs) so that the module is scripted and "
                         f"compared with eager")


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("name, k", _rows())
def test_module_scripts_like_eager(name, k, training):
    factory, inputs = CASES[name][k]
    ts.manual_seed(0)
    eager = factory().train(training)
    ts.manual_seed(0)
    module = factory().train(training)
    scripted = ts.jit.script(module)
    args = inputs()
    ts.manual_seed(1)
    expected = eager(*clone(args))
    ts.manual_seed(1)
    assert_same(scripted(*clone(args)), expected)
    for (buffer, a), b in zip(eager.named_buffers(), module.buffers()):  # e.g. BatchNorm's statistics
        assert_same(b, a, buffer)
