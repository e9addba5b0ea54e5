"""User-facing dtype objects (`tscript.float32`, ...), each wrapping a numpy dtype."""
import numpy as np

from tscript_runtime import dtypes as _dt


class dtype:
    """A tensor element type, as `torch.dtype`: `tscript.float32`, `tscript.int64`, ..."""
    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize")

    def __init__(self, name: str):
        self.name = name
        self.np = _dt.BY_NAME[name]
        self.is_floating_point = _dt.is_float(self.np)
        self.is_complex = _dt.is_complex(self.np)
        self.is_signed = self.np.kind not in "bu"
        self.itemsize = self.np.itemsize

    def to_real(self) -> "dtype":
        """The real dtype of a complex one (complex64 -> float32); others unchanged."""
        return FROM_NP[_dt.to_real(self.np)]

    def to_complex(self) -> "dtype":
        """The complex dtype of a floating one (float32 -> complex64); complex ones unchanged."""
        return self if self.is_complex else FROM_NP[_dt.to_complex(self.np)]

    def __repr__(self) -> str:
        return f"tscript.{self.name}"

    def __reduce__(self):
        return self.name


float16 = dtype("float16")
bfloat16 = dtype("bfloat16")
float32 = dtype("float32")
float64 = dtype("float64")
complex64 = dtype("complex64")
complex128 = dtype("complex128")
uint8 = dtype("uint8")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
bool_ = dtype("bool")

FROM_NP = {d.np: d for d in (float16, bfloat16, float32, float64, complex64, complex128, uint8, int8, int16, int32,
                             int64, bool_)}


def to_np(x) -> np.dtype:
    """A dtype argument (tscript.dtype, numpy dtype, float/int/bool, name) as a numpy dtype."""
    return _dt.resolve(x)


def from_np(np_dtype) -> dtype:
    """The tscript.dtype of a numpy dtype."""
    return FROM_NP[np_dtype]


def get_default_dtype() -> dtype:
    """The dtype of floating tensors created from Python floats (float32 unless changed)."""
    return FROM_NP[_dt.defaults.float_dtype]


def set_default_dtype(d) -> None:
    """Set the default floating dtype; only floating dtypes are allowed (as in PyTorch)."""
    nd = to_np(d)
    if not _dt.is_float(nd):
        raise TypeError(f"only floating-point types are supported as the default type, got {from_np(nd)}")
    _dt.defaults.float_dtype = nd
