"""Checking a native plan against its graph (tscript_runtime/native_plan.py, kernel_specs.py): each
way a plan or a group's subgraph can be wrong is refused with a ModelError naming it, before
anything is emitted."""
import copy

import pytest

import tscript as ts
from tscript import nn
from tscript.ir.graph_json import graph_to_json
from tscript_runtime import ModelError
from tscript_runtime.native_plan import NativePlan
from tscript_runtime.typed_graph import typed_graph


@pytest.fixture(scope="module")
def compiled():
    """An MLP (GEMMs and a pointwise kernel in a whole-graph entry): its graph document and plan."""
    ts.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).eval()
    cm = ts.jit.compile(model, ts.randn(2, 4))
    return graph_to_json(cm.graph), cm.plan


def check(graph: dict, plan: dict) -> NativePlan:
    return NativePlan.from_json(plan, typed_graph(graph), graph)


def edited(compiled, edit_plan=None, edit_graph=None):
    graph, plan = copy.deepcopy(compiled)
    if edit_plan:
        edit_plan(plan)
    if edit_graph:
        edit_graph(graph)
    return graph, plan


def test_the_compilers_plan_is_accepted(compiled):
    plan = check(*compiled)
    assert list(plan.kernels) == ["k0"] and [s.template for s in plan.entry] == ["gemm", "kernel", "gemm"]
    assert plan.to_json() == compiled[1]


def _group(graph: dict) -> dict:
    return next(n for n in graph["nodes"] if n["kind"] == "tscript::FusionGroup")


@pytest.mark.parametrize("edit, message", [
    (lambda p: p.update(version=2), "unsupported native plan version 2"),
    (lambda p: p.update(extra=1), "not a native plan"),
    (lambda p: p["kernels"]["k0"].update(template="row"), "template 'row' emits tscript::RowGroup nodes, the graph's "
                                                          "node is tscript::FusionGroup"),
    (lambda p: p["kernels"]["k0"].update(template="jit"), "template must be one of"),
    (lambda p: p["kernels"]["k0"].update(tile=12), r"field 'tile' must be one of \[0, 4, 8, 16\], got 12"),
    (lambda p: p["kernels"]["k0"].update(split_min=-1), "field 'split_min' must be an int in 0..4611686018427387904"),
    (lambda p: p["kernels"]["k0"].update(split_min=True), "field 'split_min' must be an int"),
    (lambda p: p["kernels"]["k0"].pop("tile"), "template 'pointwise' takes the fields"),
    (lambda p: p["kernels"].update(k9=p["kernels"]["k0"]), "kernel 'k9' is not named by any fusion group"),
    (lambda p: p["kernels"].clear(), "the graph runs kernel 'k0', which the plan does not describe"),
    (lambda p: p["entry"][0].update(small_m=65), "field 'small_m' must be an int in 0..64"),
    (lambda p: p["entry"][0].update(node=1), r"\(node 1\): it cannot be a 'gemm' step"),
    (lambda p: p["entry"].reverse(), "'node' must index a top-level node after the previous step's"),
    (lambda p: p["entry"].pop(0), r"entry cannot run this graph: aten::linear at .* \(node \d+\): it has no step"),
    (lambda p: p["entry"][1].update(template="gemm", small_m=1, split_min=1),
     r"tscript::FusionGroup at .* \(node \d+\): it cannot be a 'gemm' step"),
])
def test_a_wrong_plan_is_refused(compiled, edit, message):
    with pytest.raises(ModelError, match=message):
        check(*edited(compiled, edit_plan=edit))


def _sub(graph: dict) -> dict:
    return _group(graph)["attrs"]["subgraph"]["graph"]


def _retype_output(graph: dict, text: str) -> None:
    _sub(graph)["nodes"][-1]["outputs"][0]["type"] = text


def _swap_op(graph: dict, kind: str) -> None:
    _sub(graph)["nodes"][-1]["kind"] = kind


def _none_operand(graph: dict) -> None:
    """The kernel's op reads a None constant (a prim::Constant without its value) as its tensor."""
    sub = _sub(graph)
    sub["nodes"].insert(0, {"kind": "prim::Constant", "inputs": [], "outputs": [{"name": "none", "type": "NoneType"}]})
    sub["nodes"][-1]["inputs"][0] = "none"


@pytest.mark.parametrize("edit, message", [
    (lambda g: _swap_op(g, "aten::matmul"), "aten::matmul cannot be computed in a pointwise kernel"),
    (_none_operand, "aten::tanh in a kernel reads the constant None as its 'self'"),  # found by fuzz/fuzz_tsm_loader.py
    (lambda g: _retype_output(g, "Bool(2, 8)"), r"is declared Bool\(2, 8\), but the op's rules give float32"),
    (lambda g: _retype_output(g, "Float(2, 8, 1, 1, 1)"), r"declared Float\(2, 8, 1, 1, 1\), but the op's rules give "
                                                          r"float32\[2, 8\]"),
    (lambda g: _retype_output(g, "Float(...)"), "a tensor of known rank"),
    (lambda g: _retype_output(g, "Quarter(2, 8)"), "malformed type 'Quarter"),
    # float16 (and bfloat16, 8/16-bit ints, complex) values run on the reference kernels, not in native ones
    (lambda g: _sub(g)["inputs"][0].update(type="Half(2, 8)"), r"has type Half\(2, 8\) \(a tensor of known rank and "
                                                              r"dtype float32/float64/int64/int32/bool is needed\)"),
    (lambda g: _sub(g)["inputs"][0].update(type="str"), "has type str"),
    (lambda g: _group(g)["inputs"].append(_group(g)["inputs"][0]), "does not match its subgraph's inputs"),
])
def test_a_subgraph_the_template_cannot_emit_is_refused(compiled, edit, message):
    with pytest.raises(ModelError, match=message):
        check(*edited(compiled, edit_graph=edit))
