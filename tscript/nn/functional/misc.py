"""Dropout, embedding, one_hot and vector-similarity functions of
nn.functional, composed of differentiable tensor ops (random masks come from the global RNG
through `rand`)."""
from __future__ import annotations

import warnings

from ..._creation import arange, empty, rand
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from tscript_runtime.ops.rules import broadcast_shapes
from .activation import _where

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "embedding", "one_hot", "normalize",
           "cosine_similarity", "pairwise_distance"]


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
    # (a draw below 1 - p keeps the element: bernoulli's rule, written with the functional rand so that
    # compiled code can draw the mask before its native call and fuse the rest)
    noise = (rand(noise_shape, dtype=input.dtype) < 1 - p).to(input.dtype) / (1 - p)
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
