"""Recurrent time loops in native code (the whole-graph entry's `RecurrentStep`, ops/recurrent.py):

    void tscript_<cell>_sequence_<f32|f64>(i64* dims, i8* gates, i8* h0, i8* c0, i8* w_hh, i8* b_hh,
                                           i8* hs, i8* c, i8* scratch)

A step runs a part function on each half of the hidden units (one half, all of them, for small work
or float64): it computes those units' columns of the step's product s = h_prev @ W_hh^T, one GEMM per
gate, then runs the cells of its units while they are in its cache: gates[t] (the input projection) +
s + b_hh through the cell, h into hs[t] (the next step's h_prev) and, for the LSTM, c in place. Product,
gates and bias share PyTorch's gate order. The whole loop is one `tscript_parallel2` launch: both
threads run it, meeting once per step at a counter in memory (`_time_loop`), not one launch per step.
For float32, W_hh^T is packed per call into panels of 32 columns (library/recurrent_gemm.py: a gate's
units are whole panels, and a 10-row x 32-column tile of s stays in registers), each half's panels by
the part that computes it in the first step (on both cores, into the cache of the core that reads
them). Packed per call, never kept: a weight changed in place between calls (which nothing here could
tell from the same array unchanged) is always the one used. float64 runs BLAS on W_hh's rows.
RECURRENT_SLOTS at dims; scratch holds s (B, G*H), a zero bias for layers without one, (float32) the
packed W_hh^T, 64-byte aligned, and two i32 counters per step."""
from __future__ import annotations

from llvmlite import ir

from ..entry_steps import NO_TRANS, RECURRENT_SLOTS, TRANS
from ..ops.recurrent import GATES
from . import library
from .blas import blas_function
from .library.loops import counted, stack
from .library.packed_gemm import _intrinsic
from .library.parallel import _pause
from .mathlib import float_function

I1, I8, I32, I64, F64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.DoubleType()
I8P = I8.as_pointer()
UNITS = 32                # the two threads' units are cut at a multiple of this: a panel of the packed W_hh^T
ALIGN = 64                # bytes: the packed W_hh^T starts on a cache line (its panels are stored aligned)
ROW_MAJOR = 101
# The time loop's pointers: gates, h0, W_hh (float32: the packed W^T), b_hh, hs, c, W_hh (float32: to
# pack), the product, the two counters per step.
LOOP = ("gates", "h0", "weight", "bias", "hs", "c", "unpacked", "product", "sync")
# A step part's pointers: h_prev (its whole rows), its weight rows (float32: its panels of the packed W^T),
# its product columns, at its first unit: gates[t], b_hh, h_t, c, h_prev, and (float32, in the first step;
# else null) its rows of W_hh to pack.
PART = ("prev", "weight", "product", "gates", "bias", "h", "c", "prev_units", "unpacked")


def scratch_bytes(steps: int, batch: int, hidden: int, cell: str, itemsize: int) -> int:
    """The bytes of scratch a call needs: the product, a zero bias, (float32) the packed W_hh^T and
    two i32 counters per step (`_time_loop`)."""
    from .library.recurrent_gemm import packed_floats
    width = GATES[cell] * hidden
    packed = GATES[cell] * packed_floats(hidden, hidden) * itemsize + ALIGN if itemsize == 4 else 0
    return (batch * width + width) * itemsize + packed + 8 * steps


