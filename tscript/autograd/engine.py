"""The backward engine: a topological walk of the graph from the roots, summing gradients that
meet at a node, running tensor hooks, and accumulating into leaves (or capturing for `grad`)."""
from __future__ import annotations

import heapq

from . import anomaly
from .grad_mode import set_grad_enabled
from .graph import AccumulateGrad, accumulator, edge


def _dependencies(roots) -> dict:
    """Number of incoming edges of every node reachable from `roots`."""
    deps, seen, stack = {}, set(), list(roots)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for nxt, _ in node.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                stack.append(nxt)
    return deps


def _needed(roots, targets: set) -> set:
    """Ids of nodes on some path from a root to a target node (only those need to run)."""
    memo: dict[int, bool] = {}
    order, stack = [], [(r, False) for r in roots]
    while stack:  # iterative post-order, so deep graphs do not hit the recursion limit
        node, done = stack.pop()
        if done:
            memo[id(node)] = id(node) in targets or any(
                memo.get(id(n), False) for n, _ in node.next_functions if n is not None)
            continue
        if id(node) in memo or id(node) in order:
            continue
        order.append(id(node))
        stack.append((node, True))
        stack.extend((n, False) for n, _ in node.next_functions if n is not None and id(n) not in memo)
    return {k for k, v in memo.items() if v}


def _accumulate(buffers: dict, node, nr: int, grad) -> None:
    slot = buffers.setdefault(node, [None] * node.n_outputs)
    slot[nr] = grad if slot[nr] is None else slot[nr] + grad


def _run_tensor_hooks(node, grads: list) -> list:
    """Hooks registered on the tensors this node produced (may replace gradients); retain_grad."""
    for nr, hooks in node.tensor_hooks.items():
        for hook in list(hooks):
            if grads[nr] is not None:
                out = hook(grads[nr])
                grads[nr] = grads[nr] if out is None else out
    for nr, ref in node.retained.items():
        t = ref()
        if t is not None and grads[nr] is not None:
            g = grads[nr].detach()
            t.grad = g if t.grad is None else t.grad + g
    return grads


def _accumulate_leaf(leaf, grad, create_graph: bool) -> None:
    for hook in list(leaf._hooks or ()):
        out = hook(grad)
        grad = grad if out is None else out
    if not create_graph:
        grad = grad.detach()
        if not (grad._data.flags.owndata and grad._data.flags.writeable):
            grad = grad.clone()
    leaf.grad = grad if leaf.grad is None else (leaf.grad + grad if create_graph else _add_detached(leaf.grad, grad))


def _add_detached(a, b):
    out = a + b
    return out.detach() if out.grad_fn is not None else out


def execute(roots, root_grads, retain_graph: bool, create_graph: bool, inputs=None, capture=False):
    """Run the backward pass. With `capture`, return the gradients of `inputs` instead of
    accumulating into `.grad`; otherwise accumulate into leaves (only `inputs`, when given)."""
    root_nodes, buffers = [], {}
    for t, g in zip(roots, root_grads):
        node, nr = edge(t)
        if node is None:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        root_nodes.append(node)
        _accumulate(buffers, node, nr, g)
    targets = {id(edge(t)[0]): edge(t) for t in inputs} if inputs is not None else None
    needed = _needed(root_nodes, set(targets)) if targets is not None else None
    captured = {}
    deps = _dependencies(root_nodes)
    ready = [(-n.seq, id(n), n) for n in dict.fromkeys(root_nodes) if deps.get(n, 0) == 0]
    heapq.heapify(ready)
    with set_grad_enabled(create_graph):
        while ready:
            _, _, node = heapq.heappop(ready)
            grads = _run_tensor_hooks(node, buffers.pop(node, [None] * node.n_outputs))
            if targets is not None and id(node) in targets:
                captured[id(node)] = grads
            if isinstance(node, AccumulateGrad):
                if not capture and grads[0] is not None and (targets is None or id(node) in targets):
                    _accumulate_leaf(node.variable, grads[0], create_graph)
                continue
            if needed is not None and id(node) not in needed:
                continue
            out = node.apply(grads) if any(g is not None for g in grads) else [None] * len(node.next_functions)
            anomaly.check(node, out)
            for hook in node.metadata.get("post_hooks", ()):
                hook(out, grads)
            if not retain_graph:
                node.release()
            for (nxt, nr), g in zip(node.next_functions, out):
                if nxt is None:
                    continue
                if g is not None:
                    _accumulate(buffers, nxt, nr, g)
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    heapq.heappush(ready, (-nxt.seq, id(nxt), nxt))
    if capture:
        return [_captured(captured, t) for t in inputs]
    return None


def _captured(captured: dict, t):
    node, nr = edge(t)
    grads = captured.get(id(node))
    return None if grads is None else grads[nr]


def leaf_edge(t):
    """AccumulateGrad of a leaf requiring grad (so `grad` can capture at leaves)."""
    return accumulator(t)
