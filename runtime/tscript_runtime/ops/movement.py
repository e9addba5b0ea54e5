"""Movement ops: views (sharing memory with their input, like PyTorch's), reshapes, copies."""
import warnings

import numpy as np

from .. import dtypes as dt
from ..errors import OpIndexError, OpRuntimeError, fmt_shape
from ._cast import as_array
from .registry import register
from .rules import infer_size, numel, same_dtype, same_shape, shape_of, wrap_dim, wrap_dims


def _view_shape(self, size):
    return infer_size("view", self.shape, size)


@register("aten::view(Tensor(a) self, int[] size) -> Tensor(a)", shape=_view_shape, method_only=True, dtype=same_dtype)
def view(self, size):
    size = _view_shape(self, size)
    try:
        return np.reshape(self, size, copy=False)
    except ValueError:
        raise OpRuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                             "dimension spans across two contiguous subspaces). Use .reshape(...) instead.") from None


@register("aten::reshape(Tensor(a) self, int[] shape) -> Tensor(a)",
          shape=lambda self, shape: infer_size("reshape", self.shape, shape), dtype=same_dtype)
def reshape(self, shape):
    return np.reshape(self, infer_size("reshape", self.shape, shape))


def _permute_shape(self, dims):
    dims = list(dims) if isinstance(dims, (list, tuple)) else [dims]
    if len(dims) != self.ndim:
        raise OpRuntimeError(f"permute(): number of dimensions in the tensor input does not match the length "
                             f"of the desired ordering of dimensions i.e. input.dim() = {self.ndim} is not "
                             f"equal to len(dims) = {len(dims)}")
    wrapped = [wrap_dim(d, self.ndim, "permute") for d in dims]
    if len(set(wrapped)) != len(wrapped):
        raise OpRuntimeError("permute(): duplicate dims are not allowed.")
    return tuple(self.shape[d] for d in wrapped)


def _wrapped_perm(self, dims):
    _permute_shape(self, dims)
    return [wrap_dim(d, self.ndim) for d in (dims if isinstance(dims, (list, tuple)) else [dims])]


@register("aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)", shape=_permute_shape, dtype=same_dtype)
def permute(self, dims):
    return np.transpose(self, _wrapped_perm(self, dims))


def _transpose_dims(self, dim0, dim1):
    perm = list(range(self.ndim))
    if self.ndim == 0:
        wrap_dim(dim0, 0, "transpose"), wrap_dim(dim1, 0, "transpose")
        return perm
    a, b = wrap_dim(dim0, self.ndim, "transpose"), wrap_dim(dim1, self.ndim, "transpose")
    perm[a], perm[b] = perm[b], perm[a]
    return perm


@register("aten::transpose(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
          shape=lambda self, d0, d1: tuple(self.shape[p] for p in _transpose_dims(self, d0, d1)),
          dtype=same_dtype)
def transpose(self, dim0, dim1):
    return np.transpose(self, _transpose_dims(self, dim0, dim1))


def _t_shape(self):
    if self.ndim > 2:
        raise OpRuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return tuple(reversed(self.shape))


@register("aten::t(Tensor(a) self) -> Tensor(a)", shape=_t_shape, dtype=same_dtype)
def t(self):
    _t_shape(self)
    return self.T


def _expand_shape(self, size):
    size = tuple(size) if isinstance(size, (list, tuple)) else (size,)
    if len(size) < self.ndim:
        raise OpRuntimeError(f"expand: the number of sizes provided ({len(size)}) must be greater or equal "
                             f"to the number of dimensions in the tensor ({self.ndim})")
    lead = len(size) - self.ndim
    out = []
    for i, s in enumerate(size):
        cur = self.shape[i - lead] if i >= lead else None
        if s == -1:
            if cur is None:
                raise OpRuntimeError(f"expand: the expanded size of the tensor (-1) isn't allowed in a leading, "
                                     f"non-existing dimension {i}")
            s = cur
        elif cur is not None and cur != 1 and cur != s:
            raise OpRuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                                 f"non-singleton dimension {i}.  Target sizes: {fmt_shape(size)}.  Tensor "
                                 f"sizes: {fmt_shape(self.shape)}")
        out.append(s)
    return tuple(out)


