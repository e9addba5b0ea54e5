"""The pointwise kernel template: one LLVM function per fusion group, a loop nest over the group's output (rank R), reading each
input through its own strides (broadcast = stride 0), so one kernel serves every shape.

ABI: `void k(i64* sizes, i8** ptrs, i64* strides, double* scalars)` — `sizes[R]`; `ptrs` holds the
outputs then the tensor inputs; `strides[ptr * R + d]` in elements; `scalars` the scalar inputs.
The innermost loop is a canonical counted loop (guarded, `nuw nsw` increment, inbounds GEPs) that
LLVM vectorizes, versioning on unit stride. For rank >= 2, the kernel first checks whether an
input is transposed and then walks the last two dims in tiles instead (tiles.py); the plain nest
is an internal function it calls otherwise (the native plan gives the tile's side, or 0 for no
tiled walk).
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from .. import dtypes as dt
from ..ops import OPS
from ..ops.facts import node_compute_dtype
from ..typed_graph import Graph, Value
from ..types import TensorType
from . import tiles
from .library.loops import I64, nest
from .lowering import LLVM_TYPES, LOWERINGS, MEMORY_TYPES, Emitter

I8P, F64 = ir.IntType(8).as_pointer(), ir.DoubleType()


def _dtype_of(v: Value):
    t = v.type
    if isinstance(t, TensorType):
        return t.dtype
    return {"int": dt.int64, "float": dt.float64, "bool": dt.bool_}[t.name]


@dataclass
class Prologue:
    """A kernel function with its ABI arguments loaded: sizes, typed base pointers and strides of
    every array (outputs first, then tensor inputs), and scalar inputs in their dtypes."""
    fn: ir.Function
    b: ir.IRBuilder
    rank: int
    arrays: list
    sizes: list
    bases: list
    strides: list
    scalars: dict
    n_outputs: int
    scopes: list  # per array, its accesses' (alias.scope, noalias) metadata (`_alias_scopes`)


def prologue(graph: Graph, name: str, module: ir.Module, rank: int) -> Prologue:
    """Declare kernel `name` in `module` and load its arguments in the entry block."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I8P.as_pointer(),
                                                              I64.as_pointer(), F64.as_pointer()]), name)
    for a in fn.args:
        a.add_attribute("noalias")
    sizes_p, ptrs_p, strides_p, scalars_p = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    arrays = list(graph.outputs) + [v for v in graph.inputs if isinstance(v.type, TensorType)]
    sizes = [b.load(b.gep(sizes_p, [I64(d)])) for d in range(rank)]
    bases, strides = [], []
    for k, v in enumerate(arrays):
        raw = b.load(b.gep(ptrs_p, [I64(k)]))
        bases.append(b.bitcast(raw, MEMORY_TYPES[_dtype_of(v)].as_pointer()))
        strides.append([I64(0) if _broadcast_dim(v, d, rank) else b.load(b.gep(strides_p, [I64(k * rank + d)]))
                        for d in range(rank)])
    scalars = {}
    for j, v in enumerate(v for v in graph.inputs if not isinstance(v.type, TensorType)):
        scalars[v] = Emitter(b).cast(b.load(b.gep(scalars_p, [I64(j)])), dt.float64, _dtype_of(v))
    return Prologue(fn, b, rank, arrays, sizes, bases, strides, scalars, len(graph.outputs),
                    _alias_scopes(module, name, len(arrays), len(graph.outputs)))


def _alias_scopes(module: ir.Module, name: str, n_arrays: int, n_outputs: int) -> list:
    """Scoped-noalias metadata saying that no output shares memory with any other array (launchers
    give kernels fresh output arrays; inputs may overlap each other): without it, loops over tiles
    are too short for LLVM to vectorize behind run-time overlap checks."""
    domain = module.add_metadata([ir.MetaDataString(module, name)])
    scopes = [module.add_metadata([ir.MetaDataString(module, f"{name}.{k}"), domain]) for k in range(n_arrays)]
    out = []
    for k in range(n_arrays):
        others = [s for j, s in enumerate(scopes) if j != k and (k < n_outputs or j < n_outputs)]
        out.append((module.add_metadata([scopes[k]]), module.add_metadata(others)))
    return out


