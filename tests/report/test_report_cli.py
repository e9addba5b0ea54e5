"""`tscript report`, `tsrt report` and `tsrt bench --profile` from the command line."""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import tscript as ts
from tests.report.html_facts import read_page
from tests.report.models import TwoLayer
from tscript import cli as tscript_cli
from tscript_runtime import cli as tsrt_cli

MODELS = str(Path(__file__).with_name("models.py"))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "two_layer.tsm"
    ts.manual_seed(0)
    ts.jit.save(ts.jit.compile(TwoLayer().eval(), (ts.randn(8, 16),)), str(path))
    return path


def test_tscript_report_writes_the_page(tmp_path, capsys):
    out = tmp_path / "report.html"
    assert tscript_cli.main(["report", f"{MODELS}:TwoLayer", "--input-shape", "8,16", "-o", str(out), "--runs",
                             "2"]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    page = read_page(out)
    assert len(page.having("node", "g", in_svg=True)) == 4  # linear, group, linear, group
    assert len(page.having("prof-row", "tr")) == 4 + 10  # the entry's steps, the executor's nodes


def test_tscript_report_with_backward_reports_both_graphs(tmp_path):
    out = tmp_path / "report.html"
    assert tscript_cli.main(["report", f"{MODELS}:TwoLayer", "--input-shape", "8,16", "-o", str(out), "--backward",
                             "--runs", "1", "--layout", "layered"]) == 0
    ids = read_page(out).ids()
    assert {"e-forward-graph", "e-backward-graph", "e-backward-profile"} <= ids


def test_tscript_report_errors_are_one_line(tmp_path, capsys):
    assert tscript_cli.main(["report", f"{MODELS}:TwoLayer", "--input-shape", "8,16", "-o",
                             str(tmp_path / "no" / "r.html")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_tsrt_report_of_a_saved_model(saved, tmp_path, capsys):
    out = tmp_path / "saved.html"
    assert tsrt_cli.main(["report", str(saved), "-o", str(out), "--runs", "2"]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    page = read_page(out)
    assert len(page.having("kernel-card")) == 2
    assert len(page.having("prof-row", "tr")) == 4 + 10  # the entry's steps, the executor's nodes
    assert "tscript report" in open(out, encoding="utf-8").read()  # the passes section says where they are


def test_tsrt_report_list_layout(saved, tmp_path):
    out = tmp_path / "list.html"
    assert tsrt_cli.main(["report", str(saved), "-o", str(out), "--runs", "0", "--layout", "list"]) == 0
    page = read_page(out)
    assert not page.having("graph", "svg") and len(page.having("node", "li")) == 4
    assert not page.having("prof-row")


def test_tsrt_bench_profile_prints_the_sorted_table(saved, capsys):
    assert tsrt_cli.main(["bench", str(saved), "--runs", "3", "--profile"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for table in (i for i, line in enumerate(lines) if "ms/run" in line):  # the entry's steps, the executor's nodes
        rows = list(itertools.takewhile(lambda line: line.split()[0][0].isdigit(), lines[table + 1:]))
        times = [float(line.split()[0]) for line in rows]
        assert times == sorted(times, reverse=True)
        assert sum("aten::linear" in line for line in rows) == 2
    assert "whole-graph native entry" in out and "timed inside the native call" in out and "GFLOP/s" in out


def test_tsrt_report_runs_without_the_compiler(saved, tmp_path):
    """`tsrt report` needs only the runtime: a copy of it, with tscript and lark unimportable."""
    import shutil
    import subprocess
    import sys

    import tscript_runtime
    site = tmp_path / "site"
    shutil.copytree(Path(tscript_runtime.__file__).parent, site / "tscript_runtime",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('tscript', 'lark'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n")
    out = tmp_path / "alone.html"
    done = subprocess.run([sys.executable, "-m", "tscript_runtime", "report", str(saved), "-o", str(out), "--runs",
                           "1"], env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(read_page(out).having("kernel-card")) == 2