@register("aten::expand(Tensor(a) self, int[] size) -> Tensor(a)", shape=_expand_shape, method_only=True, dtype=same_dtype)
def expand(self, size):
    return np.broadcast_to(self, _expand_shape(self, size))


def _squeeze_shape(self, dim=None):
    dims = wrap_dims(dim, self.ndim, "squeeze")
    return tuple(s for i, s in enumerate(self.shape) if not (i in dims and s == 1))


@register("aten::squeeze(Tensor(a) self, int[]? dim=None) -> Tensor(a)", shape=_squeeze_shape, dtype=same_dtype)
def squeeze(self, dim=None):
    return np.reshape(self, _squeeze_shape(self, dim))


def _unsqueeze_shape(self, dim):
    d = wrap_dim(dim, self.ndim + 1, "unsqueeze")
    return self.shape[:d] + (1,) + self.shape[d:]


@register("aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", shape=_unsqueeze_shape, dtype=same_dtype)
def unsqueeze(self, dim):
    return np.reshape(self, _unsqueeze_shape(self, dim))


def _flatten_shape(self, start_dim=0, end_dim=-1):
    if self.ndim == 0:
        return (1,)
    s, e = wrap_dim(start_dim, self.ndim, "flatten"), wrap_dim(end_dim, self.ndim, "flatten")
    if s > e:
        raise OpRuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    return self.shape[:s] + (numel(self.shape[s:e + 1]),) + self.shape[e + 1:]


@register("aten::flatten(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)",
          shape=_flatten_shape, dtype=same_dtype)
def flatten(self, start_dim=0, end_dim=-1):
    return np.reshape(self, _flatten_shape(self, start_dim, end_dim))


def _narrow_bounds(self, dim, start, length):
    if self.ndim == 0:
        raise OpRuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, self.ndim, "narrow")
    size = self.shape[d]
    if not -size <= start <= size:
        raise OpIndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    start = start % size if size and start < 0 else start
    if length < 0 or start + length > size:
        raise OpRuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return d, start


@register("aten::narrow(Tensor(a) self, int dim, int start, int length) -> Tensor(a)",
          shape=lambda self, dim, start, length: _slice_shape(self, dim, *_narrow_bounds(self, dim, start, length)[1:],
                                                              None, 1, length), dtype=same_dtype)
def narrow(self, dim, start, length):
    d, start = _narrow_bounds(self, dim, start, length)
    index = [slice(None)] * self.ndim
    index[d] = slice(start, start + length)
    return self[tuple(index)]


def _select_index(self, dim, index):
    if self.ndim == 0:
        raise OpIndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, self.ndim, "select")
    size = self.shape[d]
    if not -size <= index < size:
        raise OpIndexError(f"select(): index {index} out of range for tensor of size {fmt_shape(self.shape)} "
                           f"at dimension {d}")
    return d, index % size


def _select_shape(self, dim, index):
    d = _select_index(self, dim, index)[0]
    return self.shape[:d] + self.shape[d + 1:]


@register("aten::select(Tensor(a) self, int dim, int index) -> Tensor(a)", shape=_select_shape, dtype=same_dtype)
def select(self, dim, index):
    d, i = _select_index(self, dim, index)
    return self[(slice(None),) * d + (i, ...)]  # `...` keeps a 0-dim result a view


