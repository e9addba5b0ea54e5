"""prim::If in autodiff. The backward of an If is an If on the same (saved) condition: block j
holds the backward of forward block j, so whichever branch the forward took, the backward
differentiates that branch. It returns the gradients of the outer values either branch reaches
(the incoming gradient, or zeros, where a branch leaves one unchanged).

Forward values defined inside a branch that the backward reads are exported: the forward If gets
one more output per value, returned by its branch and `prim::Uninitialized` by the other (whose
backward never reads it). A branch that could not be run on the example inputs (no example values)
gets a backward that raises when it is taken.
"""
from __future__ import annotations

from .._tensor import _make
from ..ir.graph import Block, Graph, Node, Value
from ..ir.passes.constant_propagation import constant_value
from ..ir.types import INT, tensor_type
from .errors import unsupported


def backward_if(bw, node: Node) -> None:
    """Record the backward of forward If `node` (see the module docstring)."""
    ok, cond = constant_value(bw.forward, node.inputs[0])
    if ok:  # a constant condition: the backward of the branch it picks, inline
        block = node.blocks[0 if cond else 1]
        _seed(bw, node, block)
        bw.walk(block)
        return
    incoming = dict(bw.grads)
    bif = bw.graph.insert("prim::If", [bw.saved_input(node.inputs[0])[1]], 0)
    bif.source = node.source
    branches = [_branch(bw, node, fblock, bif.add_block(), incoming) for fblock in node.blocks]
    outer = list(dict.fromkeys(u for grads in branches for u in grads))  # gradients either branch changes
    for fblock, bblock, grads in zip(node.blocks, bif.blocks, branches):
        with bw.scoped(bblock):
            for u in outer:
                bblock.add_return(_branch_grad(bw, u, grads, incoming, _available(bw, fblock)))
    taken = branches[0 if bw.env[node.inputs[0]] else 1]
    bw.grads = incoming
    for u in outer:
        out = bif.add_output(tensor_type(bw.env[u].dtype, (None,) * bw.env[u].ndim))
        example = taken[u][0] if u in taken else incoming.get(u)
        g = _make(example._data.copy()) if example is not None else _make(bw.env[u] * 0)
        bw.rec.bind(g, out)
        bw.grads[u] = g


def _seed(bw, node: Node, block: Block) -> None:
    """The If's output gradients flow to what `block` returns."""
    for out, ret in zip(node.outputs, block.returns):
        bw.accumulate(ret, bw.grads.get(out))


def _branch(bw, node: Node, fblock: Block, bblock: Block, incoming: dict) -> dict:
    """Record the backward of one branch into `bblock`; returns {outer value: (gradient, its Value)}
    for the outer values whose gradient the branch changed."""
    inner = _defined(fblock)
    with bw.scoped(bblock):
        bw.grads = dict(incoming)
        if not _available(bw, fblock):
            message = (f"autodiff: the backward of this branch of the prim::If at {node.source or 'unknown'} "
                       f"was not compiled: the branch failed on the example inputs; compile with inputs that take it")
            bw.graph.insert("prim::RaiseException", [bw.graph.constant(message)], 0)
            return {}
        _seed(bw, node, fblock)
        bw.walk(fblock)
        changed = {u: g for u, g in bw.grads.items()
                   if u not in inner and (u not in incoming or g is not incoming[u])}
        for u, g in changed.items():
            if isinstance(g, list):
                raise unsupported(node, f"the gradient of list %{u.name} crosses the branches")
        return {u: (g, bw.rec.value_of(g)) for u, g in changed.items()}


def _branch_grad(bw, u: Value, grads: dict, incoming: dict, available: bool) -> Value:
    """What block j of the backward If returns for outer value `u`."""
    if u in grads:
        return grads[u][1]
    if not available:
        return bw.graph.insert("prim::Uninitialized", [], 1, types=[u.type]).output
    return bw.rec.value_of(incoming[u] if u in incoming else bw.zeros(u))


def _available(bw, block: Block) -> bool:
    """Were the branch's values computed on the example inputs?"""
    return all(v in bw.env for v in _defined(block))


def _defined(block: Block) -> set:
    out = set()
    for n in block.nodes:
        out.update(n.outputs)
        for b in n.blocks:
            out.update(b.params)
            out |= _defined(b)
    return out


# -- the forward side ----------------------------------------------------------------------------------

def saved_outputs(forward: Graph, saved: list) -> list[Value]:
    """The top-level forward values to return for the backward's saved inputs: sizes become
    aten::size nodes, values inside If branches are exported through the If."""
    exported: dict = {}
    return [_export(forward, _size(forward, *key) if isinstance(key, tuple) else key, exported) for key in saved]


def _size(forward: Graph, v: Value, dim: int) -> Value:
    """`aten::size(v, dim)`, right after `v` is defined."""
    const = forward.create("prim::Constant", [], 1, {"value": dim}, [INT])
    size = forward.create("aten::size", [v, const.output], 1, types=[INT], names=[f"{v.name}_size{dim}"])
    if v.node is None:
        v.block.prepend(size)
        v.block.prepend(const)
    else:
        const.insert_after(v.node)
        size.insert_after(const)
    return size.output


def _export(forward: Graph, v: Value, exported: dict) -> Value:
    """`v`, or the top-level If output carrying it out of the branches it is defined in."""
    if v in exported:
        return exported[v]
    start = v
    while True:
        block = v.node.owner if v.node is not None else v.block
        if block is forward.block:
            exported[start] = v
            return v
        owner = block.owner
        if owner.kind != "prim::If":
            raise unsupported(owner, f"the backward needs %{v.name}, defined inside it")
        out = owner.add_output(v.type)
        for b in owner.blocks:
            if b is block:
                b.add_return(v)
            else:
                with forward.inserting_at_end(b):
                    b.add_return(forward.insert("prim::Uninitialized", [], 1, types=[v.type]).output)
        v = out
