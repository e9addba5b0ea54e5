"""Common-subexpression elimination: a pure node equal to an earlier one (same kind, inputs and
attributes) in the same or an enclosing block is replaced by it. Nodes reading or defining values
that an in-place op may change are left alone (mutation-aware: two `zeros` of which one is written
stay two). One walk over the graph."""
from __future__ import annotations

from ..graph import Block, Graph
from .effects import is_pure, is_random, mutated_values


def _key(node):
    attrs = tuple(sorted((k, _hashable(v)) for k, v in node.attrs.items()))
    return node.kind, tuple(id(v) for v in node.inputs), attrs


def _hashable(v):
    if isinstance(v, list):
        return ("list", tuple(_hashable(x) for x in v))
    if isinstance(v, tuple):
        return ("tuple", tuple(_hashable(x) for x in v))
    return (type(v).__name__, v)


def eliminate_common_subexpressions(graph: Graph) -> bool:
    """Run CSE in place; True if any node was removed."""
    return _block(graph.block, [{}], mutated_values(graph))


def _block(block: Block, scopes: list, mutable: set) -> bool:
    changed = False
    seen: dict = {}
    scopes.append(seen)
    for node in list(block.nodes):
        for b in node.blocks:
            changed |= _block(b, scopes, mutable)
        if not is_pure(node) or is_random(node) or any(v in mutable for v in node.inputs + node.outputs):
            continue
        key = _key(node)
        earlier = next((s[key] for s in reversed(scopes) if key in s), None)
        if earlier is None:
            seen[key] = node
            continue
        for old, new in zip(node.outputs, earlier.outputs):
            old.replace_all_uses_with(new)
        node.destroy()
        changed = True
    scopes.pop()
    return changed
