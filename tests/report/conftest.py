"""Reports of the four test models, written once per session (compiling them is the slow part)."""
from __future__ import annotations

import pytest

import tscript as ts
from tests.report.models import cases


@pytest.fixture(scope="session")
def reports(tmp_path_factory):
    """name -> (path of its report, the report's data) for the models of models.cases()."""
    folder = tmp_path_factory.mktemp("reports")
    out = {}
    for name, (obj, args) in cases().items():
        path = folder / f"{name}.html"
        out[name] = (path, ts.jit.report(obj, args, str(path), runs=2))
    return out
