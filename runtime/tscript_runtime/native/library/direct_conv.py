"""A direct float32 convolution for stride 1 (ResNet's and SqueezeNet's 3x3 layers): no im2col columns,
packed or not; the output's channels are the vector lanes and its pixels the broadcasts.

    void tscript_conv_stride1_f32(i64* dims, float* x, float* w, float* bias, float* out, i8* scratch,
                                 i8* epilogue, i8* context)

computes conv2d(x, w, bias) for the N images at x (CONV_SLOTS at dims; one group, stride 1, any padding
and dilation) into out, with `epilogue` (native/conv_epilogue.py; null: none) run on each finished
output row of all channels while it is in cache. `scratch` holds `scratch_bytes` (any alignment).

The weights are packed once per call (both threads, half the blocks each), 16 output channels at a time, into K x 16 panels (tap p's 16
channels one vector: w is read as stored, (O, C, kh, kw), and turned around 16 x 16 in registers). Each
image is copied into zero-padded planes, one per channel (both threads, half the channels each), so
that output pixel (oh, ow) reads its tap (c, i, j) at c*Hp*Wp + (oh + i*dh)*Wp + ow + j*dw:
consecutive pixels of a row read consecutive inputs. A tile is P pixels of a row times 16 channels,
P the narrowest of 8, 14, 16 at least ceil(OW / ceil(OW / 16)) (a row of 56 is 4 tiles of 14, of
28 two, of 14 one, of 112 seven of 16), in P
accumulators, each step of K one vector of weights and P broadcast inputs (FMA-bound: 88-95% of a
core's peak on ResNet-18's layers, where the packed GEMM reached 76-83% with the packing of the
columns). The tile is turned around in registers and each channel's pixels written with a masked
store (not a compressing one: microcoded on Zen 4, it took a quarter of the time). Two threads take the
image's halves of output rows.

`uses_direct` says where the entry takes this kernel; the planner sizes the scratch by `scratch_bytes`.
"""
from __future__ import annotations

import functools

from llvmlite import ir

from ...entry_steps import CONV_SLOTS
from .loops import carried, counted, smin, splat, stack
from .packed_gemm import _intrinsic, _transpose16

NAME = "tscript_conv_stride1_f32"
TILE = 16            # pixels of a tile, and channels (one AVX-512 vector of float32)
UNROLL = 2           # steps of K per loop trip
MIN_TAPS = 384      # C*kh*kw from which the entry takes this kernel (`uses_direct`)
MIN_WORK = 1 << 25  # and multiply-adds per image (O*OH*OW*K)
SPLIT_MIN = 1 << 18  # multiply-adds of an image from which its two halves of rows run at once
I1, I8, I32, I64, F32 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.FloatType()
I8P, FP, I64P = I8.as_pointer(), F32.as_pointer(), I64.as_pointer()
VEC = ir.VectorType(F32, TILE)
MASK = ir.VectorType(I1, TILE)
LANE_TYPE = ir.VectorType(I64, TILE)
LANE_NUMBERS = ir.Constant(LANE_TYPE, list(range(TILE)))
EPILOGUE = ir.FunctionType(ir.VoidType(), [I8P, FP, I64, I64, I64])
PART = ("xp", "wt", "off", "out", "bias", "epilogue", "context")  # a half's pointers
PART_DIMS = ("K", "OB", "O", "OW", "Wp", "L")
PIXELS = (8, 14, 16)  # the tiles' widths built (each is a function: 9 widths took 0.85 s of LLVM, these 0.45)


