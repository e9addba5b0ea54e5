"""Dropout, embedding, one_hot, pad, interpolate and vector-similarity functions of
nn.functional, composed of differentiable tensor ops (random masks come from the global RNG
through `bernoulli_`)."""
from __future__ import annotations

import warnings

from ..._creation import arange, empty, full
from ..._dtype import float32
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..._dispatch import dispatch
from tscript_runtime.errors import fmt_shape
from tscript_runtime.ops import OPS
from tscript_runtime.ops.rules import broadcast_shapes
from .activation import _check_float, _where

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "embedding", "one_hot", "pad", "interpolate",
           "normalize", "cosine_similarity", "pairwise_distance"]


# -- dropout -----------------------------------------------------------------------------------------

def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(input: Tensor, p: float, training: bool, inplace: bool, noise_shape) -> Tensor:
    """input * mask / (1 - p), the mask drawn with shape `noise_shape` (broadcast over input)."""
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0) if inplace else input * 0
    noise = empty(noise_shape, dtype=input.dtype).bernoulli_(1 - p).div_(1 - p)
    return input.mul_(noise) if inplace else input * noise


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (when training)."""
    _check_p(p)
    return _dropout(input, p, training, inplace, tuple(input.shape))


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """Dropout of whole channels: one draw per (batch, channel) pair."""
    return _dropout(input, p, training, inplace, tuple(input.shape[:2]) + (1,) * (input.dim() - 2))


def _unbatched(input: Tensor, batched: bool, p: float, training: bool, inplace: bool) -> Tensor:
    if batched:
        return _feature_dropout(input, p, training, inplace)
    return _feature_dropout(input.unsqueeze(0), p, training, inplace).squeeze(0)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel-wise dropout of (N, C, L) or (C, L) inputs."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           f"dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
                           f"a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _unbatched(input, input.dim() == 3, p, training, inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel-wise dropout of (N, C, H, W) inputs (a 3-D input is taken as (N, C, L), as PyTorch)."""
    _check_p(p)
    if input.dim() not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is deprecated and will "
                      f"result in an error in a future release. To retain the behavior and silence this warning, "
                      f"please use dropout instead. Note that dropout2d exists to provide channel-wise dropout on "
                      f"inputs with 2 spatial dimensions, a channel dimension, and an optional batch dimension "
                      f"(i.e. 3D or 4D inputs).", stacklevel=2)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a "
                      "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
                      "please switch to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel-wise dropout of (N, C, D, H, W) or (C, D, H, W) inputs."""
    _check_p(p)
    if input.dim() not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated and will "
                      f"result in an error in a future release. To retain the behavior and silence this warning, "
                      f"please use dropout instead. Note that dropout3d exists to provide channel-wise dropout on "
                      f"inputs with 3 spatial dimensions, a channel dimension, and an optional batch dimension "
                      f"(i.e. 4D or 5D inputs).", stacklevel=2)
    return _unbatched(input, input.dim() == 5, p, training, inplace)


# -- embedding and one_hot ---------------------------------------------------------------------------

