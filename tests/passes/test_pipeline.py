"""The pipeline's public face: tscript.jit.optimize / dump_passes and TSCRIPT_LOG."""
import numpy as np
import pytest

import tscript as ts
from tests.conftest import assert_close
from tests.passes.helpers import mlp
from tscript.frontend.modules import ScriptFunction
from tscript.ir import parse_ir, verify
from tscript.ir.passes.pipeline import PIPELINE, run_pipeline

LOOP = """
graph(%x : Float(2, 3)):
  %n : int = prim::Constant[value=3]()
  %true : bool = prim::Constant[value=True]()
  %one : int = prim::Constant[value=1]()
  %y : Float(2, 3) = prim::Loop(%n, %true, %x)
    block0(%i : int, %h : Float(2, 3)):
      %a : Float(2, 3) = aten::mul(%h, %one)
      %h2 : Float(2, 3) = aten::add(%a, %x, %one)
      -> (%true, %h2)
  return (%y)
"""


@pytest.fixture
def traced_mlp():
    ts.manual_seed(0)
    model, (x,) = mlp()
    model.eval()
    return ts.jit.trace(model, x), model, x


def _kinds(graph) -> list:
    """Node kinds, including those inside fusion groups' subgraphs (level 2 fuses)."""
    kinds = []
    for n in graph.all_nodes():
        kinds.append(n.kind)
        if "subgraph" in n.attrs:
            kinds.extend(_kinds(n.attrs["subgraph"]))
    return kinds


def test_optimize_levels(traced_mlp):
    module, model, x = traced_mlp
    before = str(module.graph)
    level0, level1 = ts.jit.optimize(module, level=0), ts.jit.optimize(module, level=1)
    assert str(module.graph) == before  # the original is left alone
    assert str(level0.graph) == str(module.inlined_graph)
    assert "prim::CallMethod" not in _kinds(level1.graph)
    assert len(_kinds(level1.graph)) < len(_kinds(level0.graph))
    for optimized in (level0, level1, ts.jit.optimize(module)):
        verify(optimized.graph)
        with ts.no_grad():
            assert_close(optimized(ts.ones(7, 6)), model(ts.ones(7, 6)))


def test_level_two_unrolls_loops():
    fn = ScriptFunction(parse_ir(LOOP))
    assert "prim::Loop" in _kinds(ts.jit.optimize(fn, level=1).graph)
    unrolled = ts.jit.optimize(fn, level=2)
    assert _kinds(unrolled.graph).count("aten::add") == 3 and "aten::mul" not in _kinds(unrolled.graph)
    assert "tscript::FusionGroup" in _kinds(unrolled.graph)  # level 2 also fuses the unrolled chain
    x = ts.randn(2, 3)
    assert_close(unrolled(x), x * 4)
    assert isinstance(unrolled, ScriptFunction)


def test_optimize_and_dump_passes_refuse_bad_arguments(traced_mlp):
    with pytest.raises(ValueError, match="level must be 0, 1 or 2, got 3"):
        ts.jit.optimize(traced_mlp[0], level=3)
    with pytest.raises(TypeError, match="optimize\\(\\) expects a ScriptModule or ScriptFunction"):
        ts.jit.optimize(traced_mlp[1])
    with pytest.raises(TypeError, match="dump_passes\\(\\) expects"):
        ts.jit.dump_passes(lambda x: x)


def test_dump_passes_shows_the_ir_after_each_changing_pass(traced_mlp, capsys):
    text = ts.jit.dump_passes(traced_mlp[0])
    headers = [line for line in text.splitlines() if line.startswith("== after")]
    assert headers[0].startswith("== after inline (") and headers[0].endswith(" ms) ==")
    assert any(h.startswith("== after dce") for h in headers)
    assert capsys.readouterr().out == ""
    only = ts.jit.dump_passes(traced_mlp[0], passes=["dce"], show=True)
    assert [h.split(" (")[0] for h in only.splitlines() if h.startswith("==")] == ["== after dce"]
    assert capsys.readouterr().out == only


def test_tscript_log_environment_variable(monkeypatch, capsys):
    monkeypatch.setenv("TSCRIPT_LOG", "passes:canonicalize,unroll")
    run_pipeline(parse_ir(LOOP), 2)
    err = capsys.readouterr().err
    assert "== after unroll" in err and "== after canonicalize" in err and "== after dce" not in err
    monkeypatch.setenv("TSCRIPT_LOG", "passes")
    run_pipeline(parse_ir(LOOP), 2)
    assert "== after dce" in capsys.readouterr().err
    monkeypatch.delenv("TSCRIPT_LOG")
    run_pipeline(parse_ir(LOOP), 2)
    assert capsys.readouterr().err == ""


def test_pipeline_is_one_list_of_named_stages_with_levels():
    names = [name for name, _, _ in PIPELINE]
    assert names[0] == "inline" and names[-4:] == ["fuse_rows", "fuse", "fuse_conv", "dce"]
    assert {level for _, _, level in PIPELINE} == {0, 1, 2}
    assert [name for name, _, level in PIPELINE if level == 0] == ["inline"]


def test_optimized_module_keeps_reading_the_live_parameters(traced_mlp):
    module, model, x = traced_mlp
    optimized = ts.jit.optimize(module)
    with ts.no_grad():
        model[0].weight.mul_(0.0)
        np.testing.assert_allclose(optimized(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
