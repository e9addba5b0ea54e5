"""Flattening parameters into one vector and back."""
from ..._tensor import Tensor


def parameters_to_vector(parameters) -> Tensor:
    """All parameters flattened and concatenated into one 1-D tensor."""
    from ... import cat
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Make each parameter (in order) the next slice of `vec`, reshaped to its shape; as in PyTorch
    the parameters then share memory with `vec`."""
    if not isinstance(vec, Tensor) or vec.dim() != 1:
        raise TypeError(f"expected a 1-D Tensor, but got {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters: vector has {vec.numel()} elements, parameters need {total}")
    at = 0
    for p in params:
        n = p.numel()
        p.data = vec[at:at + n].view_as(p).data
        at += n
