"""Models written the way public model code is written (nanoGPT, minGPT, pytorch/examples,
torchvision), in our own words, with the constructs that code uses and TorchScript-style scripting
used to refuse: names from closures, @dataclass configs, `x.device`, lambdas over submodules, LSTM
state tuples without annotations, loop variables read after the loop, device checks that fold,
`super()`, properties, NamedTuple results, `or` on Optional values. They live in a module of their
own because scripting reads their source (and without `from __future__ import annotations`: the
closure test needs annotations Python evaluates, as it does in the model code it stands for)."""
import math
from dataclasses import dataclass
from typing import List, NamedTuple, Optional, Tuple

import tscript as torch
import tscript.nn as nn
import tscript.nn.functional as F


# -- a GPT configured by a dataclass (nanoGPT's layout) -------------------------------------------------
@dataclass
class TinyConfig:
    vocab: int = 40
    context: int = 12
    layers: int = 2
    heads: int = 2
    width: int = 16
    dropout: float = 0.1


class SelfAttention(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        self.heads, self.width = config.heads, config.width
        self.qkv = nn.Linear(config.width, 3 * config.width)
        self.out = nn.Linear(config.width, config.width)
        self.drop = nn.Dropout(config.dropout)
        self.register_buffer("causal", torch.tril(torch.ones(config.context, config.context))
                             .view(1, 1, config.context, config.context))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(self.width, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        scores = scores.masked_fill(self.causal[:, :, :T, :T] == 0, float("-inf"))
        y = self.drop(F.softmax(scores, dim=-1)) @ v
        return self.drop(self.out(y.transpose(1, 2).contiguous().view(B, T, C)))


class TinyGPT(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        self.config = config
        self.parts = nn.ModuleDict(dict(
            tokens=nn.Embedding(config.vocab, config.width), places=nn.Embedding(config.context, config.width),
            blocks=nn.ModuleList([SelfAttention(config) for _ in range(config.layers)]),
            norm=nn.LayerNorm(config.width)))
        self.head = nn.Linear(config.width, config.vocab, bias=False)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.config.context, f"a sequence of {t} tokens is longer than the context"
        places = torch.arange(0, t, dtype=torch.long, device=device)
        x = self.parts.tokens(idx) + self.parts.places(places)
        for block in self.parts.blocks:
            x = x + block(x)
        x = self.parts.norm(x)
        if targets is not None:
            logits = self.head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.head(x[:, [-1], :])
            loss = None
        return logits, loss


# -- an MLP stored as a lambda over a ModuleDict (minGPT's blocks) ------------------------------------------------
class LambdaBlock(nn.Module):
    def __init__(self, width: int = 8):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.ffn = nn.ModuleDict(dict(up=nn.Linear(width, 2 * width), act=nn.GELU(), down=nn.Linear(2 * width, width)))
        ffn = self.ffn
        self.mlp = lambda x: ffn.down(ffn.act(ffn.up(x)))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


# -- an RNN language model whose hidden state is a tuple for an LSTM, unannotated ------------------------
class WordModel(nn.Module):
    def __init__(self, kind: str, vocab: int = 20, width: int = 6, hidden: int = 8, layers: int = 2):
        super(WordModel, self).__init__()
        self.kind, self.hidden, self.layers = kind, hidden, layers
        self.embed = nn.Embedding(vocab, width)
        self.drop = nn.Dropout(0.2)
        self.rnn = getattr(nn, kind)(width, hidden, layers, dropout=0.2)
        self.decode = nn.Linear(hidden, vocab)

    def forward(self, tokens, state):
        out, state = self.rnn(self.drop(self.embed(tokens)), state)
        return F.log_softmax(self.decode(self.drop(out)).view(-1, self.decode.out_features), dim=1), state

    def start(self, batch: int):
        weight = next(self.parameters())
        if self.kind == "LSTM":
            return weight.new_zeros(self.layers, batch, self.hidden), weight.new_zeros(self.layers, batch, self.hidden)
        return weight.new_zeros(self.layers, batch, self.hidden)


# -- a time series model: LSTM cells stepped in Python loops ------------------------------------------------------
class Forecaster(nn.Module):
    def __init__(self, hidden: int = 7):
        super().__init__()
        self.hidden = hidden
        self.cell = nn.LSTMCell(1, hidden)
        self.proj = nn.Linear(hidden, 1)

    def forward(self, series, ahead=0):
        outputs = []
        h = torch.zeros(series.size(0), self.hidden, dtype=torch.double)
        c = torch.zeros(series.size(0), self.hidden, dtype=torch.double)
        for step in series.split(1, dim=1):
            h, c = self.cell(step, (h, c))
            guess = self.proj(h)
            outputs += [guess]
        for i in range(ahead):  # `guess` is the last value of the loop above
            h, c = self.cell(guess, (h, c))
            guess = self.proj(h)
            outputs += [guess]
        return torch.cat(outputs, dim=1)


# -- a generator whose multi-device branch folds away (pytorch/examples' DCGAN) ---------------------------------
class Upsampler(nn.Module):
    def __init__(self, devices: int = 1):
        super().__init__()
        self.devices = devices
        self.main = nn.Sequential(nn.ConvTranspose2d(4, 3, 4, 2, 1, bias=False), nn.BatchNorm2d(3), nn.ReLU(True))

    def forward(self, z):
        if (z.is_cuda or z.is_xpu) and self.devices > 1:
            out = nn.parallel.data_parallel(self.main, z, range(self.devices))
        else:
            out = self.main(z)
        return out


# -- torchvision's layout: a block chosen at construction, _forward_impl, inheritance -------------------------
class Residual(nn.Module):
    expansion: int = 1

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(x + self.bn(self.conv(x)))


class Plain(Residual):
    def forward(self, x):
        return self.relu(super().forward(x) - x)


class Backbone(nn.Module):
    def __init__(self, block=Residual):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.body = block(4 * block.expansion)
        self.fc = nn.Linear(4, 3)

    @property
    def width(self) -> int:
        return self.fc.in_features

    def _forward_impl(self, x):
        x = self.body(self.stem(x))
        if isinstance(self.body, (Plain, nn.Identity)):
            x = x * 0.5
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, (1, 1)), 1)).view(-1, 3) + self.width

    def forward(self, x):
        return self._forward_impl(x)


