"""Border padding of the last 1-3 dims: `reflection_pad{1,2,3}d` (mirror without repeating the edge),
`replication_pad{1,2,3}d` (repeat the edge), and their adjoints `*_backward`, which add each output
position's gradient back into the input position it was copied from.

A padded dim is a gather along that dim: output position j (counted from -before) copies input
position `source_index(mode, size, before, after)[j]`. Negative sizes crop, as in PyTorch. The dims
are independent, so the forward takes one gather per dim and the backward one scatter-add per dim.
Inputs are batched (N, C, *spatial) or unbatched (C, *spatial); any dtype but bool.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import OpError, OpRuntimeError, fmt_shape
from .registry import register

_SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


class PadNotImplementedError(OpError, NotImplementedError):
    """PyTorch's error for a dtype a padding kernel does not exist for (bool)."""


def source_index(mode: str, size: int, before: int, after: int) -> np.ndarray:
    """For each output position along a padded dim, the input position it copies."""
    j = np.arange(-before, size + after)
    if mode == "replicate":
        return np.clip(j, 0, size - 1)
    j = np.abs(j)
    return np.where(j > size - 1, 2 * (size - 1) - j, j)


def _pairs(padding, k: int) -> list:
    """[(before, after)] for the last k dims, innermost dim first (PyTorch's order of `padding`)."""
    padding = [int(p) for p in padding]
    if len(padding) != 2 * k:
        raise OpRuntimeError(f"padding size is expected to be {2 * k}")
    return [(padding[2 * i], padding[2 * i + 1]) for i in range(k)]


def _check_input(op: str, shape: tuple, k: int) -> None:
    batched = len(shape) == k + 2
    if len(shape) not in (k + 1, k + 2) or any(isinstance(s, int) and s == 0 for s in shape[int(batched):]):
        raise OpRuntimeError(f"{op}: Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size "
                             f"and other non-zero dimensions for input, but got: {fmt_shape(shape)}")


def _padded_size(size, before: int, after: int):
    n = before + after
    if isinstance(size, str):  # a symbolic size
        return size if n == 0 else f"{size}{n:+d}"
    return size + n


def _pad_shape(mode: str, k: int):
    """The shape rule of a mode's k-dim pad, with PyTorch's checks."""
    op = f"{'reflection' if mode == 'reflect' else 'replication'}_pad{k}d"

    def rule(self, padding):
        shape = tuple(self.shape)
        _check_input(op, shape, k)
        pairs = _pairs(padding, k)
        out = list(shape)
        for i, (before, after) in enumerate(pairs):
            d = len(shape) - 1 - i
            size = shape[d]
            if mode == "reflect" and isinstance(size, int) and (before >= size or after >= size):
                raise OpRuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding "
                                     f"input dimension, but got: padding ({before}, {after}) at dimension {d} of "
                                     f"input {fmt_shape(shape)}")
            out[d] = _padded_size(size, before, after)
        _check_output(shape[-k:], out[-k:])
        return tuple(out)
    return rule


def _check_output(sizes, out) -> None:
    if all(not isinstance(s, int) or s >= 1 for s in out):
        return
    names = _SPATIAL[len(sizes)]
    given = ", ".join(f"{c}: {s}" for c, s in zip(names, sizes))
    calculated = " ".join(f"{c}: {s}" for c, s in zip(names, out))
    raise OpRuntimeError(f"input ({given}) is too small. Calculated output {calculated}")


def _pad_dtype(op: str):
    def rule(self, *rest):
        if self.dtype == dt.bool_:
            raise PadNotImplementedError(f"\"{op}\" not implemented for 'Bool'")
        return self.dtype
    return rule


def _pad(x: np.ndarray, padding, mode: str, k: int) -> np.ndarray:
    for i, (before, after) in enumerate(_pairs(padding, k)):
        axis = x.ndim - 1 - i
        x = np.take(x, source_index(mode, x.shape[axis], before, after), axis=axis)
    return x


def _scatter_add(g: np.ndarray, axis: int, index: np.ndarray, size: int, before: int) -> np.ndarray:
    """The adjoint of `np.take(x, index, axis)` for an x of `size` along `axis`: the interior (output
    j copies input j - before) is one slice; the few border positions are added one by one."""
    g = np.moveaxis(g, axis, 0)
    out = np.zeros((size,) + g.shape[1:], g.dtype)
    straight = np.flatnonzero(index - np.arange(len(index)) == -before)
    if len(straight):
        lo, hi = straight[0], straight[-1] + 1
        out[index[lo]:index[lo] + hi - lo] += g[lo:hi]
        border = np.concatenate([np.arange(lo), np.arange(hi, len(index))])
    else:
        border = np.arange(len(index))
    for j in border:
        out[index[j]] += g[j]
    return np.moveaxis(out, 0, axis)


def _unpad(grad: np.ndarray, shape: tuple, padding, mode: str, k: int) -> np.ndarray:
    for i, (before, after) in enumerate(_pairs(padding, k)):
        axis = grad.ndim - 1 - i
        size = shape[axis]
        grad = _scatter_add(grad, axis, source_index(mode, size, before, after), size, before)
    return np.ascontiguousarray(grad)


def _backward_shape(forward_shape):
    def rule(grad_output, self, padding):
        expected = forward_shape(self, padding)
        if tuple(grad_output.shape) != expected and all(isinstance(s, int) for s in expected):
            raise OpRuntimeError(f"gradient size {fmt_shape(grad_output.shape)} does not match the padded input "
                                 f"size {fmt_shape(expected)}")
        return tuple(self.shape)
    return rule


def _register_mode(mode: str, k: int) -> None:
    name = f"{'reflection' if mode == 'reflect' else 'replication'}_pad{k}d"
    shape = _pad_shape(mode, k)
    dtype = _pad_dtype(name)

    def forward(self, padding):
        shape(self, padding)
        dtype(self)
        return _pad(self, padding, mode, k)

    def backward(grad_output, self, padding):
        _backward_shape(shape)(grad_output, self, padding)
        return _unpad(grad_output, self.shape, padding, mode, k)

    forward.__doc__ = f"F.pad(mode={mode!r}) of the last {k} dim(s)."
    backward.__doc__ = f"The adjoint of {name}: gradients summed back into the input positions they came from."
    register(f"aten::{name}(Tensor self, int[{2 * k}] padding) -> Tensor", shape=shape, dtype=dtype,
             method_only=True)(forward)
    register(f"aten::{name}_backward(Tensor grad_output, Tensor self, int[{2 * k}] padding) -> Tensor",
             shape=_backward_shape(shape), dtype=lambda grad_output, self, padding: self.dtype,
             method_only=True)(backward)


for _mode in ("reflect", "replicate"):
    for _k in (1, 2, 3):
        _register_mode(_mode, _k)
