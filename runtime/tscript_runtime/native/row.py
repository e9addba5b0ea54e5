"""The row kernel template: a row group of elementwise ops and reductions over the last dim (keepdim) —
softmax, log_softmax, layer_norm and friends after decomposition — as one function that, for each
row, makes one pass over the row per reduction (in dependency order) and a final pass computing
the outputs. Full-size intermediates are recomputed inside each pass instead of being stored.

Same ABI as pointwise.py (sizes, ptrs, strides, scalars); the last dim is the reduced one.
Reduction accumulators carry `reassoc` so LLVM vectorizes them.
"""
from __future__ import annotations

from llvmlite import ir

from .. import dtypes as dt
from ..typed_graph import Graph
from ..types import TensorType
from .library.loops import I64, carried, loop
from .lowering import LLVM_TYPES, MEMORY_TYPES, Emitter
from .pointwise import _dtype_of, _lower_node, prologue

REDUCE_FLAGS = ("reassoc", "contract", "nsz", "arcp", "afn")
# row-reduction op (ops/facts.py) -> (identity, combine name); mean divides the sum by the row length afterwards
REDUCTIONS = {"aten::sum": (0.0, "add"), "aten::mean": (0.0, "add"), "aten::amax": (float("-inf"), "max"),
              "aten::amin": (float("inf"), "min"), "aten::var": (0.0, "add"), "aten::all": (True, "and"),
              "aten::any": (False, "or")}


def is_row_scalar(v, rank: int) -> bool:
    t = v.type
    return isinstance(t, TensorType) and t.rank == rank and t.shape[-1] == 1


def build_row_kernel(graph: Graph, name: str, module: ir.Module) -> None:
    """Generate the row kernel of a row group's subgraph as function `name` in `module`."""
    rank = max(v.type.rank for v in graph.inputs if isinstance(v.type, TensorType))
    p = prologue(graph, name, module, rank)
    ctx = _Row(p.b, p.fn, graph, rank, p.sizes, p.bases, p.strides, p.scalars, p.arrays)
    ctx.outer(0, [I64(0)] * len(p.arrays))
    p.b.ret_void()


