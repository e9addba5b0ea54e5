"""Layer by layer against ONNX Runtime: one model of the models suite, its whole-graph entry's steps timed
inside the native call (Model.profile) beside ONNX Runtime's own profile of the same model (exported
from the same weights with torch.onnx.export), matched by op and shapes. Where a model loses to ONNX
Runtime, this says which layers lose it.

    python -m benchmarks.layers squeezenet1_1:8 [resnet18:1 ...]   # model key : batch (benchmarks/models.py)

Both profiles run one after the other on both cores (RUNS calls each, after a warm-up); a step neither
side has (ONNX Runtime's layout reorders, a view) is listed unmatched. Needs torch and onnxruntime.
"""
import argparse
import collections
import json
import os
import re
import tempfile

from . import models
from .harness import torch

RUNS = 20


def _ours(spec) -> tuple[list, float]:
    """[(key, ms per call, label)] of the model's entry steps, and the entry's time per call (ms)."""
    import tscript as ts
    from tscript_runtime.profile import profile_executable
    compiled = ts.jit.compile(models._build(spec), (ts.from_numpy(spec.example()),))
    executable = compiled.executable
    takes_self = executable.graph["inputs"][0].get("type", "").startswith("__module__")
    args = (list(compiled._tree) if takes_self else []) + [spec.example()]
    profile = profile_executable(executable, args, RUNS, 2)
    rows = [(_key(r.kind, _tuples(r.shapes)), r.seconds / profile.runs * 1e3, f"{r.kind} {r.shapes}")
            for r in profile.steps]
    return rows, (profile.entry or 0.0) * 1e3


def _theirs(spec, tmp: str) -> tuple[list, float]:
    """[(key, ms per call, label)] of ONNX Runtime's nodes, and the sum of its nodes per call (ms)."""
    import onnxruntime
    twin, xn = models._twin(spec, models._build(spec)), spec.example()
    path = os.path.join(tmp, "model.onnx")
    with models._quiet(), torch.no_grad():
        torch.onnx.export(twin, (torch.from_numpy(xn.copy()),), path, input_names=["x"], output_names=["y"])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.enable_profiling = 2, True
    options.profile_file_prefix = os.path.join(tmp, "ort")
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: xn}
    for _ in range(RUNS):
        session.run(None, feed)
    with open(session.end_profiling()) as f:
        events = json.load(f)
    total, facts = collections.defaultdict(float), {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            total[e["name"]] += e["dur"] / 1e3 / RUNS
            a = e.get("args", {})
            shapes = [tuple(next(iter(s.values()))) for s in a.get("input_type_shape", [])][:2]
            facts[e["name"]] = (a.get("op_name", "?"), shapes)
    rows = [(_key(op, shapes), ms, f"{op} {' x '.join(map(str, shapes))}") for n, ms in total.items()
            for op, shapes in [facts[n]]]
    return rows, sum(total.values())


_KINDS = {"tscript::ConvGroup": "conv", "aten::conv2d": "conv", "Conv": "conv", "FusedConv": "conv",
          "aten::conv_transpose2d": "convt", "ConvTranspose": "convt", "aten::max_pool2d": "maxpool", "MaxPool": "maxpool", "aten::cat": "cat", "Concat": "cat",
          "aten::linear": "gemm", "Gemm": "gemm", "FusedGemm": "gemm", "MatMul": "gemm", "aten::matmul": "gemm"}


def _tuples(text: str) -> list:
    return [tuple(int(v) for v in re.findall(r"-?\d+", part)) for part in re.findall(r"\(([^)]*)\)", text)]


def _key(kind: str, shapes: list):
    """What matches a step to a node: the op's class, its input's shape and a weight's kernel and (to a
    multiple of 16: ONNX Runtime pads output channels) count."""
    kind = _KINDS.get(kind)
    if kind is None or not shapes:
        return None
    if kind == "convt":  # (ONNX Runtime lists its bias, not its weight)
        return kind, shapes[0], ()
    weight = shapes[1] if len(shapes) > 1 and kind == "conv" else ()
    return kind, shapes[0], (weight[2:], -(-weight[0] // 16)) if weight else ()


def compare(key: str, batch: int) -> None:
    spec = next(s for s in models._specs() if s.key == key and s.shape[0] == batch)
    with tempfile.TemporaryDirectory(prefix="tscript-layers-") as tmp:
        ours, entry = _ours(spec)
        theirs, ort = _theirs(spec, tmp)
    pending = collections.defaultdict(list)
    for k, ms, label in theirs:
        pending[k].append((ms, label))
    print(f"{key} batch {batch}: tscript entry {entry:.2f} ms per call (steps {sum(r[1] for r in ours):.2f}), "
          f"ONNX Runtime nodes {ort:.2f} ms")
    print(f"{'tscript ms':>10} {'ORT ms':>8} {'ratio':>6}  step")
    for k, ms, label in sorted(ours, key=lambda r: -r[1]):
        match = pending[k].pop(0) if k is not None and pending[k] else None
        other = f"{match[0]:8.3f} {ms / match[0]:6.2f}" if match else f"{'-':>8} {'':>6}"
        print(f"{ms:10.3f} {other}  {label}")
    rest = sorted((m for v in pending.values() for m in v), reverse=True)
    if rest:
        print(f"ONNX Runtime nodes without a match: {sum(m for m, _ in rest):.3f} ms, e.g. "
              + "; ".join(f"{label} {ms:.3f}" for ms, label in rest[:4]))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.layers", description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="model:batch, e.g. squeezenet1_1:8 (keys of benchmarks/models.py)")
    args = parser.parse_args(argv)
    if torch is None:
        raise SystemExit("benchmarks.layers needs torch and onnxruntime (pip install -e '.[bench]')")
    for item in args.models:
        key, _, batch = item.partition(":")
        compare(key, int(batch or 1))


if __name__ == "__main__":
    main()
