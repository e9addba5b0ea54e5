"""Native bodies of the whole-graph entry's training steps (helpers `i64 name(i64* dims, i8* ...)` built
by native/entry.py's `_helper`): batch statistics (a sum, mean or variance over two runs of dims around
kept ones), in-place writes into buffers (add_ of a scalar, copy_), max-pooling with the maxima's
indices, and im2col / col2im (the convolution's derivatives). Slots: entry_steps.py."""
from __future__ import annotations

from llvmlite import ir

from ..entry_steps import COLUMN_SLOTS, GEOMETRY, REDUCE_SLOTS, UPDATE_SLOTS
from . import library
from .library.loops import carried, counted

I1, I8, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(64)
I8P = I8.as_pointer()
SUM_FLAGS = ("reassoc", "contract", "nsz", "arcp", "afn")  # a statistic's sum may be reordered (vectorized)


def _slots(b: ir.IRBuilder, dims, names: tuple) -> dict:
    return {s: b.load(b.gep(dims, [I64(i)])) for i, s in enumerate(names)}


def _inside(b: ir.IRBuilder, at, size):
    return b.and_(b.icmp_signed(">=", at, I64(0)), b.icmp_signed("<", at, size))


def statistic_body(fty):
    """out[o, i] from x[o, :, i, :] (REDUCE_SLOTS): the sum times 1 / divisor, or, for a variance, the
    squared deviations from the mean (a second pass) summed and divided by the divisor."""
    def body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
        d = _slots(b, dims, REDUCE_SLOTS)
        x, out = (b.bitcast(p, fty.as_pointer()) for p in ptrs)
        count = b.sitofp(b.mul(d["reduced"], d["reduced2"]), fty)
        variance = b.icmp_signed("!=", d["variance"], I64(0))
        divisor = b.sitofp(d["divisor"], fty)

        def total(block, deviation):
            def run(r, acc):
                row = b.gep(block, [b.mul(b.mul(r, d["inner"]), d["reduced2"])])

                def add(k, a):
                    v = b.load(b.gep(row, [k], inbounds=True))
                    if deviation is not None:
                        v = b.fsub(v, deviation)
                        v = b.fmul(v, v, flags=SUM_FLAGS)
                    return [b.fadd(a[0], v, flags=SUM_FLAGS)]
                return carried(b, fn, I64(0), d["reduced2"], 1, "run", [acc[0]], add)
            return carried(b, fn, I64(0), d["reduced"], 1, "rows", [fty(0.0)], run)[0]

        with counted(b, fn, I64(0), d["outer"], 1, "outer") as o:
            with counted(b, fn, I64(0), d["inner"], 1, "kept") as i:
                start = b.add(b.mul(b.mul(o, d["reduced"]), d["inner"]), i)
                block = b.gep(x, [b.mul(start, d["reduced2"])])
                at = b.gep(out, [b.add(b.mul(o, d["inner"]), i)])
                s = total(block, None)
                with b.if_else(variance) as (spread, plain):
                    with spread:
                        b.store(b.fdiv(total(block, b.fdiv(s, count)), divisor), at)
                    with plain:
                        b.store(b.fdiv(s, divisor), at)
    return body


def update_body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
    """target[e] += the increment (UPDATE_SLOTS), for each of its elements, in the target's type."""
    d = _slots(b, dims, UPDATE_SLOTS)
    target, = ptrs
    is_float = b.icmp_signed("!=", d["float"], I64(0))
    for width in (1, 2, 4, 8):
        ty = ir.IntType(8 * width)
        with b.if_then(b.icmp_signed("==", d["item_bytes"], I64(width))):
            bits = b.trunc(d["pattern"], ty) if width < 8 else d["pattern"]
            at_ = b.bitcast(target, ty.as_pointer())
            if width in (4, 8):
                fty = ir.FloatType() if width == 4 else ir.DoubleType()
                step, ft = b.bitcast(bits, fty), b.bitcast(target, fty.as_pointer())
                with b.if_else(is_float) as (floats, ints):
                    with floats:
                        with counted(b, fn, I64(0), d["count"], 1, f"addf{width}") as e:
                            at = b.gep(ft, [e], inbounds=True)
                            b.store(b.fadd(b.load(at), step), at)
                    with ints:
                        _add_ints(b, fn, at_, bits, d["count"], width)
            else:
                _add_ints(b, fn, at_, bits, d["count"], width)


