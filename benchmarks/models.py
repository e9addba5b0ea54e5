"""Real model architectures, timed against PyTorch and ONNX Runtime: ResNet-18, MobileNetV2,
SqueezeNet 1.1, the DCGAN generator and discriminator (batch 1 and 8; 3x224x224 images for the
classifiers, a 100-d latent and 3x64x64 images for DCGAN), a nanoGPT-style GPT (4 layers, 256 wide,
4 heads, vocab 1000, 128 tokens), two TransformerEncoderLayer(256, 4, 1024, batch_first) at 8x128
and an LSTM language model (Embedding 1000x256, 2-layer LSTM 256, Linear) at 35x20 tokens.

The models are written once, in the style torchvision and pytorch/examples use, against a library
`lib` (`_architectures`): built with `lib = tscript` they are the models under test, and with
`lib = torch` (when PyTorch is installed) structurally identical twins that get a copy of the tscript
state dict, so every anchor computes with the very same weights. Each model is built in eval mode
from a fixed seed (batch norm running statistics and affine parameters set to non-trivial values so
that folding them into convolutions is checked too).

Variants of each case (every one warmed up; the harness interleaves them, see harness.py):
    ts.compiled    tscript.jit.compile(model, example)
    ts.runtime     tscript.jit.save of that, then tscript_runtime.load(path).run(x) in this process
    ts.eager       the tscript model under tscript.no_grad()
    torch          PyTorch eager under torch.no_grad()                                  [anchor]
    torchscript    torch.jit.trace + torch.jit.freeze + torch.jit.optimize_for_inference [anchor]
    torch.compile  torch.compile(model), default (inductor) backend                     [anchor]
    onnxruntime    torch.onnx.export of the twin, run by onnxruntime on the CPU         [anchor]
    ts.onnx        that very .onnx file read by tscript.onnx.load and compiled (tscript and ONNX
                   Runtime on the SAME file; needs torch and onnx)
Anchors that are not installed, or fail on a model, are skipped and named in the output; without
PyTorch the suite runs the tscript variants alone and checks them against tscript eager.

Before timing, each variant's output is checked against PyTorch eager (tscript eager without torch):
relative error = max |out - ref| / max |ref| must be <= 1e-4, else the time gets a `!` and the error
is printed. The table gives medians, then ts/anchor = min(ts.compiled, ts.runtime) / the fastest
anchor (below 1: tscript is faster), and which tscript variants ran the whole graph in one native call.

    python -m benchmarks models
    TSCRIPT_BENCH_MODELS=resnet18,gpt python -m benchmarks models     # some models only
    TSCRIPT_BENCH_MODELS_BUDGET=4 python -m benchmarks models         # seconds per case (default 2)

Then the training steps (models_training.py: a small CNN with train-mode batch norm, this GPT), compiled
with backward=True against PyTorch eager and torch.compile; keys cnn_train and gpt_train:
    TSCRIPT_BENCH_MODELS=gpt_train,cnn_train python -m benchmarks models
"""
import contextlib
import io
import logging
import math
import os
import shutil
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable

import numpy as np

import tscript as ts
import tscript_runtime

from . import harness
from .harness import Case, run_case, torch

try:
    import onnxruntime
except ImportError:  # an optional anchor
    onnxruntime = None

TOLERANCE = 1e-4
BUDGET = float(os.environ.get("TSCRIPT_BENCH_MODELS_BUDGET", "2"))
WARM = 0.1  # seconds of untimed calls before each sample here (harness.WARM is 10 ms; see _time)
TS_VARIANTS = ("ts.compiled", "ts.runtime", "ts.eager", "ts.onnx")
ANCHORS = ("torch", "torchscript", "torch.compile", "onnxruntime")


# -- the architectures, written once for tscript and for torch ---------------------------------------

