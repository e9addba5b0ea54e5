"""Code-generation decisions: for an optimized, fused graph, which kernel template and schedule each
fusion group gets and which steps the whole-graph entry runs, written as a native plan (the format
and its checks: tscript_runtime/native_plan.py). The runtime's emitter turns graph + plan into code;
nothing here builds LLVM IR.
"""
from __future__ import annotations

from tscript_runtime.errors import ModelError
from tscript_runtime.entry_steps import ALIASES, STEP_KINDS, STRIDED_VIEWS
from tscript_runtime.native_plan import FORMAT, MAX_WHY, SMALL_M, VERSION, NativePlan
from tscript_runtime.typed_graph import typed_graph

from ..ir.graph import Graph, Node
from ..ir.graph_json import graph_to_json
from ..ir.passes.fuse import GROUP, ROW_GROUP
from ..ir.types import TensorType

VECTOR_BYTES = 64     # a tile's side is one 512-bit vector of the kernel's widest dtype...
MAX_TILE = 16         # ... and at most this (narrower dtypes: more shuffles to compile, no faster)
KERNEL_SPLIT_MIN = 1 << 16  # elements: below this, handing half a kernel to the other core costs more than it saves
GEMM_SPLIT_MIN = 1 << 17    # multiply-adds: a library GEMM this big computes its two column halves at once
TEMPLATE_OF_KIND = {kind: template for template, kinds in STEP_KINDS.items() for kind in kinds}


def plan_native(graph: Graph) -> dict:
    """The native plan of `graph` (a JSON document); names each fusion group's kernel in its
    `kernel` attribute. The entry is planned when every top-level node computing a tensor has a
    step template and the runtime accepts the steps; else the plan says why not (the executor then
    runs the graph, calling the kernels)."""
    kernels = {}
    for node in graph.all_nodes():
        if node.kind in (GROUP, ROW_GROUP):
            node.attrs["kernel"] = name = f"k{len(kernels)}"
            kernels[name] = _kernel(node)
    plan = {"format": FORMAT, "version": VERSION, "kernels": kernels, "entry": None}
    steps, why = _steps(graph)
    if steps is not None:
        plan["entry"] = steps
        why = _refusal(graph, plan)
    if why is not None:
        plan["entry"], plan["why_no_entry"] = None, why[:MAX_WHY]
    return plan


def _kernel(node: Node) -> dict:
    if node.kind == ROW_GROUP:
        return {"template": "row", "split_min": KERNEL_SPLIT_MIN}
    return {"template": "pointwise", "tile": _tile(node), "split_min": KERNEL_SPLIT_MIN}


def _tile(node: Node) -> int:
    """The side of the tiles a pointwise kernel reads transposed inputs in: one 512-bit vector of its
    widest dtype (at most MAX_TILE), or 0 (no tiled walk, whose code takes two thirds of a kernel's
    compile time) when no input can be transposed: every input that is not statically broadcast in
    its last two dims comes from an op whose results are laid out row-major."""
    sub = node.attrs["subgraph"]
    tensors = [(outer, inner) for outer, inner in zip(node.inputs, sub.inputs) if isinstance(inner.type, TensorType)]
    if not any(_may_be_transposed(outer) for outer, inner in tensors if not _broadcast_last_two(inner)):
        return 0
    widest = max(v.type.dtype.itemsize for v in [*sub.inputs, *sub.outputs]
                 if isinstance(v.type, TensorType) and v.type.dtype is not None)
    return min(MAX_TILE, VECTOR_BYTES // widest)


def _broadcast_last_two(v) -> bool:
    shape = v.type.shape or ()
    return len(shape) < 2 or any(d == 1 for d in shape[-2:])


def _may_be_transposed(v) -> bool:
    """Can `v` reach a kernel with other strides than row-major: a graph or block input (the caller's
    array), a strided view, or a view of such?"""
    while v.node is not None and v.node.kind in ALIASES:
        v = v.node.inputs[0]
    return v.node is None or v.node.kind in STRIDED_VIEWS


def _steps(graph: Graph) -> tuple:
    """(one step per top-level node that has a step template, None) — the rest must be nodes the
    entry evaluates while planning a call, which the runtime checks — or (None, why) when a node
    rules the entry out already."""
    steps = []
    for index, node in enumerate(graph.nodes):
        template = TEMPLATE_OF_KIND.get(node.kind)
        if node.blocks:
            return None, f"{_where(node, index)}: control flow (blocks) does not lower"
        if template == "recurrent":
            steps.append({"node": index, "template": template, "split_min": GEMM_SPLIT_MIN})
        elif template in ("gemm", "recurrent_backward"):
            steps.append({"node": index, "template": template, "small_m": SMALL_M, "split_min": GEMM_SPLIT_MIN})
        elif template == "conv2d":
            steps.append({"node": index, "template": template, "small_m": SMALL_M})
        elif template is not None:
            steps.append({"node": index, "template": template})
    return steps, None


def _where(node: Node, index: int) -> str:
    return f"{node.kind}{f' at {node.source}' if node.source else ''} (node {index})"


def _refusal(graph: Graph, plan: dict) -> str | None:
    """Why the runtime does not take this plan's entry (its message), or None when it does."""
    doc = graph_to_json(graph)
    try:
        NativePlan.from_json(plan, typed_graph(doc), doc)
    except ModelError as e:
        return str(e).removeprefix("the native plan's entry cannot run this graph: ")
    return None
