"""Factory ops: tensors made from sizes and values (zeros, arange, rand, ...), and random fills."""
import math

import numpy as np

from .. import dtypes as dt
from ..errors import OpRuntimeError, fmt_shape
from .random import numpy_generator
from .registry import register
from .rules import same_dtype, same_shape


def check_size(size, op: str) -> tuple:
    """A size argument as a tuple of non-negative ints (or symbolic sizes, when compiling)."""
    size = tuple(size) if isinstance(size, (list, tuple)) else (size,)
    for s in size:
        if not isinstance(s, str) and s < 0:
            raise OpRuntimeError(f"{op}: Trying to create tensor with negative dimension {s}: {fmt_shape(size)}")
    return size


def _float_dtype(dtype, op):
    d = dt.resolve(dtype) or dt.defaults.float_dtype
    if not dt.is_inexact(d):
        raise OpRuntimeError(f"{op}: expected a floating point dtype, got {dt.NAMES[d]} "
                             f"(\"{op}\" not implemented for '{dt.TORCH_NAMES[d]}')")
    return d


def _sized(name, make, dtype_rule):
    register(f"aten::{name}(int[] size, *, ScalarType? dtype=None) -> Tensor",
             shape=lambda size, dtype=None: check_size(size, name), dtype=dtype_rule)(make)


_default_float = lambda *a, dtype=None: dt.resolve(dtype) or dt.defaults.float_dtype  # noqa: E731
_sized("zeros", lambda size, dtype=None: np.zeros(check_size(size, "zeros"), _default_float(dtype=dtype)),
       lambda size, dtype=None: _default_float(dtype=dtype))
_sized("ones", lambda size, dtype=None: np.ones(check_size(size, "ones"), _default_float(dtype=dtype)),
       lambda size, dtype=None: _default_float(dtype=dtype))
_sized("empty", lambda size, dtype=None: np.empty(check_size(size, "empty"), _default_float(dtype=dtype)),
       lambda size, dtype=None: _default_float(dtype=dtype))


def _full_dtype(size, fill_value, dtype=None):
    return dt.resolve(dtype) or dt.scalar_dtype(fill_value)


@register("aten::full(int[] size, Scalar fill_value, *, ScalarType? dtype=None) -> Tensor",
          shape=lambda size, fill_value, dtype=None: check_size(size, "full"), dtype=_full_dtype)
def full(size, fill_value, dtype=None):
    return np.full(check_size(size, "full"), fill_value, _full_dtype(size, fill_value, dtype))


def _like(name, fill):
    register(f"aten::{name}(Tensor self, *, ScalarType? dtype=None) -> Tensor", shape=same_shape,
             dtype=lambda self, dtype=None: dt.resolve(dtype) or self.dtype)(
        lambda self, dtype=None: fill(self.shape, dt.resolve(dtype) or self.dtype))


_like("zeros_like", np.zeros)
_like("ones_like", np.ones)
_like("empty_like", np.empty)


@register("aten::full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None) -> Tensor",
          shape=same_shape, dtype=lambda self, fill_value, dtype=None: dt.resolve(dtype) or self.dtype)
def full_like(self, fill_value, dtype=None):
    return np.full(self.shape, fill_value, dt.resolve(dtype) or self.dtype)


def _arange_dtype(start, end=None, step=1, dtype=None):
    d = dt.resolve(dtype)
    if d is not None:
        return d
    return dt.result_type(*(x for x in (start, end, step) if x is not None)) \
        if any(isinstance(x, float) for x in (start, end, step)) else dt.int64


def _arange_len(start, end, step):
    if end is None:
        start, end = 0, start
    if step == 0:
        raise OpRuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0 and end != start:
        raise OpRuntimeError("arange: upper bound and larger bound inconsistent with step sign")
    return start, end, max(math.ceil((end - start) / step), 0)


@register("aten::arange(Scalar start, Scalar? end=None, Scalar step=1, *, ScalarType? dtype=None) -> Tensor",
          shape=lambda start, end=None, step=1, dtype=None: (_arange_len(start, end, step)[2],),
          dtype=_arange_dtype)
def arange(start, end=None, step=1, dtype=None):
    out = _arange_dtype(start, end, step, dtype)
    start, end, n = _arange_len(start, end, step)
    return (start + np.arange(n, dtype=np.float64 if dt.is_float(out) else np.int64) * step).astype(out)


@register("aten::linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None) -> Tensor",
          shape=lambda start, end, steps, dtype=None: (steps,),
          dtype=lambda start, end, steps, dtype=None: dt.resolve(dtype) or dt.defaults.float_dtype)