def recurrent_function(module: ir.Module, cell: str, fty) -> ir.Function:
    """The time loop of `cell` over `fty` values (defined once per module): the operands made ready, then
    `_time_loop` on both threads (each preferring one half of the units) or, unsplit, on this one."""
    suffix = "f32" if fty == ir.FloatType() else "f64"
    name = f"tscript_{cell}_sequence_{suffix}"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer()] + [I8P] * 8), name)
    fn.linkage = "internal"
    dims, gates8, h0, c0, w8, bias8, hs8, c8, scratch8 = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    d = {s: b.load(b.gep(dims, [I64(i)])) for i, s in enumerate(RECURRENT_SLOTS)}
    size = I64(4 if suffix == "f32" else 8)
    width = b.mul(d["H"], I64(GATES[cell]))
    zeros = b.gep(scratch8, [b.mul(b.mul(d["B"], width), size)])
    memset = module.declare_intrinsic("llvm.memset", [I8P, I64])
    b.call(memset, [zeros, I8(0), b.mul(width, size), I1(0)])
    bias8 = b.select(b.icmp_unsigned("==", bias8, ir.Constant(I8P, None)), zeros, bias8)
    if cell == "lstm":
        memcpy = module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
        b.call(memcpy, [c8, c0, b.mul(b.mul(d["B"], d["H"]), size), I1(0)])
    after = b.gep(zeros, [b.mul(width, size)])
    unpacked, sync = w8, after
    if suffix == "f32":
        w8 = _packed_at(module, b, after)
        sync = b.gep(w8, [b.mul(b.mul(I64(GATES[cell]), _gate_stride(b, d["H"])), size)])
    b.call(memset, [sync, I8(0), b.mul(d["T"], I64(8)), I1(0)])
    ptrs = stack(b, I8P, [gates8, h0, w8, bias8, hs8, c8, unpacked, scratch8, sync])
    split = b.icmp_signed("!=", d["split"], I64(0))
    cut = b.select(split, b.mul(b.sdiv(d["H"], I64(2 * UNITS)), I64(UNITS)), d["H"])  # the second half's first unit
    sizes = stack(b, I64, [I64(0), cut, I64(1), cut])
    loop, none = _time_loop(module, cell, fty), ir.Constant(F64.as_pointer(), None)
    with b.if_else(split) as (halves, whole):
        with halves:
            b.call(library.declare(module, "tscript_parallel2"),
                   [b.bitcast(loop, I8P), sizes, b.bitcast(ptrs, I8P), b.gep(sizes, [I64(2)]), b.bitcast(ptrs, I8P),
                    dims, none])
        with whole:
            b.call(loop, [sizes, ptrs, dims, none])
    b.ret_void()
    return fn


def _time_loop(module: ir.Module, cell: str, fty) -> ir.Function:
    """`void tscript_<cell>_loop_<f32|f64>(i64* [half, cut], i8** LOOP pointers, i64* dims, double*)`: every
    step's two halves of the units ([0, cut), [cut, H)) as step parts, this thread's `half` first. Both
    threads run it: a half is run by the thread that claims it first (the step's claimed bits), and no
    thread starts a step before both halves of the last are done (the step's done count). So the
    halves run at once when the worker takes its copy at once, and all on one thread when it comes late
    or not at all (tscript_parallel2 then runs the copies one after the other): never a deadlock."""
    suffix = "f32" if fty == ir.FloatType() else "f64"
    name = f"tscript_{cell}_loop_{suffix}"
    if name in module.globals:
        return module.get_global(name)
    fn, b, d = _kernel(module, name)
    sizes, ptrs, dims, _ = fn.args
    part, units = b.alloca(I8P, I64(len(PART))), b.alloca(I64)
    p = {n: b.load(b.gep(ptrs, [I64(k)])) for k, n in enumerate(LOOP)}
    mine, cut = b.load(sizes), b.load(b.gep(sizes, [I64(1)]))
    claimed = b.bitcast(p["sync"], I32.as_pointer())
    done = b.gep(claimed, [d["T"]])
    size = I64(4 if suffix == "f32" else 8)
    state = b.mul(b.mul(d["B"], d["H"]), size)  # bytes of one step's h
    part_fn = _step_part(module, cell, fty)
    last, reverse = b.sub(d["T"], I64(1)), b.icmp_signed("!=", d["reverse"], I64(0))
    with counted(b, fn, I64(0), d["T"], 1, "step") as s:
        t = b.select(reverse, b.sub(last, s), s)
        before = b.select(reverse, b.add(t, I64(1)), b.sub(t, I64(1)))
        prev = b.select(b.icmp_signed("==", s, I64(0)), p["h0"], b.gep(p["hs"], [b.mul(before, state)]))
        at = {"prev": prev, "weight": p["weight"], "product": p["product"], "bias": p["bias"], "c": p["c"],
              "gates": b.gep(p["gates"], [b.mul(t, b.mul(b.mul(d["B"], d["H"]), b.mul(I64(GATES[cell]), size)))]),
              "h": b.gep(p["hs"], [b.mul(t, state)]), "prev_units": prev,
              "unpacked": b.select(b.icmp_signed("==", s, I64(0)), p["unpacked"], ir.Constant(I8P, None))}
        for other in (0, 1):
            half = b.xor(mine, I64(other))
            bit = b.trunc(b.shl(I64(1), half), I32)
            taken = b.atomic_rmw("or", b.gep(claimed, [s]), bit, "acq_rel")
            low = b.icmp_signed("==", half, I64(0))
            first, count = b.select(low, I64(0), cut), b.select(low, cut, b.sub(d["H"], cut))
            with b.if_then(b.icmp_unsigned("==", b.and_(taken, bit), I32(0))):
                with b.if_then(b.icmp_signed(">", count, I64(0))):
                    _fill(b, part, at, first, d["H"], size)
                    b.store(count, units)
                    b.call(part_fn, [units, part, dims, ir.Constant(F64.as_pointer(), None)])
                b.atomic_rmw("add", b.gep(done, [s]), I32(1), "release")
        _wait_until_two(b, fn, b.gep(done, [s]))
    b.ret_void()
    return fn


