"""Complex tensors: building them (`polar`, `complex`), viewing them as pairs of reals and back
(`view_as_real`, `view_as_complex`, what rotary position embeddings use), and their parts (`real`,
`imag`, `conj`). Arithmetic on complex tensors is the elementwise ops' (numpy computes it)."""
import numpy as np

from .. import dtypes as dt
from ..errors import OpRuntimeError
from .registry import register
from .rules import broadcast_args, same_shape

_COMPLEX_PARTS = (dt.float32, dt.float64)  # what view_as_complex and polar take (float16's complex32 is absent)


def _check_complex(op: str, x) -> None:
    if not dt.is_complex(x.dtype):
        raise OpRuntimeError(f"{op} is only supported for complex tensors")


def _real_shape(self):
    _check_complex("view_as_real", self)
    return tuple(self.shape) + (2,)


@register("aten::view_as_real(Tensor(a) self) -> Tensor(a)", shape=_real_shape,
          dtype=lambda self: dt.to_real(self.dtype))
def view_as_real(self):
    """The complex tensor as reals with a last dim of 2 (real, imaginary), sharing its memory."""
    _check_complex("view_as_real", self)
    real = self.real  # a view at each element's first half; the imaginary half is one real further
    return np.lib.stride_tricks.as_strided(real, self.shape + (2,), self.strides + (real.itemsize,))


def _check_parts(op: str, x) -> None:
    if x.dtype not in _COMPLEX_PARTS:
        raise OpRuntimeError(f"{op} is only supported for float and double tensors, but got a tensor of scalar "
                             f"type: {dt.TORCH_NAMES[x.dtype]}")


def _complex_view_shape(self):
    _check_parts("view_as_complex", self)
    if not self.shape or self.shape[-1] != 2:
        raise OpRuntimeError("Tensor must have a last dimension of size 2")
    return tuple(self.shape[:-1])


@register("aten::view_as_complex(Tensor(a) self) -> Tensor(a)", shape=_complex_view_shape,
          dtype=lambda self: dt.to_complex(self.dtype))
def view_as_complex(self):
    """Pairs of reals (a last dim of 2) as complex numbers, sharing their memory."""
    _complex_view_shape(self)
    item = self.itemsize
    if self.strides[-1] != item:
        raise OpRuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % (2 * item) for s in self.strides[:-1]):
        raise OpRuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    return self.view(dt.to_complex(self.dtype))[..., 0]


@register("aten::real(Tensor(a) self) -> Tensor(a)", shape=same_shape, dtype=lambda self: dt.to_real(self.dtype))
def real(self):
    """The real part of a complex tensor (a view); a real tensor itself."""
    return self.real if dt.is_complex(self.dtype) else self


def _imag_dtype(self):
    if not dt.is_complex(self.dtype):
        raise OpRuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return dt.to_real(self.dtype)


@register("aten::imag(Tensor(a) self) -> Tensor(a)", shape=same_shape, dtype=_imag_dtype)
def imag(self):
    """The imaginary part of a complex tensor (a view)."""
    _imag_dtype(self)
    return self.imag


@register("aten::conj(Tensor(a) self) -> Tensor(a)", shape=same_shape, dtype=lambda self: self.dtype)
def conj(self):
    """The complex conjugate (computed, not a lazy view); a real tensor itself."""
    return np.conjugate(self) if dt.is_complex(self.dtype) else self


def _from_parts_dtype(op: str):
    def rule(a, b):
        if not (dt.is_float(a.dtype) and dt.is_float(b.dtype)):
            raise OpRuntimeError(f"{op}(): Expected both inputs to be Half, Float or Double tensors but got "
                                 f"{dt.TORCH_NAMES[a.dtype]} and {dt.TORCH_NAMES[b.dtype]}")
        if a.dtype != b.dtype:
            raise OpRuntimeError(f"{op}(): Expected object of scalar type {dt.TORCH_NAMES[a.dtype]} but got scalar "
                                 f"type {dt.TORCH_NAMES[b.dtype]} for second argument")
        _check_parts(op, a)
        return dt.to_complex(a.dtype)
    return rule


_polar_dtype = _from_parts_dtype("polar")


@register("aten::polar(Tensor abs, Tensor angle) -> Tensor", shape=broadcast_args, dtype=_polar_dtype)
def polar(abs, angle):
    """abs * (cos(angle) + i sin(angle))."""
    out = np.empty(broadcast_args(abs, angle), _polar_dtype(abs, angle))
    out.real = abs * np.cos(angle)
    out.imag = abs * np.sin(angle)
    return out


_complex_dtype = _from_parts_dtype("complex")


@register("aten::complex(Tensor real, Tensor imag) -> Tensor", shape=broadcast_args, dtype=_complex_dtype)
def complex_(real, imag):
    """real + i imag."""
    out = np.empty(broadcast_args(real, imag), _complex_dtype(real, imag))
    out.real, out.imag = real, imag
    return out