def _slice_shape(self, dim=0, start=None, end=None, step=1, length=None):
    if length is not None:
        d = wrap_dim(dim, self.ndim)
        return self.shape[:d] + (length,) + self.shape[d + 1:]
    if step <= 0:
        raise OpRuntimeError("slice step must be positive")
    if self.ndim == 0:
        raise OpIndexError("slice() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, self.ndim, "slice")
    n = len(range(*slice(start, end, step).indices(self.shape[d])))
    return self.shape[:d] + (n,) + self.shape[d + 1:]


@register("aten::slice(Tensor(a) self, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor(a)",
          shape=_slice_shape, method_only=True, dtype=same_dtype)
def slice_(self, dim=0, start=None, end=None, step=1):
    _slice_shape(self, dim, start, end, step)
    d = wrap_dim(dim, self.ndim)
    return self[(slice(None),) * d + (slice(start, end, step),)]


def _unbind_shapes(self, dim=0):
    d = wrap_dim(dim, self.ndim, "unbind")
    return tuple(self.shape[:d] + self.shape[d + 1:] for _ in range(self.shape[d]))


@register("aten::unbind(Tensor(a) self, int dim=0) -> Tensor(a)[]", shape=_unbind_shapes,
          dtype=lambda self, dim=0: self.dtype)
def unbind(self, dim=0):
    if self.ndim == 0:
        raise OpIndexError("unbind() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, self.ndim, "unbind")
    return [self[(slice(None),) * d + (i, ...)] for i in range(self.shape[d])]


def _split_bounds(self, split_size, dim):
    if self.ndim == 0:
        raise OpRuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, self.ndim, "split")
    n = self.shape[d]
    if isinstance(split_size, (list, tuple)):
        if sum(split_size) != n or any(s < 0 for s in split_size):
            raise OpRuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                                 f"size at dimension {d}), but got split_sizes={list(split_size)}")
        sizes = list(split_size)
    else:
        if split_size <= 0 and n:
            raise OpRuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
        sizes = [min(split_size, n - i) for i in range(0, n, split_size)] if n else [0]
    bounds, at = [], 0
    for s in sizes:
        bounds.append((at, at + s))
        at += s
    return d, bounds


@register("aten::split(Tensor(a) self, int[] split_size, int dim=0) -> Tensor(a)[]",
          shape=lambda self, split_size, dim=0: _pieces_shapes(self, *_split_bounds(self, split_size, dim)),
          dtype=lambda self, *rest: self.dtype)
def split(self, split_size, dim=0):
    d, bounds = _split_bounds(self, split_size, dim)
    return [self[(slice(None),) * d + (slice(a, b),)] for a, b in bounds]


def _pieces_shapes(self, d, bounds):
    return tuple(self.shape[:d] + (b - a,) + self.shape[d + 1:] for a, b in bounds)