def _wait_until_two(b: ir.IRBuilder, fn, counter) -> None:
    """Spin (with the CPU's spin-wait hint) until the i32 at `counter` reads 2."""
    spin, out = fn.append_basic_block("wait"), fn.append_basic_block("waited")
    b.branch(spin)
    b.position_at_end(spin)
    b.call(_pause(b.module), [])
    b.cbranch(b.icmp_unsigned("<", b.load_atomic(counter, "acquire", 4), I32(2)), spin, out)
    b.position_at_end(out)


def _packed_at(module: ir.Module, b: ir.IRBuilder, after8):
    """Where the packed W^T goes: the first cache line from `after8` (a gate's panels `_gate_stride` floats
    apart, unit u's panel u*hidden floats into them)."""
    fp = ir.FloatType().as_pointer()
    mask = _intrinsic(module, "llvm.ptrmask.p0.i64", fp, [fp, I64])  # (declared as the packed GEMM does)
    return b.bitcast(b.call(mask, [b.bitcast(b.gep(after8, [I64(ALIGN - 1)]), fp), I64(-ALIGN)]), I8P)


def _gate_stride(b: ir.IRBuilder, hidden):
    """Floats from one gate's packed W^T to the next's (recurrent_gemm.packed_floats in IR)."""
    return b.mul(b.and_(b.add(hidden, I64(UNITS - 1)), I64(-UNITS)), hidden)


def _fill(b: ir.IRBuilder, part, at: dict, unit, hidden, size) -> None:
    """The pointers of the part starting at hidden unit `unit`: each at that unit (the weight: its row)."""
    unit_bytes = b.mul(unit, size)
    offsets = {"weight": b.mul(unit_bytes, hidden), "unpacked": b.mul(unit_bytes, hidden), "product": unit_bytes,
               "gates": unit_bytes, "bias": unit_bytes,
               "h": unit_bytes, "c": unit_bytes, "prev_units": unit_bytes}
    for k, name in enumerate(PART):
        pointer = at[name] if name not in offsets else b.gep(at[name], [offsets[name]])
        if name == "unpacked":  # null (nothing to pack) stays null
            pointer = b.select(b.icmp_unsigned("==", at[name], ir.Constant(I8P, None)), at[name], pointer)
        b.store(pointer, b.gep(part, [I64(k)]))