def uses_direct(dtype, geometry: dict, out_channels: int, groups: int) -> bool:
    """Does the entry's float32 convolution of `geometry` (GEOMETRY names; C per group) run here?
    Stride 1, one group, at least 16 output channels, at least MIN_TAPS taps (C*kh*kw: with fewer, a
    tile's turning around and stores cost more than the packing they save; SqueezeNet's 16- and
    32-channel 3x3 layers took 1.1x the packed GEMM's time), MIN_WORK multiply-adds an image (its
    padding and launches cost more than they save on SqueezeNet's 13x13 layers, which the packed GEMM
    runs several images at a time; ResNet-18's 3x3 layers are 2^26.8 each), a kernel wider than 1x1
    and output rows of at least 8 pixels (a tile's fewest). The entry's code decides the same (`direct_condition`)."""
    from .conv import implicit_columns
    g = geometry
    taps = g["C"] * g["kh"] * g["kw"]
    return (implicit_columns(dtype) and groups == 1 and taps >= MIN_TAPS and out_channels >= TILE
            and out_channels * g["OH"] * g["OW"] * taps >= MIN_WORK and g["sh"] == 1
            and g["sw"] == 1 and g["kh"] * g["kw"] > 1 and g["OW"] >= PIXELS[0])


def direct_condition(b: ir.IRBuilder, slot: dict):
    """`uses_direct` in IR, from the CONV_SLOTS values (`slot`; the dtype and host checked by the caller)."""
    conditions = [b.icmp_signed("==", slot["G"], I64(1)), b.icmp_signed(">=", slot["K"], I64(MIN_TAPS)),
                  b.icmp_signed(">=", slot["O"], I64(TILE)), b.icmp_signed("==", slot["sh"], I64(1)),
                  b.icmp_signed("==", slot["sw"], I64(1)), b.icmp_signed(">", b.mul(slot["kh"], slot["kw"]), I64(1)),
                  b.icmp_signed(">=", slot["OW"], I64(PIXELS[0])),
                  b.icmp_signed(">=", b.mul(b.mul(slot["O"], slot["L"]), slot["K"]), I64(MIN_WORK))]
    return functools.reduce(b.and_, conditions)


