"""Transposed inputs of elementwise kernels, read in tiles: when an input has unit stride along
the next-to-last loop dim but not along the last one (a transposed view: the launcher moves the
contiguous dim of such inputs there, tscript_runtime/loop_order.py), a kernel that reads it row by
row touches a new cache line (and, for long rows, a new page) at every element. Instead, the last
two dims are walked in square tiles: the tile of each such input is loaded as vectors along its
contiguous dim and transposed in registers into a stack buffer, then the usual vectorized loop
computes the tile's rows. For `x.t() * 2 + 1` on (2048, 2048) float32 that is ~8x faster than the
plain loop nest, and takes ~1.5-2x the time of a contiguous input (benchmarks/strided.py).
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from llvmlite import ir

from .library.loops import I64, loop, nest

if TYPE_CHECKING:
    from .pointwise import Prologue

I8P = ir.IntType(8).as_pointer()

SIDES = (4, 8, 16)  # tile sides the walk can take (the native plan picks one per kernel)
BAND = 256  # rows of tiles walked together: their rows stay in cache and in the TLB


def candidates(p: Prologue) -> list:
    """The inputs that may be read across the grain: neither of their last two dims is statically
    broadcast (pointwise.py `_broadcast_dim`). With none (or rank < 2) there is no tiled walk."""
    n_out = p.n_outputs
    return [k for k in range(n_out, len(p.arrays)) if not any(isinstance(s, ir.Constant) for s in p.strides[k][-2:])]


def tiled(p: Prologue, inputs: list, plain: ir.Function, body, tile: int) -> None:
    """The kernel of prologue `p`: the tiled walk when one of `inputs` (its `candidates`) has unit
    stride along dim R-2 but not along R-1 (it is transposed), the others unit stride along R-1
    or R-2, and every other array unit (or static zero) stride along R-1; else, and for the partial
    tiles at the edges, the plain loop nest `plain` (same arguments). `body(bases, offsets)` emits
    the computation of one element; `tile` is the side of a tile (one of SIDES)."""
    b, r = p.b, p.rank
    use = functools.reduce(b.or_, [b.and_(_unit(b, p.strides[k][-2]), b.not_(_unit(b, p.strides[k][-1])))
                                   for k in inputs])
    for k, st in enumerate(p.strides):
        if not isinstance(st[-1], ir.Constant):
            use = b.and_(use, b.or_(_unit(b, st[-1]), _unit(b, st[-2])) if k in inputs else _unit(b, st[-1]))
    buffers = {k: b.alloca(ir.ArrayType(p.bases[k].type.pointee, tile * tile)) for k in inputs}
    for buf in buffers.values():
        buf.align = 64
    region = b.alloca(I64, r), b.alloca(I8P, len(p.arrays))
    with b.if_else(use) as (then, otherwise):
        with otherwise:
            b.call(plain, p.fn.args)
        with then:
            full = [b.and_(n, I64(-tile)) for n in p.sizes[-2:]]
            levels = [(p.sizes[d], [st[d] for st in p.strides]) for d in range(r - 2)]
            nest(b, p.fn, levels, [I64(0)] * len(p.arrays), "outer",
                 lambda offsets: _bands(p, body, tile, offsets, full, buffers))
            _call_at(p, plain, region, [*p.sizes[:-2], b.sub(p.sizes[-2], full[0]), p.sizes[-1]],
                     [b.mul(full[0], st[-2]) for st in p.strides])
            _call_at(p, plain, region, [*p.sizes[:-2], full[0], b.sub(p.sizes[-1], full[1])],
                     [b.mul(full[1], st[-1]) for st in p.strides])
    b.ret_void()


def _unit(b: ir.IRBuilder, stride):
    return b.icmp_signed("==", stride, I64(1))


def _bands(p: Prologue, body, tile: int, offsets: list, full: list, buffers: dict) -> None:
    """The full `tile` x `tile` tiles of the last two dims (`full`: their extents), in bands of
    BAND rows: band by band, and in a band column by column (a transposed input's rows are read
    BAND elements at a time, each output row is written `tile` elements at a time, and a band's
    rows stay in the TLB)."""
    b = p.b
    per_band = BAND // tile
    tiles_a, tiles_b = (b.udiv(n, I64(tile)) for n in full)
    bands = b.udiv(b.add(tiles_a, I64(per_band - 1)), I64(per_band))
    steps = [[b.mul(st[d], I64(tile)) for st in p.strides] for d in (-2, -1)]

    def band(i, _):
        first = b.mul(i, I64(per_band))
        count = b.sub(tiles_a, first)
        count = b.select(b.icmp_signed("<", count, I64(per_band)), count, I64(per_band))
        corner = [b.add(off, b.mul(first, st)) for off, st in zip(offsets, steps[0])]
        nest(b, p.fn, [(tiles_b, steps[1]), (count, steps[0])], corner, "tile",
             lambda offs: _tile(p, body, tile, offs, buffers))
    loop(b, p.fn, bands, band, "band")


def _tile(p: Prologue, body, tile: int, offsets: list, buffers: dict) -> None:
    """One full tile whose corner is at element `offsets` of each array: the inputs in `buffers` are
    copied there row by row (`_tile_loader`), so every stride along R-1 is the constant 1 (or a
    static 0), and the loop over a row vectorizes without run-time checks or versions."""
    b = p.b
    corners = [b.gep(base, [off], inbounds=True) for base, off in zip(p.bases, offsets)]
    rows = [st[-2] for st in p.strides]
    columns = [st[-1] if isinstance(st[-1], ir.Constant) else I64(1) for st in p.strides]
    for k, buf in buffers.items():
        loader = _tile_loader(b.module, p.bases[k].type.pointee, tile, p.arrays[k].type.dtype.itemsize)
        corners[k] = b.gep(buf, [I64(0), I64(0)], inbounds=True)
        b.call(loader, [b.gep(p.bases[k], [offsets[k]], inbounds=True), *p.strides[k][-2:], corners[k]])
        rows[k] = I64(tile)
    nest(b, p.fn, [(I64(tile), rows), (I64(tile), columns)], [I64(0)] * len(p.arrays), "in_tile",
         lambda offs: body(corners, offs))


def _tile_loader(module: ir.Module, t: ir.Type, tile: int, itemsize: int) -> ir.Function:
    """The module's `void load_tile(t* src, i64 row_stride, i64 column_stride, t* buf)`:
    buf[i * tile + j] = src[i * row_stride + j * column_stride] for i, j < tile, where one of the
    strides is 1 — `tile` vector loads along rows, or along columns and then transposed in
    registers. One function serves all the module's kernels: the shuffles are slow to compile
    (~10-25 ms), and inlined into each kernel they made transposed launches only ~15% faster."""
    name = f"tscript_load_tile_{tile}_{t}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [t.as_pointer(), I64, I64, t.as_pointer()]), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    for a in (fn.args[0], fn.args[3]):
        a.add_attribute("noalias")
    src, row_stride, column_stride, buf = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    vec = ir.VectorType(t, tile)

    def vectors(stride):
        return [b.load(b.bitcast(b.gep(src, [b.mul(I64(j), stride)]), vec.as_pointer()), align=itemsize)
                for j in range(tile)]
    with b.if_else(b.icmp_signed("==", column_stride, I64(1))) as (rows, columns):
        with rows:
            _store_rows(b, buf, vectors(row_stride), itemsize)
        with columns:
            _store_rows(b, buf, _transpose(b, vectors(column_stride)), itemsize)
    b.ret_void()
    return fn


def _transpose(b: ir.IRBuilder, rows: list) -> list:
    """The columns of a square matrix held as a list of vectors (its rows): log2(n) rounds that
    interleave the first half of the vectors with the second half."""
    n, half = len(rows), len(rows) // 2
    masks = [ir.Constant(ir.VectorType(ir.IntType(32), n), [start + i // 2 + i % 2 * n for i in range(n)])
             for start in (0, half)]
    for _ in range(n.bit_length() - 1):
        rows = [b.shuffle_vector(rows[m // 2], rows[m // 2 + half], masks[m % 2]) for m in range(n)]
    return rows


def _store_rows(b: ir.IRBuilder, buf, rows: list, itemsize: int) -> None:
    for i, row in enumerate(rows):
        b.store(row, b.bitcast(b.gep(buf, [I64(i * len(rows))], inbounds=True), row.type.as_pointer()),
                align=itemsize)


def _call_at(p: Prologue, fn: ir.Function, region: tuple, sizes: list, offsets: list) -> None:
    """Call kernel `fn` (same strides and scalars) on the `sizes` region that starts at element
    `offsets` of each array; `region` is stack space for its sizes and pointers."""
    b = p.b
    sizes_p, ptrs_p = region
    for d, n in enumerate(sizes):
        b.store(n, b.gep(sizes_p, [I64(d)]))
    for k, (base, off) in enumerate(zip(p.bases, offsets)):
        b.store(b.bitcast(b.gep(base, [off]), I8P), b.gep(ptrs_p, [I64(k)]))
    b.call(fn, [sizes_p, ptrs_p, *p.fn.args[2:]])


