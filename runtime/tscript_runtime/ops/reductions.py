"""Reductions: sums, means, variances, extrema, norms, logical reductions, cumulative sums and
softmax.

Kernels reduce with numpy in PyTorch's result dtype. `reduce_dims` validates `dim` arguments as
PyTorch does (also on zero-dim tensors, which numpy would reject); the empty-input checks of the
extrema live in small helpers that both the rules and the kernels call, so an eager call, the
executor and the compiler all raise the same error.
"""
import math
from collections import namedtuple

import numpy as np

from .. import dtypes as dt
from ..errors import OpIndexError, OpRuntimeError
from ._cast import as_array
from .registry import register
from .rules import check_float, same_dtype, shape_of, wrap_dim


def values_indices(name: str):
    """A `torch.return_types.<name>`-like named tuple type with fields `values` and `indices`."""
    return namedtuple(name, ("values", "indices"))


# -- dims ----------------------------------------------------------------------------------------

def reduce_dims(self, dim, op: str, empty_is_all: bool = True) -> tuple:
    """`dim` (None, an int or a sequence of ints) as the sorted non-negative dims of `self` to reduce.

    None means every dim; so does an empty sequence unless `empty_is_all` is False (all/any reduce
    nothing then, as in PyTorch). A zero-dim tensor accepts dims 0 and -1 and has nothing to reduce.
    """
    if dim is None:
        return tuple(range(self.ndim))
    dims = tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)
    if not dims and empty_is_all:
        return tuple(range(self.ndim))
    wrapped = []
    for d in dims:
        w = wrap_dim(d, self.ndim, op)
        if w in wrapped:
            raise OpRuntimeError(f"{op}: dim {w} appears multiple times in the list of dims")
        wrapped.append(w)
    return tuple(sorted(wrapped)) if self.ndim else ()


def single_dim(self, dim, op: str) -> tuple:
    """The dims reduced by ops taking one `dim` (an int; None means all): () for a zero-dim tensor."""
    if dim is None:
        return tuple(range(self.ndim))
    d = wrap_dim(dim, self.ndim, op)
    return (d,) if self.ndim else ()


def reduced_shape(shape, dims, keepdim: bool) -> tuple:
    """`shape` with `dims` removed (or kept as size 1)."""
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _count(shape, dims) -> int:
    return math.prod(shape[d] for d in dims)


def _dims_given(dim) -> bool:
    return dim is not None and (not isinstance(dim, (list, tuple)) or len(dim) > 0)


def _reduction_shape(op: str, empty_is_all: bool = True):
    """Shape rule of `op(self, dim, keepdim, ...)`."""
    def rule(self, dim=None, keepdim=False, *rest):
        return reduced_shape(shape_of(self), reduce_dims(self, dim, op, empty_is_all), keepdim)
    return rule


def _along_dim_shape(op: str):
    """Shape rule of ops that keep the input's shape and work along one (validated) `dim`."""
    def rule(self, dim, *rest):
        wrap_dim(dim, self.ndim, op)
        return shape_of(self)
    return rule


def _axis(x, dim: int):
    """A wrapped dim as a numpy axis (a zero-dim array has none)."""
    return dim if x.ndim else None


# -- dtype rules ---------------------------------------------------------------------------------

def accumulate_dtype(self, dtype=None):
    """sum/prod/cumsum: `dtype=` if given (the input is cast to it first), else int64 for bool and
    integer inputs, else the input's dtype."""
    d = dt.resolve(dtype)
    if d is not None:
        return d
    return dt.int64 if dt.is_integral(self.dtype, include_bool=True) else self.dtype


def _mean_dtype(self, dtype=None):
    d = dt.resolve(dtype)
    which, got = ("Input", self.dtype) if d is None else ("Optional", d)
    if not dt.is_float(got):
        raise OpRuntimeError(f"mean(): could not infer output dtype. {which} dtype must be either a floating "
                             f"point or complex dtype. Got: {dt.TORCH_NAMES[got]}")
    return got


def _var_dtype(op: str, self):
    if not dt.is_float(self.dtype):
        raise OpRuntimeError(f"{op}(): std and var only support floating point and complex dtypes, "
                             f"got {dt.TORCH_NAMES[self.dtype]}")
    return self.dtype


def _norm_dtype(self, dtype=None):
    d = dt.resolve(dtype)
    if d is not None and not dt.is_float(d):
        raise OpRuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got "
                             f"{dt.TORCH_NAMES[d]}")
    if not dt.is_float(self.dtype):
        raise OpRuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                             f"Got {dt.TORCH_NAMES[self.dtype]}")
    return d or self.dtype


