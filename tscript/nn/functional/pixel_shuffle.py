"""pixel_shuffle / pixel_unshuffle of nn.functional: channels traded for spatial resolution and back,
as a reshape, a permute and a reshape (views and one copy; autograd and the compiler see those)."""
from __future__ import annotations

from ..._tensor import Tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle"]


def _check(op: str, input: Tensor, factor: int, name: str) -> None:
    if not isinstance(factor, int) or isinstance(factor, bool):
        raise TypeError(f"{op}(): argument '{name}' (position 2) must be int, not {type(factor).__name__}")
    if input.dim() < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input with {input.dim()} "
                           f"dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {factor}")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r) with r = upscale_factor: each group of r * r
    channels becomes an r x r block of pixels."""
    _check("pixel_shuffle", input, upscale_factor, "upscale_factor")
    r = upscale_factor
    c, h, w = input.shape[-3], input.shape[-2], input.shape[-1]
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    lead = tuple(input.shape[:-3])
    n = len(lead)
    blocks = input.reshape(lead + (c // (r * r), r, r, h, w))
    order = tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2)
    return blocks.permute(order).reshape(lead + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W) with r = downscale_factor: the inverse of
    pixel_shuffle."""
    _check("pixel_unshuffle", input, downscale_factor, "downscale_factor")
    r = downscale_factor
    c, h, w = input.shape[-3], input.shape[-2], input.shape[-1]
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    lead = tuple(input.shape[:-3])
    n = len(lead)
    blocks = input.reshape(lead + (c, h // r, r, w // r, r))
    order = tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3)
    return blocks.permute(order).reshape(lead + (c * r * r, h // r, w // r))