def _architectures(lib) -> SimpleNamespace:
    """The model classes, built on `lib.nn` (lib = tscript, or torch for the twins)."""
    nn, F = lib.nn, lib.nn.functional

    # ResNet-18 (torchvision's layout: 7x7 stem, four stages of two BasicBlocks, avg pool, fc)
    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample

        def forward(self, x):
            shortcut = x if self.downsample is None else self.downsample(x)
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            y += shortcut
            return self.relu(y)

    class ResNet18(nn.Module):
        def __init__(self, num_classes=1000):
            super().__init__()
            self.inplanes = 64
            self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            self.layer1 = self._stage(64, 2)
            self.layer2 = self._stage(128, 2, stride=2)
            self.layer3 = self._stage(256, 2, stride=2)
            self.layer4 = self._stage(512, 2, stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

        def _stage(self, planes, blocks, stride=1):
            downsample = None
            if stride != 1 or self.inplanes != planes:
                downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride=stride, bias=False),
                                           nn.BatchNorm2d(planes))
            layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
            self.inplanes = planes
            layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            x = lib.flatten(self.avgpool(x), 1)
            return self.fc(x)

    # MobileNetV2 (inverted residuals: 1x1 expand, 3x3 depthwise, 1x1 linear projection; ReLU6)
    def conv_bn_relu6(cin, cout, kernel=3, stride=1, groups=1):
        return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand_ratio):
            super().__init__()
            hidden = int(round(cin * expand_ratio))
            self.use_res_connect = stride == 1 and cin == cout
            layers = [conv_bn_relu6(cin, hidden, kernel=1)] if expand_ratio != 1 else []
            layers += [conv_bn_relu6(hidden, hidden, stride=stride, groups=hidden),
                       nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
            self.conv = nn.Sequential(*layers)

        def forward(self, x):
            return x + self.conv(x) if self.use_res_connect else self.conv(x)

    class MobileNetV2(nn.Module):
        # expansion t, output channels c, repeats n, first stride s
        SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                    (6, 320, 1, 1))

        def __init__(self, num_classes=1000, dropout=0.2):
            super().__init__()
            cin, last = 32, 1280
            features = [conv_bn_relu6(3, cin, stride=2)]
            for t, c, n, s in self.SETTINGS:
                for i in range(n):
                    features.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                    cin = c
            features.append(conv_bn_relu6(cin, last, kernel=1))
            self.features = nn.Sequential(*features)
            self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(last, num_classes))
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out")
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.zeros_(m.bias)

        def forward(self, x):
            x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
            return self.classifier(lib.flatten(x, 1))

    # SqueezeNet 1.1 (fire modules: squeeze 1x1, then 1x1 and 3x3 expands concatenated)
    class Fire(nn.Module):
        def __init__(self, cin, squeeze, expand1x1, expand3x3):
            super().__init__()
            self.squeeze = nn.Conv2d(cin, squeeze, 1)
            self.squeeze_activation = nn.ReLU(inplace=True)
            self.expand1x1 = nn.Conv2d(squeeze, expand1x1, 1)
            self.expand1x1_activation = nn.ReLU(inplace=True)
            self.expand3x3 = nn.Conv2d(squeeze, expand3x3, 3, padding=1)
            self.expand3x3_activation = nn.ReLU(inplace=True)

        def forward(self, x):
            s = self.squeeze_activation(self.squeeze(x))
            return lib.cat([self.expand1x1_activation(self.expand1x1(s)),
                            self.expand3x3_activation(self.expand3x3(s))], 1)

    class SqueezeNet11(nn.Module):
        def __init__(self, num_classes=1000):
            super().__init__()
            pool = lambda: nn.MaxPool2d(3, stride=2, ceil_mode=True)  # noqa: E731
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, 3, stride=2), nn.ReLU(inplace=True), pool(),
                Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(),
                Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(),
                Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256))
            final_conv = nn.Conv2d(512, num_classes, 1)
            self.classifier = nn.Sequential(nn.Dropout(p=0.5), final_conv, nn.ReLU(inplace=True),
                                            nn.AdaptiveAvgPool2d((1, 1)))
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    if m is final_conv:
                        nn.init.normal_(m.weight, mean=0.0, std=0.01)
                    else:
                        nn.init.kaiming_uniform_(m.weight)
                    nn.init.constant_(m.bias, 0)

        def forward(self, x):
            return lib.flatten(self.classifier(self.features(x)), 1)

    # DCGAN (pytorch/examples: 64x64 images, nz=100, ngf=ndf=64, nc=3)
    def dcgan_init(m):
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
            nn.init.normal_(m.weight, 0.0, 0.02)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.normal_(m.weight, 1.0, 0.02)
            nn.init.zeros_(m.bias)

    class Generator(nn.Module):
        def __init__(self, nz=100, ngf=64, nc=3):
            super().__init__()

            def up(cin, cout, stride, padding):  # 4x4 transposed conv, BN, ReLU
                return [nn.ConvTranspose2d(cin, cout, 4, stride, padding, bias=False), nn.BatchNorm2d(cout),
                        nn.ReLU(True)]
            self.main = nn.Sequential(*up(nz, ngf * 8, 1, 0), *up(ngf * 8, ngf * 4, 2, 1), *up(ngf * 4, ngf * 2, 2, 1),
                                      *up(ngf * 2, ngf, 2, 1), nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
                                      nn.Tanh())
            self.apply(dcgan_init)

        def forward(self, z):
            return self.main(z)

    class Discriminator(nn.Module):
        def __init__(self, ndf=64, nc=3):
            super().__init__()

            def down(cin, cout):  # 4x4 stride-2 conv, BN, LeakyReLU
                return [nn.Conv2d(cin, cout, 4, 2, 1, bias=False), nn.BatchNorm2d(cout),
                        nn.LeakyReLU(0.2, inplace=True)]
            self.main = nn.Sequential(nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                                      *down(ndf, ndf * 2), *down(ndf * 2, ndf * 4), *down(ndf * 4, ndf * 8),
                                      nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid())
            self.apply(dcgan_init)

        def forward(self, image):
            return self.main(image).view(-1, 1).squeeze(1)

    # the small CNN of the training row (models_training.py): two conv-bn-relu-pool stages, a linear classifier
    class SmallCNN(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()

            def stage(cin, cout):
                return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                        nn.MaxPool2d(2)]
            self.features = nn.Sequential(*stage(3, 32), *stage(32, 64))
            self.classifier = nn.Linear(64 * 8 * 8, num_classes)

        def forward(self, x):
            return self.classifier(lib.flatten(self.features(x), 1))

    # GPT (nanoGPT's shape: learned positions, pre-LayerNorm blocks, masked-softmax attention, tied head)
    class CausalSelfAttention(nn.Module):
        def __init__(self, n_embd, n_head, block_size, dropout):
            super().__init__()
            self.n_head, self.n_embd = n_head, n_embd
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.attn_dropout = nn.Dropout(dropout)
            self.resid_dropout = nn.Dropout(dropout)
            self.register_buffer("bias", lib.tril(lib.ones(block_size, block_size)).view(1, 1, block_size, block_size))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, heads, T, head size)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = self.attn_dropout(F.softmax(att, dim=-1))
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self, n_embd, dropout):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, n_embd, n_head, block_size, dropout):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention(n_embd, n_head, block_size, dropout)
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = MLP(n_embd, dropout)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, vocab_size=1000, block_size=128, n_layer=4, n_head=4, n_embd=256, dropout=0.1):
            super().__init__()
            self.block_size = block_size
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab_size, n_embd), wpe=nn.Embedding(block_size, n_embd), drop=nn.Dropout(dropout),
                h=nn.ModuleList([Block(n_embd, n_head, block_size, dropout) for _ in range(n_layer)]),
                ln_f=nn.LayerNorm(n_embd)))
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, mean=0.0, std=0.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)
            for name, p in self.named_parameters():  # residual projections, scaled by depth
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

        def forward(self, idx):
            b, t = idx.size()
            pos = lib.arange(0, t, dtype=lib.long, device=idx.device)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for block in self.transformer.h:
                x = block(x)
            return self.lm_head(self.transformer.ln_f(x))

    class Encoder(nn.Module):
        def __init__(self, d_model=256, nhead=4, dim_feedforward=1024, layers=2):
            super().__init__()
            self.layers = nn.ModuleList([nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, batch_first=True)
                                         for _ in range(layers)])

        def forward(self, src):
            for layer in self.layers:
                src = layer(src)
            return src

    # word-level LSTM language model (pytorch/examples word_language_model, sequence first)
    class LSTMLanguageModel(nn.Module):
        def __init__(self, ntoken=1000, ninp=256, nhid=256, nlayers=2, dropout=0.2):
            super().__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

        def forward(self, tokens):
            output, _ = self.rnn(self.drop(self.encoder(tokens)))  # zero initial state
            decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1)

    return SimpleNamespace(ResNet18=ResNet18, MobileNetV2=MobileNetV2, SqueezeNet11=SqueezeNet11, Generator=Generator,
                           Discriminator=Discriminator, GPT=GPT, Encoder=Encoder, LSTMLanguageModel=LSTMLanguageModel,
                           SmallCNN=SmallCNN)


