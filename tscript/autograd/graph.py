"""The backward graph: `Node`s (a tensor's `grad_fn`) linked by `next_functions` edges.

An `OpNode` (record.py) holds one recorded op: the derivative formula from `derivatives.py` and the
values it saved (`SavedTensor`s remember the version they had, so an in-place change is caught).
`AccumulateGrad` ends every path at a leaf and adds into its `.grad`.
"""
from __future__ import annotations

import itertools
import re
import weakref

from tscript_runtime.dtypes import TORCH_NAMES

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

    # Hook containers are created on first use: most nodes never get one.
    tensor_hooks = None   # {output_nr: [hook]}: hooks of the tensors this node produced
    retained = None       # {output_nr: weakref}: outputs that called retain_grad()
    pre_hooks = None      # [hook(grad_outputs)] from register_prehook
    post_hooks = None     # [hook(grad_inputs, grad_outputs)] from register_hook
    trace = None          # forward stack, kept in anomaly mode
    _metadata = None
    sequence = itertools.count()  # numbers nodes in creation order

    def __init__(self, next_functions=(), n_outputs: int = 1):
        self.next_functions = tuple(next_functions)
        self.n_outputs = n_outputs
        self.seq = next(Node.sequence)  # creation order: later nodes run first

    def name(self) -> str:
        """PyTorch's name of this node's type, e.g. "MulBackward0"."""
        return type(self).__name__

    @property
    def metadata(self) -> dict:
        """A dict for the user's own data, as `grad_fn.metadata` in PyTorch."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def apply(self, grads: list) -> list:
        """Gradients for `next_functions` from the gradients of this node's outputs."""
        raise NotImplementedError

    def release(self) -> None:
        """Drop saved tensors (backward without retain_graph)."""

    def register_hook(self, fn) -> RemovableHandle:
        """`fn(grad_inputs, grad_outputs)` runs after this node computed its gradients."""
        if self.post_hooks is None:
            self.post_hooks = []
        self.post_hooks.append(fn)
        return RemovableHandle(self.post_hooks, fn)

    def register_prehook(self, fn) -> RemovableHandle:
        """`fn(grad_outputs)` runs before this node; a returned tuple replaces the gradients."""
        if self.pre_hooks is None:
            self.pre_hooks = []
        self.pre_hooks.append(fn)
        return RemovableHandle(self.pre_hooks, fn)

    def add_tensor_hook(self, output_nr: int, fn) -> RemovableHandle:
        """A hook of the tensor that is output `output_nr` of this node (Tensor.register_hook)."""
        if self.tensor_hooks is None:
            self.tensor_hooks = {}
        hooks = self.tensor_hooks.setdefault(output_nr, [])
        hooks.append(fn)
        return RemovableHandle(hooks, fn)

    def retain(self, output_nr: int, tensor) -> None:
        """Store the gradient of output `output_nr` into `tensor.grad` during backward."""
        if self.retained is None:
            self.retained = {}
        self.retained[output_nr] = weakref.ref(tensor)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """Adds the incoming gradient into a leaf tensor's `.grad` (after the leaf's hooks); the engine
    does the adding, so `apply` has nothing to return."""

    def __init__(self, variable):
        super().__init__((), 1)
        self.variable = variable

    def apply(self, grads):
        return []


def accumulator(tensor) -> AccumulateGrad:
    """The one AccumulateGrad node of a leaf (weakly cached on the tensor, as PyTorch does)."""
    ref = tensor._accumulator
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(tensor)
        tensor._accumulator = weakref.ref(node)
    return node


def edge(tensor):
    """The (node, output_nr) a gradient for `tensor` flows into; (None, 0) if it needs none."""
    if tensor._view_version is not None and tensor._view_version != tensor._vc[0]:
        from .views import refresh
        refresh(tensor)  # the base changed in place since this view's grad_fn was set
    if not tensor._requires_grad:
        return (None, 0)
    if tensor.grad_fn is not None:
        return (tensor.grad_fn, tensor._output_nr)
    return (accumulator(tensor), 0)


def short_name(node) -> str:
    """A node's name as PyTorch's error messages print it ("MulBackward0" -> "Mul")."""
    return re.sub(r"Backward\d*$", "", node.name())


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved."""
    __slots__ = ("tensor", "version")

    def __init__(self, tensor):
        self.tensor, self.version = tensor, tensor._vc[0]

    def unpack(self, owner=None):
        """The saved tensor; raises PyTorch's error if it was modified in place since."""
        t = self.tensor
        if t._vc[0] != self.version:
            where = f", which is output {t._output_nr} of {short_name(t.grad_fn)}," if t.grad_fn else ""
            raise RuntimeError(modified_message(t._data, where, t._vc[0], self.version))
        return t


class SavedOutput(SavedTensor):
    """An op's own output, saved as its data and graph position rather than as the tensor: the
    tensor points at the node, which would make a reference cycle (PyTorch does the same).
    `grad_fn` is None when it is the saving node itself (given to `unpack` as `owner`). With
    `check=False` in-place changes are not errors (for outputs a formula may not read)."""
    __slots__ = ("data", "vc", "grad_fn", "output_nr")

    def __init__(self, tensor, owner, check: bool = True):
        self.data, self.vc, self.version = tensor._data, tensor._vc, tensor._vc[0] if check else None
        self.grad_fn = None if tensor.grad_fn is owner else tensor.grad_fn
        self.output_nr = tensor._output_nr

    def unpack(self, owner=None):
        from .._tensor import _make
        grad_fn = self.grad_fn or owner
        if self.version is not None and self.vc[0] != self.version:
            where = f", which is output {self.output_nr} of {short_name(grad_fn)}," if grad_fn else ""
            raise RuntimeError(modified_message(self.data, where, self.vc[0], self.version))
        t = _make(self.data)
        t._vc = self.vc
        if grad_fn is not None:
            t._requires_grad, t.grad_fn, t._output_nr = True, grad_fn, self.output_nr
        return t


def modified_message(data, where: str, version: int, expected: int) -> str:
    """PyTorch's error for a saved tensor changed in place."""
    kind = f"{TORCH_NAMES[data.dtype]}Tensor"
    return (f"one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [tscript.{kind} {list(data.shape)}]{where} is at version {version}; expected version "
            f"{expected} instead. Hint: enable anomaly detection to find the operation that failed to compute "
            f"its gradient, with tscript.autograd.set_detect_anomaly(True, check_nan=False).")


FREED_MESSAGE = ("Trying to backward through the graph a second time (or directly access saved tensors after "
                 "they have already been freed). Saved intermediate values of the graph are freed when you "
                 "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
                 "through the graph a second time or if you need to access saved tensors after calling "
                 "backward.")