def _broadcast_dim(v: Value, d: int, rank: int) -> bool:
    """Is dim `d` of the iteration space broadcast for array `v` whatever the run-time shapes (v lacks
    the dim, or has size 1 there in its static type)? Its stride is then the constant 0, so the
    vectorizer sees a loop-invariant load instead of an unknown stride (which it only versions for 1)."""
    shape = v.type.shape
    if shape is None:
        return False
    pad = rank - len(shape)
    return d < pad or shape[d - pad] == 1


def build_kernel(graph: Graph, name: str, module: ir.Module, tile: int) -> None:
    """Generate the kernel of a fusion group's subgraph as function `name` in `module` (with a tiled
    walk of tile side `tile` for transposed inputs, unless 0)."""
    rank = graph.outputs[0].type.rank
    p = prologue(graph, name, module, rank)
    inputs = tiles.candidates(p)
    if rank < 2 or not inputs or not tile:
        _plain(p, graph)
        return
    plain = prologue(graph, name + "_plain", module, rank)
    plain.fn.linkage = "internal"
    plain.fn.attributes.add("noinline")
    _plain(plain, graph)
    tiles.tiled(p, inputs, plain.fn, lambda bases, offsets: _body(p.b, graph, bases, offsets, p.scalars, p.arrays,
                                                                   p.scopes), tile)


def _plain(p: Prologue, graph: Graph) -> None:
    """Loops over every dim in order, the last innermost (it vectorizes where the strides are 1)."""
    levels = [(p.sizes[d], [st[d] for st in p.strides]) for d in range(p.rank)]
    nest(p.b, p.fn, levels, [I64(0)] * len(p.arrays), "loop",
         lambda offsets: _body(p.b, graph, p.bases, offsets, p.scalars, p.arrays, p.scopes))
    p.b.ret_void()


def _body(b, graph: Graph, bases, offsets, scalars, arrays, scopes):
    e = Emitter(b)
    n_out = len(graph.outputs)
    values: dict = dict(scalars)
    for k, v in enumerate(arrays[n_out:], start=n_out):
        x = _scoped(b.load(b.gep(bases[k], [offsets[k]], inbounds=True)), scopes[k])
        values[v] = b.trunc(x, LLVM_TYPES[dt.bool_]) if v.type.dtype == dt.bool_ else x
    constants = {}
    for node in graph.nodes:
        if node.kind == "prim::Constant":
            constants[node.output] = node.attrs.get("value")
            continue
        values[node.output] = _lower_node(e, node, values, constants)
    for k, out in enumerate(graph.outputs):
        x = values[out] if out in values else e.const(constants[out], out.type.dtype)
        if out.type.dtype == dt.bool_:
            x = b.zext(x, MEMORY_TYPES[dt.bool_])
        _scoped(b.store(x, b.gep(bases[k], [offsets[k]], inbounds=True)), scopes[k])


def _scoped(access, scope):
    """`access` (a load or store) tagged with its array's (alias.scope, noalias) metadata."""
    access.set_metadata("alias.scope", scope[0])
    access.set_metadata("noalias", scope[1])
    return access


def _lower_node(e: Emitter, node, values: dict, constants: dict):
    pw = OPS[node.kind].facts.pointwise
    ins = node.inputs[:pw.n_values]
    cdt = node_compute_dtype(pw, node, constants)
    args = []
    for k, v in enumerate(ins):
        want = dt.bool_ if k == pw.condition else cdt
        if v in constants and constants[v] is None:
            args.append(None)
        elif v in constants:
            args.append(e.const(constants[v], want))
        else:
            args.append(e.cast(values[v], _dtype_of(v), want))
    result = LOWERINGS[node.kind](e, args, cdt, node)
    result_dtype = dt.bool_ if result.type == LLVM_TYPES[dt.bool_] else cdt
    return e.cast(result, result_dtype, node.output.type.dtype)
