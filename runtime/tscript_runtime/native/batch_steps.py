"""Native bodies of the whole-graph entry's training steps (helpers `i64 name(i64* dims, i8* ...)` built
by native/entry.py's `_helper`): batch statistics (a sum, mean or variance over two runs of dims around
kept ones), in-place writes into buffers (add_ of a scalar, copy_), max-pooling with the maxima's
indices, max-pooling's adjoint (the maxima found again), and im2col / col2im (the convolution's
derivatives). Slots: entry_steps.py. The statistics, the adjoint of pooling and im2col / col2im cut their
outermost loop (channels, planes, images) in two halves that run at once on two threads once they touch
SPLIT_MIN elements, as the entry's kernels and GEMMs do."""
from __future__ import annotations

from llvmlite import ir

from ..entry_steps import COLUMN_SLOTS, GEOMETRY, REDUCE_SLOTS, UPDATE_SLOTS
from . import library
from .library.loops import carried, counted, smax, smin

I1, I8, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(64)
I8P = I8.as_pointer()
SPLIT_MIN = 1 << 16  # elements a step touches from which its halves run at once (the kernels' KERNEL_SPLIT_MIN)
CHUNK = 8  # 2x2 windows side by side whose maxima max-pooling's adjoint finds at once, in vector lanes
SUM_FLAGS = ("reassoc", "contract", "nsz", "arcp", "afn")  # a statistic's sum may be reordered (vectorized)


def _slots(b: ir.IRBuilder, dims, names: tuple) -> dict:
    return {s: b.load(b.gep(dims, [I64(i)])) for i, s in enumerate(names)}


def _inside(b: ir.IRBuilder, at, size):
    return b.and_(b.icmp_signed(">=", at, I64(0)), b.icmp_signed("<", at, size))


def _in_halves(b: ir.IRBuilder, fn, dims, ptrs: list, count, work, part_body) -> None:
    """part_body(b, part, dims, ptrs, start, stop) over [0, count): in two halves at once (the second on
    tscript_parallel2's worker) when `work` (elements touched) is at least SPLIT_MIN, else whole here.
    The part is a function of its own (`<helper>_part`, the kernel ABI parallel2 runs)."""
    part = _part(fn.module, f"{fn.name}_part", len(ptrs), part_body)
    array = b.alloca(I8P, I64(len(ptrs)))
    for k, p in enumerate(ptrs):
        b.store(p, b.gep(array, [I64(k)]))
    cut = b.sdiv(count, I64(2))
    ranges = b.alloca(I64, I64(4))
    for k, v in enumerate((I64(0), cut, cut, count)):
        b.store(v, b.gep(ranges, [I64(k)]))
    array8, nothing = b.bitcast(array, I8P), ir.Constant(ir.DoubleType().as_pointer(), None)
    halves = b.and_(b.icmp_signed(">=", work, I64(SPLIT_MIN)), b.icmp_signed(">=", count, I64(2)))
    with b.if_else(halves) as (two, one):
        with two:
            b.call(library.declare(fn.module, "tscript_parallel2"),
                   [b.bitcast(part, I8P), ranges, array8, b.gep(ranges, [I64(2)]), array8, dims, nothing])
        with one:
            b.store(count, b.gep(ranges, [I64(1)]))
            b.call(part, [ranges, array8, dims, nothing])


def _part(module: ir.Module, name: str, n_pointers: int, part_body) -> ir.Function:
    """`void name(i64* [start, stop], i8* pointers, i64* dims, double*)`, once per module."""
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I8P, I64.as_pointer(),
                                                             ir.DoubleType().as_pointer()]), name)
    fn.linkage = "internal"
    bounds, array8, dims, _ = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    array = b.bitcast(array8, I8P.as_pointer())
    ptrs = [b.load(b.gep(array, [I64(k)])) for k in range(n_pointers)]
    part_body(b, fn, dims, ptrs, b.load(bounds), b.load(b.gep(bounds, [I64(1)])))
    b.ret_void()
    return fn


