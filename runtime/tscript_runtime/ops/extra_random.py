"""More random ops, drawing from a `Generator` argument (None: the default one) as rand/randint do:
`multinomial` and the in-place `random_`."""
import warnings

import numpy as np

from .. import dtypes as dt
from ..errors import OpRuntimeError
from .random import numpy_generator
from .registry import register
from .rules import same_dtype, same_shape


def _multinomial_shape(self, num_samples, replacement=False, generator=None):
    if not dt.is_float(self.dtype):
        raise OpRuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                             f"{dt.TORCH_NAMES[self.dtype]}")
    if self.ndim not in (1, 2):
        raise OpRuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise OpRuntimeError("cannot sample n_sample <= 0 samples")
    categories = self.shape[-1]
    if not replacement and isinstance(categories, int) and num_samples > categories:
        raise OpRuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    return tuple(self.shape[:-1]) + (num_samples,)


def _check_distribution(rows: np.ndarray) -> None:
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise OpRuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if rows.shape[1] == 0 or np.any(rows.sum(axis=1) <= 0):
        raise OpRuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


@register("aten::multinomial(Tensor self, int num_samples, bool replacement=False, *, Generator? generator=None)"
          " -> Tensor", shape=_multinomial_shape, dtype=lambda *args, generator=None: dt.int64)
def multinomial(self, num_samples, replacement=False, generator=None):
    """Per row of `self` (unnormalized probabilities), `num_samples` category indices: with
    replacement by inverting the cumulative distribution, without by the exponential-race trick
    (the largest p / Exp(1) keys), which is how PyTorch draws too."""
    shape = _multinomial_shape(self, num_samples, replacement)
    rows = self.reshape(-1, self.shape[-1]).astype(np.float64)
    _check_distribution(rows)
    rng = numpy_generator(generator)
    if replacement:
        cdf = np.cumsum(rows, axis=1)
        cdf /= cdf[:, -1:]
        cdf[:, -1] = 1.0  # a draw just below 1 never lands past the last category
        u = rng.random((rows.shape[0], num_samples))
        picks = np.stack([np.searchsorted(c, x, side="right") for c, x in zip(cdf, u)])
    else:
        keys = rows / rng.exponential(size=rows.shape)
        picks = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    return picks.astype(np.int64).reshape(shape)


# The largest value `random_()` draws for each dtype: every integer the dtype holds exactly.
RANDOM_MAX = {dt.float16: 2 ** 11, dt.bfloat16: 2 ** 8, dt.float32: 2 ** 24, dt.float64: 2 ** 53, dt.uint8: 2 ** 8 - 1,
              dt.int8: 2 ** 7 - 1, dt.int16: 2 ** 15 - 1, dt.int32: 2 ** 31 - 1, dt.int64: 2 ** 63 - 1, dt.bool_: 1}


def random_bounds(dtype, low=0, high=None) -> tuple[int, int]:
    """The inclusive range `random_(from, to)` draws from in `dtype`, with PyTorch's checks."""
    if high is None:
        return low, RANDOM_MAX.get(dtype, 2 ** 24)
    if low >= high:
        raise OpRuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    top = RANDOM_MAX.get(dtype)
    if dt.is_float(dtype) and high - 1 > top:
        warnings.warn(f"to - 1 is out of bounds [-(2^{top.bit_length() - 1}), 2^{top.bit_length() - 1}]. Due to "
                      f"precision limitations {dt.NAMES[dtype]} can support discrete uniform distribution only "
                      f"within this range.", UserWarning, stacklevel=4)
    elif top is not None and not dt.is_float(dtype) and high - 1 > top:
        raise OpRuntimeError(f"to - 1 is out of bounds for {dt.NAMES[dtype]}")
    return low, high - 1


@register("aten::random_(Tensor(a!) self, int from=0, int? to=None, *, Generator? generator=None) -> Tensor(a!)",
          shape=same_shape, dtype=same_dtype)
def random_(self, low=0, high=None, generator=None):
    """Fill `self` with integers drawn uniformly from [from, to - 1] (to None: up to `RANDOM_MAX`)."""
    low, top = random_bounds(self.dtype, low, high)
    self[...] = numpy_generator(generator).integers(low, top, self.shape, dtype=np.int64, endpoint=True)
    return self
