"""`tscript.finfo` and `tscript.iinfo`: the numerical limits of a dtype, as `torch.finfo`/`torch.iinfo`
(read from numpy's, which knows the same IEEE and two's-complement formats)."""
import numpy as np

from . import _dtype


def _limits(fn, d: "_dtype.dtype"):
    """numpy's finfo/iinfo of `d` (ml_dtypes knows the formats numpy lacks, such as bfloat16)."""
    try:
        return fn(d.np)
    except (ValueError, TypeError):
        import ml_dtypes
        return getattr(ml_dtypes, fn.__name__)(d.np)


def _check(kind: str, d, wanted) -> "_dtype.dtype":
    """`d` if it is a dtype `wanted` accepts; PyTorch's TypeError otherwise."""
    if not isinstance(d, _dtype.dtype):
        raise TypeError(f"{kind}(): argument 'type' (position 1) must be torch.dtype, not {type(d).__name__}")
    if not wanted(d):
        if kind == "iinfo" and d.np.kind == "b":
            raise TypeError("torch.bool is not supported by torch.iinfo")
        other = "iinfo" if kind == "finfo" else "finfo"
        what = "a floating point" if kind == "finfo" else "an integer"
        raise TypeError(f"torch.{kind}() requires {what} input type. Use torch.{other} to handle 'torch.{kind}'")
    return d


class finfo:
    """Limits of a floating dtype (the default dtype when none is given): `bits`, `eps`, `max`, `min`,
    `tiny` (= `smallest_normal`), `resolution` and `dtype` (its name)."""

    def __init__(self, type=None):
        d = _check("finfo", _dtype.get_default_dtype() if type is None else type, lambda t: t.is_floating_point)
        info = _limits(np.finfo, d)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = float(10.0 ** -int(info.precision))
        self.dtype = d.name

    def __eq__(self, other) -> bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    __hash__ = None  # as torch.finfo

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype: `bits`, `max`, `min` and `dtype` (its name)."""

    def __init__(self, type):
        d = _check("iinfo", type, lambda t: not t.is_floating_point and t.np.kind in "iu")
        info = _limits(np.iinfo, d)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = d.name

    def __eq__(self, other) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    __hash__ = None

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
