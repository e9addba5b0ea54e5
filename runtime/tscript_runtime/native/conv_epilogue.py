"""A convolution's epilogue: the code that turns a finished block of its output (the GEMM's product, or
the depthwise kernel's planes) into the final values while the block is still in cache, adding the
bias and running the pointwise ops a `tscript::ConvGroup` holds (conv_epilogue.EpilogueSpec):

    void epilogue(i8* context, T* c, i64 rows, i64 cols, i64 ldc)

rewrites the rows x cols block at `c` (rows ldc elements apart) of the output in place. `context` is
an array of pointers {out, bias or null, the convolution's CONV_SLOTS, the epilogue tensors in order}:
the block's position in `out` gives each element's index, its row's channel ((index / L) % channels)
the bias and the per-channel tensors, and the index itself the full-shaped ones (C-contiguous, like
`out`). The callers pass blocks of whole rows of the output seen as (N * channels, L), so ldc is L.
"""
from __future__ import annotations

import hashlib

from llvmlite import ir

from .. import dtypes as dt
from ..conv_epilogue import EpilogueSpec
from ..entry_steps import CONV_SLOTS
from .library.depthwise import bias_of
from .library.loops import I64, counted
from .lowering import LLVM_TYPES, MEMORY_TYPES, Emitter
from .pointwise import _lower_node

I8P = ir.IntType(8).as_pointer()
FIXED = ("out", "bias", "dims")  # the context's first pointers; the epilogue tensors follow


def epilogue_function(module: ir.Module, dtype, spec: EpilogueSpec | None) -> ir.Function:
    """The epilogue of a `dtype` convolution with `spec` in `module`, shared by every convolution whose
    epilogue is the same code (ResNet-18's 17 are 3; each costs ~40 ms of LLVM): it is named after a
    digest of its IR, built once in a scratch module to learn it."""
    scratch = ir.Module()
    scratch.triple = module.triple
    text = str(build_epilogue(scratch, "conv_epilogue", dtype, spec))
    name = "conv_epilogue_" + hashlib.sha256(text.encode()).hexdigest()[:16]
    try:
        return module.get_global(name)
    except KeyError:
        return build_epilogue(module, name, dtype, spec)


def build_epilogue(module: ir.Module, name: str, dtype, spec: EpilogueSpec | None) -> ir.Function:
    """Define `name` in `module`: the epilogue above for a `dtype` (float32 or float64) convolution;
    `spec` None: the bias alone."""
    fty = LLVM_TYPES[dtype]
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P, fty.as_pointer(), I64, I64, I64]), name)
    fn.linkage = "internal"
    context8, c, rows, cols, ldc = fn.args
    c.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    context = b.bitcast(context8, I8P.as_pointer())
    out, bias8, dims8 = (b.load(b.gep(context, [I64(i)])) for i in range(len(FIXED)))
    tensors = [] if spec is None else spec.graph.inputs[1:]
    bases = [b.bitcast(b.load(b.gep(context, [I64(len(FIXED) + i)])), MEMORY_TYPES[v.type.dtype].as_pointer())
             for i, v in enumerate(tensors)]
    dims = b.bitcast(dims8, I64.as_pointer())
    length, groups, per_group = (b.load(b.gep(dims, [I64(CONV_SLOTS.index(s))])) for s in ("L", "G", "O"))
    channels = b.mul(groups, per_group)
    first = b.sdiv(b.sub(b.ptrtoint(c, I64), b.ptrtoint(out, I64)), I64(dtype.itemsize))
    has_bias = b.icmp_unsigned("!=", bias8, ir.Constant(I8P, None))
    with counted(b, fn, I64(0), rows, 1, "row") as r:
        at = b.add(first, b.mul(r, ldc))
        channel = b.srem(b.sdiv(at, length), channels)
        start = bias_of(b, has_bias, b.bitcast(bias8, fty.as_pointer()), channel, fty)
        row = b.gep(c, [b.mul(r, ldc)])
        kinds = () if spec is None else spec.kinds
        fixed = {v: _load(b, base, channel if kind == "channel" else I64(0), v.type.dtype)
                 for v, base, kind in zip(tensors, bases, kinds) if kind != "full"}
        full = [(v, b.gep(base, [at])) for v, base, kind in zip(tensors, bases, kinds) if kind == "full"]
        with counted(b, fn, I64(0), cols, 1, "col") as j:
            place = b.gep(row, [j], inbounds=True)
            value = b.fadd(b.load(place), start)
            if spec is not None:
                values = {spec.graph.inputs[0]: value, **fixed}
                values.update({v: _load(b, base, j, v.type.dtype) for v, base in full})
                value = _compute(b, spec, values)
            b.store(value, place)
    b.ret_void()
    return fn


def _load(b: ir.IRBuilder, base, index, dtype):
    x = b.load(b.gep(base, [index], inbounds=True))
    return b.trunc(x, LLVM_TYPES[dt.bool_]) if dtype == dt.bool_ else x


def _compute(b: ir.IRBuilder, spec: EpilogueSpec, values: dict):
    """The epilogue graph's output for one element (`values`: its inputs' values there)."""
    e = Emitter(b)
    constants = {}
    for node in spec.graph.nodes:
        if node.kind == "prim::Constant":
            constants[node.output] = node.attrs.get("value")
            continue
        values[node.output] = _lower_node(e, node, values, constants)
    return values[spec.graph.outputs[0]]
