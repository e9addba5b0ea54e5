"""Make the fuzzers' seeds: `python fuzz/make_seeds.py` (deterministic; rerun after format changes).

    fuzz/seeds/*.tsm, *.tsd   the files the loader harnesses mutate (made by tscript itself)
    fuzz/seeds/*.pt           PyTorch checkpoints, written without torch (tests/eager/torch_format.py)
    fuzz/corpus/tsm, tsd, checkpoint   starting inputs: a byte choosing a seed file, then mutation choices
    fuzz/corpus/ir            printed graphs: traced, inlined, compiled (fusion groups), scripted
                              (every program of tests/script/programs.py), saved entry points
    fuzz/corpus/script        the functions of tests/script/programs.py and error_programs.py
"""
from __future__ import annotations

import inspect
import os
import random
import shutil
import sys
import types
import warnings
from collections import OrderedDict
from typing import List

import tscript as ts
import tscript_runtime
from tscript import Tensor, nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def control_flow(x: Tensor, n: int) -> Tensor:
    """The scripted seed: a loop, a branch on a tensor, a list."""
    ys: List[Tensor] = []
    for i in range(n):
        if bool(x.sum() > 0):
            x = x * 0.5
        else:
            x = x.relu() + i
        ys.append(x)
    return x + len(ys)


def mlp(*sizes) -> nn.Module:
    ts.manual_seed(0)
    return nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.GELU(), nn.LayerNorm(sizes[1]),
                         nn.Linear(sizes[1], sizes[2]), nn.Softmax(-1)).eval()


def cnn() -> nn.Module:
    ts.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(4 * 4 * 4, 3)).eval()


def model_seeds() -> dict:
    """Seed name -> object for tscript.jit.save."""
    x = ts.randn(2, 4)
    traced = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
    trainable = mlp(4, 8, 3).train()
    return {"traced_mlp": ts.jit.trace(traced, x),
            "compiled_mlp": ts.jit.compile(mlp(16, 32, 10), ts.randn(4, 16), dynamic={0: [0]}),
            "compiled_cnn": ts.jit.compile(cnn(), ts.randn(2, 1, 8, 8)),
            "scripted_control_flow": ts.jit.script(control_flow),
            "trainable_mlp": ts.jit.compile(trainable, x, backward=True)}


def object_seeds() -> dict:
    """Seed name -> object for tscript.save: a state dict, optimizer state, every kind of node."""
    model = mlp(4, 8, 3)
    opt = ts.optim.Adam(model.parameters(), lr=1e-3)
    model(ts.randn(2, 4)).sum().backward()
    opt.step()
    shared = ts.arange(6).reshape(2, 3)
    nested = {"tensors": [ts.zeros(0), ts.tensor(3.5), ts.ones(2, 2, dtype=ts.float64), shared, shared,
                          ts.tensor([True, False]), ts.tensor([1, 2], dtype=ts.int32),
                          ts.randn(3, requires_grad=True)],
              "scalars": (None, True, 7, -2.5, float("nan"), float("inf"), "text \u00e9"),
              "keys": {1: "int", 2.5: "float", None: "none", False: "bool"},
              "ordered": OrderedDict([("b", [()]), ("a", {"deep": [[shared]]})])}
    return {"state_dict": model.state_dict(), "optimizer": opt.state_dict(), "nested": nested}


