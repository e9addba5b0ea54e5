"""The backward engine: a topological walk of the graph from the roots, summing gradients that
meet at a node, running hooks, and accumulating into leaves (or capturing for `grad`).

A node runs once all its consumers have run (dependency counts), latest-created first. With
`inputs`, the walk stops at those tensors: only nodes with an input somewhere below them run.
"""
from __future__ import annotations

import heapq

from . import anomaly
from .grad_mode import set_grad_enabled
from .graph import AccumulateGrad, edge


def _dependencies(roots) -> dict:
    """Number of incoming edges of every node reachable from `roots`."""
    deps, seen, stack = {}, set(), list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for nxt, _ in node.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                stack.append(nxt)
    return deps


def _needed(roots, targets) -> set:
    """Nodes with a target somewhere below them: the only ones that must run."""
    reaches: dict = {}  # node -> it is a target or has one below
    stack = [(r, False) for r in roots]
    while stack:  # iterative post-order, so deep graphs do not hit the recursion limit
        node, expanded = stack.pop()
        if node in reaches:
            continue
        children = [n for n, _ in node.next_functions if n is not None]
        if not expanded:
            stack.append((node, True))
            stack.extend((c, False) for c in children if c not in reaches)
        else:
            reaches[node] = node in targets or any(reaches[c] for c in children)
    return {n for n in reaches if any(reaches[c] for c, _ in n.next_functions if c is not None)}


def _accumulate(buffers: dict, node, nr: int, grad) -> None:
    slot = buffers.get(node)
    if slot is None:
        slot = buffers[node] = [None] * node.n_outputs
    slot[nr] = grad if slot[nr] is None else slot[nr] + grad


def _call_hook(hook, grad, exposed: set):
    """Run a gradient hook; its result (if any) replaces the gradient, shape and dtype unchanged."""
    exposed.add(id(grad._data))
    out = hook(grad)
    if out is None:
        return grad
    name = getattr(hook, "__name__", repr(hook))
    if out._data.shape != grad._data.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    if out._data.dtype != grad._data.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {grad.type()} got {out.type()})")
    exposed.add(id(out._data))
    return out


def _has_pre_hooks(node) -> bool:
    return bool(node.tensor_hooks or node.retained or node.pre_hooks
                or (node.__class__ is AccumulateGrad and node.variable._hooks))


def _pre_hooks(node, grads: list, exposed: set, create_graph: bool) -> list:
    """Tensor hooks, then retain_grad, then the node's pre-hooks (PyTorch's order)."""
    hooks = node.tensor_hooks
    if node.__class__ is AccumulateGrad:
        hooks = {0: node.variable._hooks}
    if hooks:
        for nr, fns in hooks.items():
            for hook in list(fns):
                if grads[nr] is not None:
                    grads[nr] = _call_hook(hook, grads[nr], exposed)
    if node.retained:
        for nr, ref in node.retained.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                store_grad(t, grads[nr], create_graph, exposed)
    if node.pre_hooks:
        for hook in list(node.pre_hooks):
            out = hook(tuple(grads))
            grads = grads if out is None else list(out)
    return grads


def store_grad(t, grad, create_graph: bool, exposed: set) -> None:
    """Accumulate `grad` into `t.grad`: in place when no graph is built (as PyTorch), cloning a
    gradient that someone else may hold (a hook, the caller, another tensor's `.grad`)."""
    if not create_graph and grad.grad_fn is not None:
        grad = grad.detach()
    old = t.grad
    if old is None:
        data = grad._data
        if id(data) in exposed or not (data.flags.owndata and data.flags.writeable):
            grad = grad.clone()
        exposed.add(id(grad._data))
        t.grad = grad
    elif create_graph or old._data.shape != grad._data.shape or old._data.dtype != grad._data.dtype \
            or not old._data.flags.writeable:
        t.grad = old + grad
    else:
        old.add_(grad)


def execute(roots, root_grads, retain_graph: bool, create_graph: bool, inputs=None, capture=False):
    """Run the backward pass. With `capture`, return the gradients of `inputs` instead of
    accumulating into `.grad`; otherwise accumulate into leaves (only `inputs`, when given)."""
    buffers: dict = {}
    for t, g in zip(roots, root_grads):
        node, nr = edge(t)
        _accumulate(buffers, node, nr, g)
    exposed = {id(g._data) for g in root_grads}
    targets = None if inputs is None else _targets(inputs)
    needed = None if targets is None else _needed(list(buffers), targets)
    captured = {}
    deps = _dependencies(list(buffers))
    ready = [(-n.seq, n) for n in buffers if n not in deps]
    heapq.heapify(ready)
    with set_grad_enabled(create_graph):
        while ready:
            node = heapq.heappop(ready)[1]
            grads = buffers.pop(node, None) or [None] * node.n_outputs
            if _has_pre_hooks(node):
                grads = _pre_hooks(node, grads, exposed, create_graph)
            if targets is not None:
                if node in targets:
                    _deliver(node, grads, targets[node], captured, capture, create_graph, exposed)
                if node not in needed:
                    continue
            elif node.__class__ is AccumulateGrad:
                if grads[0] is not None:
                    store_grad(node.variable, grads[0], create_graph, exposed)
                continue
            out = _run(node, grads, retain_graph, exposed)
            for (nxt, nr), g in zip(node.next_functions, out):
                if nxt is None:
                    continue
                if g is not None:
                    _accumulate(buffers, nxt, nr, g)
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    heapq.heappush(ready, (-nxt.seq, nxt))
    if capture:
        return [captured.get(id(t)) for t in inputs]
    return None


def _run(node, grads: list, retain_graph: bool, exposed: set) -> list:
    """The node's input gradients (all None when no gradient reached it)."""
    if _all_none(grads):
        out = [None] * len(node.next_functions)
    else:
        try:
            out = node.apply(grads)
        except Exception:
            anomaly.report(node)
            raise
        if anomaly.state.enabled:
            anomaly.check(node, out)
    if node.post_hooks:
        exposed.update(id(g._data) for g in out if g is not None)
        for hook in list(node.post_hooks):
            hook(tuple(out), tuple(grads))
    if not retain_graph:
        node.release()
    return out


def _all_none(grads: list) -> bool:
    return grads[0] is None if len(grads) == 1 else not any(g is not None for g in grads)


def _targets(inputs) -> dict:
    """node -> [(output_nr, tensor)] for the tensors whose gradients are wanted."""
    targets: dict = {}
    for t in inputs:
        node, nr = edge(t)
        if node is not None:
            targets.setdefault(node, []).append((nr, t))
    return targets


def _deliver(node, grads, wanted, captured: dict, capture: bool, create_graph: bool, exposed: set) -> None:
    """Hand the gradients reaching a target to `grad`'s result, or into the targets' `.grad`."""
    for nr, t in wanted:
        if grads[nr] is None:
            continue
        if capture:
            captured[id(t)] = grads[nr]
        else:
            store_grad(t, grads[nr], create_graph, exposed)
