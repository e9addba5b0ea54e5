"""The LLVM module of the eager kernels outside the kernel library, each in the kernel ABI tscript_parallel2
runs: per elementwise op of LOWERED a flat kernel, and for binary ops a per-channel one (`eager_pointwise.py`
says what each computes and who calls them; each element's value is the op's row of the compiler's
lowering table), and the library's max pooling of a range of planes (eager `max_pool2d` runs its halves on
both cores):

    tscript_eager_max_pool2d_part_f32(i64* [begin, end], i8** [x, y], i64* geometry, f64*)
        tscript_max_pool2d_f32 of planes [begin, end) (geometry: its 13 slots, all planes first)"""
from __future__ import annotations

from llvmlite import ir

from .. import dtypes as dt
from . import library
from .eager_pointwise import ARITY, LOWERED
from .library.loops import counted
from .library.parallel import kernel_abi
from .lowering import LOWERINGS, Emitter

I64, F32P = ir.IntType(64), ir.FloatType().as_pointer()
POOL, POOL_SLOTS = "tscript_eager_max_pool2d_part_f32", 13


def module() -> ir.Module:
    """The module defining every kernel of eager_pointwise.NAMES."""
    from .target import host
    module = ir.Module("tscript_eager_kernels")
    module.triple = host()["triple"]
    for name in LOWERED:
        _define(module, name, channels=False)
        if ARITY[name] == 2:
            _define(module, name, channels=True)
    _define_pool_part(module)
    return module


def _define_pool_part(module: ir.Module) -> None:
    """POOL: the library's max pooling called on planes [begin, end) (their count in a copy of the geometry,
    x and y advanced to the first)."""
    pool = library.declare(module, "tscript_max_pool2d_f32")
    fn, _ = kernel_abi(module, POOL)
    sizes, ptrs, dims, _ = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    table = b.bitcast(ptrs, ptrs.type.as_pointer())
    x, y = (b.bitcast(b.load(b.gep(table, [I64(k)])), F32P) for k in range(2))
    begin, end = b.load(sizes), b.load(b.gep(sizes, [I64(1)]))
    slot = [b.load(b.gep(dims, [I64(k)])) for k in range(POOL_SLOTS)]
    geometry = b.alloca(I64, POOL_SLOTS)
    for k, value in enumerate([b.sub(end, begin)] + slot[1:]):
        b.store(value, b.gep(geometry, [I64(k)]))
    x = b.gep(x, [b.mul(begin, b.mul(slot[1], slot[2]))], inbounds=True)
    y = b.gep(y, [b.mul(begin, b.mul(slot[11], slot[12]))], inbounds=True)
    b.call(pool, [geometry, x, y])
    b.ret_void()


def _define(module: ir.Module, name: str, channels: bool) -> None:
    """One kernel. Its loop is emitted twice, for y == a (in place) and for y != a: LLVM vectorizes a loop
    only behind a run-time check that y overlaps no input, which an in-place op's y == a fails."""
    fn, _ = kernel_abi(module, f"tscript_eager_{name}{'_channels' if channels else ''}_f32")
    sizes, ptrs, dims, _ = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    table = b.bitcast(ptrs, ptrs.type.as_pointer())
    arrays = [b.bitcast(b.load(b.gep(table, [I64(k)])), F32P) for k in range(1 + ARITY[name])]
    bounds = b.load(sizes), b.load(b.gep(sizes, [I64(1)]))
    in_place, apart, done = (fn.append_basic_block(n) for n in ("in_place", "apart", "done"))
    b.cbranch(b.icmp_unsigned("==", b.ptrtoint(arrays[0], I64), b.ptrtoint(arrays[1], I64)), in_place, apart)
    for block, a in ((in_place, arrays[0]), (apart, arrays[1])):
        b.position_at_end(block)
        loop = _channel_rows if channels else _elements
        loop(b, fn, name, (arrays[0], a) + tuple(arrays[2:]), bounds, dims)
        b.branch(done)
    b.position_at_end(done)
    b.ret_void()


def _elements(b: ir.IRBuilder, fn: ir.Function, name: str, arrays: tuple, bounds: tuple, dims) -> None:
    """y[i] = op(inputs[i]) for i in [begin, end)."""
    y, inputs = arrays[0], arrays[1:]
    with counted(b, fn, bounds[0], bounds[1], 1, "i") as i:
        values = [b.load(b.gep(x, [i], inbounds=True)) for x in inputs]
        b.store(_lower(b, name, values), b.gep(y, [i], inbounds=True))


def _channel_rows(b: ir.IRBuilder, fn: ir.Function, name: str, arrays: tuple, bounds: tuple, dims) -> None:
    """y[r, j] = op(a[r, j], v[r % channels]) for rows r in [begin, end), j < inner (dims: channels, inner)."""
    y, a, v = arrays
    channels, inner = b.load(dims), b.load(b.gep(dims, [I64(1)]))
    with counted(b, fn, bounds[0], bounds[1], 1, "r") as r:
        value = b.load(b.gep(v, [b.srem(r, channels)], inbounds=True))
        row = b.mul(r, inner)
        yr, ar = b.gep(y, [row], inbounds=True), b.gep(a, [row], inbounds=True)
        with counted(b, fn, I64(0), inner, 1, "j") as j:
            b.store(_lower(b, name, [b.load(b.gep(ar, [j], inbounds=True)), value]), b.gep(yr, [j], inbounds=True))


def _lower(b: ir.IRBuilder, name: str, values: list):
    """The op's float32 value of one element, as compiled code computes it."""
    return LOWERINGS[LOWERED[name]](Emitter(b), values, dt.float32, None)