def _add_ints(b, fn, target, bits, count, width) -> None:
    with counted(b, fn, I64(0), count, 1, f"addi{width}") as e:
        at = b.gep(target, [e], inbounds=True)
        b.store(b.add(b.load(at), bits), at)


def copy_body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
    """target = source (dims[0] bytes; they may overlap)."""
    target, source = ptrs
    memmove = fn.module.declare_intrinsic("llvm.memmove", [I8P, I8P, I64])
    b.call(memmove, [target, source, b.load(dims), I1(0)])


def pool_indices_body(fty):
    """y[p, oh, ow]: the window's first maximum (its last NaN) inside x[p], -inf if none is above it;
    index[p, oh, ow]: its flat position in the plane (the window's first position inside the plane when
    nothing is above -inf), as aten::max_pool2d_with_indices (GEOMETRY; C counts planes)."""
    def body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
        d = _slots(b, dims, GEOMETRY)
        y, index, x = b.bitcast(ptrs[0], fty.as_pointer()), b.bitcast(ptrs[1], I64.as_pointer()), \
            b.bitcast(ptrs[2], fty.as_pointer())
        plane, outs = b.mul(d["H"], d["W"]), b.mul(d["OH"], d["OW"])
        with counted(b, fn, I64(0), d["C"], 1, "plane") as p:
            src = b.gep(x, [b.mul(p, plane)])
            with counted(b, fn, I64(0), d["OH"], 1, "oh") as oh:
                h0 = b.sub(b.mul(oh, d["sh"]), d["ph"])
                first_h = b.mul(_first_inside(b, fn, h0, d["dh"]), d["W"])
                with counted(b, fn, I64(0), d["OW"], 1, "ow") as ow:
                    w0 = b.sub(b.mul(ow, d["sw"]), d["pw"])
                    first = b.add(first_h, _first_inside(b, fn, w0, d["dw"]))

                    k = b.add(b.mul(p, outs), b.add(b.mul(oh, d["OW"]), ow))
                    start = [fty(float("-inf")), first]
                    # 2x2 windows (MaxPool2d(2)) straight-line: tiny tap loops cost more than their taps
                    with b.if_else(b.and_(b.icmp_signed("==", d["kh"], I64(2)), b.icmp_signed("==", d["kw"], I64(2)))) \
                            as (pairs, other):
                        with pairs:
                            acc = start
                            for i in range(2):
                                h = b.add(h0, b.mul(I64(i), d["dh"]))
                                inside = _inside(b, h, d["H"])
                                for j in range(2):
                                    acc = _tap(b, src, h, inside, b.add(w0, b.mul(I64(j), d["dw"])), d, acc)
                            b.store(acc[0], b.gep(y, [k]))
                            b.store(acc[1], b.gep(index, [k]))
                        with other:
                            def row(i, acc):
                                h = b.add(h0, b.mul(i, d["dh"]))
                                inside = _inside(b, h, d["H"])
                                return carried(b, fn, I64(0), d["kw"], 1, "tap", acc, lambda j, a: _tap(
                                    b, src, h, inside, b.add(w0, b.mul(j, d["dw"])), d, a))
                            best, at = carried(b, fn, I64(0), d["kh"], 1, "taps", start, row)
                            b.store(best, b.gep(y, [k]))
                            b.store(at, b.gep(index, [k]))
    return body


def _first_inside(b: ir.IRBuilder, fn, start, step):
    """The first of start, start + step, ... that is at least 0 (the division only for a negative start)."""
    before = b.block
    with b.if_then(b.icmp_signed("<", start, I64(0)), likely=False):
        up = b.mul(b.sdiv(b.sub(b.sub(step, start), I64(1)), step), step)
        moved, inside = b.add(start, up), b.block
    first = b.phi(I64)
    first.add_incoming(start, before)
    first.add_incoming(moved, inside)
    return first


