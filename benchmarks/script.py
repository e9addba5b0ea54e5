"""Scripting time: `tscript.jit.script` of the models of issue 8 (an MLP, a 10-layer MLP, a CNN, an
LSTM written with an explicit time loop, a beam-search-style decoder with a `while` loop) and of
issue 19 (a GPT shaped like nanoGPT's: a config dataclass, `idx.device`, blocks in a ModuleDict),
next to `torch.jit.script` of the same source when PyTorch is installed. Targets: under 0.5 s for a
10-layer model, under 1 s for the GPT.

    python -m benchmarks script      # warm: grammar tables loaded, each source parsed once per process
    python -m benchmarks.script      # also the first call in a fresh process (imports and grammar load)
"""
import math
import subprocess
import sys
from dataclasses import dataclass

from .harness import Case, fmt_time, torch


def make_models(lib, nn, F):
    """The models, written once for tscript and for torch (`lib` is the tensor library)."""

    class MLP(nn.Module):
        def __init__(self, depth: int = 3, width: int = 64):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])

        def forward(self, x):
            for layer in self.layers:
                x = F.relu(layer(x))
            return x

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                          nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
            self.fc = nn.Linear(16 * 14 * 14, 10)

        def forward(self, x):
            return F.log_softmax(self.fc(self.features(x).flatten(1)), dim=1)

    class LSTM(nn.Module):
        def __init__(self, input_size: int = 16, hidden: int = 32):
            super().__init__()
            self.hidden = hidden
            self.ih = nn.Linear(input_size, 4 * hidden)
            self.hh = nn.Linear(hidden, 4 * hidden)

        def forward(self, seq):
            h = lib.zeros(seq.shape[1], self.hidden)
            c = lib.zeros(seq.shape[1], self.hidden)
            for t in range(seq.size(0)):
                i, f, g, o = (self.ih(seq[t]) + self.hh(h)).chunk(4, 1)
                c = lib.sigmoid(f) * c + lib.sigmoid(i) * lib.tanh(g)
                h = lib.sigmoid(o) * lib.tanh(c)
            return h

    class Beam(nn.Module):
        def __init__(self, vocab: int = 32, hidden: int = 16):
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden)
            self.proj = nn.Linear(hidden, vocab)

        def forward(self, start, max_len: int = 10):
            tokens = start.unsqueeze(1)
            scores = lib.zeros(start.shape[0])
            step = 0
            while step < max_len and bool((tokens[:, -1] != 0).any()):
                logp = F.log_softmax(self.proj(lib.tanh(self.embed(tokens[:, -1]))), dim=-1)
                best, idx = logp.topk(2, dim=-1)
                scores = scores + best[:, 0]
                tokens = lib.cat([tokens, idx[:, :1]], dim=1)
                step += 1
            return tokens, scores

    return {"mlp (3 layers)": MLP(), "mlp (10 layers)": MLP(depth=10), "cnn": CNN(), "lstm time loop": LSTM(),
            "beam search while loop": Beam(), "gpt (4 blocks)": make_gpt(lib, nn, F)}


@dataclass
class GPTConfig:
    vocab_size: int = 512
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.1


def make_gpt(lib, nn, F, config: GPTConfig = GPTConfig()):
    """A GPT as nanoGPT writes one (its classes are defined here, so their names are closure cells)."""

    class Attention(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.n_head, self.n_embd = config.n_head, config.n_embd
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd)
            self.dropout = nn.Dropout(config.dropout)
            size = config.block_size
            self.register_buffer("bias", lib.tril(lib.ones(size, size)).view(1, 1, size, size))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = F.softmax(att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")), dim=-1)
            y = (self.dropout(att) @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.dropout(self.c_proj(y))

    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(config.n_embd), nn.LayerNorm(config.n_embd)
            self.attn = Attention(config)
            self.mlp = nn.Sequential(nn.Linear(config.n_embd, 4 * config.n_embd), nn.GELU(),
                                     nn.Linear(4 * config.n_embd, config.n_embd), nn.Dropout(config.dropout))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd), wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout), h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=nn.LayerNorm(config.n_embd)))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

        def forward(self, idx, targets=None):
            device = idx.device
            b, t = idx.size()
            assert t <= self.config.block_size, f"Cannot forward sequence of length {t}"
            pos = lib.arange(0, t, dtype=lib.long, device=device)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            if targets is not None:
                logits = self.lm_head(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            else:
                logits = self.lm_head(x[:, [-1], :])
                loss = None
            return logits, loss

    return GPT(config)


def cases() -> list[Case]:
    """One case per model: scripting it (torch.jit.script beside it when available)."""
    import tscript
    import tscript.nn.functional as F
    ours = make_models(tscript, tscript.nn, F)
    theirs = make_models(torch, torch.nn, torch.nn.functional) if torch is not None else {}
    out = []
    for name, model in ours.items():
        variants = {"tscript": lambda m=model: tscript.jit.script(m)}
        if name in theirs and _torch_scripts(theirs[name]):
            variants["torch"] = lambda m=theirs[name]: torch.jit.script(m)
        out.append(Case(f"script {name}", variants, unit="ms"))
    return out


def _torch_scripts(model) -> bool:
    """Does torch.jit.script compile the twin? (TorchScript refuses some of what tscript scripts,
    e.g. a module's @dataclass config read in forward.)"""
    try:
        torch.jit.script(model)
    except Exception:  # TorchScript's errors have several classes; any of them means no anchor
        return False
    return True


_COLD = """
import sys, time
t0 = time.perf_counter()
import tscript, tscript.nn.functional as F
from benchmarks.script import make_models
model = make_models(tscript, tscript.nn, F)[sys.argv[1]]
t1 = time.perf_counter()
tscript.jit.script(model)
print(t1 - t0, time.perf_counter() - t1)
"""


def cold_start(model: str = "mlp (10 layers)") -> tuple[float, float]:
    """(import seconds, first-script seconds) of one of the models in a fresh process."""
    out = subprocess.run([sys.executable, "-c", _COLD, model], capture_output=True, text=True, check=True)
    imports, first = map(float, out.stdout.split())
    return imports, first


def main() -> None:
    from .harness import report, run_case
    results = [(case, run_case(case, 1.0)) for case in cases()]
    print(report(results))
    for model in ("mlp (10 layers)", "gpt (4 blocks)"):
        imports, first = cold_start(model)
        print(f"\nfresh process: import tscript {fmt_time(imports)}, first script of the {model} {fmt_time(first)}")


if __name__ == "__main__":
    main()