def statistic_body(fty):
    """out[o, i] from x[o, :, i, :] (REDUCE_SLOTS): the sum times 1 / divisor, or, for a variance, the
    squared deviations from the mean (a second pass) summed and divided by the divisor."""
    def body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
        d = _slots(b, dims, REDUCE_SLOTS)
        kept = b.mul(d["outer"], d["inner"])
        _in_halves(b, fn, dims, ptrs, kept, b.mul(kept, b.mul(d["reduced"], d["reduced2"])), part)

    def part(b: ir.IRBuilder, fn, dims, ptrs, first, stop) -> None:
        """out[o, i] for the (o, i) numbered first..stop-1."""
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

        with counted(b, fn, first, stop, 1, "kept") as oi:
            o, i = b.sdiv(oi, d["inner"]), b.srem(oi, d["inner"])
            start = b.add(b.mul(b.mul(o, d["reduced"]), d["inner"]), i)
            block = b.gep(x, [b.mul(start, d["reduced2"])])
            at = b.gep(out, [oi])
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

        def visit(p, k, best, at, taps):
            b.store(best, b.gep(y, [k]))
            b.store(at, b.gep(index, [k]))
        _each_window(b, fn, d, x, visit)
    return body


def pool_backward_body(fty):
    """grad_x[p]: each grad_y[p, oh, ow] added at its window's maximum in x[p], found as pool_indices_body
    finds it (_max_pool2d_backward; GEOMETRY, C counts planes). Windows that tile the plane 2x2 side by
    side (MaxPool2d(2)) write all four taps, g at the maximum and 0 elsewhere, CHUNK windows at a time in
    vector lanes (one at a time, the selects of the position became branches that the random data
    mispredicted: 20x slower); other windows add into a zeroed grad_x."""
    def body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
        d = _slots(b, dims, GEOMETRY)
        _in_halves(b, fn, dims, ptrs, d["C"], b.mul(d["C"], b.mul(d["H"], d["W"])), part)

    def part(b: ir.IRBuilder, fn, dims, ptrs, first, stop) -> None:
        """Planes first..stop-1."""
        d = _slots(b, dims, GEOMETRY)
        out, grad, x = (b.bitcast(p, fty.as_pointer()) for p in ptrs)
        plane = b.mul(d["H"], d["W"])
        tiled = b.and_(_whole_pairs(b, d), b.and_(b.icmp_signed("==", d["sh"], I64(2)),
                                                  b.icmp_signed("==", d["sw"], I64(2))))
        covered = b.and_(b.icmp_signed("==", b.mul(d["OH"], I64(2)), d["H"]),
                         b.icmp_signed("==", b.mul(d["OW"], I64(2)), d["W"]))
        with b.if_then(b.not_(b.and_(tiled, covered))):  # (positions no window covers stay 0)
            memset = fn.module.declare_intrinsic("llvm.memset", [I8P, I64])
            item = I64(4 if isinstance(fty, ir.FloatType) else 8)
            at = b.gep(ptrs[0], [b.mul(b.mul(first, plane), item)])
            b.call(memset, [at, I8(0), b.mul(b.mul(b.sub(stop, first), plane), item), I1(0)])

        def write(p, k, best, at, taps):
            g, target = b.load(b.gep(grad, [k])), b.gep(out, [b.mul(p, plane)])
            for tap in taps:
                b.store(b.select(b.icmp_signed("==", tap, at), g, fty(0.0)), b.gep(target, [tap]))

        def write_chunk(p, k, src, at):
            chosen = _tiled_choice(b, src, at, d["W"], fty)
            g = b.load(b.bitcast(b.gep(grad, [k]), ir.VectorType(fty, CHUNK).as_pointer()), align=1)
            taps = [b.select(b.icmp_signed("==", chosen, _splat_i32(t)), g, ir.Constant(g.type, None))
                    for t in range(4)]
            target = b.gep(out, [b.add(b.mul(p, plane), at)])
            for row, (left, right) in enumerate((taps[:2], taps[2:])):
                wide = b.shuffle_vector(left, right, _lanes([i // 2 + CHUNK * (i % 2) for i in range(2 * CHUNK)]))
                b.store(wide, b.bitcast(b.gep(target, [b.mul(I64(row), d["W"])]), wide.type.as_pointer()), align=1)

        def add(p, k, best, at, taps):
            target = b.gep(out, [b.add(b.mul(p, plane), at)])
            b.store(b.fadd(b.load(target), b.load(b.gep(grad, [k]))), target)
        with b.if_else(tiled) as (side_by_side, other):
            with side_by_side:
                _each_pair_window(b, fn, d, x, write, write_chunk, (first, stop))
            with other:
                _each_window(b, fn, d, x, add, (first, stop))
    return body


def _each_window(b: ir.IRBuilder, fn, d: dict, x, visit, planes=None) -> None:
    """visit(plane, output index, maximum, its flat position in the plane, the window's taps' positions
    or None) for every window of every plane of x, in order (the window's first maximum, its last NaN;
    see pool_indices_body); `planes`: (first, stop), all by default."""
    with b.if_else(_whole_pairs(b, d)) as (pairs, other):
        with pairs:
            _each_pair_window(b, fn, d, x, visit, planes=planes)
        with other:
            _each_any_window(b, fn, d, x, visit, planes)


def _whole_pairs(b: ir.IRBuilder, d: dict):
    """Are the windows 2x2 taps side by side, every one inside the plane (MaxPool2d(2) of even sizes)?"""
    def last_inside(out, s, size):
        return b.icmp_signed("<=", b.add(b.mul(b.sub(out, I64(1)), s), I64(2)), size)
    checks = [b.icmp_signed("==", d[k], I64(v)) for k, v in (("kh", 2), ("kw", 2), ("dh", 1), ("dw", 1),
                                                             ("ph", 0), ("pw", 0))]
    checks += [last_inside(d["OH"], d["sh"], d["H"]), last_inside(d["OW"], d["sw"], d["W"])]
    every = checks[0]
    for c in checks[1:]:
        every = b.and_(every, c)
    return every


def _each_pair_window(b: ir.IRBuilder, fn, d: dict, x, visit, chunk=None, planes=None) -> None:
    """_each_window for windows of _whole_pairs: no tap is outside, and the maximum of the top row and of
    the bottom row are found apart, then the bottom's taken when above (or NaN): the order's result.
    `chunk(p, k, src, at)`, when given, takes each row's windows CHUNK at a time first (k: the first's
    output index, at: its top left tap in plane src)."""
    plane, outs = b.mul(d["H"], d["W"]), b.mul(d["OH"], d["OW"])
    with counted(b, fn, *(planes or (I64(0), d["C"])), 1, "plane") as p:
        src = b.gep(x, [b.mul(p, plane)])
        with counted(b, fn, I64(0), d["OH"], 1, "oh") as oh:
            top = b.mul(b.mul(oh, d["sh"]), d["W"])
            first_k = b.add(b.mul(p, outs), b.mul(oh, d["OW"]))
            done = I64(0)
            if chunk is not None:
                done = b.and_(d["OW"], I64(-CHUNK))
                with counted(b, fn, I64(0), done, CHUNK, "chunk") as ow:
                    chunk(p, b.add(first_k, ow), src, b.add(top, b.mul(ow, d["sw"])))
            with counted(b, fn, done, d["OW"], 1, "ow") as ow:
                at = b.add(top, b.mul(ow, d["sw"]))
                rows, taps = [], []
                for first in (at, b.add(at, d["W"])):
                    second = b.add(first, I64(1))
                    rows.append(_take([b.load(b.gep(src, [first])), first], b.load(b.gep(src, [second])), second, b))
                    taps += [first, second]
                best = _take(rows[0], *rows[1], b)
                visit(p, b.add(first_k, ow), *best, taps)


def _tiled_choice(b: ir.IRBuilder, src, at, width, fty):
    """Which tap (0, 1: top row; 2, 3: bottom row) holds the maximum of each of CHUNK windows side by
    side from tap `at` of plane src (rows `width` apart), as <CHUNK x i32>: _take's choices, in lanes."""
    wide = ir.VectorType(fty, 2 * CHUNK)
    rows = [b.load(b.bitcast(b.gep(src, [b.add(at, b.mul(I64(r), width))]), wide.as_pointer()), align=1)
            for r in range(2)]
    halves = [b.shuffle_vector(row, row, _lanes(list(range(side, 2 * CHUNK, 2)))) for row in rows for side in (0, 1)]

    def take(acc: list, v, tap):
        taken = b.or_(b.fcmp_ordered(">", v, acc[0]), b.fcmp_unordered("uno", v, v))
        return [b.select(taken, v, acc[0]), b.select(taken, tap, acc[1])]
    top = take([halves[0], _splat_i32(0)], halves[1], _splat_i32(1))
    bottom = take([halves[2], _splat_i32(2)], halves[3], _splat_i32(3))
    return take(top, *bottom)[1]


def _splat_i32(value: int):
    return ir.Constant(ir.VectorType(ir.IntType(32), CHUNK), [value] * CHUNK)


def _lanes(indices: list):
    return ir.Constant(ir.VectorType(ir.IntType(32), len(indices)), indices)


def _take(acc: list, v, position, b: ir.IRBuilder) -> list:
    """(maximum, position) after a later value v: taken when above the maximum or a NaN."""
    take = b.or_(b.fcmp_ordered(">", v, acc[0]), b.fcmp_unordered("uno", v, v))
    return [b.select(take, v, acc[0]), b.select(take, position, acc[1])]


def _each_any_window(b: ir.IRBuilder, fn, d: dict, x, visit, planes=None) -> None:
    """_each_window for any window: taps outside the plane (padding) are skipped."""
    fty = x.type.pointee
    plane, outs = b.mul(d["H"], d["W"]), b.mul(d["OH"], d["OW"])
    with counted(b, fn, *(planes or (I64(0), d["C"])), 1, "plane") as p:
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
                        visit(p, k, *acc, None)
                    with other:
                        def row(i, acc):
                            h = b.add(h0, b.mul(i, d["dh"]))
                            inside = _inside(b, h, d["H"])
                            return carried(b, fn, I64(0), d["kw"], 1, "tap", acc, lambda j, a: _tap(
                                b, src, h, inside, b.add(w0, b.mul(j, d["dw"])), d, a))
                        visit(p, k, *carried(b, fn, I64(0), d["kh"], 1, "taps", start, row), None)


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
    """Each image's columns (C*kh*kw, OH*OW) by the kernel library's im2col, at the columns' image stride
    and with their row stride (COLUMN_SLOTS; positions unit-stride)."""
    def body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
        d = _slots(b, dims, COLUMN_SLOTS)
        columns = b.mul(b.mul(b.mul(d["C"], d["kh"]), d["kw"]), b.mul(d["OH"], d["OW"]))
        _in_halves(b, fn, dims, ptrs, d["N"], b.mul(d["N"], columns), part)

    def part(b: ir.IRBuilder, fn, dims, ptrs, first, stop) -> None:
        """Images first..stop-1."""
        d = _slots(b, dims, COLUMN_SLOTS)
        fty = ir.FloatType() if suffix == "f32" else ir.DoubleType()
        x, cols = (b.bitcast(p, fty.as_pointer()) for p in ptrs)
        im2col = library.declare(fn.module, f"tscript_im2col_ld_{suffix}")
        image = b.mul(b.mul(d["C"], d["H"]), d["W"])
        with counted(b, fn, first, stop, 1, "image") as n:
            args = [dims, b.gep(x, [b.mul(n, image)]), b.gep(cols, [b.mul(n, d["s_n"])])]
            b.call(im2col, [b.bitcast(a, t) for a, t in zip(args, im2col.function_type.args[:3])] + [d["s_k"]])
    return body


def col2im_body(fty):
    """image[n, c, h, w] = the sum of the columns' entries whose tap lands there (COLUMN_SLOTS; the
    columns read through their element strides). Each tap adds the run of grid positions that lands
    inside the image (its bounds worked out once, not tested per element), so for stride 1 and
    unit-stride columns the adds are whole vectors."""
    def body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
        d = _slots(b, dims, COLUMN_SLOTS)
        planes = b.mul(d["N"], d["C"])
        taps = b.mul(b.mul(d["kh"], d["kw"]), b.mul(d["OH"], d["OW"]))
        _in_halves(b, fn, dims, ptrs, planes, b.mul(planes, taps), part)

    def part(b: ir.IRBuilder, fn, dims, ptrs, first, stop) -> None:
        """Image planes (n, c) numbered first..stop-1."""
        d = _slots(b, dims, COLUMN_SLOTS)
        cols, image = (b.bitcast(p, fty.as_pointer()) for p in ptrs)
        plane = b.mul(d["H"], d["W"])
        memset = fn.module.declare_intrinsic("llvm.memset", [I8P, I64])
        item = I64(4 if isinstance(fty, ir.FloatType) else 8)
        at = b.gep(ptrs[1], [b.mul(b.mul(first, plane), item)])
        b.call(memset, [at, I8(0), b.mul(b.mul(b.sub(stop, first), plane), item), I1(0)])
        unit = b.and_(b.icmp_signed("==", d["sw"], I64(1)), b.icmp_signed("==", d["s_l"], I64(1)))
        with counted(b, fn, first, stop, 1, "plane") as nc:
            n, c = b.sdiv(nc, d["C"]), b.srem(nc, d["C"])
            out = b.gep(image, [b.mul(nc, plane)])
            with counted(b, fn, I64(0), d["kh"], 1, "tap_i") as i:
                h0 = b.sub(b.mul(i, d["dh"]), d["ph"])  # the image row of grid row 0
                rows = _grid_inside(b, h0, d["sh"], d["H"], d["OH"])
                with counted(b, fn, I64(0), d["kw"], 1, "tap_j") as j:
                    w0 = b.sub(b.mul(j, d["dw"]), d["pw"])
                    first, stop = _grid_inside(b, w0, d["sw"], d["W"], d["OW"])
                    k = b.add(b.mul(b.add(b.mul(c, d["kh"]), i), d["kw"]), j)
                    tap = b.gep(cols, [b.add(b.mul(n, d["s_n"]), b.mul(k, d["s_k"]))])
                    with counted(b, fn, *rows, 1, "grid_h") as gh:
                        row = b.gep(out, [b.mul(b.add(b.mul(gh, d["sh"]), h0), d["W"])])
                        src = b.gep(tap, [b.mul(b.mul(gh, d["OW"]), d["s_l"])])
                        with b.if_else(unit) as (contiguous, strided):
                            with contiguous:  # (w = gw + w0: both runs unit-stride)
                                dst = b.gep(row, [w0])
                                with counted(b, fn, first, stop, 1, "run") as gw:
                                    at = b.gep(dst, [gw], inbounds=True)
                                    b.store(b.fadd(b.load(at), b.load(b.gep(src, [gw], inbounds=True))), at)
                            with strided:
                                with counted(b, fn, first, stop, 1, "grid_w") as gw:
                                    at = b.gep(row, [b.add(b.mul(gw, d["sw"]), w0)])
                                    value = b.load(b.gep(src, [b.mul(gw, d["s_l"])]))
                                    b.store(b.fadd(b.load(at), value), at)
    return body


def _grid_inside(b: ir.IRBuilder, start, stride, size, count) -> tuple:
    """(first, stop): the grid positions g in [0, count) whose image position start + g * stride is
    in [0, size)."""
    first = smax(b, _ceil_div(b, b.sub(I64(0), start), stride), I64(0))
    stop = smin(b, _ceil_div(b, b.sub(size, start), stride), count)
    return first, stop


def _ceil_div(b: ir.IRBuilder, x, s):
    """ceil(x / s) for s > 0 (sdiv rounds toward zero: up for x < 0)."""
    return b.select(b.icmp_signed("<", x, I64(0)), b.sdiv(x, s), b.sdiv(b.add(x, b.sub(s, I64(1))), s))


