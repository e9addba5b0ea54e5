"""Scripting time: `tscript.jit.script` of the models of issue 8 (an MLP, a 10-layer MLP, a CNN, an
LSTM written with an explicit time loop, a beam-search-style decoder with a `while` loop), next to
`torch.jit.script` of the same source when PyTorch is installed. Target: under 0.5 s for a
10-layer model.

    python -m benchmarks script      # warm: grammar tables loaded, each source parsed once per process
    python -m benchmarks.script      # also the first call in a fresh process (imports and grammar load)
"""
import subprocess
import sys

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
            "beam search while loop": Beam()}


def cases() -> list[Case]:
    """One case per model: scripting it (torch.jit.script beside it when available)."""
    import tscript
    import tscript.nn.functional as F
    ours = make_models(tscript, tscript.nn, F)
    theirs = make_models(torch, torch.nn, torch.nn.functional) if torch is not None else {}
    out = []
    for name, model in ours.items():
        variants = {"tscript": lambda m=model: tscript.jit.script(m)}
        if name in theirs:
            variants["torch"] = lambda m=theirs[name]: torch.jit.script(m)
        out.append(Case(f"script {name}", variants, unit="ms"))
    return out


_COLD = """
import time
t0 = time.perf_counter()
import tscript, tscript.nn.functional as F
from benchmarks.script import make_models
model = make_models(tscript, tscript.nn, F)["mlp (10 layers)"]
t1 = time.perf_counter()
tscript.jit.script(model)
print(t1 - t0, time.perf_counter() - t1)
"""


def cold_start() -> tuple[float, float]:
    """(import seconds, first-script seconds) of the 10-layer MLP in a fresh process."""
    out = subprocess.run([sys.executable, "-c", _COLD], capture_output=True, text=True, check=True)
    imports, first = map(float, out.stdout.split())
    return imports, first


def main() -> None:
    from .harness import report, run_case
    results = [(case, run_case(case, 1.0)) for case in cases()]
    print(report(results))
    imports, first = cold_start()
    print(f"\nfresh process: import tscript {fmt_time(imports)}, first script of the 10-layer MLP {fmt_time(first)}")


if __name__ == "__main__":
    main()
