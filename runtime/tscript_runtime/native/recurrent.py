"""Recurrent time loops in native code (the whole-graph entry's `RecurrentStep`, ops/recurrent.py):

    void tscript_<cell>_sequence_<f32|f64>(i64* dims, i8* gates, i8* h0, i8* c0, i8* w_hh, i8* b_hh,
                                           i8* hs, i8* c, i8* scratch)

Once per call, W_hh's rows are copied into scratch in blocks of UNITS hidden units, each block holding
the G gates of its units side by side: a step's product s = h_prev @ W^T then has the gates of every
unit in one block of columns, so a cut between blocks gives each of the two threads whole units. A step
is one `tscript_parallel2` launch (or one call, for small work or float64): each thread multiplies its
columns (the kernel library's register-blocked GEMM; BLAS for float64) and runs the cell on its units
while they are in its cache: gates[t] (the input projection, PyTorch's gate order) + s + b_hh through
the cell, h into hs[t] (the next step's h_prev) and, for the LSTM, c in place. RECURRENT_SLOTS at dims;
scratch holds s (B, G*H), the reordered W_hh (G*H, H) and a zero bias when there is none."""
from __future__ import annotations

from llvmlite import ir

from ..entry_steps import NO_TRANS, RECURRENT_SLOTS, TRANS
from . import library
from .library.loops import counted
from .mathlib import float_function

I1, I8, I32, I64, F64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.DoubleType()
I8P = I8.as_pointer()
GATES = {"lstm": 4, "gru": 3, "rnn": 1}
UNITS = 16                # hidden units per block of the reordered weight: one AVX-512 vector of float32
ROW_MAJOR = 101
# A step part's pointers: h_prev (its whole rows), its weight rows, its product columns, and, at its first
# unit: gates[t], b_hh, h_t, c, h_prev.
PART = ("prev", "weight", "product", "gates", "bias", "h", "c", "prev_units")


def scratch_bytes(batch: int, hidden: int, cell: str, itemsize: int) -> int:
    """The bytes of scratch a call needs: the product, the reordered weight, a zero bias."""
    width = GATES[cell] * hidden
    return (batch * width + width * hidden + width) * itemsize


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
    product = scratch8
    weight = b.gep(scratch8, [b.mul(b.mul(d["B"], width), size)])
    zeros = b.gep(weight, [b.mul(b.mul(width, d["H"]), size)])
    _reorder(module, fn, b, w8, weight, d["H"], g, b.mul(d["H"], size))
    memset = module.declare_intrinsic("llvm.memset", [I8P, I64])
    b.call(memset, [zeros, I8(0), b.mul(width, size), I1(0)])
    bias8 = b.select(b.icmp_unsigned("==", bias8, ir.Constant(I8P, None)), zeros, bias8)
    if cell == "lstm":
        memcpy = module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
        b.call(memcpy, [c8, c0, b.mul(b.mul(d["B"], d["H"]), size), I1(0)])
    state = b.mul(b.mul(d["B"], d["H"]), size)  # bytes of one step's h
    cut = b.mul(b.sdiv(d["H"], I64(2 * UNITS)), I64(UNITS))  # the second thread's first unit
    split = b.icmp_signed("!=", d["split"], I64(0))
    part_fn = _step_part(module, cell, fty)
    last, reverse = b.sub(d["T"], I64(1)), b.icmp_signed("!=", d["reverse"], I64(0))
    with counted(b, fn, I64(0), d["T"], 1, "step") as s:
        t = b.select(reverse, b.sub(last, s), s)
        before = b.select(reverse, b.add(t, I64(1)), b.sub(t, I64(1)))
        prev = b.select(b.icmp_signed("==", s, I64(0)), h0, b.gep(hs8, [b.mul(before, state)]))
        at = {"prev": prev, "weight": weight, "product": product, "gates": b.gep(gates8, [b.mul(t, b.mul(b.mul(
              d["B"], width), size))]), "bias": bias8, "h": b.gep(hs8, [b.mul(t, state)]), "c": c8, "prev_units": prev}
        with b.if_else(split) as (halves, whole):
            with halves:
                _fill(b, parts[0], at, I64(0), d["H"], size, g)
                _fill(b, parts[1], at, cut, d["H"], size, g)
                b.store(cut, sizes)
                b.store(b.sub(d["H"], cut), b.gep(sizes, [I64(1)]))
                b.call(library.declare(module, "tscript_parallel2"),
                       [b.bitcast(part_fn, I8P), sizes, b.bitcast(parts[0], I8P), b.gep(sizes, [I64(1)]),
                        b.bitcast(parts[1], I8P), dims, ir.Constant(F64.as_pointer(), None)])
            with whole:
                _fill(b, parts[0], at, I64(0), d["H"], size, g)
                b.store(d["H"], sizes)
                b.call(part_fn, [sizes, parts[0], dims, ir.Constant(F64.as_pointer(), None)])
    b.ret_void()
    return fn