def _padding_index(padding_idx: int | None, num_embeddings: int) -> int | None:
    """`padding_idx` made non-negative, after PyTorch's range check."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx % num_embeddings


def _renorm_rows(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    """Scale the looked-up rows of `weight` whose norm exceeds max_norm down to it, in place."""
    with no_grad():
        rows = indices.reshape(-1).unique()
        picked = weight.index_select(0, rows)
        norms = picked.norm(norm_type, 1, True)
        scale = _where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = picked * scale


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` picked by the integer `input`; the `padding_idx` row gets no gradient.
    (`sparse=True` is accepted; the gradient is dense.)"""
    if input.is_floating_point() or input.dtype.np.kind == "b":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    padding_idx = _padding_index(padding_idx, weight.shape[0])
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    out = weight.index_select(0, input.reshape(-1)).reshape(tuple(input.shape) + (weight.shape[1],))
    if not out.requires_grad:
        return out
    if scale_grad_by_freq:
        _, inverse, counts = input.reshape(-1).unique(return_inverse=True, return_counts=True)
        freq = counts.index_select(0, inverse).reshape(tuple(input.shape) + (1,))
        out = out.detach() + (out - out.detach()) / freq  # same values; gradient divided by the frequency
    if padding_idx is not None:
        out = _where((input == padding_idx).unsqueeze(-1), out.detach(), out)
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 tensor with a trailing dim of size num_classes (inferred as max + 1 when -1)."""
    if tensor.dtype.np.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1
    if tensor.numel():
        if tensor.min().item() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if tensor.max().item() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes < 0:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return (tensor.unsqueeze(-1) == arange(num_classes)).long()


# -- pad ---------------------------------------------------------------------------------------------

_NON_CONSTANT = "\n".join([
    "Supported combinations for non-constant padding:",
    "  - 2D or 3D input: padding size = 2 (pads last dimension)",
    "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)",
    "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"])


def _pad_pairs(input: Tensor, pad) -> list:
    """[(dim, before, after)] for the trailing dims that `pad` names (last dim first)."""
    pad = list(pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but "
                           f"got padding length {len(pad)} and input of dimension {input.dim()}")
    return [(input.dim() - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]


def _pad_constant(input: Tensor, pairs: list, value: float) -> Tensor:
    out = input
    for d, before, after in pairs:
        size = out.shape[d]
        start, length = max(-before, 0), size - max(-before, 0) - max(-after, 0)
        if length < 0:
            raise RuntimeError(f"narrow(): length must be non-negative. (pad: the input size {size} with padding "
                               f"({before}, {after}) at dimension {d} has a negative output size)")
        if start or length != size:
            out = out.narrow(d, start, length)
        pieces = [full(tuple(out.shape[:d]) + (n,) + tuple(out.shape[d + 1:]), value, dtype=out.dtype)
                  for n in (max(before, 0), max(after, 0))]
        parts = [p for p in (pieces[0], out, pieces[1]) if p.shape[d] or p is out]
        out = dispatch(OPS["aten::cat"], (parts, d)) if len(parts) > 1 else out
    return out


def _source_index(mode: str, size: int, before: int, after: int) -> Tensor:
    """For each output position along a padded dim, the input position it copies."""
    j = arange(-before, size + after)
    if mode == "replicate":
        return j.clamp(0, size - 1)
    if mode == "circular":
        return j.remainder(size)
    j = j.abs()
    return _where(j > size - 1, 2 * (size - 1) - j, j)


def _check_non_constant(input: Tensor, mode: str, pairs: list) -> None:
    k = len(pairs)
    if k not in (1, 2, 3) or input.dim() not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {2 * k} is not supported for {input.dim()}D input tensor.\n"
                                  + _NON_CONSTANT)
    if any(s == 0 for s in input.shape[1:]) or (input.dim() == k + 1 and input.shape[0] == 0):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and "
                           f"other non-zero dimensions for input, but got: {fmt_shape(input.shape)}")
    for d, before, after in pairs:
        size = input.shape[d]
        if mode == "reflect" and (before >= size or after >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({before}, {after}) at dimension {d} of input "
                               f"{fmt_shape(input.shape)}")
        if mode == "circular" and (before > size or after > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if min(before, after) < 0 and mode != "circular":
            raise RuntimeError(f"pad: negative padding ({before}, {after}) at dimension {d} is only supported "
                               f"in constant mode")


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the trailing dims: `pad = (last_before, last_after, prev_before, prev_after, ...)`. Constant
    mode pads (or, with negative sizes, crops) any number of dims; reflect, replicate and circular
    pad the last 1-3 dims of a batched or unbatched input."""
    pairs = _pad_pairs(input, pad)
    if mode == "constant":
        return _pad_constant(input, pairs, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    _check_non_constant(input, mode, pairs)
    out = input
    for d, before, after in pairs:
        out = out.index_select(d, _source_index(mode, out.shape[d], before, after))
    return out


# -- interpolate ---------------------------------------------------------------------------------------

_LINEAR_MODES = {"linear": 3, "bilinear": 4, "trilinear": 5}
_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def _output_sizes(input: Tensor, size, scale_factor) -> tuple:
    """(output sizes, scale factors or Nones) from `size` or `scale_factor` (exactly one given)."""
    dims = input.dim() - 2
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dims:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {spatial} and output size of {size}. Please provide "
                                 f"input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                                 f"(o1, o2, ...,oK) format.")
            if not all(isinstance(s, int) for s in size):
                raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                                f"Tuple[int, int, int], but got size with types {[type(s) for s in size]}")
            return list(size), [None] * dims
        return [size] * dims, [None] * dims
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != dims:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                             f"input with spatial dimensions of {spatial} and scale_factor of shape "
                             f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                             f"scale_factor in (s1, s2, ...,sK) format.")
        scales = list(scale_factor)
    else:
        scales = [scale_factor] * dims
    return [int(n * s) for n, s in zip(spatial, scales)], scales