def _tap(b: ir.IRBuilder, src, h, h_inside, w, d: dict, acc: list) -> list:
    """The running (maximum, its position) after tap (h, w): taken when inside the plane and above the
    maximum, or a NaN (branch-free: a tap outside reads the plane's first element, and is not taken)."""
    best, at = acc
    inside = b.and_(h_inside, _inside(b, w, d["W"]))
    position = b.add(b.mul(h, d["W"]), w)
    v = b.load(b.gep(src, [b.select(inside, position, I64(0))]))
    take = b.and_(inside, b.or_(b.fcmp_ordered(">", v, best), b.fcmp_unordered("uno", v, v)))
    return [b.select(take, v, best), b.select(take, position, at)]


def im2col_body(suffix: str):
    """Each image's columns (C*kh*kw, OH*OW) by the kernel library's im2col (COLUMN_SLOTS)."""
    def body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
        d = _slots(b, dims, COLUMN_SLOTS)
        fty = ir.FloatType() if suffix == "f32" else ir.DoubleType()
        x, cols = (b.bitcast(p, fty.as_pointer()) for p in ptrs)
        im2col = library.declare(fn.module, f"tscript_im2col_{suffix}")
        image = b.mul(b.mul(d["C"], d["H"]), d["W"])
        with counted(b, fn, I64(0), d["N"], 1, "image") as n:
            args = [dims, b.gep(x, [b.mul(n, image)]), b.gep(cols, [b.mul(n, d["s_n"])])]
            b.call(im2col, [b.bitcast(a, t) for a, t in zip(args, im2col.function_type.args)])
    return body


def col2im_body(fty):
    """image[n, c, h, w] = the sum of the columns' entries whose tap lands there (COLUMN_SLOTS; the
    columns read through their element strides)."""
    def body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
        d = _slots(b, dims, COLUMN_SLOTS)
        cols, image = (b.bitcast(p, fty.as_pointer()) for p in ptrs)
        plane = b.mul(d["H"], d["W"])
        memset = fn.module.declare_intrinsic("llvm.memset", [I8P, I64])
        total = b.mul(b.mul(d["N"], d["C"]), plane)
        b.call(memset, [ptrs[1], I8(0), b.mul(total, I64(4 if isinstance(fty, ir.FloatType) else 8)), I1(0)])
        with counted(b, fn, I64(0), b.mul(d["N"], d["C"]), 1, "plane") as nc:
            n, c = b.sdiv(nc, d["C"]), b.srem(nc, d["C"])
            out = b.gep(image, [b.mul(nc, plane)])
            with counted(b, fn, I64(0), d["kh"], 1, "tap_i") as i:
                with counted(b, fn, I64(0), d["kw"], 1, "tap_j") as j:
                    k = b.add(b.mul(b.add(b.mul(c, d["kh"]), i), d["kw"]), j)
                    tap = b.gep(cols, [b.add(b.mul(n, d["s_n"]), b.mul(k, d["s_k"]))])
                    with counted(b, fn, I64(0), d["OH"], 1, "grid_h") as gh:
                        h = b.add(b.sub(b.mul(gh, d["sh"]), d["ph"]), b.mul(i, d["dh"]))
                        with b.if_then(_inside(b, h, d["H"])):
                            row = b.gep(out, [b.mul(h, d["W"])])
                            with counted(b, fn, I64(0), d["OW"], 1, "grid_w") as gw:
                                w = b.add(b.sub(b.mul(gw, d["sw"]), d["pw"]), b.mul(j, d["dw"]))
                                with b.if_then(_inside(b, w, d["W"])):
                                    target = b.gep(row, [w])
                                    at = b.mul(b.add(b.mul(gh, d["OW"]), gw), d["s_l"])
                                    b.store(b.fadd(b.load(target), b.load(b.gep(tap, [at]))), target)
    return body

