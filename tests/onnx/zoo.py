"""The models of the ONNX tests, written once against a library `lib` (tscript, or torch for the
tests of files torch.onnx writes): an MLP with GELU, a CNN (convolutions, one grouped, batch norm in
eval mode, ReLU, max, average and global pooling, a linear head), an LSTM tagger, a
TransformerEncoderLayer and a small GPT (token and position embeddings, pre-norm blocks with causal
self-attention, tied output head). `build(lib, name)` -> (model in eval mode, example(batch))."""
import math

import numpy as np

NAMES = ["mlp", "cnn", "lstm", "transformer", "gpt"]


def _classes(lib):
    nn, F = lib.nn, lib.nn.functional

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(6, 8, num_layers=2, batch_first=True)
            self.head = nn.Linear(8, 3)

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.head(out).log_softmax(-1)

    class Attention(nn.Module):
        def __init__(self, width, heads, context):
            super().__init__()
            self.heads = heads
            self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.register_buffer("causal", lib.tril(lib.ones(context, context)).view(1, 1, context, context))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(c, dim=2)
            q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
            scores = scores.masked_fill(self.causal[:, :, :t, :t] == 0, float("-inf"))
            y = scores.softmax(-1) @ v
            return self.out(y.transpose(1, 2).contiguous().view(b, t, c))

    class Block(nn.Module):
        def __init__(self, width, heads, context):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.attn = Attention(width, heads, context)
            self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.down(F.gelu(self.up(self.norm2(x))))

    class TinyGPT(nn.Module):
        def __init__(self, vocab=40, width=16, heads=2, context=8, layers=2):
            super().__init__()
            self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(context, width)
            self.blocks = nn.ModuleList([Block(width, heads, context) for _ in range(layers)])
            self.norm = nn.LayerNorm(width)

        def forward(self, idx):
            t = idx.shape[1]
            x = self.tokens(idx) + self.positions(lib.arange(t))
            for block in self.blocks:
                x = block(x)
            return self.norm(x) @ self.tokens.weight.t()

    return Tagger, TinyGPT


def _cnn(lib):
    nn = lib.nn
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 8, 3, padding=1, groups=2), nn.ReLU(), nn.AvgPool2d(2),
                          nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(8, 5))
    rng = np.random.default_rng(0)
    bn = model[1]  # statistics and affine parameters of a trained network's kind
    with lib.no_grad():
        for t, low, high in ((bn.running_mean, -1, 1), (bn.running_var, 0.5, 2), (bn.weight, 0.5, 1.5),
                             (bn.bias, -0.5, 0.5)):
            t.copy_(lib.from_numpy(rng.uniform(low, high, 8).astype(np.float32)))
    return model


def build(lib, name: str):
    """(the model `name` built with `lib` from seed 0, in eval mode; example(batch) -> its input)."""
    lib.manual_seed(0)
    nn = lib.nn
    Tagger, TinyGPT = _classes(lib)
    rng = np.random.default_rng(1)
    floats = lambda *shape: lambda b: lib.from_numpy(rng.standard_normal((b, *shape)).astype(np.float32))  # noqa: E731
    models = {
        "mlp": (lambda: nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 4)),
                floats(10)),
        "cnn": (lambda: _cnn(lib), floats(3, 8, 8)),
        "lstm": (Tagger, floats(5, 6)),
        "transformer": (lambda: nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True),
                        floats(7, 16)),
        "gpt": (TinyGPT, lambda b: lib.from_numpy(rng.integers(0, 40, (b, 8)))),
    }
    factory, example = models[name]
    return factory().eval(), example
