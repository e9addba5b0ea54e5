"""Recurrent time loops in native code (the whole-graph entry's `RecurrentStep`, ops/recurrent.py):

    void tscript_<cell>_sequence_<f32|f64>(i64* dims, i8* gates, i8* h0, i8* c0, i8* w_hh, i8* b_hh,
                                           i8* hs, i8* c, i8* scratch)

A step is one `tscript_parallel2` launch (or one call, for small work or float64) of a part function
per thread, each owning a range of hidden units: it computes those units' columns of the step's product
s = h_prev @ W_hh^T, one GEMM per gate, then runs the cells of its units while they are in its cache:
gates[t] (the input projection) + s + b_hh through the cell, h into hs[t] (the next step's h_prev) and,
for the LSTM, c in place. Product, gates and bias share PyTorch's gate order. For float32, W_hh^T is
packed once per call into panels of 32 columns (library/recurrent_gemm.py: a gate's units are whole
panels, and a 10-row x 32-column tile of s stays in registers); float64 runs BLAS on W_hh's rows.
RECURRENT_SLOTS at dims; scratch holds s (B, G*H), a zero bias for layers without one and (float32) the
packed W_hh^T, 64-byte aligned."""
from __future__ import annotations

from llvmlite import ir

from ..entry_steps import NO_TRANS, RECURRENT_SLOTS, TRANS
from ..ops.recurrent import GATES
from . import library
from .blas import blas_function
from .library.loops import counted
from .library.packed_gemm import _intrinsic
from .mathlib import float_function

I1, I8, I32, I64, F64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.DoubleType()
I8P = I8.as_pointer()
UNITS = 32                # the two threads' units are cut at a multiple of this: a panel of the packed W_hh^T
ALIGN = 64                # bytes: the packed W_hh^T starts on a cache line (its panels are stored aligned)
ROW_MAJOR = 101
# A step part's pointers: h_prev (its whole rows), its weight rows, its product columns, and, at its first
# unit: gates[t], b_hh, h_t, c, h_prev.
PART = ("prev", "weight", "product", "gates", "bias", "h", "c", "prev_units")


def scratch_bytes(batch: int, hidden: int, cell: str, itemsize: int) -> int:
    """The bytes of scratch a call needs: the product, a zero bias and (float32) the packed W_hh^T."""
    from .library.recurrent_gemm import packed_floats
    width = GATES[cell] * hidden
    packed = GATES[cell] * packed_floats(hidden, hidden) * itemsize + ALIGN if itemsize == 4 else 0
    return (batch * width + width) * itemsize + packed


def recurrent_function(module: ir.Module, cell: str, fty) -> ir.Function:
    """The time loop of `cell` over `fty` values (defined once per module)."""
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
    parts = [b.alloca(I8P, I64(len(PART))) for _ in range(2)]
    sizes = b.alloca(I64, I64(2))
    d = {s: b.load(b.gep(dims, [I64(i)])) for i, s in enumerate(RECURRENT_SLOTS)}
    size = I64(4 if suffix == "f32" else 8)
    g = GATES[cell]
    width = b.mul(d["H"], I64(g))
    zeros = b.gep(scratch8, [b.mul(b.mul(d["B"], width), size)])
    memset = module.declare_intrinsic("llvm.memset", [I8P, I64])
    b.call(memset, [zeros, I8(0), b.mul(width, size), I1(0)])
    bias8 = b.select(b.icmp_unsigned("==", bias8, ir.Constant(I8P, None)), zeros, bias8)
    if cell == "lstm":
        memcpy = module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
        b.call(memcpy, [c8, c0, b.mul(b.mul(d["B"], d["H"]), size), I1(0)])
    if suffix == "f32":
        w8 = _packed_weights(module, b, w8, b.gep(zeros, [b.mul(width, size)]), d["H"], g)
    state = b.mul(b.mul(d["B"], d["H"]), size)  # bytes of one step's h
    cut = b.mul(b.sdiv(d["H"], I64(2 * UNITS)), I64(UNITS))  # the second thread's first unit
    split = b.icmp_signed("!=", d["split"], I64(0))
    part_fn = _step_part(module, cell, fty)
    last, reverse = b.sub(d["T"], I64(1)), b.icmp_signed("!=", d["reverse"], I64(0))
    with counted(b, fn, I64(0), d["T"], 1, "step") as s:
        t = b.select(reverse, b.sub(last, s), s)
        before = b.select(reverse, b.add(t, I64(1)), b.sub(t, I64(1)))
        prev = b.select(b.icmp_signed("==", s, I64(0)), h0, b.gep(hs8, [b.mul(before, state)]))
        at = {"prev": prev, "weight": w8, "product": scratch8, "gates": b.gep(gates8, [b.mul(t, b.mul(b.mul(
              d["B"], width), size))]), "bias": bias8, "h": b.gep(hs8, [b.mul(t, state)]), "c": c8, "prev_units": prev}
        with b.if_else(split) as (halves, whole):
            with halves:
                _fill(b, parts[0], at, I64(0), d["H"], size)
                _fill(b, parts[1], at, cut, d["H"], size)
                b.store(cut, sizes)
                b.store(b.sub(d["H"], cut), b.gep(sizes, [I64(1)]))
                b.call(library.declare(module, "tscript_parallel2"),
                       [b.bitcast(part_fn, I8P), sizes, b.bitcast(parts[0], I8P), b.gep(sizes, [I64(1)]),
                        b.bitcast(parts[1], I8P), dims, ir.Constant(F64.as_pointer(), None)])
            with whole:
                _fill(b, parts[0], at, I64(0), d["H"], size)
                b.store(d["H"], sizes)
                b.call(part_fn, [sizes, parts[0], dims, ir.Constant(F64.as_pointer(), None)])
    b.ret_void()
    return fn