# -- smaller constructs -------------------------------------------------------------------------------------------
class Split(NamedTuple):
    low: torch.Tensor
    high: torch.Tensor


def split_at(x: torch.Tensor, at: float) -> Split:
    return Split(torch.clamp(x, max=at), torch.clamp(x, min=at))


def use_split(x: torch.Tensor) -> torch.Tensor:
    parts = split_at(x, 0.5)
    return parts.high - parts.low


def optional_or(x: torch.Tensor, scale: Optional[float] = None, shape: Optional[Tuple[int, int]] = None):
    factor = scale or 2.0
    dims = shape or (x.size(0), -1)
    return x.reshape(dims) * factor


def tuple_or_list(x: torch.Tensor, sizes: Optional[List[int]] = None) -> torch.Tensor:
    total = x.sum()
    for size in sizes or ():
        total = total + size
    if isinstance(sizes, (tuple, list)):
        total = total * 2
    return total


def tensor_facts(x: torch.Tensor):
    device = x.device
    same = torch.zeros(x.shape, dtype=x.dtype, device=device).to(x.device)
    wide = x.to(device, torch.float64) if x.dtype.is_floating_point else x.double()
    kept = torch.jit.annotate(List[int], [])
    kept.append(x.ndim)
    return same + x, wide, kept, x.requires_grad, x.is_cuda, device.type, "{} dims".format(x.dim())


def scripting_flag(x: torch.Tensor) -> int:
    if not torch.jit.is_scripting():
        return 0  # eagerly; scripted code folds this branch away
    return x.dim()


def spread(x: torch.Tensor) -> torch.Tensor:
    shape = (x.size(0), 2, -1)
    return x.view(*shape).sum(*(1,))


class Scaled(nn.Module):
    """A module read through a property and a method of its base class reached with super()."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    @property
    def factor(self) -> float:
        return 0.5 if self.training else 2.0

    def transform(self, x):
        return self.fc(x) * self.factor


class DoubleScaled(Scaled):
    def transform(self, x):
        return super().transform(x) + super(DoubleScaled, self).transform(x)

    def forward(self, x):
        return self.transform(x)


def make_closure_model(lib):
    """A model defined inside a function: `Tensor` and `scale` are local names of this function."""
    Tensor = lib.Tensor
    scale = 3.0

    class Local(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(4, 2)

        def forward(self, x: Tensor, bias: Optional[Tensor] = None) -> Tensor:
            y = self.fc(x) * scale
            return y if bias is None else y + bias

    return Local()


def loop_defined(x: torch.Tensor, n: int) -> torch.Tensor:
    for i in range(n):
        last = x * i
    return last


def super_outside_a_module(x: torch.Tensor) -> torch.Tensor:
    return super().forward(x)  # error


def spread_a_list(x: torch.Tensor, sizes: List[int]) -> torch.Tensor:
    return x.view(*sizes)  # error


def to_an_accelerator(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros(2, device="cuda") + x  # error