TS = _architectures(ts)
if torch is not None:
    TWINS = _architectures(torch)  # the torch twins: the same classes on torch.nn
else:
    TWINS = None


# -- the cases -------------------------------------------------------------------------------------

@dataclass
class Spec:
    name: str
    key: str             # for TSCRIPT_BENCH_MODELS
    cls: str             # class name in TS / TWINS
    shape: tuple         # input shape
    tokens: int = 0      # > 0: int64 token ids below this, else float32 normal

    def example(self) -> np.ndarray:
        rng = np.random.default_rng(1)
        if self.tokens:
            return rng.integers(0, self.tokens, self.shape, dtype=np.int64)
        return rng.standard_normal(self.shape, dtype=np.float32)


def _specs() -> list[Spec]:
    specs = []
    for b in (1, 8):
        specs += [Spec(f"ResNet-18, {b}x3x224x224", "resnet18", "ResNet18", (b, 3, 224, 224)),
                  Spec(f"MobileNetV2, {b}x3x224x224", "mobilenet_v2", "MobileNetV2", (b, 3, 224, 224)),
                  Spec(f"SqueezeNet 1.1, {b}x3x224x224", "squeezenet1_1", "SqueezeNet11", (b, 3, 224, 224)),
                  Spec(f"DCGAN generator, {b}x100x1x1", "dcgan_g", "Generator", (b, 100, 1, 1)),
                  Spec(f"DCGAN discriminator, {b}x3x64x64", "dcgan_d", "Discriminator", (b, 3, 64, 64))]
    specs += [Spec("GPT 4x256, 1x128 tokens", "gpt", "GPT", (1, 128), tokens=1000),
              Spec("GPT 4x256, 8x128 tokens", "gpt", "GPT", (8, 128), tokens=1000),
              Spec("2 x TransformerEncoderLayer, 8x128x256", "transformer", "Encoder", (8, 128, 256)),
              Spec("LSTM LM, 35x20 tokens", "lstm", "LSTMLanguageModel", (35, 20), tokens=1000)]
    order = ["resnet18", "mobilenet_v2", "squeezenet1_1", "dcgan_g", "dcgan_d", "gpt", "transformer", "lstm"]
    return sorted(specs, key=lambda s: order.index(s.key))  # stable: batch 1 before 8