def _packed_weights(module: ir.Module, b: ir.IRBuilder, w8, after8, hidden, gates: int):
    """Each gate's rows of W_hh packed as W^T's panels at the first cache line from `after8`; returns
    where (a gate's panels `_gate_stride` floats apart, unit u's panel u*hidden floats into them)."""
    fp = ir.FloatType().as_pointer()
    mask = _intrinsic(module, "llvm.ptrmask.p0.i64", fp, [fp, I64])  # (declared as the packed GEMM does)
    packed = b.call(mask, [b.bitcast(b.gep(after8, [I64(ALIGN - 1)]), fp), I64(-ALIGN)])
    w = b.bitcast(w8, fp)
    for k in range(gates):
        b.call(library.declare(module, "tscript_rgemm_pack_f32"),
               [b.gep(w, [b.mul(I64(k), b.mul(hidden, hidden))]), hidden, hidden, hidden,
                b.gep(packed, [b.mul(I64(k), _gate_stride(b, hidden))])])
    return b.bitcast(packed, I8P)


def _gate_stride(b: ir.IRBuilder, hidden):
    """Floats from one gate's packed W^T to the next's (recurrent_gemm.packed_floats in IR)."""
    return b.mul(b.and_(b.add(hidden, I64(UNITS - 1)), I64(-UNITS)), hidden)


def _fill(b: ir.IRBuilder, part, at: dict, unit, hidden, size) -> None:
    """The pointers of the part starting at hidden unit `unit`: each at that unit (the weight: its row)."""
    unit_bytes = b.mul(unit, size)
    offsets = {"weight": b.mul(unit_bytes, hidden), "product": unit_bytes, "gates": unit_bytes, "bias": unit_bytes,
               "h": unit_bytes, "c": unit_bytes, "prev_units": unit_bytes}
    for k, name in enumerate(PART):
        pointer = at[name] if name not in offsets else b.gep(at[name], [offsets[name]])
        b.store(pointer, b.gep(part, [I64(k)]))


def _step_part(module: ir.Module, cell: str, fty) -> ir.Function:
    """`void tscript_<cell>_step_<f32|f64>(i64* units, i8** PART pointers, i64* dims, double*)`: one
    step's product columns and cells of `units` hidden units (the kernel ABI tscript_parallel2 runs)."""
    suffix = "f32" if fty == ir.FloatType() else "f64"
    name = f"tscript_{cell}_step_{suffix}"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I8P.as_pointer(), I64.as_pointer(),
                                                             F64.as_pointer()]), name)
    fn.linkage = "internal"
    sizes, ptrs, dims, _ = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    fp = fty.as_pointer()
    p = {n: b.bitcast(b.load(b.gep(ptrs, [I64(k)])), fp) for k, n in enumerate(PART)}
    d = {s: b.load(b.gep(dims, [I64(i)])) for i, s in enumerate(RECURRENT_SLOTS)}
    g, units, hidden = GATES[cell], b.load(sizes), d["H"]
    width = b.mul(hidden, I64(g))
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