def _softmax_dtype(op: str, self, dtype=None):
    out = dt.resolve(dtype) or self.dtype
    check_float(op, out)
    return out


# -- sums and products ---------------------------------------------------------------------------

@register("aten::sum(Tensor self, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
          shape=_reduction_shape("sum"), dtype=lambda self, dim=None, keepdim=False, dtype=None:
          accumulate_dtype(self, dtype))
def sum(self, dim=None, keepdim=False, dtype=None):
    out = accumulate_dtype(self, dtype)
    return as_array(np.sum(self.astype(out, copy=False), axis=reduce_dims(self, dim, "sum"), keepdims=keepdim), out)


@register("aten::mean(Tensor self, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
          shape=_reduction_shape("mean"), dtype=lambda self, dim=None, keepdim=False, dtype=None:
          _mean_dtype(self, dtype))
def mean(self, dim=None, keepdim=False, dtype=None):
    out = _mean_dtype(self, dtype)
    dims = reduce_dims(self, dim, "mean")
    total = np.sum(self.astype(out, copy=False), axis=dims, keepdims=keepdim)
    with np.errstate(invalid="ignore"):     # the mean of nothing is nan, as in PyTorch
        return as_array(total / _count(self.shape, dims), out)


def _prod_shape(self, dim=None, keepdim=False, dtype=None):
    return reduced_shape(shape_of(self), single_dim(self, dim, "prod"), keepdim)


@register("aten::prod(Tensor self, int? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
          shape=_prod_shape, dtype=lambda self, dim=None, keepdim=False, dtype=None: accumulate_dtype(self, dtype))
def prod(self, dim=None, keepdim=False, dtype=None):
    out = accumulate_dtype(self, dtype)
    return as_array(np.prod(self.astype(out, copy=False), axis=single_dim(self, dim, "prod"), keepdims=keepdim), out)


@register("aten::cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
          shape=_along_dim_shape("cumsum"),
          dtype=lambda self, dim, dtype=None: accumulate_dtype(self, dtype), inplace=True)
def cumsum(self, dim, dtype=None):
    x = self.astype(accumulate_dtype(self, dtype), copy=False)
    d = wrap_dim(dim, self.ndim, "cumsum")
    return np.cumsum(x, axis=d) if self.ndim else x.copy()


# -- variance and standard deviation -------------------------------------------------------------

def _variance(op: str, self, dim, correction, keepdim):
    """sum((x - mean)^2) / max(0, N - correction), two-pass for accuracy; correction defaults to 1."""
    _var_dtype(op, self)
    dims = reduce_dims(self, dim, op)
    n = _count(self.shape, dims)
    with np.errstate(invalid="ignore", divide="ignore"):   # N - correction <= 0 gives inf/nan like PyTorch
        dev = self - np.sum(self, axis=dims, keepdims=True) / n
        squares = np.sum(dev * dev, axis=dims, keepdims=keepdim)
        return as_array(squares / max(0, n - (1 if correction is None else correction)), self.dtype)


_VAR_SCHEMA = "(Tensor self, int[]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"


def _var_shape(op):
    return lambda self, dim=None, correction=None, keepdim=False: \
        reduced_shape(shape_of(self), reduce_dims(self, dim, op), keepdim)


@register("aten::var" + _VAR_SCHEMA, shape=_var_shape("var"), dtype=lambda self, *rest: _var_dtype("var", self))
def var(self, dim=None, correction=None, keepdim=False):
    return _variance("var", self, dim, correction, keepdim)


@register("aten::std" + _VAR_SCHEMA, shape=_var_shape("std"), dtype=lambda self, *rest: _var_dtype("std", self))
def std(self, dim=None, correction=None, keepdim=False):
    return as_array(np.sqrt(_variance("std", self, dim, correction, keepdim)))


# -- extrema -------------------------------------------------------------------------------------

def check_nonempty(op: str, self, dims, dim_given: bool, error=OpRuntimeError) -> None:
    """Maxima and minima have no identity: PyTorch's errors for an empty input or reduced dim."""
    if not dim_given and any(s == 0 for s in self.shape):
        hint = "" if error is OpIndexError else " Specify the reduction dim with the 'dim' argument."
        raise error(f"{op}(): Expected reduction dim to be specified for input.numel() == 0.{hint}")
    for d in dims:
        if self.shape[d] == 0:
            raise OpIndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _full_extremum_shape(op):
    def rule(self):
        check_nonempty(op, self, (), False)
        return ()
    return rule