def _chunk_bounds(self, chunks, dim):
    if chunks <= 0:
        raise OpRuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if self.ndim == 0:
        raise OpRuntimeError("chunk expects at least a 1-dimensional tensor")
    n = self.shape[wrap_dim(dim, self.ndim, "chunk")]
    return _split_bounds(self, max(-(-n // chunks), 1) if n else 1, dim)


@register("aten::chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]",
          shape=lambda self, chunks, dim=0: _pieces_shapes(self, *_chunk_bounds(self, chunks, dim)),
          dtype=lambda self, *rest: self.dtype)
def chunk(self, chunks, dim=0):
    d, bounds = _chunk_bounds(self, chunks, dim)
    return [self[(slice(None),) * d + (slice(a, b),)] for a, b in bounds]


@register("aten::contiguous(Tensor(a) self) -> Tensor(a)", shape=same_shape, method_only=True, dtype=same_dtype)
def contiguous(self):
    # not np.ascontiguousarray: it turns a 0-dim array into shape (1,)
    return self if self.flags.c_contiguous else self.copy(order="C")


@register("aten::clone(Tensor self) -> Tensor", shape=same_shape, dtype=same_dtype)
def clone(self):
    return self.copy()


@register("aten::to(Tensor(a) self, ScalarType? dtype=None, bool copy=False) -> Tensor(a)",
          shape=same_shape, method_only=True, dtype=lambda self, dtype=None, copy=False: dt.resolve(dtype) or self.dtype)
def to(self, dtype=None, copy=False):
    dtype = dt.resolve(dtype) or self.dtype
    if dtype == self.dtype and not copy:
        return self
    if dt.is_complex(self.dtype) and not dt.is_complex(dtype):
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=2)
        return self.real.astype(dtype)
    return self.astype(dtype)


def _repeat_shape(self, repeats):
    repeats = tuple(repeats) if isinstance(repeats, (list, tuple)) else (repeats,)
    if len(repeats) < self.ndim:
        raise OpRuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions "
                             "of tensor")
    if any(r < 0 for r in repeats):
        raise OpRuntimeError(f"Trying to create tensor with negative dimension: repeats={list(repeats)}")
    shape = (1,) * (len(repeats) - self.ndim) + tuple(self.shape)
    return tuple(s * r for s, r in zip(shape, repeats))


@register("aten::repeat(Tensor self, int[] repeats) -> Tensor", shape=_repeat_shape, method_only=True, dtype=same_dtype)
def repeat(self, repeats):
    out = _repeat_shape(self, repeats)
    repeats = tuple(repeats) if isinstance(repeats, (list, tuple)) else (repeats,)
    return as_array(np.tile(self, repeats)).reshape(out)


@register("aten::flip(Tensor self, int[] dims) -> Tensor", shape=same_shape, dtype=same_dtype)
def flip(self, dims):
    return np.flip(self, wrap_dims(dims, self.ndim, "flip")).copy()


def _tri_shape(name):
    def rule(self, diagonal=0):
        if self.ndim < 2:
            raise OpRuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return shape_of(self)
    return rule


def _tri_kernel(name, fn):
    rule = _tri_shape(name)

    def kernel(self, diagonal=0):
        rule(self)
        return fn(self, diagonal)
    return kernel


for _name, _fn in (("tril", np.tril), ("triu", np.triu)):
    register(f"aten::{_name}(Tensor self, int diagonal=0) -> Tensor", shape=_tri_shape(_name), dtype=same_dtype,
             inplace=True)(_tri_kernel(_name, _fn))


@register("aten::size(Tensor self, int dim) -> int", shape=None, method_only=True, dtype=None)
def size(self, dim):
    if self.ndim == 0:
        raise OpIndexError("size(): dimension specified as 0 but tensor has no dimensions")
    return self.shape[wrap_dim(dim, self.ndim, "size")]


@register("aten::detach(Tensor(a) self) -> Tensor(a)", shape=same_shape, dtype=same_dtype)
def detach(self):
    return self.view()


def _scatter_check(op, self, src, view_shape):
    if tuple(src.shape) != tuple(view_shape):
        raise OpRuntimeError(f"{op}: expected src to have a size equal to the slice of self. src size = "
                             f"{fmt_shape(src.shape)}, slice size = {fmt_shape(view_shape)}")
    return shape_of(self)


@register("aten::slice_scatter(Tensor self, Tensor src, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor",
          shape=lambda self, src, dim=0, start=None, end=None, step=1: _scatter_check(
              "slice_scatter", self, src, _slice_shape(self, dim, start, end, step)),
          dtype=same_dtype)
def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    """`self` with the slice `[start:end:step]` along `dim` replaced by `src` (a new tensor)."""
    _scatter_check("slice_scatter", self, src, _slice_shape(self, dim, start, end, step))
    out = self.copy()
    out[(slice(None),) * wrap_dim(dim, self.ndim) + (slice(start, end, step),)] = src
    return out


@register("aten::select_scatter(Tensor self, Tensor src, int dim, int index) -> Tensor",
          shape=lambda self, src, dim, index: _scatter_check(
              "select_scatter", self, src, _select_shape(self, dim, index)),
          dtype=same_dtype)
def select_scatter(self, src, dim, index):
    """`self` with the entry `index` along `dim` replaced by `src` (a new tensor)."""
    d, i = _select_index(self, dim, index)
    _scatter_check("select_scatter", self, src, self.shape[:d] + self.shape[d + 1:])
    out = self.copy()
    out[(slice(None),) * d + (i,)] = src
    return out
