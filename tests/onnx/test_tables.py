"""The ONNX tables agree with the rest: every export row is an op of the op table (or a structural
prim:: node), every import row an op of the ONNX standard, and the README lists exactly the ops of
the tables (the text `python -m tscript.onnx` prints)."""
from pathlib import Path

import pytest

from tscript.onnx.export_rows import ROWS as EXPORT_ROWS
from tscript.onnx.import_rows import ROWS as IMPORT_ROWS
from tscript.onnx.ops_doc import markdown, supported_ops
from tscript_runtime.ops import OPS

STRUCTURAL = {"prim::Constant", "prim::ListConstruct", "prim::ListUnpack", "prim::TupleConstruct",
              "prim::TupleUnpack"}


def test_every_export_row_is_an_op_tscript_has():
    assert sorted(k for k in EXPORT_ROWS if k not in OPS and k not in STRUCTURAL) == []


def test_every_import_row_is_a_standard_onnx_op():
    onnx = pytest.importorskip("onnx")
    assert sorted(op for op in IMPORT_ROWS if not onnx.defs.has(op)) == []


def test_the_readme_lists_the_ops_of_the_tables():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert markdown() in readme, "README's ONNX op lists are stale: paste the output of `python -m tscript.onnx`"
    assert supported_ops()["import"] == sorted(IMPORT_ROWS)
