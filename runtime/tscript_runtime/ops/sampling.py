"""Resampling, the ops behind F.interpolate: `upsample_nearest{1,2,3}d`,
`_upsample_nearest_exact{1,2,3}d`, `upsample_linear1d`, `upsample_bilinear2d`,
`upsample_bicubic2d`, `upsample_trilinear3d`, and each one's adjoint `<op>_backward`.

Every mode is separable: along each spatial dim an output position reads a few input positions
(its taps) with weights, and the N-d result is the 1-D resampling applied one dim at a time. Taps
and weights follow PyTorch's CPU kernels exactly (UpSample.h: the source coordinate, the float32
`floorf`, the clamping, the `scales` given by a scale_factor taking the place of in/out), so
indices agree bit for bit and values up to summation order. A kernel gathers each tap with
`np.take` and sums the weighted gathers; the adjoint adds each tap's weighted gradient back onto
its input position. A tap's input positions never decrease along the output, so that adjoint is a
segment sum (`np.add.reduceat`), with no scatter and no loop over pixels.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import OpNotImplementedError, OpRuntimeError, fmt_shape
from .registry import register

# op name -> (spatial dims, kind); kinds "linear" and "cubic" take align_corners
UPSAMPLE_OPS = {
    "upsample_nearest1d": (1, "nearest"), "upsample_nearest2d": (2, "nearest"),
    "upsample_nearest3d": (3, "nearest"), "_upsample_nearest_exact1d": (1, "nearest_exact"),
    "_upsample_nearest_exact2d": (2, "nearest_exact"), "_upsample_nearest_exact3d": (3, "nearest_exact"),
    "upsample_linear1d": (1, "linear"), "upsample_bilinear2d": (2, "linear"),
    "upsample_trilinear3d": (3, "linear"), "upsample_bicubic2d": (2, "cubic"),
}
SCALE_NAMES = {1: ("scales",), 2: ("scales_h", "scales_w"), 3: ("scales_d", "scales_h", "scales_w")}
_DIM_LETTERS = {1: "W", 2: "HW", 3: "DHW"}
_CUBIC_A = -0.75  # the bicubic kernel's parameter in PyTorch (and OpenCV)


def interpolates(kind: str) -> bool:
    """Does this kind of resampling take `align_corners`?"""
    return kind in ("linear", "cubic")


# -- taps: which input positions each output position reads, with what weights --------------------

def _floorf(v):
    """C's floorf: the value rounded to float32 first (PyTorch floors source indices that way)."""
    return np.floor(np.asarray(v, np.float32)).astype(np.int64)


def _source_scale(size_in: int, size_out: int, align_corners: bool, scale, work):
    """PyTorch's area_pixel_compute_scale: the input distance between neighbouring outputs."""
    if align_corners:
        return work.type(size_in - 1) / work.type(size_out - 1) if size_out > 1 else work.type(0)
    if scale is not None and scale > 0:
        return work.type(1.0 / scale)
    return work.type(size_in) / work.type(size_out)


def _source_index(ratio, size_out: int, align_corners: bool, cubic: bool, work):
    """PyTorch's area_pixel_compute_source_index for every output position."""
    i = np.arange(size_out, dtype=work)
    if align_corners:
        return ratio * i
    src = ratio * (i + work.type(0.5)) - work.type(0.5)
    return src if cubic else np.maximum(src, work.type(0))


def _cubic_weights(t, work) -> list:
    """The four weights of Keys' cubic convolution (A = -0.75) at fraction `t`."""
    a, one = work.type(_CUBIC_A), work.type(1)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):   # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    rest = one - t
    return [far(t + one), near(t), near(rest), far(rest + one)]


def _nearest(size_in: int, size_out: int, align_corners: bool, scale, work) -> list:
    ratio = _source_scale(size_in, size_out, False, scale, work)
    return [(np.minimum(_floorf(_source_index(ratio, size_out, True, False, work)), size_in - 1), None)]


def _nearest_shortcut(size_in: int, size_out: int, align_corners: bool, scale, work) -> list:
    """PyTorch's nearest_idx, which its 2-D kernel uses for small outputs: a copy when the sizes
    agree, every input twice when the output is twice as long (whatever a scale factor says), else
    the usual rule with the scale in float32."""
    if size_out == size_in:
        return [(np.arange(size_out), None)]
    if size_out == 2 * size_in:
        return [(np.arange(size_out) >> 1, None)]
    return _nearest(size_in, size_out, False, scale, np.dtype(np.float32))


def _nearest_exact(size_in: int, size_out: int, align_corners: bool, scale, work) -> list:
    ratio = _source_scale(size_in, size_out, False, scale, work)
    src = _source_index(ratio, size_out, False, False, work).astype(np.float64) + 0.5
    return [(np.minimum(_floorf(src), size_in - 1), None)]


