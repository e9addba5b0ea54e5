"""Memory planning (with the arena planner the native entry uses): values overlap in the arena only if
their lifetimes (aliases included) do not, and the executor's release of dead intermediates measured."""
import numpy as np
import pytest

from tests.passes.helpers import ZOO, traced
from tscript.frontend.modules import _attr_tree
from tscript.ir import parse_ir
from tscript.ir.passes.effects import alias_groups
from tscript.ir.passes.memory_plan import measure_peak, plan_memory
from tscript.ir.graph_json import graph_to_json
from tscript_runtime.executor import ArrayDomain, Program

CHAIN = """
graph(%x : Float(4, 8)):
  %a : Float(4, 8) = aten::relu(%x)
  %b : Float(4, 8) = aten::tanh(%a)
  %c : Float(4, 8) = aten::neg(%b)
  %d : Float(4, 8) = aten::abs(%c)
  %e : Float(4) = aten::amax(%d, %dims, %false)
  return (%e)
""".replace("  %e", "  %dims : List[int] = prim::Constant[value=[1]]()\n"
                   "  %false : bool = prim::Constant[value=False]()\n  %e")


def _named(plan, graph, what: str = "offsets") -> dict:
    values = {v.name: v for n in graph.all_nodes() for v in n.outputs}
    return {name: getattr(plan, what)[v] for name, v in values.items() if v in plan.offsets}


def test_chain_alternates_between_two_buffers():
    g = parse_ir(CHAIN)
    plan = plan_memory(g)
    assert _named(plan, g) == {"a": 0, "b": 128, "c": 0, "d": 128}  # %e is the output: not in the arena
    assert _named(plan, g, "lifetimes") == {"a": (0, 1), "b": (1, 2), "c": (2, 3), "d": (3, 6)}
    assert plan.total == 4 * 128 and plan.arena == 256 and plan.peak_live == 256


def test_a_live_view_keeps_its_base_buffer():
    g = parse_ir("""
graph(%x : Float(4, 8)):
  %a : Float(4, 8) = aten::relu(%x)
  %v : Float(8, 4) = aten::t(%a)
  %b : Float(4, 8) = aten::tanh(%x)
  %c : Float(4, 8) = aten::neg(%b)
  %d : Float(8, 4) = aten::abs(%v)
  return (%c, %d)
""")
    plan = plan_memory(g)
    assert _named(plan, g, "lifetimes") == {"a": (0, 4), "b": (2, 3)}  # %v (a view of %a) is read by %d last
    assert _named(plan, g) == {"a": 0, "b": 128}  # %c and %d are outputs: not in the arena


def test_values_in_lists_live_as_long_as_the_list_is_read():
    g = parse_ir("""
graph(%x : Float(4)):
  %a : Float(4) = aten::relu(%x)
  %l : List[Tensor] = prim::ListConstruct(%a)
  %b : Float(4) = aten::tanh(%x)
  %z : int = prim::Constant[value=0]()
  %c : Float(4) = aten::cat(%l, %z)
  return (%b, %c)
""")
    assert _named(plan_memory(g), g, "lifetimes") == {"a": (0, 4)}  # read by cat through the list


def test_unknown_shapes_and_nested_values_are_not_planned():
    g = parse_ir("""
graph(%x : Tensor, %c : bool):
  %a : Tensor = aten::relu(%x)
  %y : Tensor = prim::If(%c)
    block0():
      %b : Tensor = aten::neg(%a)
      %b2 : Tensor = aten::neg(%b)
      -> (%b2)
    block1():
      -> (%x)
  return (%y)
""")
    plan = plan_memory(g)
    assert plan.sizes == {} and plan.unplanned == 2  # %a (unknown shape) and %b (nested); %b2 is an output


def _lifetimes_overlap(graph, a, b) -> bool:
    nodes = list(graph.block.nodes)
    pos = {n: i for i, n in enumerate(nodes)}
    group = alias_groups(graph)
    last = {}
    for i, n in enumerate(nodes):
        for m in [n] + [x for blk in n.blocks for x in blk.nodes]:
            for v in m.inputs:
                last[group(v)] = i
    for v in graph.outputs:
        last[group(v)] = len(nodes)
    span = [(pos[v.node], max(last.get(group(v), pos[v.node]), pos[v.node])) for v in (a, b)]
    return not (span[0][1] < span[1][0] or span[1][1] < span[0][0])


@pytest.mark.parametrize("name", ZOO)
def test_zoo_plans_never_share_a_buffer_between_overlapping_lifetimes(name):
    graph = traced(name)[0].inlined_graph
    plan = plan_memory(graph)
    assert plan.sizes and plan.peak_live <= plan.arena and plan.arena <= sum(-(-n // 64) * 64 for n in plan.sizes.values())
    values = list(plan.offsets)
    for i, a in enumerate(values):
        for b in values[i + 1:]:
            overlap = plan.offsets[a] < plan.offsets[b] + plan.sizes[b] and plan.offsets[b] < plan.offsets[a] + plan.sizes[a]
            assert not (overlap and _lifetimes_overlap(graph, a, b)), (a, b)


def test_executor_release_lowers_the_measured_peak():
    g = parse_ir(CHAIN.replace("4, 8", "256, 256").replace("Float(4)", "Float(256)"))
    x = np.ones((256, 256), np.float32)
    peaks = {}
    for release in (False, True):
        program = Program(graph_to_json(g), ArrayDomain(g.constants), release=release)
        peaks[release] = measure_peak(lambda: program.run([x]))
    assert peaks[True] < peaks[False]
    assert peaks[False] >= 4 * x.nbytes  # all four intermediates alive at the end


def test_measure_peak_on_a_module_graph():
    module, inputs, _ = traced("mlp")
    g = module.inlined_graph
    program = Program(graph_to_json(g), ArrayDomain(g.constants))
    tree = _attr_tree(module._module)
    assert measure_peak(lambda: program.run([tree, *inputs])) > 0