def linspace(start, end, steps, dtype=None):
    if steps < 0:
        raise OpRuntimeError("linspace: number of steps must be non-negative")
    return np.linspace(start, end, steps).astype(dt.resolve(dtype) or dt.defaults.float_dtype)


@register("aten::eye(int n, int? m=None, *, ScalarType? dtype=None) -> Tensor",
          shape=lambda n, m=None, dtype=None: (n, n if m is None else m),
          dtype=lambda n, m=None, dtype=None: dt.resolve(dtype) or dt.defaults.float_dtype)
def eye(n, m=None, dtype=None):
    check_size((n, n if m is None else m), "eye")
    return np.eye(n, m, dtype=dt.resolve(dtype) or dt.defaults.float_dtype)


def _random(name, draw, complex_scale):
    """rand / randn: `draw(generator, size)` in the dtype asked for; a complex one draws its real and
    imaginary parts, each times `complex_scale` (randn's halves the variance, as PyTorch's)."""
    def kernel(size, generator=None, dtype=None):
        d = _float_dtype(dtype, name)
        size = check_size(size, name)
        if not dt.is_complex(d):
            return draw(generator, size).astype(d)
        parts = draw(generator, size + (2,)) * complex_scale
        return (parts[..., 0] + 1j * parts[..., 1]).astype(d)
    register(f"aten::{name}(int[] size, *, Generator? generator=None, ScalarType? dtype=None) -> Tensor",
             shape=lambda size, generator=None, dtype=None: check_size(size, name),
             dtype=lambda size, generator=None, dtype=None: _float_dtype(dtype, name))(kernel)


_random("rand", lambda g, size: numpy_generator(g).random(size), 1.0)
_random("randn", lambda g, size: numpy_generator(g).standard_normal(size), 0.5 ** 0.5)


@register("aten::randint(int low, int high, int[] size, *, Generator? generator=None, ScalarType? dtype=None) -> Tensor",
          shape=lambda low, high, size, generator=None, dtype=None: check_size(size, "randint"),
          dtype=lambda *a, generator=None, dtype=None: dt.resolve(dtype) or dt.int64)
def randint(low, high, size, generator=None, dtype=None):
    if low >= high:
        raise OpRuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return numpy_generator(generator).integers(low, high, check_size(size, "randint")).astype(dt.resolve(dtype) or dt.int64)


@register("aten::randperm(int n, *, Generator? generator=None, ScalarType? dtype=None) -> Tensor",
          shape=lambda n, generator=None, dtype=None: (n,),
          dtype=lambda n, generator=None, dtype=None: dt.resolve(dtype) or dt.int64)
def randperm(n, generator=None, dtype=None):
    check_size((n,), "randperm")
    return numpy_generator(generator).permutation(n).astype(dt.resolve(dtype) or dt.int64)


def _fill(name, schema_args, draw):
    """In-place random fills used by nn.init (`uniform_`, `normal_`)."""
    register(f"aten::{name}(Tensor(a!) self, {schema_args}, *, Generator? generator=None) -> Tensor(a!)",
             shape=same_shape, dtype=same_dtype)(draw)


def _uniform_(self, low=0.0, high=1.0, generator=None):
    self[...] = numpy_generator(generator).uniform(low, high, self.shape)
    return self


def _normal_(self, mean=0.0, std=1.0, generator=None):
    if std < 0:
        raise OpRuntimeError(f"normal expects std >= 0.0, but found std {std}")
    self[...] = numpy_generator(generator).normal(mean, std, self.shape)
    return self


def _bernoulli_(self, p=0.5, generator=None):
    if not 0 <= p <= 1:
        raise OpRuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    self[...] = numpy_generator(generator).random(self.shape) < p
    return self


_fill("uniform_", "float from=0.0, float to=1.0", _uniform_)
_fill("normal_", "float mean=0.0, float std=1.0", _normal_)
_fill("bernoulli_", "float p=0.5", _bernoulli_)


@register("aten::fill_(Tensor(a!) self, Tensor|Scalar value) -> Tensor(a!)", shape=same_shape, dtype=same_dtype)
def fill_(self, value):
    if getattr(value, "ndim", 0):
        raise OpRuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                             f"{value.ndim} dimensions.")
    self[...] = value
    return self


@register("aten::zero_(Tensor(a!) self) -> Tensor(a!)", shape=same_shape, dtype=same_dtype)
def zero_(self):
    self[...] = 0
    return self


@register("aten::copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)", shape=same_shape, dtype=same_dtype)
def copy_(self, src):
    try:
        self[...] = np.broadcast_to(src, self.shape)
    except ValueError:
        raise OpRuntimeError(f"copy_: the source of shape {fmt_shape(src.shape)} cannot be broadcast to the "
                             f"destination of shape {fmt_shape(self.shape)}") from None
    return self