def _linear(size_in: int, size_out: int, align_corners: bool, scale, work) -> list:
    if size_in == size_out:  # PyTorch copies (even when a scale factor says otherwise)
        return [(np.arange(size_in), None)]
    src = _source_index(_source_scale(size_in, size_out, align_corners, scale, work), size_out, align_corners,
                        False, work)
    first = np.minimum(_floorf(src), size_in - 1)
    far = np.clip(src - first.astype(work), 0, 1).astype(work)
    return [(first, work.type(1) - far), (first + (first < size_in - 1), far)]


def _cubic(size_in: int, size_out: int, align_corners: bool, scale, work) -> list:
    src = _source_index(_source_scale(size_in, size_out, align_corners, scale, work), size_out, align_corners,
                        True, work)
    first = _floorf(src)
    weights = _cubic_weights((src - first.astype(work)).astype(work), work)
    return [(np.clip(first - 1 + j, 0, size_in - 1), w.astype(work)) for j, w in enumerate(weights)]


# kind -> f(size_in, size_out, align_corners, scale, work) -> [(input index per output position,
# weight per output position or None), ...]: the taps along one dim
TAPS = {"nearest": _nearest, "nearest_shortcut": _nearest_shortcut, "nearest_exact": _nearest_exact,
        "linear": _linear, "cubic": _cubic}


def _along(values, axis: int, ndim: int):
    """A per-position vector shaped to broadcast along `axis` of an ndim-dim array."""
    return values.reshape((-1,) + (1,) * (ndim - 1 - axis))


def resample(x, axis: int, dim_taps: list):
    """`x` resampled along `axis` by taps: the weighted sum of one gather per tap."""
    out = None
    for index, weight in dim_taps:
        term = np.take(x, index, axis=axis)
        if weight is not None:
            term = term * _along(weight, axis, x.ndim)
        out = term if out is None else out + term
    return out


def resample_adjoint(grad, axis: int, dim_taps: list, size_in: int):
    """The adjoint of `resample`: each tap's weighted gradient summed back onto its input position."""
    shape = list(grad.shape)
    shape[axis] = size_in
    out = np.zeros(shape, grad.dtype)
    for index, weight in dim_taps:
        term = grad if weight is None else grad * _along(weight, axis, grad.ndim)
        starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])  # index never decreases
        where = [slice(None)] * grad.ndim
        where[axis] = index[starts]
        out[tuple(where)] += np.add.reduceat(term, starts, axis=axis)
    return out


# -- rules ---------------------------------------------------------------------------------------

def _work_dtype(dtype):
    """The dtype weights and sums are computed in (PyTorch's opmath type)."""
    return np.dtype(np.float64) if dtype == dt.float64 else np.dtype(np.float32)


def _torch_name(dtype) -> str:
    return dt.TORCH_NAMES.get(dtype, str(dtype))


def _check_dtype(op: str, kind: str, dtype) -> None:
    if kind.startswith("nearest") and dtype == np.uint8:  # images: PyTorch resamples bytes by nearest too
        return
    if dtype == dt.bool_ or not dt.is_float(dtype):
        raise OpNotImplementedError(f"\"{op}\" not implemented for '{_torch_name(dtype)}'")


def _sizes_text(nd: int, sizes) -> str:
    return ", ".join(f"{letter}: {s}" for letter, s in zip(_DIM_LETTERS[nd], sizes))


def _check_sizes(nd: int, input_size, output_size) -> tuple:
    """The output size as a tuple of nd ints, checked as PyTorch's upsample_*_common_check does."""
    output_size = tuple(output_size) if isinstance(output_size, (list, tuple)) else (output_size,)
    if len(output_size) != nd:
        raise OpRuntimeError(f"It is expected output_size equals to {nd}, but got size {len(output_size)}")
    if len(input_size) != nd + 2:
        raise OpRuntimeError(f"It is expected input_size equals to {nd + 2}, but got size {len(input_size)}")
    spatial = tuple(input_size[2:])
    if any(isinstance(s, int) and s <= 0 for s in spatial + output_size):
        joint = " and output" if nd == 1 else " output"
        raise OpRuntimeError(f"Input and output sizes should be greater than 0, but got input "
                             f"({_sizes_text(nd, spatial)}){joint} ({_sizes_text(nd, output_size)})")
    return output_size


def _forward_shape(nd: int):
    def rule(self, output_size, *rest):
        if self.ndim != nd + 2:
            raise OpRuntimeError(f"It is expected input_size equals to {nd + 2}, but got size {self.ndim}")
        if any(isinstance(s, int) and s == 0 for s in self.shape[1:]):
            raise OpRuntimeError(f"Non-empty {nd + 2}D data tensor expected but got a tensor with sizes "
                                 f"{fmt_shape(self.shape)}")
        return tuple(self.shape[:2]) + _check_sizes(nd, tuple(self.shape), output_size)
    return rule


