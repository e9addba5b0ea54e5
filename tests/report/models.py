"""Small models the report tests compile: a traced MLP, a scripted model with If and Loop, a
ResNet-style CNN and a GPT-style language model (written for these tests)."""
from __future__ import annotations

import math

import tscript as ts
import tscript.nn as nn
import tscript.nn.functional as F


class TwoLayer(nn.Module):
    """Linear -> ReLU -> Linear -> scaled softmax."""

    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(16, 32)
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        h = self.hidden(x).relu()
        return (self.out(h) * 2 + 1).softmax(-1)


class Repeated(nn.Module):
    """A branch on the data and a loop of `steps` residual updates (scripted: both stay in the graph)."""

    def __init__(self):
        super().__init__()
        self.mix = nn.Linear(8, 8)

    def forward(self, x, steps: int):
        if bool(x.sum() > 0):
            y = self.mix(x).relu()
        else:
            y = x * 0.5
        for _ in range(steps):
            y = y + self.mix(y).tanh()
        return y


class Residual(nn.Module):
    """conv-bn-relu-conv-bn plus the input (a 1x1 conv when the width changes), then relu."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.skip = nn.Conv2d(cin, cout, 1, stride, bias=False) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        y = self.bn1(self.conv1(x)).relu()
        return (self.bn2(self.conv2(y)) + self.skip(x)).relu()


class SmallResNet(nn.Module):
    """A stem, two residual stages and a pooled linear head."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.stage1 = Residual(8, 8, 1)
        self.stage2 = Residual(8, 16, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        x = self.stage2(self.stage1(self.stem(x)))
        return self.head(self.pool(x).flatten(1))


class Attention(nn.Module):
    """Causal multi-head self-attention."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        mask = ts.triu(ts.ones(t, t, dtype=ts.bool), diagonal=1)
        weights = scores.masked_fill(mask, float("-inf")).softmax(-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(b, t, c))


class Layer(nn.Module):
    """Pre-norm transformer layer: attention and a GELU MLP, each added to the stream."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.norm2 = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class TinyGPT(nn.Module):
    """Token and position embeddings, two layers, a final norm and the vocabulary head."""

    def __init__(self, vocab: int = 50, width: int = 32, heads: int = 4, context: int = 16):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(context, width)
        self.layers = nn.ModuleList([Layer(width, heads) for _ in range(2)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx):
        x = self.tokens(idx) + self.positions(ts.arange(idx.shape[1]))
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def cases() -> dict:
    """name -> (model object to report on, example inputs); models in eval mode, seeded weights."""
    ts.manual_seed(0)
    return {
        "mlp": (TwoLayer().eval(), (ts.randn(8, 16),)),
        "script": (ts.jit.script(Repeated().eval()), (ts.randn(4, 8), 3)),
        "resnet": (SmallResNet().eval(), (ts.randn(2, 3, 16, 16),)),
        "gpt": (TinyGPT().eval(), (ts.randint(0, 50, (2, 16)),)),
    }