class _Row:
    def __init__(self, b, fn, graph, rank, sizes, bases, strides, scalars, arrays):
        self.b, self.fn, self.graph, self.rank = b, fn, graph, rank
        self.sizes, self.bases, self.strides, self.scalars, self.arrays = sizes, bases, strides, scalars, arrays
        self.n_out = len(graph.outputs)
        self.constants = {n.output: n.attrs.get("value") for n in graph.nodes if n.kind == "prim::Constant"}
        self.producer = {n.output: n for n in graph.nodes if n.kind != "prim::Constant"}

    def outer(self, d: int, offsets: list) -> None:
        if d == self.rank - 1:
            self.row(offsets)
            return

        def body(i, _):
            self.outer(d + 1, [self.b.add(o, self.b.mul(i, st[d])) for o, st in zip(offsets, self.strides)])
        loop(self.b, self.fn, self.sizes[d], body, f"outer{d}")

    def row(self, offsets: list) -> None:
        n = self.sizes[-1]
        row_values: dict = dict(self.scalars)
        self.means, self.materialized = {}, {}
        full = [k for k, v in enumerate(self.graph.outputs) if not is_row_scalar(v, self.rank)]
        reductions = [node for node in self.graph.nodes if node.kind in REDUCTIONS]
        keep = self._materialize(reductions, full)
        for node in reductions:
            into = keep[1] if keep is not None and node is reductions[-1] else None
            row_values[node.output] = self.reduce(node, offsets, row_values, n, into)
        if keep is not None:
            self.materialized[keep[0]] = keep[1]
        for k, v in enumerate(self.graph.outputs):
            if k not in full:
                self.store(k, offsets, self.value(v, offsets, None, row_values, {}))
        full = [k for k in full if self.graph.outputs[k] not in self.materialized]
        if full:
            def body(j, _):
                memo: dict = {}
                for k in full:
                    self.store(k, offsets, self.value(self.graph.outputs[k], offsets, j, row_values, memo), j)
            loop(self.b, self.fn, n, body, "final")

    def _materialize(self, reductions: list, full: list):
        """(value, output index) when the last reduction's full-size input is also needed by the
        only full-size output: its pass then stores that value into the output buffer, and the
        final pass reads it back instead of recomputing it (softmax's exp)."""
        if len(full) != 1 or not reductions:
            return None
        v, out = reductions[-1].inputs[0], self.graph.outputs[full[0]]
        if (v not in self.producer or v.type.dtype != out.type.dtype or not dt.is_float(v.type.dtype)
                or is_row_scalar(v, self.rank)):
            return None
        stack, seen = [out], set()
        while stack:
            u = stack.pop()
            if u is v:
                return v, full[0]
            node = self.producer.get(u)
            if node is not None and node.kind not in REDUCTIONS and u not in seen:
                seen.add(u)
                stack.extend(node.inputs)
        return None

    def reduce(self, node, offsets, row_values, n, into=None):
        """One pass over the row (two for var: mean, then squared deviations, unless the group already
        has the mean of the same input); `into`: an output to store the reduced values in."""
        dtype = node.output.type.dtype
        b, tag = self.b, f"n{node.index}"  # (names from the file never reach the LLVM IR)
        length = b.sitofp(n, LLVM_TYPES[dtype]) if dt.is_float(dtype) else n
        if node.kind == "aten::var":
            mean = self.means.get((node.inputs[0], dtype))
            if mean is None:
                mean = b.fdiv(self._pass(node, offsets, row_values, n, "add", f"mean_{tag}"), length)
            centered = self._pass(node, offsets, row_values, n, "add", f"var_{tag}", shift=mean, into=into)
            correction = self.constants.get(node.inputs[2])
            correction = 1 if correction is None else correction
            zero = Emitter(b).const(0, dtype)
            dof = b.fsub(length, Emitter(b).const(correction, dtype))
            return b.fdiv(centered, b.select(b.fcmp_ordered(">", dof, zero), dof, zero))  # as PyTorch: max(N - c, 0)
        total = self._pass(node, offsets, row_values, n, REDUCTIONS[node.kind][1], f"reduce_{tag}", into=into)
        if node.kind != "aten::mean":
            return total
        mean = self.means[node.inputs[0], dtype] = b.fdiv(total, length)
        return mean

    def _pass(self, node, offsets, row_values, n, combine, name, shift=None, into=None):
        e, b = Emitter(self.b), self.b
        dtype = node.output.type.dtype
        identity = 0.0 if combine == "add" else REDUCTIONS[node.kind][0]
        init = e.const(identity, dtype)

        if combine in ("max", "min") and dt.is_float(dtype):
            return self._extremum_pass(node, offsets, row_values, n, combine, name, into)

        def step(j, acc):
            x = self.value(node.inputs[0], offsets, j, row_values, {})
            if into is not None:
                self.store(into, offsets, x, j)
            x = e.cast(x, _dtype_of(node.inputs[0]), dtype)
            if shift is not None:
                d = b.fsub(x, shift, flags=REDUCE_FLAGS)
                x = b.fmul(d, d, flags=REDUCE_FLAGS)
            if combine == "add":
                return b.fadd(acc, x, flags=REDUCE_FLAGS) if dt.is_float(dtype) else b.add(acc, x)
            if combine in ("and", "or"):  # all / any of bools
                return b.and_(acc, x) if combine == "and" else b.or_(acc, x)
            return _extremum(b, combine, acc, x)
        return loop(self.b, self.fn, n, step, name, init)

    def _extremum_pass(self, node, offsets, row_values, n, combine, name, into):
        """A float max/min pass as two reductions LLVM vectorizes: maxnum/minnum (which skips NaN) and
        whether any element is NaN; the result is NaN if one was (PyTorch's amax/amin propagate it)."""
        e, b = Emitter(self.b), self.b
        dtype = node.output.type.dtype
        fty = LLVM_TYPES[dtype]
        intrinsic = "llvm.maxnum" if combine == "max" else "llvm.minnum"
        fn = b.module.declare_intrinsic(intrinsic, [fty], ir.FunctionType(fty, [fty, fty]))

        def step(j, accs):
            x = self.value(node.inputs[0], offsets, j, row_values, {})
            if into is not None:
                self.store(into, offsets, x, j)
            x = e.cast(x, _dtype_of(node.inputs[0]), dtype)
            # nnan: a NaN makes `best` poison, but then the select below picks NaN, not `best`
            return [b.call(fn, [accs[0], x], fastmath=("nnan", "nsz")), b.or_(accs[1], b.fcmp_unordered("uno", x, x))]
        initial = [e.const(REDUCTIONS[node.kind][0], dtype), ir.IntType(1)(0)]
        best, nan = carried(b, self.fn, I64(0), n, 1, name, initial, step)
        return b.select(nan, ir.Constant(fty, float("nan")), best)

    def value(self, v, offsets, j, row_values, memo):
        """The element of `v` at column j of this row (row scalars: the row's value)."""
        if v in row_values:
            return row_values[v]
        if v in memo:
            return memo[v]
        if v in self.constants:
            raise AssertionError("constants are lowered by their consumer")
        node = self.producer.get(v)
        if node is None or v in self.materialized and j is not None:  # a tensor input or a stored value: load it
            k = self.materialized[v] if node is not None else self.arrays.index(v)
            off = offsets[k] if j is None else self.b.add(offsets[k], self.b.mul(j, self.strides[k][-1]))
            x = self.b.load(self.b.gep(self.bases[k], [off], inbounds=True))
            out = self.b.trunc(x, LLVM_TYPES[dt.bool_]) if v.type.dtype == dt.bool_ else x
        else:
            values = {u: self.value(u, offsets, j, row_values, memo) for u in node.inputs
                      if u not in self.constants}
            out = _lower_node(Emitter(self.b), node, values, self.constants)
        memo[v] = out
        return out

    def store(self, k, offsets, x, j=None):
        out = self.graph.outputs[k]
        if out.type.dtype == dt.bool_:
            x = self.b.zext(x, MEMORY_TYPES[dt.bool_])
        off = offsets[k] if j is None else self.b.add(offsets[k], self.b.mul(j, self.strides[k][-1]))
        self.b.store(x, self.b.gep(self.bases[k], [off], inbounds=True))


def _extremum(b, which: str, acc, x):
    """max/min accumulation that propagates NaN, as PyTorch's amax/amin."""
    name = "llvm.maximum" if which == "max" else "llvm.minimum"
    fn = b.module.declare_intrinsic(name, [acc.type], ir.FunctionType(acc.type, [acc.type, acc.type]))
    return b.call(fn, [acc, x])
