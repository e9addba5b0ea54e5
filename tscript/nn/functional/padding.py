"""`pad` of nn.functional: constant padding of any number of trailing dims (negative sizes crop),
and reflect / replicate / circular padding of the last 1-3 dims of a batched or unbatched input.

Constant and circular padding are compositions of narrow and cat (views and a copy the compiler
lowers); reflect and replicate are the ops `reflection_pad{k}d` / `replication_pad{k}d`.
"""
from __future__ import annotations

from ..._creation import full
from ..._dispatch import dispatch
from ..._tensor import Tensor
from tscript_runtime.ops import OPS

__all__ = ["pad"]

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


def _cat(parts: list, dim: int) -> Tensor:
    return dispatch(OPS["aten::cat"], (parts, dim)) if len(parts) > 1 else parts[0]


def _crop(x: Tensor, d: int, before: int, after: int) -> Tensor:
    """x without the -before leading / -after trailing elements of dim d (for negative sizes)."""
    size = x.shape[d]
    start, length = max(-before, 0), size - max(-before, 0) - max(-after, 0)
    if length < 0:
        raise RuntimeError(f"narrow(): length must be non-negative. (pad: the input size {size} with padding "
                           f"({before}, {after}) at dimension {d} has a negative output size)")
    return x.narrow(d, start, length) if start or length != size else x


def _pad_constant(input: Tensor, pairs: list, value: float) -> Tensor:
    out = input
    for d, before, after in pairs:
        out = _crop(out, d, before, after)
        pieces = [full(tuple(out.shape[:d]) + (n,) + tuple(out.shape[d + 1:]), value, dtype=out.dtype)
                  for n in (max(before, 0), max(after, 0))]
        out = _cat([p for p in (pieces[0], out, pieces[1]) if p.shape[d] or p is out], d)
    return out


def _pad_circular(input: Tensor, pairs: list) -> Tensor:
    """Crop first (negative sizes), then wrap around: the leading pad is the end of the cropped dim,
    the trailing pad its start."""
    out = input
    for d, before, after in pairs:
        out = _crop(out, d, before, after)
        size = out.shape[d]
        if before > size or after > size:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        parts = [out.narrow(d, size - before, before)] if before > 0 else []
        parts.append(out)
        if after > 0:
            parts.append(out.narrow(d, 0, after))
        out = _cat(parts, d)
    return out


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
    k = len(pairs)
    if k not in (1, 2, 3) or input.dim() not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {2 * k} is not supported for {input.dim()}D input tensor.\n"
                                  + _NON_CONSTANT)
    if mode == "circular":
        return _pad_circular(input, pairs)
    sizes = [int(p) for p in pad]
    return _reflect(input, sizes, k) if mode == "reflect" else _replicate(input, sizes, k)


# one literal op name per call, so that scripted code resolves each op (the op table takes constant keys)
def _reflect(input: Tensor, pad: list, k: int) -> Tensor:
    if k == 1:
        return dispatch(OPS["aten::reflection_pad1d"], (input, pad))
    if k == 2:
        return dispatch(OPS["aten::reflection_pad2d"], (input, pad))
    return dispatch(OPS["aten::reflection_pad3d"], (input, pad))


def _replicate(input: Tensor, pad: list, k: int) -> Tensor:
    if k == 1:
        return dispatch(OPS["aten::replication_pad1d"], (input, pad))
    if k == 2:
        return dispatch(OPS["aten::replication_pad2d"], (input, pad))
    return dispatch(OPS["aten::replication_pad3d"], (input, pad))
