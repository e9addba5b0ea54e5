"""Hand-written bindings for indexing and joining ops whose Python signature PyTorch parses specially:
`nonzero(as_tuple=)`, one-argument `where`, `scatter(src= | value=)`, and `cat`'s aliases."""
import warnings

from tscript_runtime.errors import OpTypeError
from tscript_runtime.ops import OPS

from ._dispatch import dispatch
from ._tensor import Tensor


def nonzero(input, *, as_tuple=False):
    """Indices of the nonzero elements of `input`: an `(n, input.ndim)` int64 tensor, or with
    `as_tuple=True` a tuple of one index vector per dimension."""
    if as_tuple:
        return tuple(dispatch(OPS["aten::nonzero_numpy"], (input,)))
    return dispatch(OPS["aten::nonzero"], (input,))


def where(condition, input=None, other=None):
    """`where(condition, input, other)` picks elementwise; `where(condition)` is
    `nonzero(condition, as_tuple=True)`."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    return dispatch(OPS["aten::where"], (condition, input, other))


def _source(src, value):
    if (src is None) == (value is None):
        raise OpTypeError("scatter() expects exactly one of 'src' (a Tensor) or 'value' (a number)")
    return src if value is None else value


def _reduce(reduce, source):
    if reduce is None:
        return None
    if isinstance(source, Tensor):
        warnings.warn("The reduce argument of scatter with Tensor src is deprecated (as in PyTorch) and will "
                      "be removed in a future release.", UserWarning, stacklevel=3)
    return {"reduce": reduce}


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """A copy of `input` with `src` (a tensor, or the number `value`) written at `index` along `dim`;
    `reduce="add"|"multiply"` combines with the existing values instead."""
    source = _source(src, value)
    return dispatch(OPS["aten::scatter"], (input, dim, index, source), _reduce(reduce, source))


def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    """In-place `scatter`."""
    source = _source(src, value)
    return dispatch(OPS["aten::scatter_"], (self, dim, index, source), _reduce(reduce, source))


def concat(tensors, dim=0):
    """Alias of `cat`."""
    return dispatch(OPS["aten::cat"], (tensors, dim))


def concatenate(tensors, axis=0):
    """Alias of `cat` with NumPy's argument name."""
    return dispatch(OPS["aten::cat"], (tensors, axis))


FUNCTIONS: dict = {"nonzero": nonzero, "where": where, "scatter": scatter, "concat": concat,
                   "concatenate": concatenate}
METHODS: dict = {"nonzero": nonzero, "scatter": scatter, "scatter_": scatter_}