def _layout(g: dict, out_channels: int) -> tuple:
    """(padded floats, packed weight floats, taps) of a call: the padded planes and a tile's reach past
    them, the weights' panels, the taps' offsets."""
    planes = g["C"] * (g["H"] + 2 * g["ph"]) * (g["W"] + 2 * g["pw"])
    padded = -(-(planes + 2 * TILE + (g["kw"] - 1) * g["dw"]) // TILE) * TILE
    taps = g["C"] * g["kh"] * g["kw"]
    return padded, -(-out_channels // TILE) * TILE * taps, taps


def scratch_bytes(geometry: dict, out_channels: int) -> int:
    """Bytes of scratch a call of the geometry (GEOMETRY names) needs: padded planes, packed weights,
    the taps' offsets, and 64 for alignment."""
    padded, weights, taps = _layout(geometry, out_channels)
    return 4 * (padded + weights) + 8 * taps + 64


def define_direct_conv(module: ir.Module) -> ir.Function:
    """Define (once per module) the function above; returns it."""
    try:
        return module.get_global(NAME)
    except KeyError:
        pass
    return _Direct(module).entry()


class _Direct:
    def __init__(self, module: ir.Module):
        self.module = module
        self.fma = _intrinsic(module, "llvm.fma.v16f32", VEC, [VEC] * 3)

    def _part(self, suffix: str) -> tuple:
        """A new internal function `<NAME>_<suffix>` of the kernel ABI tscript_parallel2 runs, its
        arguments and a builder at its start."""
        from .parallel import KERNEL
        fn = ir.Function(self.module, KERNEL, f"{NAME}_{suffix}")
        fn.linkage = "internal"
        return fn, fn.args, ir.IRBuilder(fn.append_basic_block("entry"))

    # -- one half of an image's rows -------------------------------------------------------------

    def part(self) -> ir.Function:
        """`part(i64* [r0, r1], i8** PART, i64* PART_DIMS, f64*)`: output rows r0..r1 of one image, every
        channel: each row in tiles of P pixels (the tile function for P: the narrowest of PIXELS at least
        ceil(OW / ceil(OW / 16))), the last one's pixels past OW not stored; then the epilogue on the row
        (all channels)."""
        fn, (sizes, ptrs8, dims_p, _), b = self._part("part")
        ptrs = b.bitcast(ptrs8, I8P.as_pointer())
        p = {name: b.load(b.gep(ptrs, [I64(i)])) for i, name in enumerate(PART)}
        out = b.bitcast(p["out"], FP)
        d = {name: b.load(b.gep(dims_p, [I64(i)])) for i, name in enumerate(PART_DIMS)}
        r0, r1 = b.load(sizes), b.load(b.gep(sizes, [I64(1)]))
        least = b.sdiv(b.add(d["OW"], I64(TILE - 1)), I64(TILE))  # tiles a row needs
        even = b.sdiv(b.add(d["OW"], b.sub(least, I64(1))), least)  # ceil(OW / least): 8..16
        width = I64(TILE)
        for pixels in reversed(PIXELS[:-1]):  # the narrowest built width at least that
            width = b.select(b.icmp_signed("<=", even, I64(pixels)), I64(pixels), width)
        tiles = b.sdiv(b.add(d["OW"], b.sub(width, I64(1))), width)
        has_epilogue = b.icmp_unsigned("!=", p["epilogue"], ir.Constant(I8P, None))
        epilogue = b.bitcast(p["epilogue"], EPILOGUE.as_pointer())
        with counted(b, fn, r0, r1, 1, "row") as oh:
            with counted(b, fn, I64(0), tiles, 1, "tile") as t:
                ow0 = b.mul(t, width)
                valid = smin(b, width, b.sub(d["OW"], ow0))
                args = [b.bitcast(p[n], I8P) for n in ("xp", "wt", "off", "bias")] + \
                    [b.bitcast(b.gep(out, [b.add(b.mul(oh, d["OW"]), ow0)]), I8P), b.bitcast(dims_p, I8P),
                     b.add(b.mul(oh, d["Wp"]), ow0), valid]
                switch = b.switch(width, fn.append_basic_block("other"))
                done = fn.append_basic_block("tiled")
                for pixels in PIXELS:
                    case = fn.append_basic_block(f"p{pixels}")
                    switch.add_case(I64(pixels), case)
                    b.position_at_end(case)
                    b.call(self.tile(pixels), args)
                    b.branch(done)
                b.position_at_end(switch.default)
                b.branch(done)
                b.position_at_end(done)
            with b.if_then(has_epilogue):
                b.call(epilogue, [p["context"], b.gep(out, [b.mul(oh, d["OW"])]), d["O"], d["OW"], d["L"]])
        b.ret_void()
        return fn

    def tile(self, pixels: int) -> ir.Function:
        """`tile_<P>(xp, wt, off, bias, out, dims, at, valid)`: P output pixels of one row (their first
        at xp + at in the padded planes, at `out` in the output) x every block of 16 channels: the bias
        (or 0), the K steps (P accumulators, one vector of weights and P broadcast inputs each), the tile
        turned around in registers and each channel's first `valid` pixels stored."""
        name = f"{NAME}_tile{pixels}"
        try:
            return self.module.get_global(name)
        except KeyError:
            pass
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I8P] * 6 + [I64, I64]), name)
        fn.linkage = "internal"
        xp8, wt8, off8, bias8, out8, dims_p8 = fn.args[:6]
        at, valid = fn.args[6:]
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        xp, wt, bias, out = (b.bitcast(v, FP) for v in (xp8, wt8, bias8, out8))
        off, dims_p = b.bitcast(off8, I64P), b.bitcast(dims_p8, I64P)
        d = {name: b.load(b.gep(dims_p, [I64(i)])) for i, name in enumerate(PART_DIMS)}
        has_bias = b.icmp_unsigned("!=", bias, ir.Constant(FP, None))
        load = _intrinsic(self.module, "llvm.masked.load.v16f32.p0", VEC, [FP, I32, MASK, VEC])
        store = _intrinsic(self.module, "llvm.masked.store.v16f32.p0", ir.VoidType(), [VEC, FP, I32, MASK])
        stored = b.icmp_signed("<", LANE_NUMBERS, splat(b, valid, LANE_TYPE))
        base = b.gep(xp, [at])
        with counted(b, fn, I64(0), d["OB"], 1, "block") as ob:
            channels = smin(b, b.sub(d["O"], b.mul(ob, I64(TILE))), I64(TILE))
            lanes = b.icmp_signed("<", LANE_NUMBERS, splat(b, channels, LANE_TYPE))
            start = b.call(load, [b.gep(bias, [b.mul(ob, I64(TILE))]), I32(4), b.and_(lanes, splat(b, has_bias, MASK)),
                                  ir.Constant(VEC, [0.0] * TILE)])
            panel = b.gep(wt, [b.mul(b.mul(ob, d["K"]), I64(TILE))])

            def step(p, accs):
                w = b.load(b.bitcast(b.gep(panel, [b.mul(p, I64(TILE))]), VEC.as_pointer()), align=64)
                row = b.gep(base, [b.load(b.gep(off, [p]))])
                return [b.call(self.fma, [splat(b, b.load(b.gep(row, [I64(u)])), VEC), w, accs[u]])
                        for u in range(pixels)]

            def unrolled(p, accs):
                for k in range(UNROLL):
                    accs = step(b.add(p, I64(k)), accs)
                return accs
            whole = b.and_(d["K"], I64(-UNROLL))
            accs = carried(b, fn, I64(0), whole, UNROLL, "k", [start] * pixels, unrolled)
            accs = carried(b, fn, whole, d["K"], 1, "ktail", accs, step)
            block = b.gep(out, [b.mul(b.mul(ob, I64(TILE)), d["L"])])
            rows = _transpose16(b, accs + [ir.Constant(VEC, [0.0] * TILE)] * (TILE - pixels))
            for o, values in enumerate(rows):
                with b.if_then(b.icmp_signed("<", I64(o), channels)):
                    b.call(store, [values, b.gep(block, [b.mul(I64(o), d["L"])]), I32(4), stored])
        b.ret_void()
        return fn

    # -- the entry point -------------------------------------------------------------------------

    def entry(self) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I64P, FP, FP, FP, FP, I8P, I8P, I8P]), NAME)
        dims_p, x, w, bias, out, scratch, epilogue, context = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        s = {name: b.load(b.gep(dims_p, [I64(i)])) for i, name in enumerate(CONV_SLOTS) if name not in ("scratch", "pack")}
        hp, wp = b.add(s["H"], b.mul(s["ph"], I64(2))), b.add(s["W"], b.mul(s["pw"], I64(2)))
        planes = b.mul(s["C"], b.mul(hp, wp))
        blocks = b.sdiv(b.add(s["O"], I64(TILE - 1)), I64(TILE))
        padded = b.and_(b.add(b.add(planes, b.mul(b.sub(s["kw"], I64(1)), s["dw"])), I64(3 * TILE - 1)), I64(-TILE))
        ptrmask = _intrinsic(self.module, "llvm.ptrmask.p0.i64", I8P, [I8P, I64])
        xp = b.bitcast(b.call(ptrmask, [b.gep(scratch, [I64(63)]), I64(-64)]), FP)
        wt = b.gep(xp, [padded])
        off = b.bitcast(b.gep(wt, [b.mul(b.mul(blocks, s["K"]), I64(TILE))]), I64P)
        _zero(self.module, b, b.gep(xp, [planes]), b.sub(padded, planes))  # the reach past the last plane
        self._offsets(fn, b, off, s, b.mul(hp, wp), wp)
        work = b.mul(b.mul(s["O"], s["L"]), s["K"])
        halves = b.and_(b.icmp_signed(">=", work, I64(SPLIT_MIN)), b.icmp_signed(">=", s["OH"], I64(2)))
        half_blocks = b.select(halves, b.sdiv(blocks, I64(2)), blocks)
        self._both(b, halves, self.pack_part(), [stack(b, I64, [I64(0), half_blocks]), stack(b, I64, [half_blocks, blocks])],
                   stack(b, I8P, [b.bitcast(w, I8P), b.bitcast(wt, I8P)]), stack(b, I64, [s["O"], s["K"]]))
        cut = b.select(halves, b.sdiv(s["OH"], I64(2)), s["OH"])
        rows = [stack(b, I64, [I64(0), cut]), stack(b, I64, [cut, s["OH"]])]
        channels = b.select(halves, b.sdiv(s["C"], I64(2)), s["C"])
        planes_of = [stack(b, I64, [I64(0), channels]), stack(b, I64, [channels, s["C"]])]
        ptrs = stack(b, I8P, [b.bitcast(v, I8P) for v in (xp, wt, off, out, bias)] + [epilogue, context])
        image_ptrs = stack(b, I8P, [b.bitcast(x, I8P), b.bitcast(xp, I8P)])
        dims = stack(b, I64, [s["K"], blocks, s["O"], s["OW"], wp, s["L"]])
        image_dims = stack(b, I64, [s["H"], s["W"], s["ph"], s["pw"], hp, wp])
        image = b.mul(b.mul(s["C"], s["H"]), s["W"])
        with counted(b, fn, I64(0), s["N"], 1, "image") as n:
            b.store(b.bitcast(b.gep(x, [b.mul(n, image)]), I8P), image_ptrs)
            b.store(b.bitcast(b.gep(out, [b.mul(n, b.mul(s["O"], s["L"]))]), I8P), b.gep(ptrs, [I64(PART.index("out"))]))
            self._both(b, halves, self.pad_part(), planes_of, image_ptrs, image_dims)
            self._both(b, halves, self.part(), rows, ptrs, dims)
        b.ret_void()
        return fn

    def _both(self, b, halves, part, sizes: list, ptrs, dims) -> None:
        """`part` on both halves at once (`halves`), else on the first, which is then everything."""
        null = ir.Constant(ir.DoubleType().as_pointer(), None)
        with b.if_else(halves) as (split, alone):
            with split:
                b.call(self.module.get_global("tscript_parallel2"),
                       [b.bitcast(part, I8P), sizes[0], b.bitcast(ptrs, I8P), sizes[1], b.bitcast(ptrs, I8P), dims, null])
            with alone:
                b.call(part, [sizes[0], b.bitcast(ptrs, I8P), dims, null])

    def pad_part(self) -> ir.Function:
        """`pad_part(i64* [c0, c1], i8** [x, xp], i64* [H, W, ph, pw, Hp, Wp], f64*)`: channels c0..c1 of
        image x into their zero-padded planes at xp: the rows above and below and each row's ends zeros,
        its middle a copy (every float of the planes written: the scratch is the arena's)."""
        fn, (sizes, ptrs8, dims_p, _), b = self._part("pad")
        ptrs = b.bitcast(ptrs8, I8P.as_pointer())
        x, xp = (b.bitcast(b.load(b.gep(ptrs, [I64(i)])), FP) for i in range(2))
        h, wd, ph, pw, hp, wp = (b.load(b.gep(dims_p, [I64(i)])) for i in range(6))
        c0, c1 = b.load(sizes), b.load(b.gep(sizes, [I64(1)]))
        memcpy = _intrinsic(self.module, "llvm.memcpy.p0.p0.i64", ir.VoidType(), [I8P, I8P, I64, I1])
        with counted(b, fn, c0, c1, 1, "plane") as c:
            plane = b.gep(xp, [b.mul(c, b.mul(hp, wp))])
            _zero(self.module, b, plane, b.mul(ph, wp))  # the rows above
            with counted(b, fn, I64(0), h, 1, "row") as r:
                row = b.gep(plane, [b.mul(b.add(r, ph), wp)])
                _zero(self.module, b, row, pw)
                b.call(memcpy, [b.bitcast(b.gep(row, [pw]), I8P),
                                b.bitcast(b.gep(x, [b.mul(b.add(b.mul(c, h), r), wd)]), I8P), b.mul(wd, I64(4)), I1(0)])
                _zero(self.module, b, b.gep(row, [b.add(pw, wd)]), pw)
            _zero(self.module, b, b.gep(plane, [b.mul(b.add(h, ph), wp)]), b.mul(ph, wp))  # the rows below
        b.ret_void()
        return fn

    def pack_part(self) -> ir.Function:
        """`pack_part(i64* [ob0, ob1], i8** [w, wt], i64* [O, K], f64*)`: blocks ob0..ob1 of 16 channels of
        the weights into their panels, wt[ob][p][lane] = w[(16 ob + lane) K + p], 0 past the O channels:
        16 x 16 blocks turned around in registers, the last K % 16 taps one value at a time."""
        fn, (sizes, ptrs8, dims_p, _), b = self._part("pack")
        ptrs = b.bitcast(ptrs8, I8P.as_pointer())
        w, wt = (b.bitcast(b.load(b.gep(ptrs, [I64(i)])), FP) for i in range(2))
        o, k = b.load(dims_p), b.load(b.gep(dims_p, [I64(1)]))
        load = _intrinsic(self.module, "llvm.masked.load.v16f32.p0", VEC, [FP, I32, MASK, VEC])
        whole = b.and_(k, I64(-TILE))
        with counted(b, fn, b.load(sizes), b.load(b.gep(sizes, [I64(1)])), 1, "wblock") as ob:
            channels = smin(b, b.sub(o, b.mul(ob, I64(TILE))), I64(TILE))
            panel = b.gep(wt, [b.mul(b.mul(ob, k), I64(TILE))])
            rows = b.gep(w, [b.mul(b.mul(ob, I64(TILE)), k)])
            with counted(b, fn, I64(0), whole, TILE, "wtaps") as p:
                inside = [b.icmp_signed("<", I64(c), channels) for c in range(TILE)]
                block = [b.call(load, [b.gep(rows, [b.add(b.mul(I64(c), k), p)]), I32(4), splat(b, inside[c], MASK),
                                       ir.Constant(VEC, [0.0] * TILE)]) for c in range(TILE)]
                for q, values in enumerate(_transpose16(b, block)):
                    b.store(values, b.bitcast(b.gep(panel, [b.mul(b.add(p, I64(q)), I64(TILE))]), VEC.as_pointer()),
                            align=64)
            with counted(b, fn, whole, k, 1, "wtail") as p:
                with counted(b, fn, I64(0), I64(TILE), 1, "wlane") as c:
                    value = b.select(b.icmp_signed("<", c, channels),
                                     b.load(b.gep(rows, [b.add(b.mul(smin(b, c, b.sub(channels, I64(1))), k), p)])),
                                     F32(0.0))
                    b.store(value, b.gep(panel, [b.add(b.mul(p, I64(TILE)), c)]))
        b.ret_void()
        return fn

    def _offsets(self, fn, b, off, s: dict, plane, wp) -> None:
        """off[p] = c*Hp*Wp + i*dh*Wp + j*dw for tap p = (c, i, j)."""
        taps = b.mul(s["kh"], s["kw"])
        with counted(b, fn, I64(0), s["K"], 1, "tap") as p:
            c, rest = b.sdiv(p, taps), b.srem(p, taps)
            i, j = b.sdiv(rest, s["kw"]), b.srem(rest, s["kw"])
            value = b.add(b.add(b.mul(c, plane), b.mul(b.mul(i, s["dh"]), wp)), b.mul(j, s["dw"]))
            b.store(value, b.gep(off, [p]))


def _zero(module, b, at, count) -> None:
    """count floats at `at` (count >= 0) set to zero."""
    memset = _intrinsic(module, "llvm.memset.p0.i64", ir.VoidType(), [I8P, I8, I64, I1])
    b.call(memset, [b.bitcast(at, I8P), I8(0), b.mul(count, I64(4)), I1(0)])