def _build(spec: Spec):
    """The tscript model in eval mode, from seed 0; batch norms get running statistics and affine
    parameters of a trained network's kind (a fresh one's are 0 and 1)."""
    ts.manual_seed(0)
    model = getattr(TS, spec.cls)()
    rng = np.random.default_rng(0)
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    for name, m in model.named_modules():
        if isinstance(m, ts.nn.BatchNorm2d):
            c = m.num_features
            state[f"{name}.running_mean"] = rng.normal(0, 0.1, c).astype(np.float32)
            state[f"{name}.running_var"] = rng.uniform(0.5, 1.5, c).astype(np.float32)
            state[f"{name}.weight"] = rng.uniform(0.5, 1.5, c).astype(np.float32)
            state[f"{name}.bias"] = rng.normal(0, 0.1, c).astype(np.float32)
    model.load_state_dict({k: ts.from_numpy(v) for k, v in state.items()})
    return model.eval()


def _twin(spec: Spec, model):
    """The torch twin holding a copy of the tscript model's state dict."""
    torch.manual_seed(0)
    twin = getattr(TWINS, spec.cls)()
    twin.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in model.state_dict().items()})
    return twin.eval()


@dataclass
class Result:
    spec: Spec
    medians: dict = field(default_factory=dict)     # variant -> seconds
    errors: dict = field(default_factory=dict)      # variant -> relative error against the reference
    reference: str = ""
    one_call: dict = field(default_factory=dict)    # ts.compiled / ts.runtime -> bool
    why_not: str = ""                               # why tscript did not run in one native call
    skipped: dict = field(default_factory=dict)     # variant -> reason