def _forward_dtype(op: str, kind: str):
    def rule(self, *rest):
        _check_dtype(op, kind, self.dtype)
        return self.dtype
    return rule


def _backward_shape(nd: int):
    def rule(grad_output, output_size, input_size, *rest):
        input_size = tuple(input_size)
        output_size = _check_sizes(nd, input_size, output_size)
        expected = input_size[:2] + output_size
        if grad_output.ndim != nd + 2:
            raise OpRuntimeError(f"Expected grad_output to be a tensor of dimension {nd + 2} but got: dimension "
                                 f"{grad_output.ndim}")
        for d, (want, got) in enumerate(zip(expected, grad_output.shape)):
            if isinstance(got, int) and isinstance(want, int) and want != got:
                raise OpRuntimeError(f"Expected grad_output to have the same shape as output; output.size({d}) = "
                                     f"{want} but got grad_output.size({d}) = {got}")
        return input_size
    return rule


def _backward_dtype(op: str):
    def rule(grad_output, *rest):
        if not dt.is_float(grad_output.dtype):
            raise OpNotImplementedError(f"\"{op}\" not implemented for '{_torch_name(grad_output.dtype)}'")
        return grad_output.dtype
    return rule


# -- kernels -------------------------------------------------------------------------------------

def _split(kind: str, nd: int, rest: tuple) -> tuple:
    """(align_corners, one scale per dim) from the arguments after output_size (trailing scales may
    be left out: they default to None)."""
    align_corners, scales = (bool(rest[0]), rest[1:]) if interpolates(kind) else (False, rest)
    return align_corners, (tuple(scales) + (None,) * nd)[:nd]


def _all_taps(kind, sizes_in, sizes_out, align_corners, scales, work) -> list:
    if kind == "nearest" and len(sizes_out) == 2 and sum(sizes_out) <= 128:
        kind = "nearest_shortcut"  # the branch PyTorch's upsample_nearest2d takes for small outputs
    return [TAPS[kind](i, o, align_corners, s, work) for i, o, s in zip(sizes_in, sizes_out, scales)]


def _forward_kernel(name: str, nd: int, kind: str):
    shape_rule, dtype_rule = _forward_shape(nd), _forward_dtype(name, kind)

    def kernel(self, output_size, *rest):
        dtype_rule(self)
        out_shape = shape_rule(self, output_size)
        align_corners, scales = _split(kind, nd, rest)
        work = _work_dtype(self.dtype)
        x = self if kind.startswith("nearest") else self.astype(work, copy=False)
        dim_taps = _all_taps(kind, self.shape[2:], out_shape[2:], align_corners, scales, work)
        for axis in reversed(range(2, nd + 2)):  # the first dim's weights outermost, as in PyTorch's kernel
            x = resample(x, axis, dim_taps[axis - 2])
        return np.ascontiguousarray(x, dtype=self.dtype)
    kernel.__doc__ = f"F.interpolate's {kind.replace('_', '-')} resampling of (N, C, {nd} spatial dims)."
    return kernel


def _backward_kernel(name: str, nd: int, kind: str):
    shape_rule, dtype_rule = _backward_shape(nd), _backward_dtype(name)

    def kernel(grad_output, output_size, input_size, *rest):
        dtype_rule(grad_output)
        size = shape_rule(grad_output, output_size, input_size)
        align_corners, scales = _split(kind, nd, rest)
        work = _work_dtype(grad_output.dtype)
        g = grad_output.astype(work, copy=False)
        dim_taps = _all_taps(kind, size[2:], grad_output.shape[2:], align_corners, scales, work)
        for axis, t in enumerate(dim_taps, start=2):
            g = resample_adjoint(g, axis, t, size[axis])
        return np.ascontiguousarray(g, dtype=grad_output.dtype)
    kernel.__doc__ = f"The adjoint of {name}: output gradients summed back onto the input positions read."
    return kernel


def _schemas(name: str, nd: int, kind: str) -> tuple:
    align = ", bool align_corners" if interpolates(kind) else ""
    scales = "".join(f", float? {s}=None" for s in SCALE_NAMES[nd])
    forward = f"aten::{name}(Tensor self, int[{nd}] output_size{align}{scales}) -> Tensor"
    backward = (f"aten::{name}_backward(Tensor grad_output, int[{nd}] output_size, int[{nd + 2}] input_size"
                f"{align}{scales}) -> Tensor")
    return forward, backward


def _register_all() -> None:
    for name, (nd, kind) in UPSAMPLE_OPS.items():
        forward, backward = _schemas(name, nd, kind)
        register(forward, shape=_forward_shape(nd), dtype=_forward_dtype(name, kind))(_forward_kernel(name, nd, kind))
        register(backward, shape=_backward_shape(nd), dtype=_backward_dtype(f"{name}_backward"))(
            _backward_kernel(f"{name}_backward", nd, kind))


_register_all()
