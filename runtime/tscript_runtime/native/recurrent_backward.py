"""Backward through time in native code (the whole-graph entry's `RecurrentBackwardStep`; the ops
`_lstm_sequence_backward`, `_gru_sequence_backward`, `_rnn_sequence_backward` of ops/recurrent.py):

    void tscript_<cell>_backward_<f32|f64>(i64* dims, i8* grad_hs, i8* grad_c, i8* gates, i8* h0, i8* c0,
                                          i8* w_hh, i8* b_hh, i8* hs, i8* out0, i8* out1, i8* out2,
                                          i8* scratch, i8* pack)

Every step's incoming h is saved (h0, then hs), so the recurrent products of all steps are two GEMMs
before the loop ("first": h0's step, "rest": the others), written where the gradients go (the LSTM's
d_pre, the GRU's d_h) and overwritten step by step. The LSTM then runs its cells forward once more for
the gate activations (kept in d_pre) and every cell state (scratch). The loop walks the steps back:
each step's cell gradient over the batch, then dh_prev = d_pre[t] @ W_hh ("back", one GEMM into the
dh0 output, which holds the running dh). The GEMMs go through the entry's product function `product`
(the kernel library's GEMMs, BLAS). BACKWARD_SLOTS at dims."""
from __future__ import annotations

from llvmlite import ir

from ..entry_steps import BACKWARD_SLOTS
from ..ops.recurrent import GATES
from .library.loops import counted
from .mathlib import float_function

I1, I8, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(64)
I8P = I8.as_pointer()


def backward_function(module: ir.Module, cell: str, fty, product: ir.Function) -> ir.Function:
    """The backward loop of `cell` over `fty` values (defined once per module and product function)."""
    name = f"tscript_{cell}_backward_{'f32' if fty == ir.FloatType() else 'f64'}_{product.name}"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer()] + [I8P] * 13), name)
    fn.linkage = "internal"
    dims, *pointers = fn.args
    names = ("grad_hs", "grad_c", "gates", "h0", "c0", "w", "bias", "hs", "out0", "out1", "out2", "scratch", "pack")
    p8 = dict(zip(names, pointers))
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    d = {s: b.load(b.gep(dims, [I64(i)])) for i, s in enumerate(BACKWARD_SLOTS[:7])}
    loop = _Loop(module, fn, b, d, dims, p8, fty, product, cell)
    loop.build()
    b.ret_void()
    return fn