def _numpy(out) -> np.ndarray:
    if isinstance(out, (list, tuple)):
        out = out[0]
    if hasattr(out, "detach"):
        out = out.detach()
    return np.asarray(out.numpy() if hasattr(out, "numpy") else out)


def _relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    if out.shape != ref.shape:
        return math.inf
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    diff = np.abs(out.astype(np.float64) - ref.astype(np.float64))
    if not np.all(np.isfinite(out) == np.isfinite(ref)):
        return math.inf
    return float(np.max(diff[np.isfinite(diff)], initial=0.0)) / max(scale, 1e-30)


def _no_grad(lib, fn: Callable) -> Callable:
    def run():
        with lib.no_grad():
            return fn()
    return run


def _one_native_call(executable, call: Callable) -> bool:
    """Run `call` once and say whether the executable's whole-graph entry served it (a signature the
    entry cannot plan runs in the executor instead)."""
    entry = executable.entry
    if entry is None:
        return False
    served, run = [], entry.run

    def spy(args):
        out = run(args)
        served.append(out is not None)
        return out
    entry.run = spy
    try:
        call()
    finally:
        del entry.run
    return bool(served) and all(served)


@contextlib.contextmanager
def _quiet():
    """Silence exporters' and compilers' chatter (stdout, stderr and warnings)."""
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)  # torch.onnx logs through handlers that hold the real stderr
        try:
            yield
        finally:
            logging.disable(logging.NOTSET)


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:160]}{'...' if len(text) > 160 else ''}"


def _torch_variants(spec: Spec, model, xn: np.ndarray, tmp: str, skipped: dict) -> dict:
    """PyTorch eager, TorchScript, torch.compile and ONNX Runtime on the twin (those that work)."""
    if torch is None:
        return {}
    twin = _twin(spec, model)
    xt = torch.from_numpy(xn.copy())
    variants = {"torch": _no_grad(torch, lambda: twin(xt))}
    try:
        with _quiet(), torch.no_grad():
            traced = torch.jit.trace(twin, (xt,))
            scripted = torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))
        variants["torchscript"] = _no_grad(torch, lambda: scripted(xt))
    except Exception as e:
        skipped["torchscript"] = _short(e)
    try:
        compiled = torch.compile(twin)
        t0 = time.perf_counter()
        with _quiet(), torch.no_grad():
            compiled(xt)  # compiles here
        print(f"    torch.compile: compiled in {time.perf_counter() - t0:.1f} s", flush=True)
        variants["torch.compile"] = _no_grad(torch, lambda: compiled(xt))
    except Exception as e:
        skipped["torch.compile"] = _short(e)
    if onnxruntime is None:
        skipped["onnxruntime"] = "onnxruntime is not installed"
    else:
        try:
            variants["onnxruntime"] = _onnx_variant(twin, xt, xn, os.path.join(tmp, "model.onnx"))
        except Exception as e:
            skipped["onnxruntime"] = _short(e)
    if os.path.exists(os.path.join(tmp, "model.onnx")):
        try:
            variants["ts.onnx"] = _tscript_onnx_variant(os.path.join(tmp, "model.onnx"), xn)
        except Exception as e:
            skipped["ts.onnx"] = _short(e)
    return variants