def _check_sizes(spatial, sizes) -> None:
    if all(n > 0 for n in spatial) and all(n > 0 for n in sizes):
        return
    names = "DHW"[3 - len(sizes):]
    described = lambda ns: ", ".join(f"{c}: {n}" for c, n in zip(names, ns))  # noqa: E731
    raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({described(spatial)}) "
                       f"and output ({described(sizes)})")


def _inverse_scale(in_size: int, out_size: int, scale) -> float:
    """PyTorch's compute_scales_value: 1 / scale_factor when given, else in / out."""
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _nearest_index(in_size: int, out_size: int, scale, exact: bool) -> Tensor:
    if out_size == in_size:
        return arange(out_size)
    if out_size == 2 * in_size and not exact:
        return arange(out_size) // 2
    dst = arange(out_size, dtype=float32)  # PyTorch computes source indices in float
    src = ((dst + 0.5) if exact else dst) * _inverse_scale(in_size, out_size, scale)
    return src.floor().long().clamp(max=in_size - 1)


def _linear_along(x: Tensor, d: int, out_size: int, scale, align_corners: bool) -> Tensor:
    """Linear interpolation of `x` along dim `d` (PyTorch's source-index and weight rules)."""
    in_size = x.shape[d]
    if out_size == in_size:
        return x
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        src = arange(out_size, dtype=x.dtype) * ratio
    else:
        src = ((arange(out_size, dtype=x.dtype) + 0.5) * _inverse_scale(in_size, out_size, scale) - 0.5).clamp(min=0)
    i0 = src.floor().clamp(max=in_size - 1)
    lam1 = (src - i0).clamp(0, 1).reshape((out_size,) + (1,) * (x.dim() - 1 - d))
    i0 = i0.long()
    i1 = i0 + (i0 < in_size - 1).long()
    return x.index_select(d, i0) * (1 - lam1) + x.index_select(d, i1) * lam1


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False) -> Tensor:
    """Resize the spatial dims of an (N, C, ...) input by `size` or `scale_factor` with mode
    "nearest", "nearest-exact", "linear" (3-D), "bilinear" (4-D) or "trilinear" (5-D)."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    linear = _LINEAR_MODES.get(mode) == input.dim()
    if not (mode in ("nearest", "nearest-exact") and input.dim() in (3, 4, 5)) and not linear:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
                                  f"for the modes: {_MODES} (got {mode})")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by tscript")
    sizes, scales = _output_sizes(input, size, scale_factor)
    if recompute_scale_factor:
        if size is not None:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        scales = [None] * len(sizes)
    _check_sizes(input.shape[2:], sizes)
    out = input
    if linear:
        _check_float(f"upsample_{mode}", input)
        for d in reversed(range(2, input.dim())):
            out = _linear_along(out, d, sizes[d - 2], scales[d - 2], align_corners)
        return out
    for d in range(2, input.dim()):
        index = _nearest_index(input.shape[d], sizes[d - 2], scales[d - 2], mode == "nearest-exact")
        out = out.index_select(d, index)
    return out


# -- similarity ----------------------------------------------------------------------------------------

def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None) -> Tensor:
    """input / max(||input||_p along dim, eps)."""
    if not input.is_floating_point():
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{input.type().split('.')[-1].replace('Tensor', '')}")
    result = input / input.norm(p, dim, True).clamp(min=eps).expand_as(input)
    return result if out is None else out.copy_(result)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along `dim` (inputs broadcast)."""
    x1, x2 = (x if x.is_floating_point() else x.float() for x in (x1, x2))
    shape = broadcast_shapes(tuple(x1.shape), tuple(x2.shape))  # with PyTorch's error
    x1, x2 = x1.expand(shape), x2.expand(shape)
    n1, n2 = x1.norm(2, dim, True).clone(), x2.norm(2, dim, True).clone()
    with no_grad():  # as PyTorch: the gradient flows through the unclamped norms
        n1.clamp_(min=eps)
        n2.clamp_(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p along the last dim."""
    return (x1 - x2 + eps).norm(p, -1, keepdim)
