"""The `tscript` command: `ir --format dot` renders saved models as Graphviz DOT (checked by `dot`
itself when it is installed), and `trace` reports user errors in one line with exit code 2."""
import re
import shutil
import subprocess

import pytest

from tscript.cli import main

pytestmark = pytest.mark.filterwarnings("ignore:.*Converting a tensor to a Python boolean")

MODELS = '''
import tscript as ts
from tscript import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        y = self.fc(x)
        if bool(y.sum() > 0):
            y = y.relu()
        for i in range(2):
            y = y * 2 + 1
        return y.tanh() * 0.5
'''
VERTEX = re.compile(r'(n\d+) \[label="(?:[^"\\]|\\.)*"(?:, [a-z]+=[^\]]+)?\];')
EDGE = re.compile(r'(n\d+) -> (n\d+) \[(?:label="(?:[^"\\]|\\.)*"|style=dashed)\];')
CLUSTER = re.compile(r'subgraph cluster_\d+ \{')


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "models.py"
    path.write_text(MODELS)
    return path


def saved(tmp_path, model_file, *flags) -> str:
    out = str(tmp_path / f"model{''.join(flags)}.tsm")
    assert main(["trace", f"{model_file}:Net", "--input-shape", "2,4", "-o", out, *flags]) == 0
    return out


def dot_of(capsys, path: str) -> str:
    capsys.readouterr()
    assert main(["ir", path, "--format", "dot"]) == 0
    return capsys.readouterr().out


def check_well_formed(text: str) -> None:
    """Every line a statement of the shapes to_dot writes, braces balanced, every edge between
    declared vertices; and `dot` accepts it, when installed."""
    lines = text.strip().splitlines()
    assert lines[0] == 'digraph "graph" {' and lines[-1] == "}"
    vertices, edges, depth = set(), [], 0
    for line in lines[1:-1]:
        line = line.strip()
        if CLUSTER.fullmatch(line):
            depth += 1
        elif line == "}":
            depth -= 1
            assert depth >= 0
        elif m := VERTEX.fullmatch(line):
            vertices.add(m.group(1))
        elif m := EDGE.fullmatch(line):
            edges.append(m.groups())
        else:
            assert re.fullmatch(r'(graph|node|edge) \[.*\];|label="(?:[^"\\]|\\.)*"; .*;', line), line
    assert depth == 0
    assert edges and all(a in vertices and b in vertices for a, b in edges)
    if shutil.which("dot"):
        run = subprocess.run(["dot", "-Tsvg"], input=text, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0 and "<svg" in run.stdout, run.stderr


def test_dot_of_a_traced_model(tmp_path, model_file, capsys):
    text = dot_of(capsys, saved(tmp_path, model_file))
    check_well_formed(text)
    assert "aten::linear" in text and "Float(2, 3)" in text and "prim::If" not in text


def test_dot_of_a_scripted_model_has_clusters_for_blocks(tmp_path, model_file, capsys):
    text = dot_of(capsys, saved(tmp_path, model_file, "--script"))
    check_well_formed(text)
    assert 'label="prim::If block0"' in text and 'label="prim::If block1"' in text
    assert 'label="prim::Loop block0"' in text and "style=dashed" in text


def test_dot_of_a_compiled_model_has_clusters_for_fusion_groups(tmp_path, model_file, capsys):
    text = dot_of(capsys, saved(tmp_path, model_file, "--compile"))
    check_well_formed(text)
    assert re.search(r'label="tscript::FusionGroup\\nkernel=\\"k\d+\\""', text)


def trace_error(capsys, target: str, shape: str, output: str) -> str:
    """The stderr of a `tscript trace` that must fail: exit code 2, one line, no traceback."""
    capsys.readouterr()
    assert main(["trace", target, "--input-shape", shape, "-o", output]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_trace_of_a_directory_is_a_one_line_error(tmp_path, capsys):
    err = trace_error(capsys, f"{tmp_path}:Net", "2,4", str(tmp_path / "m.tsm"))
    assert err.startswith("tscript trace: error: ") and "is a directory" in err


def test_trace_with_an_input_too_large_to_allocate_is_a_one_line_error(tmp_path, model_file, capsys):
    for shape in ("100000000,100000000", "10000000000000,10000000000000"):
        err = trace_error(capsys, f"{model_file}:Net", shape, str(tmp_path / "m.tsm"))
        assert f"--input-shape {shape}: cannot allocate" in err


def test_trace_with_a_malformed_shape_is_a_one_line_error(tmp_path, model_file, capsys):
    err = trace_error(capsys, f"{model_file}:Net", "2,x", str(tmp_path / "m.tsm"))
    assert "expected sizes separated by commas" in err