def _tscript_onnx_variant(path: str, xn: np.ndarray) -> Callable:
    """The .onnx file onnxruntime runs, imported by tscript and compiled for this input."""
    x = ts.from_numpy(xn.copy())
    t0 = time.perf_counter()
    with _quiet():
        compiled = ts.jit.compile(ts.onnx.load(path), (x,))
    print(f"    tscript from onnx: imported and compiled in {time.perf_counter() - t0:.1f} s", flush=True)
    return lambda: compiled(x)


def _onnx_variant(twin, xt, xn: np.ndarray, path: str) -> Callable:
    """Export the twin (the dynamo exporter, else the TorchScript-based one) and run it in an
    onnxruntime CPU session with as many threads as this process may use."""
    failures = []
    for dynamo in (True, False):
        try:
            with _quiet(), torch.no_grad():
                torch.onnx.export(twin, (xt,), path, input_names=["x"], output_names=["y"], dynamo=dynamo)
            break
        except Exception as e:
            failures.append(f"dynamo={dynamo}: {_short(e)}")
    else:
        raise RuntimeError("torch.onnx.export failed: " + "; ".join(failures))
    if failures:
        print(f"    onnx: the dynamo exporter failed, the TorchScript-based one was used ({failures[0]})")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = len(os.sched_getaffinity(0))
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    feed = {name: xn}
    return lambda: session.run(None, feed)


def _measure(spec: Spec) -> Result:
    result = Result(spec)
    tmp = tempfile.mkdtemp(prefix="tscript-models-")
    try:
        model = _build(spec)
        xn = spec.example()
        x = ts.from_numpy(xn)
        t0 = time.perf_counter()
        compiled = ts.jit.compile(model, (x,))
        path = os.path.join(tmp, "model.tsm")
        ts.jit.save(compiled, path)
        loaded = tscript_runtime.load(path)
        print(f"    tscript: compiled, saved and loaded in {time.perf_counter() - t0:.1f} s", flush=True)
        variants = {"ts.compiled": lambda: compiled(x), "ts.runtime": lambda: loaded.run(xn),
                    "ts.eager": _no_grad(ts, lambda: model(x))}
        variants.update(_torch_variants(spec, model, xn, tmp, result.skipped))

        executables = {"ts.compiled": compiled.executable, "ts.runtime": loaded.executables["forward"]}
        result.one_call = {k: _one_native_call(e, variants[k]) for k, e in executables.items()}
        if not all(result.one_call.values()):
            result.why_not = compiled.explain().splitlines()[0]

        # check every variant against the reference before timing it
        result.reference = "torch" if "torch" in variants else "ts.eager"
        ref = _numpy(variants[result.reference]())
        for k in list(variants):
            try:
                result.errors[k] = _relative_error(_numpy(variants[k]()), ref)
            except Exception as e:
                result.skipped[k] = f"failed when run: {_short(e)}"
                del variants[k]
        result.medians = _time(Case(spec.name, variants))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def _time(case: Case) -> dict:
    """The harness's interleaved medians, with WARM seconds of untimed calls before each sample
    (at least two calls). harness.WARM (10 ms) covers PyTorch's OpenMP spin (~8 ms) and tscript's
    worker (2 ms). onnxruntime's pool spins longer: a call right after its calls took twice its time, one
    40 ms later 1.4x, 100 ms later 1.1x (an LSTM LM on 2 cores), so these models get 100 ms."""
    saved, harness.WARM = harness.WARM, max(harness.WARM, WARM)
    try:
        return run_case(case, BUDGET)
    finally:
        harness.WARM = saved


# -- the table -------------------------------------------------------------------------------------

COLUMNS = (*TS_VARIANTS, *ANCHORS)


def _cell(r: Result, k: str) -> str:
    if k not in r.medians:
        return "skip" if k in r.skipped else "-"
    bad = r.errors.get(k, 0.0) > TOLERANCE
    return f"{r.medians[k] * 1e3:.2f}{'!' if bad else ''}"