def _full_extremum(op, reduce):
    rule = _full_extremum_shape(op)

    def kernel(self):
        rule(self)
        return as_array(reduce(self))
    return kernel


def _extremum_dim_shape(op):
    def rule(self, dim, keepdim=False):
        dims = single_dim(self, dim, op)
        check_nonempty(op, self, dims, True)
        shape = reduced_shape(shape_of(self), dims, keepdim)
        return shape, shape
    return rule


def _extremum_dim(op, arg):
    """values and indices of the first extremum along `dim` (a NaN counts as the extremum)."""
    rule = _extremum_dim_shape(op)

    def kernel(self, dim, keepdim=False):
        rule(self, dim, keepdim)
        if self.ndim == 0:
            return self.copy(), np.zeros((), dt.int64)
        d = wrap_dim(dim, self.ndim)
        index = arg(self, axis=d, keepdims=True)
        values = np.take_along_axis(self, index, d)
        if not keepdim:
            values, index = values.squeeze(d), index.squeeze(d)
        return values, index.astype(dt.int64, copy=False)
    return kernel


def _amax_shape(op):
    def rule(self, dim=None, keepdim=False):
        dims = reduce_dims(self, dim, op)
        check_nonempty(op, self, dims, _dims_given(dim))
        return reduced_shape(shape_of(self), dims, keepdim)
    return rule


def _amax(op, reduce):
    rule = _amax_shape(op)

    def kernel(self, dim=None, keepdim=False):
        rule(self, dim, keepdim)
        return as_array(reduce(self, axis=reduce_dims(self, dim, op), keepdims=keepdim))
    return kernel


def _argmax_check(op, self, dim):
    """The dims `argmax(self, dim)` reduces (None: all, over the flattened input), validated."""
    if dt.category(self.dtype) == 0:
        raise OpRuntimeError(f"{op}(): does not support bool input")
    dims = single_dim(self, dim, op)
    check_nonempty(op, self, dims, dim is not None, OpIndexError)
    return dims


def _argmax(op, arg):
    def kernel(self, dim=None, keepdim=False):
        dims = _argmax_check(op, self, dim)
        if dim is None or self.ndim == 0:
            index = np.asarray(arg(self), dt.int64)
            return index.reshape((1,) * self.ndim) if keepdim else index
        return as_array(arg(self, axis=dims[0], keepdims=keepdim), dt.int64)
    return kernel


def _argmax_shape(op):
    def rule(self, dim=None, keepdim=False):
        return reduced_shape(shape_of(self), _argmax_check(op, self, dim), keepdim)
    return rule


# name -> (full reduction, index of the first extremum); NaN propagates through both, as in PyTorch.
EXTREMA = {"max": (np.max, np.argmax), "min": (np.min, np.argmin)}

for _name, (_reduce, _arg) in EXTREMA.items():
    register(f"aten::{_name}(Tensor self) -> Tensor", shape=_full_extremum_shape(_name), dtype=same_dtype)(
        _full_extremum(_name, _reduce))
    register(f"aten::{_name}.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
             shape=_extremum_dim_shape(_name), dtype=lambda self, *rest: (self.dtype, dt.int64),
             namedtuple=values_indices(_name))(_extremum_dim(_name, _arg))
    register(f"aten::a{_name}(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor",
             shape=_amax_shape(f"a{_name}"), dtype=same_dtype)(_amax(f"a{_name}", _reduce))
    register(f"aten::arg{_name}(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
             shape=_argmax_shape(f"arg{_name}"), dtype=lambda self, *rest: dt.int64)(_argmax(f"arg{_name}", _arg))


# -- logsumexp and norms -------------------------------------------------------------------------

@register("aten::logsumexp(Tensor self, int[] dim, bool keepdim=False) -> Tensor",
          shape=_reduction_shape("logsumexp"), dtype=lambda self, *rest: dt.float_result(self.dtype))
def logsumexp(self, dim, keepdim=False):
    """log(sum(exp(x))) computed as m + log(sum(exp(x - m))) with m the max, so nothing overflows."""
    x = self.astype(dt.float_result(self.dtype), copy=False)
    dims = reduce_dims(self, dim, "logsumexp")
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.max(x, axis=dims, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0)      # all -inf (or an inf) in a slice: nothing to shift
        out = np.log(np.sum(np.exp(x - m), axis=dims, keepdims=keepdim))
        return as_array(out + (m if keepdim else np.squeeze(m, dims)), x.dtype)