def _fill(b: ir.IRBuilder, part, at: dict, unit, hidden, size, g: int) -> None:
    """The pointers of the part starting at hidden unit `unit` (a multiple of UNITS)."""
    column = b.mul(b.mul(unit, I64(g)), size)  # bytes to its first column of the product
    unit_bytes = b.mul(unit, size)
    offsets = {"weight": b.mul(column, hidden), "product": column, "gates": unit_bytes, "bias": unit_bytes,
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
    width, columns = b.mul(hidden, I64(g)), b.mul(units, I64(g))
    if suffix == "f32":
        b.call(library.declare(module, "tscript_gemm_nt_f32"),
               [p["prev"], p["weight"], p["product"], d["B"], columns, hidden, hidden, hidden, width, I1(0)])
    else:
        b.call(_dgemm(module), [ir.IntType(32)(ROW_MAJOR), ir.IntType(32)(NO_TRANS), ir.IntType(32)(TRANS), d["B"],
                                columns, hidden, F64(1.0), p["prev"], hidden, p["weight"], hidden, F64(0.0),
                                p["product"], width])
    with counted(b, fn, I64(0), d["B"], 1, "row") as r:
        rows = {n: b.gep(p[n], [b.mul(r, width if n in ("gates", "product") else hidden)])
                for n in ("gates", "product", "h", "c", "prev_units")}
        with counted(b, fn, I64(0), units, UNITS, "block") as start:
            n = b.sub(units, start)
            n = b.select(b.icmp_signed("<", n, I64(UNITS)), n, I64(UNITS))
            block = b.gep(rows["product"], [b.mul(start, I64(g))])
            _block_cells(b, fn, cell, d, {**rows, "product": block, "bias": p["bias"]}, start, n, fty)
    b.ret_void()
    return fn


def _block_cells(b: ir.IRBuilder, fn, cell: str, d: dict, rows: dict, start, n, fty) -> None:
    """The cells of units start .. start+n of one batch row (the block's product columns at rows["product"])."""
    hidden = d["H"]

    def parts(k: int, l):
        """Gate k of unit start + l: (its input projection, its recurrent product + bias)."""
        j = b.add(start, l)
        at = b.add(b.mul(I64(k), hidden), j)
        x = b.load(b.gep(rows["gates"], [at], inbounds=True))
        bias = b.load(b.gep(rows["bias"], [at], inbounds=True))
        h = b.load(b.gep(rows["product"], [b.add(b.mul(I64(k), n), l)], inbounds=True))
        return x, b.fadd(h, bias)

    def units(body, name: str):
        with counted(b, fn, I64(0), n, 1, name) as l:
            b.store(body(l), b.gep(rows["h"], [b.add(start, l)], inbounds=True))
    if cell == "lstm":
        units(lambda l: _lstm_unit(b, [b.fadd(*parts(k, l)) for k in range(4)],
                                   b.gep(rows["c"], [b.add(start, l)], inbounds=True)), "lstm")
    elif cell == "gru":
        units(lambda l: _gru_unit(b, [parts(k, l) for k in range(3)],
                                  b.load(b.gep(rows["prev_units"], [b.add(start, l)], inbounds=True))), "gru")
    else:
        with b.if_else(b.icmp_signed("!=", d["relu"], I64(0))) as (relu, tanh):
            with relu:  # NaN stays NaN, as torch.relu
                units(lambda l: _relu(b, b.fadd(*parts(0, l)), fty), "relu")
            with tanh:
                units(lambda l: float_function(b, "tanh", b.fadd(*parts(0, l))), "tanh")


def _dgemm(module: ir.Module) -> ir.Function:
    """cblas_dgemm (ILP64 integers)."""
    try:
        return module.get_global("cblas_dgemm")
    except KeyError:
        fp = F64.as_pointer()
        i32 = ir.IntType(32)
        return ir.Function(module, ir.FunctionType(ir.VoidType(), [i32, i32, i32, I64, I64, I64, F64, fp, I64, fp, I64,
                                                                   F64, fp, I64]), "cblas_dgemm")


def _reorder(module, fn, b: ir.IRBuilder, w, out, hidden, g: int, row) -> None:
    """out's rows: for each block of UNITS units (the last may be shorter), gate 0's rows of those
    units, then gate 1's, ...: row (start*g + k*n + l) is W_hh's row (k*hidden + start + l)."""
    memcpy = module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
    with counted(b, fn, I64(0), hidden, UNITS, "block") as start:
        n = b.sub(hidden, start)
        n = b.select(b.icmp_signed("<", n, I64(UNITS)), n, I64(UNITS))
        for k in range(g):
            dst = b.gep(out, [b.mul(b.add(b.mul(start, I64(g)), b.mul(I64(k), n)), row)])
            src = b.gep(w, [b.mul(b.add(b.mul(I64(k), hidden), start), row)])
            b.call(memcpy, [dst, src, b.mul(n, row), I1(0)])


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