def _ratio(r: Result) -> str:
    ts_best = min((r.medians[k] for k in ("ts.compiled", "ts.runtime") if k in r.medians), default=None)
    anchors = {k: r.medians[k] for k in ANCHORS if k in r.medians and r.errors.get(k, 0.0) <= TOLERANCE}
    if ts_best is None or not anchors:
        return "-"
    best = min(anchors, key=anchors.get)
    return f"{ts_best / anchors[best]:.2f} ({best})"


def _one_call(r: Result) -> str:
    yes = [k[3:] for k, v in r.one_call.items() if v]
    return "+".join(yes) if yes else "no"


def _table(results: list[Result]) -> str:
    columns = [k for k in COLUMNS if any(k in r.medians or k in r.skipped for r in results)]
    head = (f"{'model, input':40s}" + "".join(f"{k:>14s}" for k in columns) + f"  {'ts/best anchor':24s}"
            + f"{'one native call':18s}{'worst err':>10s}")
    lines = [head, "-" * len(head)]
    for r in results:
        worst = max((v for k, v in r.errors.items() if k in r.medians), default=0.0)
        lines.append(f"{r.spec.name:40s}" + "".join(f"{_cell(r, k):>14s}" for k in columns)
                     + f"  {_ratio(r):24s}{_one_call(r):18s}{worst:>10.1e}")
    return "\n".join(lines)


def _notes(results: list[Result]) -> list[str]:
    notes = []
    for r in results:
        for k, err in r.errors.items():
            if err > TOLERANCE:
                notes.append(f"! {r.spec.name}: {k} disagrees with {r.reference}: relative error {err:.2e} "
                             f"> {TOLERANCE:g}")
        if r.why_not:
            notes.append(f"{r.spec.name}: not one native call: {r.why_not}")
        for k, why in r.skipped.items():
            if k != "onnxruntime" or onnxruntime is not None:
                notes.append(f"{r.spec.name}: {k} skipped: {why}")
    return notes


def cases() -> list:
    """Measure every model (inference, then the training steps of models_training.py) and print the
    tables here (their columns are not the harness report's); no harness cases."""
    from . import models_training  # here, not at the top: it builds on this module's models and checks
    wanted = {w.strip() for w in os.environ.get("TSCRIPT_BENCH_MODELS", "").split(",") if w.strip()}
    specs = [s for s in _specs() if not wanted or s.key in wanted]
    training = models_training.selected(wanted)
    anchors = ", ".join(f"{n} {v}" for n, v in (("torch", getattr(torch, "__version__", None)),
                                                   ("onnxruntime", getattr(onnxruntime, "__version__", None))) if v)
    print(f"\n[models] {len(specs)} cases, {len(training)} training steps; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores; anchors: {anchors or 'none installed (tscript variants only)'}")
    if specs:
        _inference(specs)
    if training:
        models_training.run(training)
    return []


def _inference(specs: list[Spec]) -> None:
    """Measure the inference rows and print their table."""
    results, failed = [], []
    for spec in specs:
        print(f"  {spec.name}", flush=True)
        try:
            results.append(_measure(spec))
        except Exception as e:  # a model tscript cannot run: say so, go on with the others
            failed.append(f"{spec.name}: FAILED: {_short(e)}")
            traceback.print_exc()
    print(f"\n[models] medians of interleaved samples, ms per call (budget {BUDGET:g} s per case; load average "
          f"{os.getloadavg()[0]:.2f} now; "
          f"'!' = output off the reference by more than {TOLERANCE:g} relative; 'skip' = see below)")
    print(_table(results))
    print("ts/best anchor = min(ts.compiled, ts.runtime) / fastest anchor whose output agrees (< 1: tscript faster)")
    print("one native call: the tscript variants whose whole graph ran as one native call (executable.entry)")
    for line in failed + _notes(results):
        print(line)
    if onnxruntime is None:
        print("onnxruntime is not installed: no onnxruntime column")
    if torch is None:
        print("PyTorch is not installed: tscript variants only, checked against tscript eager")
