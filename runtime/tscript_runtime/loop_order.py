"""Which dim each loop of an elementwise kernel walks. A generated kernel loops over its iteration
dims in order (the last one innermost) and reads every array through run-time strides, so the
launcher may permute the dims, provided it permutes the sizes and every array's strides together,
and may merge two dims into one where every array is contiguous across them.

What we want (shared/LLVM_NOTES.md; tscript/codegen/kernel.py):
- the innermost loop walks the outputs' contiguous dim: outputs are fresh C-contiguous arrays, so
  that is the last dim of size > 1, which stays last;
- an input read across the grain (a transposed view) has its own contiguous dim right outside the
  innermost loop: the kernel then reads it in tiles, transposed in registers;
- adjacent dims contiguous for every array make one long loop (a (n, 3) array is one loop of 3n).

What we must keep: a kernel compiled an array's stride along a dim where the array's static type has
size 1 as the constant 0 (kernel.py `_broadcast_dim`). The launcher does not know which, so it uses
a permutation only when every array with stride 0 at a position still has stride 0 there after it.
Dims of size 1 never move.
"""
from __future__ import annotations


def plan(sizes: list, strides: list, n_outputs: int) -> tuple[list, list]:
    """`sizes` and the per-array `strides` (in elements, outputs first) of an iteration space, in the
    order a kernel should loop over them (merged dims leave a dim of size 1 with stride 0)."""
    order = _order(sizes, strides, n_outputs)
    if not all(st[d] == 0 for st in strides for q, d in enumerate(order) if st[q] == 0):
        order = list(range(len(sizes)))
    return _merge([sizes[d] for d in order], [[st[d] for d in order] for st in strides])


def _order(sizes: list, strides: list, n_outputs: int) -> list:
    """Dims as they are, except that the dim most inputs read with unit stride while reading the
    innermost dim with a stride other than 0 or +-1 moves right outside the innermost one."""
    dims = [d for d, n in enumerate(sizes) if n != 1]
    order = list(range(len(sizes)))
    if len(dims) < 3:  # with two dims the only candidate is already in place
        return order
    inner, outer = dims[-1], dims[:-1]
    across = [st for st in strides[n_outputs:] if abs(st[inner]) > 1]
    votes = {d: sum(st[d] == 1 for st in across) for d in outer}
    best = max(reversed(outer), key=votes.__getitem__)
    if votes[best] == 0:
        return order
    for position, d in zip(dims, [d for d in outer if d != best] + [best, inner]):
        order[position] = d
    return order


def _merge(sizes: list, strides: list) -> tuple[list, list]:
    """Fold each dim into the next inner dim of size > 1 when every array steps across it as one
    run (stride = inner stride x inner size); the folded dim keeps size 1 and stride 0."""
    dims = [d for d, n in enumerate(sizes) if n != 1]
    if not dims:
        return sizes, strides
    inner = dims[-1]
    for d in reversed(dims[:-1]):
        if all(st[d] == st[inner] * sizes[inner] for st in strides):
            sizes[inner] *= sizes[d]
            sizes[d] = 1
            for st in strides:
                st[d] = 0
        else:
            inner = d
    return sizes, strides
