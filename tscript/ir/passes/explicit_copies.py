"""Explicit copies: a reshape of a view whose dims were reordered, broadcast or cut (transpose, permute,
t, expand; slices, chunks and splits; possibly followed by other views) is in general not a view, so
`reshape` copies it. This pass writes that
copy out as `contiguous()` before the reshape, which then is a view of the copy: the copy fuses into a
kernel (a tiled read of the reordered input), and the whole-graph entry, which runs reshapes only as
views, can run the graph.

Guarantee: the same values (reshape of a tensor equals reshape of its contiguous copy; `reshape` may
return a copy anyway). `view` is never touched (it must stay a view, or fail as it does). Values that are
written in place are left alone (a copy would not see the writes).
"""
from __future__ import annotations

from tscript_runtime.entry_steps import ALIASES, OFFSET_VIEWS, STRIDED_VIEWS, VIEW_LISTS

from ..graph import Graph, Node
from .effects import mutated_values

RESHAPES = {"aten::reshape", "aten::flatten"}
REORDERING = STRIDED_VIEWS | OFFSET_VIEWS  # and the pieces of VIEW_LISTS (taken apart by prim::ListUnpack)
KEEPS_LAYOUT = ALIASES - {"aten::contiguous"}  # (contiguous of a reordered view is a copy: in order again)


def make_copies_explicit(graph: Graph) -> bool:
    """Insert `contiguous()` before every reshape of a reordered view (module docstring); True if any."""
    mutated = mutated_values(graph)
    changed = False
    for node in list(graph.all_nodes()):
        if node.kind in RESHAPES and _reordered(node.inputs[0]) and node.inputs[0] not in mutated:
            with graph.inserting_before(node):
                copy = graph.insert("aten::contiguous", [node.inputs[0]], 1, types=[node.inputs[0].type])
            copy.source, copy.scope = node.source, node.scope
            node.set_input(0, copy.output)
            changed = True
    return changed


def _reordered(v) -> bool:
    """Is `v` a view whose dims were reordered, broadcast or cut (through layout-keeping views)?"""
    node: Node | None = v.node
    while node is not None and node.kind in KEEPS_LAYOUT:
        node = node.inputs[0].node
    if node is not None and node.kind == "prim::ListUnpack":
        node = node.inputs[0].node
        return node is not None and node.kind in VIEW_LISTS
    return node is not None and node.kind in REORDERING
