"""Dead-code elimination: removes nodes whose outputs are unused and that have no side effects
(writes, random draws, raises), and unused outputs of prim::If. Guarantees: every remaining
node is used or effectful; one reverse walk per block (linear time)."""
from __future__ import annotations

from ..graph import Block, Graph
from .effects import has_side_effects


def eliminate_dead_code(graph: Graph) -> bool:
    """Run DCE on `graph` in place; True if anything was removed."""
    return _block(graph.block)


def _block(block: Block) -> bool:
    changed = False
    for node in list(block.reversed_nodes()):
        if node.kind == "prim::If":
            changed |= _prune_if_outputs(node)
        for b in node.blocks:
            changed |= _block(b)
        if not any(o.uses for o in node.outputs) and not has_side_effects(node):
            node.destroy()
            changed = True
    return changed


def _prune_if_outputs(node) -> bool:
    dead = [i for i, o in enumerate(node.outputs) if not o.uses]
    for i in reversed(dead):
        for b in node.blocks:
            b.remove_return(i)
        node.remove_output(i)
    return bool(dead)
