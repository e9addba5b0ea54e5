"""The backward graph: `Node`s (a tensor's `grad_fn`) linked by `next_functions` edges.

An `OpNode` holds one recorded op: the derivative formula from `derivatives.py` and the values it
saved (tensors with the version they had, so an in-place change is caught). `AccumulateGrad` ends
every path at a leaf and adds into its `.grad`.
"""
from __future__ import annotations

import itertools
import weakref

from tscript_runtime.dtypes import TORCH_NAMES

_sequence = itertools.count()


class RemovableHandle:
    """Returned by `register_hook`; `remove()` unregisters the hook."""

    def __init__(self, hooks: list, fn):
        self._hooks, self._fn = hooks, fn

    def remove(self) -> None:
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


class Node:
    """A function of the backward graph. `next_functions` is a tuple of `(node, output_nr)` pairs,
    one per differentiable input (`(None, 0)` for inputs that do not require grad)."""

    def __init__(self, next_functions=(), n_outputs: int = 1):
        self.next_functions = tuple(next_functions)
        self.n_outputs = n_outputs
        self.seq = next(_sequence)          # creation order: later nodes run first on ties
        self.tensor_hooks: dict[int, list] = {}   # output_nr -> hooks of the tensor it produced
        self.retained: dict[int, weakref.ref] = {}  # output_nr -> tensor that called retain_grad()
        self.metadata: dict = {}
        self.trace = None                   # forward stack, kept in anomaly mode

    def name(self) -> str:
        return type(self).__name__

    def apply(self, grads: list) -> list:
        """Gradients for `next_functions` from the gradients of this node's outputs."""
        raise NotImplementedError

    def release(self) -> None:
        """Drop saved values (backward without retain_graph)."""

    def register_hook(self, fn) -> RemovableHandle:
        hooks = self.metadata.setdefault("post_hooks", [])
        hooks.append(fn)
        return RemovableHandle(hooks, fn)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """Adds the incoming gradient into a leaf tensor's `.grad` (after the leaf's hooks)."""

    def __init__(self, variable):
        super().__init__((), 1)
        self.variable = variable

    def apply(self, grads):
        return []


def accumulator(tensor) -> AccumulateGrad:
    """The one AccumulateGrad node of a leaf (weakly cached on the tensor, as PyTorch does)."""
    ref = tensor.__dict__.get("_accumulator")
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(tensor)
        tensor._accumulator = weakref.ref(node)
    return node


def edge(tensor):
    """The (node, output_nr) a gradient for `tensor` flows into; (None, 0) if it needs none."""
    if not getattr(tensor, "_requires_grad", False):
        return (None, 0)
    if tensor.grad_fn is not None:
        return (tensor.grad_fn, tensor._output_nr)
    return (accumulator(tensor), 0)


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved."""
    __slots__ = ("tensor", "version")

    def __init__(self, tensor):
        self.tensor, self.version = tensor, tensor._vc[0]

    def unpack(self):
        t = self.tensor
        if t._vc[0] != self.version:
            kind = f"{TORCH_NAMES[t._data.dtype]}Tensor"
            where = (f", which is output {t._output_nr} of {t.grad_fn.name()}," if t.grad_fn is not None
                     else "")
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [tscript.{kind} {list(t._data.shape)}]{where} is at version {t._vc[0]}; "
                f"expected version {self.version} instead. Hint: enable anomaly detection to find the "
                f"operation that failed to compute its gradient, with "
                f"tscript.autograd.set_detect_anomaly(True).")
        return t


FREED_MESSAGE = ("Trying to backward through the graph a second time (or directly access saved tensors after "
                 "they have already been freed). Saved intermediate values of the graph are freed when you "
                 "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
                 "through the graph a second time or if you need to access saved tensors after calling "
                 "backward.")