def checkpoint_seeds() -> dict:
    """Seed name -> a checkpoint in torch.save's format: a state dict, a training checkpoint with
    every kind of value, views of shared storages, a big-endian file."""
    import io

    import numpy as np
    sys.path.insert(0, ROOT)
    from tests.eager.torch_format import Call, Global, SavedTensor, state_dict_checkpoint, write_checkpoint

    def written(write) -> bytes:
        buf = io.BytesIO()
        write(buf)
        return buf.getvalue()
    base = np.arange(12, dtype=np.float32)
    views = [SavedTensor(base, size=(3, 4)), SavedTensor(base, offset=1, size=(2, 2), stride=(1, 4)),
             SavedTensor(base, offset=2, size=(3, 2), stride=(0, 1)), SavedTensor(base, offset=5, size=(), stride=())]
    training = {"model": OrderedDict(w=SavedTensor(np.ones(6, np.float64), size=(2, 3), parameter=True,
                                                   requires_grad=True),
                                     n=SavedTensor(np.array([7])), mask=SavedTensor(np.array([True, False]))),
                "optimizer": {"state": {0: {"step": SavedTensor(np.array([3.0], np.float32), size=())}},
                              "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0], "name": None}]},
                "epoch": 3, "blob": b"\x00\xff", "tags": {"a", "b"},
                "size": Call(Global("torch", "Size"), ((2, 3),)), "dtype": Global("torch", "float32"),
                "ints": SavedTensor(np.arange(4, dtype=np.int32))}
    return {"state_dict": written(lambda f: state_dict_checkpoint(mlp(4, 8, 3).state_dict(), f)),
            "training": written(lambda f: write_checkpoint(training, f)),
            "views": written(lambda f: write_checkpoint(views, f)),
            "big_endian": written(lambda f: write_checkpoint({"w": SavedTensor(base)}, f, byteorder="big"))}


def graph_seeds(models: dict, seeds: str) -> dict:
    """Seed name -> printed IR."""
    traced = models["traced_mlp"]
    texts = {"traced": str(traced.graph), "traced_inlined": str(traced.inlined_graph)}
    for name in models:  # the IR of every entry point of the saved seeds (backward graphs too)
        saved = tscript_runtime.load(os.path.join(seeds, f"{name}.tsm"))
        texts.update({f"{name}_{entry}": saved.ir(entry) for entry in saved.entry_points})
    for name, fn in program_functions("programs").items():
        try:
            texts[f"script_{name}"] = str(ts.jit.script(fn).graph)
        except Exception:  # programs that need more than a function (modules, inputs of their own)
            pass
    return texts


def program_functions(module: str) -> dict:
    """The module-level functions of tests/script/<module>.py, by name."""
    sys.path.insert(0, ROOT)
    mod = __import__(f"tests.script.{module}", fromlist=["_"])
    return {name: fn for name, fn in vars(mod).items()
            if isinstance(fn, types.FunctionType) and fn.__module__ == mod.__name__}


def write(directory: str, files: dict) -> None:
    """Replace `directory`'s contents with `files` (name -> bytes or str)."""
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    for name, content in files.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)


def loader_corpus(count: int, rng: random.Random) -> dict:
    """For each of `count` seed files: the seed's index alone, and with random mutation choices."""
    corpus = {}
    for i in range(count):
        corpus[f"seed{i}"] = bytes([i])
        for j in range(4):
            corpus[f"seed{i}_{j}"] = bytes([i]) + rng.randbytes(rng.randrange(8, 64))
    return corpus


def main() -> None:
    seeds = os.path.join(HERE, "seeds")
    shutil.rmtree(seeds, ignore_errors=True)
    os.makedirs(seeds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings of the example programs
        models = model_seeds()
        for name, obj in models.items():
            ts.jit.save(obj, os.path.join(seeds, f"{name}.tsm"))
        objects = object_seeds()
        for name, obj in objects.items():
            ts.save(obj, os.path.join(seeds, f"{name}.tsd"))
        graphs = graph_seeds(models, seeds)
        checkpoints = checkpoint_seeds()
        for name, data in checkpoints.items():
            with open(os.path.join(seeds, f"{name}.pt"), "wb") as f:
                f.write(data)
    rng = random.Random(0)
    corpus = os.path.join(HERE, "corpus")
    write(os.path.join(corpus, "tsm"), loader_corpus(len(models), rng))
    write(os.path.join(corpus, "tsd"), loader_corpus(len(objects), rng))
    write(os.path.join(corpus, "checkpoint"), loader_corpus(len(checkpoints), rng))
    write(os.path.join(corpus, "ir"), {f"{name}.ir": text for name, text in graphs.items()})
    sources = {f"{module}_{name}.py": inspect.getsource(fn) for module in ("programs", "error_programs")
               for name, fn in program_functions(module).items()}
    sources["control_flow.py"] = inspect.getsource(control_flow)
    write(os.path.join(corpus, "script"), sources)
    print(f"{len(models)} models, {len(objects)} objects and {len(checkpoints)} checkpoints in {seeds}; corpora: "
          f"{len(graphs)} graphs, {len(sources)} functions, in {corpus}")


if __name__ == "__main__":
    main()