def _sum_of_powers(a, p, dims, keepdim):
    return np.sum(a ** p, axis=dims, keepdims=keepdim) ** (1 / p)


# order p -> reduction of |x|; any other p is (sum |x|^p)^(1/p).
NORMS = {
    math.inf: lambda a, dims, keep: np.max(a, axis=dims, keepdims=keep),
    -math.inf: lambda a, dims, keep: np.min(a, axis=dims, keepdims=keep),
    0: lambda a, dims, keep: np.sum(a != 0, axis=dims, keepdims=keep),
    1: lambda a, dims, keep: np.sum(a, axis=dims, keepdims=keep),
    2: lambda a, dims, keep: np.sqrt(np.sum(a * a, axis=dims, keepdims=keep)),
}


def _norm_check(self, p, dim):
    """The dims a vector norm reduces; inf norms of empty slices have no value."""
    dims = reduce_dims(self, dim, "norm")
    if p is not None and math.isinf(p):
        if not _dims_given(dim) and any(s == 0 for s in self.shape):
            raise OpRuntimeError(f"linalg.vector_norm cannot compute the {p} norm on an empty tensor because "
                                 f"the operation does not have an identity")
        for d in dims:
            if self.shape[d] == 0:
                raise OpRuntimeError(f"linalg.vector_norm cannot compute the {p} norm on the dimension {d} "
                                     f"because this dimension is empty and the operation does not have an identity")
    return dims


def _norm_shape(self, p=2, dim=None, keepdim=False, dtype=None):
    return reduced_shape(shape_of(self), _norm_check(self, p, dim), keepdim)


@register("aten::norm(Tensor self, Scalar? p=2, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)"
          " -> Tensor", shape=_norm_shape, dtype=lambda self, p=2, dim=None, keepdim=False, dtype=None:
          _norm_dtype(self, dtype))
def norm(self, p=2, dim=None, keepdim=False, dtype=None):
    """The vector p-norm over `dim` (all dims by default); p=None means 2."""
    out = _norm_dtype(self, dtype)
    dims = _norm_check(self, p, dim)
    a = np.abs(self.astype(out, copy=False))
    p = 2 if p is None else p
    with np.errstate(divide="ignore", over="ignore"):
        result = NORMS[p](a, dims, keepdim) if p in NORMS else _sum_of_powers(a, p, dims, keepdim)
    return as_array(result, out)


# -- logical reductions --------------------------------------------------------------------------

def _logical(op, reduce):
    def kernel(self, dim=None, keepdim=False):
        return as_array(reduce(self, axis=reduce_dims(self, dim, op, empty_is_all=False), keepdims=keepdim))
    return kernel


for _name, _reduce in (("all", np.all), ("any", np.any)):
    register(f"aten::{_name}(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor",
             shape=_reduction_shape(_name, empty_is_all=False), dtype=lambda self, *rest: dt.bool_)(
        _logical(_name, _reduce))


@register("aten::count_nonzero(Tensor self, int[]? dim=None) -> Tensor",
          shape=lambda self, dim=None: reduced_shape(shape_of(self), reduce_dims(self, dim, "count_nonzero"), False),
          dtype=lambda self, dim=None: dt.int64)
def count_nonzero(self, dim=None):
    return as_array(np.sum(self != 0, axis=reduce_dims(self, dim, "count_nonzero")), dt.int64)


# -- softmax -------------------------------------------------------------------------------------

def _shifted(op, self, dim, dtype):
    """The input (cast to `dtype`) minus its max along `dim`, so exp never overflows, and the axis."""
    x = self.astype(_softmax_dtype(op, self, dtype), copy=False)
    axis = _axis(x, wrap_dim(dim, self.ndim, op))
    return x - np.max(x, axis=axis, keepdims=True, initial=-np.inf), axis


def _softmax_rules(op):
    return dict(shape=_along_dim_shape(op),
                dtype=lambda self, dim, dtype=None: _softmax_dtype(op, self, dtype))


@register("aten::softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", **_softmax_rules("softmax"))
def softmax(self, dim, dtype=None):
    with np.errstate(invalid="ignore"):         # inf - inf: nan, as in PyTorch
        z, axis = _shifted("softmax", self, dim, dtype)
        e = np.exp(z)
        return as_array(e / np.sum(e, axis=axis, keepdims=True))


@register("aten::log_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
          **_softmax_rules("log_softmax"))
def log_softmax(self, dim, dtype=None):
    with np.errstate(invalid="ignore", divide="ignore"):
        z, axis = _shifted("log_softmax", self, dim, dtype)
        return as_array(z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True)))