def _kernel(module: ir.Module, name: str) -> tuple:
    """A new internal function `name` of the kernel ABI tscript_parallel2 runs (i64* sizes, i8** pointers,
    i64* dims, double*), a builder at its entry and the RECURRENT_SLOTS read from dims."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I8P.as_pointer(), I64.as_pointer(),
                                                             F64.as_pointer()]), name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    return fn, b, {s: b.load(b.gep(fn.args[2], [I64(i)])) for i, s in enumerate(RECURRENT_SLOTS)}


def _step_part(module: ir.Module, cell: str, fty) -> ir.Function:
    """`void tscript_<cell>_step_<f32|f64>(i64* units, i8** PART pointers, i64* dims, double*)`: one
    step's product columns and cells of `units` hidden units (the kernel ABI tscript_parallel2 runs)."""
    suffix = "f32" if fty == ir.FloatType() else "f64"
    name = f"tscript_{cell}_step_{suffix}"
    if name in module.globals:
        return module.get_global(name)
    fn, b, d = _kernel(module, name)
    sizes, ptrs, dims, _ = fn.args
    fp = fty.as_pointer()
    p = {n: b.bitcast(b.load(b.gep(ptrs, [I64(k)])), fp) for k, n in enumerate(PART)}
    g, units, hidden = GATES[cell], b.load(sizes), d["H"]
    width = b.mul(hidden, I64(g))
    if suffix == "f32":
        with b.if_then(b.icmp_unsigned("!=", p["unpacked"], ir.Constant(fp, None))):
            for k in range(g):  # gate k's rows of this part's units turned into W^T's panels
                b.call(library.declare(module, "tscript_rgemm_pack_f32"),
                       [b.gep(p["unpacked"], [b.mul(I64(k), b.mul(hidden, hidden))]), hidden, hidden, units,
                        b.gep(p["weight"], [b.mul(I64(k), _gate_stride(b, hidden))])])
    for k in range(g):  # gate k's columns of the product: its units' panels of W^T (float64: rows of W_hh)
        stride = _gate_stride(b, hidden) if suffix == "f32" else b.mul(hidden, hidden)
        weight, product = b.gep(p["weight"], [b.mul(I64(k), stride)]), b.gep(p["product"], [b.mul(I64(k), hidden)])
        if suffix == "f32":
            b.call(library.declare(module, "tscript_rgemm_f32"),
                   [d["B"], units, hidden, p["prev"], hidden, weight, product, width])
        else:
            b.call(blas_function(module, "cblas_dgemm", F64),
                   [I32(ROW_MAJOR), I32(NO_TRANS), I32(TRANS), d["B"], units, hidden, F64(1.0), p["prev"], hidden,
                    weight, hidden, F64(0.0), product, width])
    with counted(b, fn, I64(0), d["B"], 1, "row") as r:
        rows = {n: b.gep(p[n], [b.mul(r, width if n in ("gates", "product") else hidden)])
                for n in ("gates", "product", "h", "c", "prev_units")}
        _unit_cells(b, fn, cell, d, {**rows, "bias": p["bias"]}, units, fty)
    b.ret_void()
    return fn


def _unit_cells(b: ir.IRBuilder, fn, cell: str, d: dict, rows: dict, units, fty) -> None:
    """The cells of one batch row's `units` hidden units (every pointer at the part's first unit)."""
    hidden = d["H"]

    def parts(k: int, j):
        """Gate k of unit j: (its input projection, its recurrent product + bias)."""
        at = b.add(b.mul(I64(k), hidden), j)
        x, h, bias = (b.load(b.gep(rows[n], [at], inbounds=True)) for n in ("gates", "product", "bias"))
        return x, b.fadd(h, bias)

    def each(body, name: str):
        with counted(b, fn, I64(0), units, 1, name) as j:
            b.store(body(j), b.gep(rows["h"], [j], inbounds=True))
    if cell == "lstm":
        each(lambda j: _lstm_unit(b, [b.fadd(*parts(k, j)) for k in range(4)], b.gep(rows["c"], [j], inbounds=True)),
             "lstm")
    elif cell == "gru":
        each(lambda j: _gru_unit(b, [parts(k, j) for k in range(3)],
                                 b.load(b.gep(rows["prev_units"], [j], inbounds=True))), "gru")
    else:
        with b.if_else(b.icmp_signed("!=", d["relu"], I64(0))) as (relu, tanh):
            with relu:  # NaN stays NaN, as torch.relu
                each(lambda j: _relu(b, b.fadd(*parts(0, j)), fty), "relu")
            with tanh:
                each(lambda j: float_function(b, "tanh", b.fadd(*parts(0, j))), "tanh")


def _lstm_unit(b: ir.IRBuilder, pre: list, c_at):
    """c = sigmoid(f) * c + sigmoid(i) * tanh(g), stored; returns h = sigmoid(o) * tanh(c)."""
    i, f, o = (float_function(b, "sigmoid", pre[k]) for k in (0, 1, 3))
    g = float_function(b, "tanh", pre[2])
    c = b.fadd(b.fmul(f, b.load(c_at)), b.fmul(i, g))
    b.store(c, c_at)
    return b.fmul(o, float_function(b, "tanh", c))


def _gru_unit(b: ir.IRBuilder, parts: list, h_prev):
    """PyTorch's GRU: r, z = sigmoid(x + h parts); n = tanh(x_n + r * h_n); h = (h_prev - n) * z + n."""
    (x_r, h_r), (x_z, h_z), (x_n, h_n) = parts
    r, z = float_function(b, "sigmoid", b.fadd(x_r, h_r)), float_function(b, "sigmoid", b.fadd(x_z, h_z))
    n = float_function(b, "tanh", b.fadd(x_n, b.fmul(r, h_n)))
    return b.fadd(b.fmul(b.fsub(h_prev, n), z), n)


def _relu(b: ir.IRBuilder, x, fty):
    return b.select(b.fcmp_ordered("<", x, fty(0.0)), fty(0.0), x)