class _Loop:
    def __init__(self, module, fn, b, d, dims, p8, fty, product, cell):
        self.module, self.fn, self.b, self.d, self.dims, self.p8 = module, fn, b, d, dims, p8
        self.fty, self.product, self.cell, self.g = fty, product, cell, GATES[cell]
        self.size = I64(4 if fty == ir.FloatType() else 8)
        self.reverse = b.icmp_signed("!=", d["reverse"], I64(0))
        self.width = b.mul(d["H"], I64(self.g))

    # -- addresses --------------------------------------------------------------------------------------
    def at(self, name: str, t, per_step):
        """The float pointer to step t of the (T, ...) buffer `name` whose steps are `per_step` elements."""
        b = self.b
        return b.gep(b.bitcast(self.p8[name], self.fty.as_pointer()), [b.mul(t, per_step)])

    def step_of(self, s, backwards: bool):
        """The time index of the s-th step walked (forward order, or its reverse with `backwards`)."""
        b, last = self.b, b_sub(self.b, self.d["T"], 1)
        forward = b.select(self.reverse, b.sub(last, s), s)
        return b.select(self.reverse, s, b.sub(last, s)) if backwards else forward

    def before(self, t):
        """The step before t in the forward walk (t - 1, or t + 1 reversed)."""
        b = self.b
        return b.select(self.reverse, b.add(t, I64(1)), b.sub(t, I64(1)))

    def is_first(self, t):
        b = self.b
        return b.icmp_signed("==", t, b.select(self.reverse, b_sub(b, self.d["T"], 1), I64(0)))

    def gemm(self, slots: str, a, bm, c, bias=None):
        b = self.b
        dims = b.gep(self.dims, [I64(BACKWARD_SLOTS.index(f"{slots}_trans_a"))])
        b.call(self.product, [dims, *(b.bitcast(x, I8P) for x in (a, bm, c)),
                              bias if bias is not None else ir.Constant(I8P, None), self.p8["pack"]])

    # -- the loop -----------------------------------------------------------------------------------------
    def build(self) -> None:
        b, d = self.b, self.d
        state = b.mul(d["B"], d["H"])
        memset = self.module.declare_intrinsic("llvm.memset", [I8P, I64])
        memcpy = self.module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
        dh = {"lstm": "out1", "gru": "out2", "rnn": "out1"}[self.cell]  # the running dh, finally dh0
        b.call(memset, [self.p8[dh], I8(0), b.mul(state, self.size), I1(0)])
        if self.cell == "lstm":
            b.call(memcpy, [self.p8["out2"], self.p8["grad_c"], b.mul(state, self.size), I1(0)])
        if self.cell == "gru":
            b.call(memset, [self.p8["scratch"], I8(0), b.mul(state, self.size), I1(0)])
        if self.cell != "rnn":
            self.products({"lstm": "out0", "gru": "out1"}[self.cell])
        if self.cell == "lstm":
            self.lstm_forward(state)
        with counted(b, self.fn, I64(0), d["T"], 1, "back") as s:
            t = self.step_of(s, backwards=True)
            self.cells(t, state, dh)
            grads = {"lstm": "out0", "gru": "out1", "rnn": "out0"}[self.cell]
            self.gemm("back", self.at(grads, t, b.mul(d["B"], self.width)), self.p8["w"],
                      b.bitcast(self.p8[dh], self.fty.as_pointer()))
        if self.cell == "gru":  # dh0 = the last product + the last carried dh * z
            self.add_carry(state)

    def products(self, into: str) -> None:
        """into[t] = h_prev(t) @ W_hh^T + b_hh for every step: h0's step, then the others from hs."""
        b, d = self.b, self.d
        step = b.mul(d["B"], self.width)
        last = b_sub(b, d["T"], 1)
        first_t = b.select(self.reverse, last, I64(0))
        rest_t = b.select(self.reverse, I64(0), I64(1))  # where the others' products start
        rest_h = b.select(self.reverse, I64(1), I64(0))  # ... and the states they read
        bias = self.p8["bias"]
        self.gemm("first", b.bitcast(self.p8["h0"], self.fty.as_pointer()), self.p8["w"], self.at(into, first_t, step),
                  bias)
        self.gemm("rest", self.at("hs", rest_h, b.mul(d["B"], d["H"])), self.p8["w"], self.at(into, rest_t, step), bias)

    def lstm_forward(self, state) -> None:
        """The gate activations (into d_pre) and cell states (into scratch) of every step, walked forward."""
        b, d, fn = self.b, self.d, self.fn
        f = self.fty
        with counted(b, fn, I64(0), d["T"], 1, "again") as s:
            t = self.step_of(s, backwards=False)
            acts, gates = self.at("out0", t, b.mul(d["B"], self.width)), self.at("gates", t, b.mul(d["B"], self.width))
            cs = self.at("scratch", t, state)
            c_prev = b.select(self.is_first(t), b.bitcast(self.p8["c0"], f.as_pointer()),
                              self.at("scratch", self.before(t), state))
            with counted(b, fn, I64(0), d["B"], 1, "row") as r:
                row, hrow = b.mul(r, self.width), b.mul(r, d["H"])
                with counted(b, fn, I64(0), d["H"], 1, "unit") as j:
                    values = []
                    for k, kind in enumerate(("sigmoid", "sigmoid", "tanh", "sigmoid")):
                        at = b.add(row, b.add(b.mul(I64(k), d["H"]), j))
                        pre = b.fadd(b.load(b.gep(acts, [at])), b.load(b.gep(gates, [at])))
                        value = float_function(b, kind, pre)
                        b.store(value, b.gep(acts, [at]))
                        values.append(value)
                    i, fg, g, _ = values
                    u = b.add(hrow, j)
                    c = b.fadd(b.fmul(fg, b.load(b.gep(c_prev, [u]))), b.fmul(i, g))
                    b.store(c, b.gep(cs, [u]))

    def cells(self, t, state, dh_name: str) -> None:
        """Step t's gradients through its cells (dh = grad_hs[t] + the running dh)."""
        b, d, fn, f = self.b, self.d, self.fn, self.fty
        fp = f.as_pointer()
        one = f(1.0)
        step = b.mul(d["B"], self.width)
        g_hs, running = self.at("grad_hs", t, state), b.bitcast(self.p8[dh_name], fp)
        hs_t = self.at("hs", t, state)
        first = self.is_first(t)
        with counted(b, fn, I64(0), d["B"], 1, "row") as r:
            row, hrow = b.mul(r, self.width), b.mul(r, d["H"])
            with counted(b, fn, I64(0), d["H"], 1, "unit") as j:
                u = b.add(hrow, j)
                dh = b.fadd(b.load(b.gep(g_hs, [u])), b.load(b.gep(running, [u])))

                def gate(name: str, k: int):
                    return b.gep(self.at(name, t, step), [b.add(row, b.add(b.mul(I64(k), d["H"]), j))])
                if self.cell == "rnn":
                    h = b.load(b.gep(hs_t, [u]))
                    slope = b.select(b.icmp_signed("!=", d["relu"], I64(0)),
                                     b.select(b.fcmp_ordered(">", h, f(0.0)), one, f(0.0)), b.fsub(one, b.fmul(h, h)))
                    b.store(b.fmul(dh, slope), gate("out0", 0))
                elif self.cell == "lstm":
                    self.lstm_unit(t, first, dh, u, state, gate)
                else:
                    self.gru_unit(t, first, dh, u, state, gate)

    def lstm_unit(self, t, first, dh, u, state, gate) -> None:
        b, f = self.b, self.fty
        one = f(1.0)
        i, fg, g, o = (b.load(gate("out0", k)) for k in range(4))
        c = b.load(b.gep(self.at("scratch", t, state), [u]))
        c_prev = b.load(b.gep(b.select(first, b.bitcast(self.p8["c0"], f.as_pointer()),
                                       self.at("scratch", self.before(t), state)), [u]))
        tc = float_function(b, "tanh", c)
        dc_at = b.gep(b.bitcast(self.p8["out2"], f.as_pointer()), [u])
        dc = b.fadd(b.load(dc_at), b.fmul(b.fmul(dh, o), b.fsub(one, b.fmul(tc, tc))))
        grads = [b.fmul(b.fmul(dc, g), b.fmul(i, b.fsub(one, i))),
                 b.fmul(b.fmul(dc, c_prev), b.fmul(fg, b.fsub(one, fg))),
                 b.fmul(b.fmul(dc, i), b.fsub(one, b.fmul(g, g))),
                 b.fmul(b.fmul(dh, tc), b.fmul(o, b.fsub(one, o)))]
        for k, value in enumerate(grads):
            b.store(value, gate("out0", k))
        b.store(b.fmul(dc, fg), dc_at)

    def gru_unit(self, t, first, dh, u, state, gate) -> None:
        b, f = self.b, self.fty
        one = f(1.0)
        carry_at = b.gep(b.bitcast(self.p8["scratch"], f.as_pointer()), [u])
        dh = b.fadd(dh, b.load(carry_at))
        x_r, x_z, x_n = (b.load(gate("gates", k)) for k in range(3))
        h_r, h_z, h_n = (b.load(gate("out1", k)) for k in range(3))
        r, z = float_function(b, "sigmoid", b.fadd(x_r, h_r)), float_function(b, "sigmoid", b.fadd(x_z, h_z))
        n = float_function(b, "tanh", b.fadd(x_n, b.fmul(r, h_n)))
        h_prev = b.load(b.gep(b.select(first, b.bitcast(self.p8["h0"], f.as_pointer()),
                                       self.at("hs", self.before(t), state)), [u]))
        d_n = b.fmul(b.fmul(dh, b.fsub(one, z)), b.fsub(one, b.fmul(n, n)))
        d_r = b.fmul(b.fmul(d_n, h_n), b.fmul(r, b.fsub(one, r)))
        d_z = b.fmul(b.fmul(dh, b.fsub(h_prev, n)), b.fmul(z, b.fsub(one, z)))
        for k, (x, h) in enumerate(((d_r, d_r), (d_z, d_z), (d_n, b.fmul(d_n, r)))):
            b.store(x, gate("out0", k))
            b.store(h, gate("out1", k))
        b.store(b.fmul(dh, z), carry_at)

    def add_carry(self, state) -> None:
        b, f = self.b, self.fty
        out, carry = (b.bitcast(self.p8[n], f.as_pointer()) for n in ("out2", "scratch"))
        with counted(b, self.fn, I64(0), state, 1, "carry") as i:
            at = b.gep(out, [i])
            b.store(b.fadd(b.load(at), b.load(b.gep(carry, [i]))), at)


def b_sub(b: ir.IRBuilder, x, k: int):
    return b.sub(x, I64(k))
