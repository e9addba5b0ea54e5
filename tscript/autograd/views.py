"""In-place ops on views, as PyTorch does them.

Writing into a view `v` of a base `b` changes `b`, so `b`'s history is rebased onto a `CopySlices`
node: the gradient of the old `b` is the incoming gradient with `v`'s region replaced by the
in-place op's gradient for its `self`. `v` becomes a view of the new `b` (`AsStridedBackward0`), and
every other view of `b` is refreshed the same way when next used (the shared version counter says
that `b` changed). A view's region in its base is an integer index map (metadata, like a shape);
the gradients use `aten::index` / `aten::index_put`, so they are differentiable again.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .derivatives import call
from .graph import Node, edge


def index_map(view: np.ndarray, base: np.ndarray) -> np.ndarray:
    """For each element of `view`, its position in `base` flattened in C order."""
    low, high = _byte_bounds(base)
    slots = np.full((high - low) // base.itemsize, -1, np.int64)  # one slot per element of base's memory
    _strided(slots, base, low)[...] = np.arange(base.size).reshape(base.shape)
    return _strided(slots, view, low).copy()


def _byte_bounds(arr: np.ndarray) -> tuple:
    """The lowest address of `arr`'s elements and one past the end of its highest one."""
    start = arr.__array_interface__["data"][0]
    if arr.size == 0:
        return start, start
    span = [s * (n - 1) for s, n in zip(arr.strides, arr.shape)]
    return start + sum(s for s in span if s < 0), start + sum(s for s in span if s > 0) + arr.itemsize


def _strided(slots: np.ndarray, arr: np.ndarray, low: int) -> np.ndarray:
    """`slots` seen with `arr`'s layout (offset and strides counted in elements of `arr`)."""
    item = arr.itemsize
    start = (arr.__array_interface__["data"][0] - low) // item
    strides = tuple(s // item * slots.itemsize for s in arr.strides)
    return as_strided(slots[start:], shape=arr.shape, strides=strides)


def _region(grad, index):
    return call("aten::index", grad.reshape(-1), [index])


class AsStridedBackward0(Node):
    """A view of its base, recreated after the base changed in place: scatters the view's
    gradient into a zero gradient of the base."""

    def __init__(self, base_edge, index, base_shape: tuple):
        super().__init__((base_edge,), 1)
        self.index, self.base_shape = index, base_shape

    def apply(self, grads):
        grad = grads[0]
        zeros = call("aten::zeros", (int(np.prod(self.base_shape)),), dtype=grad.dtype)
        return [call("aten::index_put", zeros, [self.index], grad, True).reshape(self.base_shape)]


class CopySlices(Node):
    """The base after an in-place op on one of its views (`inner` is that op's node)."""

    def __init__(self, base_edge, inner, self_slot: int, index, base_shape: tuple):
        others = inner.next_functions[:self_slot] + inner.next_functions[self_slot + 1:]
        super().__init__((base_edge,) + others, 1)
        self.inner, self.self_slot, self.index, self.base_shape = inner, self_slot, index, base_shape

    def name(self) -> str:
        return "CopySlices"

    def release(self) -> None:
        self.inner.release()

    def apply(self, grads):
        grad = grads[0]
        inner = self.inner.apply([_region(grad, self.index)])
        g_view = inner.pop(self.self_slot)
        if g_view is None:
            g_view = call("aten::zeros", tuple(self.index.shape), dtype=grad.dtype)
        flat = call("aten::index_put", grad.reshape(-1), [self.index], g_view, False)
        return [flat.reshape(self.base_shape)] + inner


def _index_tensor(view, base):
    from .._tensor import _make
    return _make(index_map(view._data, base._data))


def check_view_inplace(target) -> None:
    """PyTorch's errors for in-place ops on views it cannot rebase."""
    base = target._base
    if base.grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    fn = target.grad_fn
    if fn is not None and fn.n_outputs > 1:
        from .graph import short_name
        raise RuntimeError(f"Output {target._output_nr} of {short_name(fn)} is a view and is being modified "
                           f"inplace. This view is the output of a function that returns multiple views. Such "
                           f"functions do not allow the output views to be modified inplace. You should replace "
                           f"the inplace operation by an out-of-place one.")


def rebase(view, inner, self_slot: int, base_edge, index) -> None:
    """After `inner` (an in-place op) wrote into `view`: give the base a CopySlices history and the
    view an AsStridedBackward0 of it."""
    base = view._base
    shape = tuple(base._data.shape)
    base.grad_fn, base._output_nr, base._requires_grad = CopySlices(base_edge, inner, self_slot, index, shape), 0, True
    _attach(view, base, index)


def _attach(view, base, index) -> None:
    view.grad_fn = AsStridedBackward0(edge(base), index, tuple(base._data.shape))
    view._requires_grad, view._output_nr, view._view_version = True, 0, view._vc[0]


def refresh(view) -> None:
    """Recreate the grad_fn of a view whose base changed in place since it was recorded."""
    base = view._base
    if base._requires_grad:
        _attach(view, base, _index_tensor(view, base))
    else:
        view._view_version = view._vc[0]


def prepare(target) -> tuple:
    """(base edge, index map) to rebase `target`'s base, taken before the in-place op runs."""
    check_view_inplace(target)
    return edge(target._base), _index_tensor(target, target._base)
