"""The whole-graph entry template: one function calling a graph's kernels, GEMMs, convolutions and
poolings in order, reading every shape-dependent number from the call plan (layout and ABI:
tscript_runtime/graph_entry.py). The schedule numbers of the native plan (how many rows a GEMM may
have to use the kernel library, how much work splits over two threads) are constants of the code."""
from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir

from ..entry_layout import EntryLayout
from ..entry_steps import (AVG_POOLS, AVG_SLOTS, CONVS, CONVT_SLOTS, CONV_SLOTS, FILL_SLOTS, GATHER_SLOTS, GEOMETRY,
                           GEMM_SLOTS, LONG_K, MAX_BATCH_RANK, NO_TRANS, RECURRENT_SLOTS, REDUCE_SLOTS, SPLIT_COLUMNS, TRANS,
                           BACKWARD_SLOTS, CatStep, DrawStep, EMBED_SLOTS, EmbedStep, FillStep, GatherStep, GemmStep,
                           KernelStep, RecurrentBackwardStep, RecurrentStep, ReduceStep,
                           ScatterStep, WindowStep, ColumnsStep, PoolIndicesStep, UpdateStep)
from ..entry_steps import IM2COLS, PoolBackwardStep
from . import batch_steps, library
from .blas import blas_function
from .conv_epilogue import epilogue_function
from .conv_transpose import conv_transpose_function
from .library.conv import implicit_columns
from .library.depthwise import bias_of
from .library.direct_conv import NAME as DIRECT, direct_condition
from .recurrent import recurrent_function
from .recurrent_backward import backward_function
from .library.loops import carried, counted, smax, smin, stack
from .library.parallel import kernel_abi
from .library.gemm import COL_BLOCKS

I1, I8, I32, I64, F64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.DoubleType()
I8P = I8.as_pointer()
FLOATS = {"cblas_sgemm": ir.FloatType(), "cblas_dgemm": ir.DoubleType()}
ROW_MAJOR = 101
IM2COL_SPLIT = 1 << 16  # column elements from which a convolution's im2col splits over two threads
CONV_SPLIT = 1 << 17  # multiply-adds from which a convolution's register-blocked GEMM splits in column halves
DEPTHWISE_SPLIT = 1 << 15  # multiply-adds from which a depthwise convolution's planes split over two threads
POOL_SPLIT = 1 << 16  # input values from which a pooling's planes split over two threads
CAT_SPLIT = 1 << 18  # output bytes from which a cat's pieces split over two threads
REDUCE_FLAGS = ("reassoc", "contract", "nsz", "arcp", "afn")  # a window's sum may be reordered (vectorized)


def build_entry(module: ir.Module, layout: EntryLayout, name: str, kernels: dict, timed: bool = False) -> None:
    """Define `i64 name(i8** bases, i64* plan, double* scalars)` in `module`, which holds the
    kernels (`kernels`: kernel node index -> its function); it returns 0, or 1 + the index of the step
    that found an index out of range (the steps after it do not run). `timed`: it also reads the CPU's
    cycle counter before the first step and after each, into an array `i64* <name>_cycles()` returns
    (steps + 1 counts of the last call), and `i64 <name>_clock()` reads the counter (step_clock.py)."""
    fn = ir.Function(module, ir.FunctionType(I64, [I8P.as_pointer(), I64.as_pointer(), F64.as_pointer()]), name)
    # Straight-line calls whose work is in the kernels: optimizing a graph-sized function costs seconds
    # of compile time and saves nothing measurable.
    fn.attributes.add("noinline")
    fn.attributes.add("optnone")
    bases_p, plan_p, scalars_p = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    width = max([len(s.outputs) + len(s.tensors) for s in layout.steps if isinstance(s, KernelStep)] + [1])
    emit = _Emitter(module, fn, b, layout, bases_p, plan_p, scalars_p,
                    [b.alloca(I8P, I64(width)) for _ in range(2)], kernels)
    templates = {KernelStep: emit.kernel, GemmStep: emit.gemm, WindowStep: emit.window, CatStep: emit.cat,
                 GatherStep: emit.gather, ScatterStep: emit.scatter, ReduceStep: emit.reduce,
                 RecurrentStep: emit.recurrent, FillStep: emit.fill, RecurrentBackwardStep: emit.recurrent_backward,
                 EmbedStep: emit.embed, DrawStep: lambda step: None,  # (draws: filled before the call)
                 UpdateStep: emit.update, PoolIndicesStep: emit.pool_indices, ColumnsStep: emit.columns,
                 PoolBackwardStep: emit.pool_backward}
    stamp = _cycle_stamps(module, name, len(layout.steps)) if timed else lambda b, i: None
    stamp(b, 0)
    for number, step in enumerate(layout.steps):
        emit.number = number
        templates[type(step)](step)
        stamp(emit.b, number + 1)
    emit.b.ret(I64(0))


def _cycle_stamps(module: ir.Module, name: str, steps: int):
    """A timed entry's counts (`build_entry`): the array, its accessor and the clock; returns
    `stamp(b, i)`, which stores the counter's value at i."""
    clock = module.declare_intrinsic("llvm.readcyclecounter", (), ir.FunctionType(I64, []))
    counts = ir.GlobalVariable(module, ir.ArrayType(I64, steps + 1), f"{name}_counts")
    counts.linkage, counts.initializer, counts.align = "internal", ir.Constant(counts.type.pointee, None), 64
    at = ir.Function(module, ir.FunctionType(I64.as_pointer(), []), f"{name}_cycles")
    b = ir.IRBuilder(at.append_basic_block("entry"))
    b.ret(b.gep(counts, [I64(0), I64(0)]))
    now = ir.Function(module, ir.FunctionType(I64, []), f"{name}_clock")
    b = ir.IRBuilder(now.append_basic_block("entry"))
    b.ret(b.call(clock, []))
    return lambda b, i: b.store(b.call(clock, []), b.gep(counts, [I64(0), I64(i)]))


class _Emitter:
    def __init__(self, module, fn, b, layout, bases_p, plan_p, scalars_p, ptrs, kernels):
        self.module, self.fn, self.b, self.layout, self.kernels = module, fn, b, layout, kernels
        self.bases_p, self.plan_p, self.scalars_p = bases_p, plan_p, scalars_p
        self.ptrs, self.ptrs2 = ptrs  # the kernels' pointer arrays, and the second halves' of split kernels

    def plan(self, slot: int):
        return self.b.load(self.b.gep(self.plan_p, [I64(slot)]))

    def pointer(self, value: str):
        """The address of a tensor value: its root's base, plus the arena offset for arena roots, plus
        a view's offset from its root's start."""
        root = self.layout.address(value)
        b = self.b
        pointer = b.load(b.gep(self.bases_p, [I64(root.base)]))
        if root.slot is not None:
            pointer = b.gep(pointer, [self.plan(root.slot)])
        start = self.layout.start_slot(value)
        return pointer if start is None else b.gep(pointer, [self.plan(start)])

    def kernel(self, step: KernelStep) -> None:
        b = self.b
        arrays = step.outputs + step.tensors
        ptrs = self.ptrs
        for k, v in enumerate(arrays):
            b.store(self.pointer(v), b.gep(ptrs, [I64(k)]))
        sizes = b.gep(self.plan_p, [I64(step.sizes)])
        strides = b.gep(self.plan_p, [I64(step.sizes + step.rank)])
        scalars = b.gep(self.scalars_p, [I64(step.first_scalar)])
        kernel = self.kernels[step.node]
        at, rank = step.split, step.rank
        with b.if_else(b.icmp_signed("!=", self.plan(at), I64(0))) as (split, whole):
            with split:  # big enough for two threads (the plan says): halves on the library's worker
                for k in range(len(arrays)):
                    second = b.gep(b.load(b.gep(ptrs, [I64(k)])), [self.plan(at + 1 + 2 * rank + k)])
                    b.store(second, b.gep(self.ptrs2, [I64(k)]))
                halves = [b.gep(self.plan_p, [I64(at + 1 + h * rank)]) for h in (0, 1)]
                b.call(library.declare(self.module, "tscript_parallel2"),
                       [b.bitcast(kernel, I8P), halves[0], b.bitcast(ptrs, I8P), halves[1],
                        b.bitcast(self.ptrs2, I8P), strides, scalars])
            with whole:
                b.call(kernel, [sizes, ptrs, strides, scalars])

    def gemm(self, step: GemmStep) -> None:
        b = self.b
        fn = _batched_function(self.module, _product_function(self.module, step.function, step.small_m, step.split_min))
        bias = self.pointer(step.bias) if step.bias is not None else ir.Constant(I8P, None)
        pack = b.gep(b.load(self.bases_p), [self.plan(step.dims + GEMM_SLOTS.index("pack"))])
        b.call(fn, [b.gep(self.plan_p, [I64(step.dims)]), self.pointer(step.a), self.pointer(step.b),
                    self.pointer(step.out), bias, pack])


    def embed(self, step: EmbedStep) -> None:
        b = self.b
        b.call(_helper(self.module, "tscript_embed", 3, _embed_body),
               [b.gep(self.plan_p, [I64(step.dims)]), *(self.pointer(v) for v in (step.source, step.src, step.out))])

    def fill(self, step: FillStep) -> None:
        b = self.b
        b.call(_helper(self.module, "tscript_fill", 1, _fill_body),
               [b.gep(self.plan_p, [I64(step.dims)]), self.pointer(step.out)])

    def recurrent_backward(self, step: RecurrentBackwardStep) -> None:
        b = self.b
        product = _product_function(self.module, step.function, step.small_m, step.split_min)
        fn = backward_function(self.module, step.cell, FLOATS[step.function], product)
        arena = b.load(self.bases_p)
        scratch, pack = (b.gep(arena, [self.plan(step.dims + BACKWARD_SLOTS.index(n))]) for n in ("scratch", "pack"))
        null = ir.Constant(I8P, None)
        inputs = [self.pointer(v) if v is not None else null for v in step.inputs.values()]
        outs = [self.pointer(v) for v in step.outs] + [null] * (3 - len(step.outs))
        b.call(fn, [b.gep(self.plan_p, [I64(step.dims)]), *inputs, *outs, scratch, pack])

    def recurrent(self, step: RecurrentStep) -> None:
        b = self.b
        fn = recurrent_function(self.module, step.cell, FLOATS[step.function])
        scratch = b.gep(b.load(self.bases_p), [self.plan(step.dims + RECURRENT_SLOTS.index("scratch"))])
        null = ir.Constant(I8P, None)
        pointers = [self.pointer(v) if v is not None else null
                    for v in (step.gates, step.h0, step.c0, step.weight, step.bias, step.hs, step.c)]
        b.call(fn, [b.gep(self.plan_p, [I64(step.dims)]), *pointers, scratch])

    def cat(self, step: CatStep) -> None:
        """Each input's rows into their places in the output's rows; from CAT_SPLIT bytes, the (row,
        input) pieces in two halves on two threads."""
        b = self.b
        pointers = [self.pointer(step.out)] + [self.pointer(v) for v in step.inputs]
        ptrs = b.bitcast(stack(b, I8P, [b.bitcast(p, I8P) for p in pointers]), I8P)
        dims = b.gep(self.plan_p, [I64(step.dims)])
        rows, row = self.plan(step.dims), self.plan(step.dims + 1)
        pieces = b.mul(rows, I64(len(step.inputs)))
        part = _cat_part(self.module, len(step.inputs))
        null = ir.Constant(F64.as_pointer(), None)
        with b.if_else(b.and_(b.icmp_signed(">=", b.mul(rows, row), I64(CAT_SPLIT)), b.icmp_signed(">=", pieces, I64(2)))) \
                as (halves, whole):
            with halves:
                cut = b.sdiv(pieces, I64(2))
                b.call(library.declare(self.module, "tscript_parallel2"),
                       [b.bitcast(part, I8P), stack(b, I64, [I64(0), cut]), ptrs, stack(b, I64, [cut, pieces]), ptrs,
                        dims, null])
            with whole:
                b.call(part, [stack(b, I64, [I64(0), pieces]), ptrs, dims, null])

    def gather(self, step: GatherStep) -> None:
        self._indexed(_helper(self.module, f"tscript_{step.kind[6:]}", 3, _gather_body(step.kind)),
                      step, [step.source, step.index, step.out])

    def scatter(self, step: ScatterStep) -> None:
        self._indexed(_helper(self.module, f"tscript_{step.kind[6:]}_{step.function}", 4,
                              _scatter_body(step.kind, ir.FloatType() if step.function == "f32" else F64)),
                      step, [step.source, step.index, step.src, step.out])

    def _indexed(self, helper: ir.Function, step, values: list) -> None:
        """Call an indexing helper; when it finds an index out of range, return this step's number."""
        b = self.b
        status = b.call(helper, [b.gep(self.plan_p, [I64(step.dims)]), *(self.pointer(v) for v in values)])
        with b.if_then(b.icmp_signed("!=", status, I64(0)), likely=False):
            b.ret(I64(self.number + 1))

    def reduce(self, step: ReduceStep) -> None:
        b = self.b
        fty = ir.FloatType() if step.function == "f32" else F64
        helper = _helper(self.module, f"tscript_reduce_{step.function}", 2, lambda b, fn, d, ptrs: _reduce_body(
            b, fn, d, [b.bitcast(p, fty.as_pointer()) for p in ptrs], fty))
        args = [b.gep(self.plan_p, [I64(step.dims)]), self.pointer(step.source), self.pointer(step.out)]
        general = b.or_(b.icmp_signed("!=", self.plan(step.dims + REDUCE_SLOTS.index("reduced2")), I64(1)),
                        b.icmp_signed("!=", self.plan(step.dims + REDUCE_SLOTS.index("variance")), I64(0)))
        with b.if_else(general) as (statistic, adjacent):
            with statistic:  # two runs of reduced dims, or a variance
                b.call(_helper(self.module, f"tscript_statistic_{step.function}", 2,
                               batch_steps.statistic_body(fty)), args)
            with adjacent:
                b.call(helper, args)

    def update(self, step: UpdateStep) -> None:
        b = self.b
        dims = b.gep(self.plan_p, [I64(step.dims)])
        if step.kind == "aten::copy_":
            b.call(_helper(self.module, "tscript_copy", 2, batch_steps.copy_body),
                   [dims, self.pointer(step.target), self.pointer(step.source)])
        else:
            b.call(_helper(self.module, "tscript_add_scalar", 1, batch_steps.update_body),
                   [dims, self.pointer(step.target)])

    def pool_indices(self, step: PoolIndicesStep) -> None:
        b = self.b
        fty = ir.FloatType() if step.function == "f32" else F64
        b.call(_helper(self.module, f"tscript_max_pool2d_indices_{step.function}", 3,
                       batch_steps.pool_indices_body(fty)),
               [b.gep(self.plan_p, [I64(step.dims)]), *(self.pointer(v) for v in (step.out, step.indices, step.input))])

    def pool_backward(self, step: PoolBackwardStep) -> None:
        b = self.b
        fty = ir.FloatType() if step.function == "f32" else F64
        b.call(_helper(self.module, f"tscript_max_pool2d_backward_{step.function}", 3,
                       batch_steps.pool_backward_body(fty)),
               [b.gep(self.plan_p, [I64(step.dims)]), *(self.pointer(v) for v in (step.out, step.grad, step.input))])

    def columns(self, step: ColumnsStep) -> None:
        b = self.b
        fty = ir.FloatType() if step.function == "f32" else F64
        im2col = step.kind in IM2COLS
        body = batch_steps.im2col_body(step.function) if im2col else batch_steps.col2im_body(fty)
        b.call(_helper(self.module, f"tscript_step_{'im2col' if im2col else 'col2im'}_{step.function}", 2, body),
               [b.gep(self.plan_p, [I64(step.dims)]), self.pointer(step.input), self.pointer(step.out)])

    def window(self, step: WindowStep) -> None:
        b = self.b
        dims = b.gep(self.plan_p, [I64(step.dims)])
        dtype = np.dtype(np.float32 if step.function.endswith("f32") else np.float64)
        if step.kind not in CONVS:
            fn = _avg_pool_function(self.module, dtype) if step.kind in AVG_POOLS else \
                library.declare(self.module, f"tscript_max_pool2d_{_suffix(dtype)}")
            _pool(self.module, b, fn, step.kind in AVG_POOLS, dims, [self.pointer(v) for v in (step.input, step.out)])
            return
        if step.kind == "aten::conv_transpose2d":
            fn, slots = conv_transpose_function(self.module, dtype), CONVT_SLOTS
        else:
            fn, slots = _conv_function(self.module, step.function, dtype, step.small_m, step.direct), CONV_SLOTS
        arena = b.load(self.bases_p)
        scratch = [b.gep(arena, [self.plan(step.dims + slots.index(n))]) for n in ("scratch", "pack") if n in slots]
        bias = self.pointer(step.bias) if step.bias is not None else ir.Constant(I8P, None)
        args = [dims, self.pointer(step.input), self.pointer(step.weight), bias, self.pointer(step.out), *scratch]
        if step.kind != "aten::conv_transpose2d":
            args += self._epilogue(step, dtype, args[3:5])
        b.call(fn, args)

    def _epilogue(self, step: WindowStep, dtype, bias_out: list) -> list:
        """(epilogue function, its context) for a convolution step: null for a plain convolution, else the
        ConvGroup's pointwise ops (native/conv_epilogue.py), their context on the stack."""
        null = ir.Constant(I8P, None)
        if step.epilogue is None:
            return [null, null]
        b = self.b
        fn = epilogue_function(self.module, dtype, step.epilogue)
        bias, out = bias_out
        context = stack(b, I8P, [out, bias, b.bitcast(b.gep(self.plan_p, [I64(step.dims)]), I8P),
                                  *(self.pointer(v) for v in step.extras)])
        return [b.bitcast(fn, I8P), b.bitcast(context, I8P)]


def _index(b: ir.IRBuilder, index, d: dict, i):
    """Element i of an int64 or int32 index (`index_bytes` in the plan says which), as i64. Only the
    load of the index's own width runs: the other could read past the end of an int32 index."""
    with b.if_else(b.icmp_signed("==", d["index_bytes"], I64(8))) as (wide, narrow):
        with wide:
            long, long_block = b.load(b.gep(b.bitcast(index, I64.as_pointer()), [i])), b.block
        with narrow:
            int_, int_block = b.sext(b.load(b.gep(b.bitcast(index, I32.as_pointer()), [i])), I64), b.block
    value = b.phi(I64)
    value.add_incoming(long, long_block)
    value.add_incoming(int_, int_block)
    return value


def _wrapped(b: ir.IRBuilder, picked, n):
    """A Python-style index: negative ones count from the end."""
    return b.select(b.icmp_signed("<", picked, I64(0)), b.add(picked, n), picked)


def _conv_function(module: ir.Module, function: str, dtype, small_m: int, direct: bool | None = None) -> ir.Function:
    """`void <function>_<small_m>(i64* dims, i8* x, i8* w, i8* bias, i8* out, i8* col, i8* pack, i8* epilogue,
    i8* context)`, once per module: one input channel per group (depthwise) by the kernel library's direct kernel; one
    group, stride 1 and enough taps and work (library.direct_conv.uses_direct) by the library's direct
    stride-1 kernel; one group and several small images (library.conv.images_per_gemm) by `_conv_batched`; else per image
    and per group of channels, `out` rows = bias, then out (O, L) += W (O, K) @ col (CONV_SLOTS at dims:
    C and O count one group's channels): float32 on hosts with the packed GEMM by the implicit-im2col
    GEMM, which packs col straight from the image (`_packs_from_image`: where it measured faster);
    else im2col into `col` (K, L) (a 1x1 stride-1 unpadded convolution reads the image itself), then
    `_conv_product` (float32: the kernel library's GEMMs, the packed one's panels in `pack`; float64:
    BLAS). An `epilogue` (native/conv_epilogue.py; null: none) adds the bias instead and runs on every
    finished block of the output (inside the packed GEMMs and the depthwise kernel, while the block is
    in cache; after the product or the copy elsewhere). `direct` (WindowStep.direct): True or False,
    the function has only the depthwise or only the columns path, named so (`_direct` / `_columns`)."""
    name = f"{function}_{small_m}" + {None: "", True: "_direct", False: "_columns"}[direct]
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer()] + [I8P] * 8), name)
    fn.linkage = "internal"
    dims_p, x8, w8, bias8, out8, col8, pack8, epilogue, context = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    null = ir.Constant(I8P, None)
    bias8 = b.select(b.icmp_unsigned("!=", epilogue, null), null, bias8)  # (the epilogue adds it)
    finish = (epilogue, context)
    slot = {s: b.load(b.gep(dims_p, [I64(i)])) for i, s in enumerate(CONV_SLOTS) if s != "pack"}
    fty = ir.FloatType() if dtype == np.float32 else F64
    fp = fty.as_pointer()
    x, w, bias, out, col = (b.bitcast(p, fp) for p in (x8, w8, bias8, out8, col8))
    o, k, length = slot["O"], slot["K"], slot["L"]
    group_in, group_out = b.mul(b.mul(slot["C"], slot["H"]), slot["W"]), b.mul(o, length)
    has_bias = b.icmp_unsigned("!=", bias8, ir.Constant(I8P, None))
    def planes():
        _depthwise(module, b, dtype, dims_p, [x8, w8, bias8, out8, col8, *finish], slot)

    def columns():
        if implicit_columns(dtype):
            with b.if_else(direct_condition(b, slot)) as (direct, products):
                with direct:
                    b.call(library.declare(module, DIRECT), [dims_p, x, w, bias, out, pack8, *finish])
                with products:
                    products_of()
        else:
            products_of()

    def products_of():
        images = _images_per_gemm(b, slot)
        with b.if_else(b.icmp_signed(">", images, I64(1))) as (batched, single):
            with batched:
                _conv_batched(module, fn, b, dtype, small_m, slot, images,
                              [dims_p, x, w, bias, has_bias, out, col, pack8, finish])
            with single:
                with counted(b, fn, I64(0), b.mul(slot["N"], slot["G"]), 1, "group") as ng:  # image n, group g
                    g = b.srem(ng, slot["G"])
                    args = [dims_p, b.gep(x, [b.mul(ng, group_in)]), b.gep(w, [b.mul(b.mul(g, o), k)]),
                            b.gep(bias, [b.mul(g, o)]), has_bias, b.gep(out, [b.mul(ng, group_out)]), col,
                            pack8, finish]
                    _conv_group(module, fn, b, dtype, small_m, slot, args)
    with b.if_then(b.icmp_signed(">", group_out, I64(0))):
        if direct is None:
            with b.if_else(b.icmp_signed("==", slot["C"], I64(1))) as (one_channel, several):
                with one_channel:
                    planes()
                with several:
                    columns()
        else:
            (planes if direct else columns)()
    b.ret_void()
    return fn


def _images_per_gemm(b: ir.IRBuilder, slot: dict):
    """library.conv.images_per_gemm in IR (the planner sized the scratch by it)."""
    from .library.conv import BATCH_COLUMNS
    length = b.select(b.icmp_signed(">", slot["L"], I64(1)), slot["L"], I64(1))
    fits = b.sdiv(I64(BATCH_COLUMNS), length)
    many = functools.reduce(b.and_, [b.icmp_signed("==", slot["G"], I64(1)), b.icmp_signed(">", slot["N"], I64(1)),
                                     b.icmp_signed("<=", b.mul(length, I64(2)), I64(BATCH_COLUMNS))])
    return b.select(many, smin(b, slot["N"], fits), I64(1))


def _conv_batched(module, fn, b: ir.IRBuilder, dtype, small_m: int, slot: dict, images, args: list) -> None:
    """A one-group convolution of small images, `images` at a time: their im2col columns side by side
    in `col` (K, images*L) (or none: packed from the images), one GEMM into the scratch after them
    (O, images*L) whose every finished block goes to its images' places in `out` plus the bias, then
    through the epilogue (`_spread_function`; `finish`: the epilogue's function and context, or null)
    while it is in cache, on the thread that computed it (small late layers: one GEMM of many columns
    instead of one per image, whose edge panels waste much of the micro-kernel)."""
    dims_p, x, w, bias, has_bias, out, col, pack, finish = args
    o, k, length = slot["O"], slot["K"], slot["L"]
    image_in, image_out = b.mul(b.mul(slot["C"], slot["H"]), slot["W"]), b.mul(o, length)
    implicit = _packs_from_image(b, dtype, slot, b.mul(images, length), batched=True)  # (no columns: the product is all there is)
    product = b.select(implicit, col, b.gep(col, [b.mul(b.mul(k, images), length)]))
    im2col = library.declare(module, f"tscript_im2col_ld_{_suffix(dtype)}")
    null = ir.Constant(I8P, None)
    context = stack(b, I8P, [b.bitcast(product, I8P), null, b.select(has_bias, b.bitcast(bias, I8P), null),
                             *finish, b.bitcast(dims_p, I8P)])
    spread = (b.bitcast(_spread_function(module, dtype), I8P), b.bitcast(context, I8P))
    chunks = b.sdiv(b.add(slot["N"], b.sub(images, I64(1))), images)
    with counted(b, fn, I64(0), chunks, 1, "images") as chunk:
        first = b.mul(chunk, images)
        count = smin(b, images, b.sub(slot["N"], first))
        ld = b.mul(count, length)
        b.store(b.bitcast(b.gep(out, [b.mul(first, image_out)]), I8P), b.gep(context, [I64(1)]))
        with b.if_else(implicit) as (taps, columns):
            with taps:
                if dtype == np.float32:
                    _implicit_product(module, b, [o, ld, k, w, dims_p, b.gep(x, [b.mul(first, image_in)]), image_in,
                                                  product], I1(0), pack, spread)
            with columns:
                with counted(b, fn, I64(0), count, 1, "columns") as i:
                    b.call(im2col, [dims_p, b.gep(x, [b.mul(b.add(first, i), image_in)]),
                                    b.gep(col, [b.mul(i, length)]), ld])
                _conv_product(module, b, dtype, small_m, [o, ld, k, w, col, ld, product, ld], I1(0), pack, spread)


def _spread_function(module: ir.Module, dtype) -> ir.Function:
    """`void tscript_conv_spread_<f32|f64>(i8** context, T* c, i64 rows, i64 cols, i64 ldc)`, once per
    module, the epilogue of `_conv_batched`'s GEMM: the rows x cols block at c of the product (O,
    images*L) to its places in the chunk's output images (O, L) each, plus the bias, each piece then
    through the convolution's epilogue. `context`: {the product, the chunk's first output image, the
    bias or null, the epilogue or null, its context, the CONV_SLOTS}."""
    name = f"tscript_conv_spread_{_suffix(dtype)}"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fty = ir.FloatType() if dtype == np.float32 else F64
    fp = fty.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P, fp, I64, I64, I64]), name)
    fn.linkage = "internal"
    context8, c, rows, cols, ldc = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    context = b.bitcast(context8, I8P.as_pointer())
    product, images, bias8, epilogue, epilogue_context, dims8 = (b.load(b.gep(context, [I64(i)])) for i in range(6))
    product, images, bias = (b.bitcast(p, fp) for p in (product, images, bias8))
    dims = b.bitcast(dims8, I64.as_pointer())
    o, length = (b.load(b.gep(dims, [I64(CONV_SLOTS.index(s))])) for s in ("O", "L"))
    has_bias = b.icmp_unsigned("!=", bias8, ir.Constant(I8P, None))
    at = b.sub(b.ptrtoint(c, I64), b.ptrtoint(product, I64))
    at = b.sdiv(at, I64(np.dtype(dtype).itemsize))
    row0, col0 = b.sdiv(at, ldc), b.srem(at, ldc)
    end = b.add(col0, cols)
    with counted(b, fn, I64(0), rows, 1, "row") as r:
        channel, source = b.add(row0, r), b.gep(c, [b.mul(r, ldc)])
        start = bias_of(b, has_bias, bias, channel, fty)
        with counted(b, fn, b.sdiv(col0, length), b.add(b.sdiv(b.sub(end, I64(1)), length), I64(1)), 1, "image") as image:
            lo = smax(b, col0, b.mul(image, length))
            hi = smin(b, end, b.mul(b.add(image, I64(1)), length))
            dst = b.gep(images, [b.add(b.mul(b.add(b.mul(image, o), channel), length), b.sub(lo, b.mul(image, length)))])
            src = b.gep(source, [b.sub(lo, col0)])
            with counted(b, fn, I64(0), b.sub(hi, lo), 1, "copy") as t:
                b.store(b.fadd(b.load(b.gep(src, [t], inbounds=True)), start), b.gep(dst, [t], inbounds=True))
            _finish(b, (epilogue, epilogue_context), dst, I64(1), b.sub(hi, lo))
    b.ret_void()
    return fn


def _depthwise(module: ir.Module, b: ir.IRBuilder, dtype, dims_p, pointers: list, slot: dict) -> None:
    """All N*G*O output planes of a convolution with one input channel per group by the library's
    direct kernel (`pointers`: x, w, bias, out and its scratch); with DEPTHWISE_SPLIT multiply-adds or
    more, its two halves of planes at once, each in its half of the scratch."""
    kernel = library.declare(module, f"tscript_depthwise2d_scratch_{_suffix(dtype)}")
    planes = b.mul(b.mul(slot["N"], slot["G"]), slot["O"])
    ptrs = b.bitcast(stack(b, I8P, pointers), I8P)
    null = ir.Constant(F64.as_pointer(), None)
    work = b.mul(b.mul(planes, slot["L"]), slot["K"])
    with b.if_else(b.and_(b.icmp_signed(">=", work, I64(DEPTHWISE_SPLIT)), b.icmp_signed(">=", planes, I64(2)))) \
            as (halves, whole):
        with halves:  # both halves claim chunks of all the planes through one shared counter
            shared = b.ptrtoint(stack(b, I64, [I64(0)]), I64)
            first, second = (stack(b, I64, [I64(0), planes, I64(part), shared]) for part in (0, 1))
            b.call(library.declare(module, "tscript_parallel2"),
                   [b.bitcast(kernel, I8P), first, ptrs, second, ptrs, dims_p, null])
        with whole:
            b.call(kernel, [stack(b, I64, [I64(0), planes, I64(0), I64(0)]), ptrs, dims_p, null])


def _conv_group(module, fn, b: ir.IRBuilder, dtype, small_m: int, slot: dict, args: list) -> None:
    """One image's convolution for one group of channels: bias rows, then the GEMM (with the epilogue
    `finish`, or null) packing its columns from the image (`_packs_from_image`), or after im2col (a 1x1
    stride-1 unpadded convolution's columns are the image itself)."""
    dims_p, x, w, bias, has_bias, out, col, pack, finish = args
    o, k, length = slot["O"], slot["K"], slot["L"]
    pointwise = _pointwise(b, slot)
    with b.if_then(has_bias):
        with counted(b, fn, I64(0), o, 1, "channel") as c:
            value = b.load(b.gep(bias, [c]))
            row = b.gep(out, [b.mul(c, length)])
            with counted(b, fn, I64(0), length, 1, "fill") as i:
                b.store(value, b.gep(row, [i], inbounds=True))
    with b.if_else(_packs_from_image(b, dtype, slot, length)) as (taps, columns):
        with taps:
            if dtype == np.float32:
                image = b.mul(b.mul(slot["C"], slot["H"]), slot["W"])
                _implicit_product(module, b, [o, length, k, w, dims_p, x, image, out], has_bias, pack, finish)
        with columns:
            with b.if_then(b.not_(pointwise)):
                _im2col(module, b, dtype, slot, [dims_p, x, col])
            col = b.select(pointwise, x, col)
            _conv_product(module, b, dtype, small_m, [o, length, k, w, col, length, out, length], has_bias, pack,
                          finish)


def _packs_from_image(b: ir.IRBuilder, dtype, slot: dict, columns, batched: bool = False):
    """library.conv's implicit_columns and packs_from_image in IR (the planner sized the scratch by them):
    does the product of `columns` columns (`batched`: of several images) pack them straight from the image?"""
    from .library.conv import implicit_columns
    if not implicit_columns(dtype):
        return I1(0)
    wide = b.or_(b.icmp_signed("==", slot["sw"], I64(1)), b.icmp_signed(">=", columns, slot["O"]))
    return wide if batched else b.and_(b.not_(_pointwise(b, slot)), wide)


def _implicit_product(module, b: ir.IRBuilder, args: list, accumulate, pack, finish: tuple | None = None) -> None:
    """C (M, N) (+)= W (M, K) @ the im2col columns of the images at x, never written out: the kernel
    library's packed GEMM packing them straight from the images (`args`: M, N, K, W, the geometry,
    x, the distance between x's images, C, its rows N apart; `accumulate`: i1; `finish`: an epilogue
    and its context, run on each finished block of C)."""
    m, n, k, w, geo, x, image, out = args
    null = ir.Constant(I8P, None)
    beta = b.select(accumulate, ir.FloatType()(1.0), ir.FloatType()(0.0))
    b.call(library.declare(module, "tscript_sgemm_conv_f32"),
           [m, n, k, w, k, geo, x, image, beta, out, n, b.bitcast(pack, ir.FloatType().as_pointer()),
            *(finish or (null, null))])


def _finish(b: ir.IRBuilder, finish: tuple, c, rows, cols) -> None:
    """The epilogue (`finish`: its function and context; a null function: none) on C's rows x cols
    block at `c` (rows `cols` apart)."""
    epilogue, context = finish
    with b.if_then(b.icmp_unsigned("!=", epilogue, ir.Constant(I8P, None))):
        fty = c.type.pointee
        ftype = ir.FunctionType(ir.VoidType(), [I8P, fty.as_pointer(), I64, I64, I64])
        b.call(b.bitcast(epilogue, ftype.as_pointer()), [context, c, rows, cols, cols])


def _conv_product(module, b: ir.IRBuilder, dtype, small_m: int, args: list, accumulate, pack,
                  finish: tuple | None = None) -> None:
    """C (M, N) (+)= W (M, K) @ B (K, N), all row-major (`args`: M, N, K, W, B, ldb, C, ldc; `accumulate`:
    i1): float32 by the kernel library, few rows (3..small_m, under PACKED_FROM on hosts with the
    packed GEMM) by its register-blocked GEMM (column halves on two threads when big enough), more
    by the packed GEMM (which splits itself), or by BLAS where the packed GEMM is not tuned for the CPU;
    float64 by BLAS. `finish` (an epilogue and its context, C's rows ldc == N apart): the packed GEMM
    runs it on each finished block, the others on all of C after the product."""
    from .library.conv import PACKED_FROM
    m, n, k, w, col, ldb, out, ldc = args
    fty = ir.FloatType() if dtype == np.float32 else F64
    gemm = blas_function(module, "cblas_sgemm" if dtype == np.float32 else "cblas_dgemm", fty)
    beta = b.select(accumulate, fty(1.0), fty(0.0))
    blas = [I32(ROW_MAJOR), I32(NO_TRANS), I32(NO_TRANS), m, n, k, fty(1.0), w, k, col, ldb, beta, out, ldc]
    null = ir.Constant(I8P, None)
    finish = finish or (null, null)
    if dtype != np.float32:
        b.call(gemm, blas)
        _finish(b, finish, out, m, n)
        return
    packed = packed_gemm_here()
    most = min(small_m, PACKED_FROM - 1) if packed else small_m
    few = b.and_(b.icmp_signed(">=", m, I64(3)), b.icmp_signed("<=", m, I64(most))) if most >= 3 else I1(0)
    with b.if_else(few) as (ours, theirs):  # few output channels (small CNNs): the library's GEMM, no BLAS threads
        with ours:
            _small_gemm(module, b, "tscript_gemm_nn_f32", [w, col, out, m, n, k, k, ldb, ldc, accumulate], CONV_SPLIT)
            _finish(b, finish, out, m, n)
        with theirs:
            if packed:
                b.call(library.declare(module, "tscript_sgemm_epilogue_f32"),
                       [I32(NO_TRANS), I32(NO_TRANS), m, n, k, w, k, col, ldb, beta, out, ldc,
                        b.bitcast(pack, fty.as_pointer()), *finish])
            else:
                b.call(gemm, blas)
                _finish(b, finish, out, m, n)


def _im2col(module, b: ir.IRBuilder, dtype, slot: dict, args: list) -> None:
    """One image's im2col columns (`args`: dims, x, col); with IM2COL_SPLIT elements or more, its two
    halves of input channels at once (the library's worker writes the second's rows)."""
    dims_p, x, col = args
    elements = b.mul(slot["K"], slot["L"])
    with b.if_else(b.and_(b.icmp_signed(">=", elements, I64(IM2COL_SPLIT)), b.icmp_signed(">=", slot["C"], I64(2)))) \
            as (halves, whole):
        with halves:
            part = library.declare(module, f"tscript_im2col_part_{_suffix(dtype)}")
            cut = b.sdiv(slot["C"], I64(2))
            ptrs = b.bitcast(stack(b, I8P, [b.bitcast(x, I8P), b.bitcast(col, I8P)]), I8P)
            b.call(library.declare(module, "tscript_parallel2"),
                   [b.bitcast(part, I8P), stack(b, I64, [I64(0), cut]), ptrs, stack(b, I64, [cut, slot["C"]]), ptrs,
                    dims_p, ir.Constant(F64.as_pointer(), None)])
        with whole:
            b.call(library.declare(module, f"tscript_im2col_{_suffix(dtype)}"), args)


def _pointwise(b: ir.IRBuilder, slot: dict):
    """Is the convolution 1x1, stride 1, unpadded (its im2col columns are its input as it is)?"""
    tests = [b.icmp_signed("==", slot[s], I64(1 if s[0] in "ks" else 0)) for s in ("kh", "kw", "sh", "sw", "ph", "pw")]
    return functools.reduce(b.and_, tests)


def _cat_part(module: ir.Module, inputs: int) -> ir.Function:
    """`void tscript_cat<inputs>_part(i64* [first, end), i8* [out, inputs...], i64* dims, double*)`: the
    pieces first..end of a cat of `inputs` inputs (piece p: row p // inputs of input p % inputs; the
    step's slots at dims: rows, an output row's bytes, then each input's offset in it and bytes), in the
    kernel ABI tscript_parallel2 runs."""
    fn, new = kernel_abi(module, f"tscript_cat{inputs}_part")
    if not new:
        return fn
    fn.linkage = "internal"
    span, ptrs8, dims, _ = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ptrs = b.bitcast(ptrs8, I8P.as_pointer())
    table = ir.ArrayType(I8P, inputs)
    sources = b.alloca(table)  # (input k's pointer, offset and bytes, looked up by k)
    offsets, sizes = b.alloca(ir.ArrayType(I64, inputs)), b.alloca(ir.ArrayType(I64, inputs))
    for k in range(inputs):
        b.store(b.load(b.gep(ptrs, [I64(k + 1)])), b.gep(sources, [I64(0), I64(k)]))
        b.store(b.load(b.gep(dims, [I64(2 + 2 * k)])), b.gep(offsets, [I64(0), I64(k)]))
        b.store(b.load(b.gep(dims, [I64(3 + 2 * k)])), b.gep(sizes, [I64(0), I64(k)]))
    out, row = b.load(ptrs), b.load(b.gep(dims, [I64(1)]))
    memcpy = module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
    with counted(b, fn, b.load(span), b.load(b.gep(span, [I64(1)])), 1, "piece") as p:
        r, k = b.sdiv(p, I64(inputs)), b.srem(p, I64(inputs))
        size = b.load(b.gep(sizes, [I64(0), k]))
        dst = b.gep(out, [b.add(b.mul(r, row), b.load(b.gep(offsets, [I64(0), k])))])
        b.call(memcpy, [dst, b.gep(b.load(b.gep(sources, [I64(0), k])), [b.mul(r, size)]), size,
                        ir.IntType(1)(0)])
    b.ret_void()
    return fn


def _pool(module: ir.Module, b: ir.IRBuilder, pool: ir.Function, average: bool, dims, pointers: list) -> None:
    """A pooling `pool(dims, x, y)` (GEOMETRY or, `average`, AVG_SLOTS at dims; its planes first) over
    all its planes: from POOL_SPLIT input values, its two halves of planes at once."""
    slots = AVG_SLOTS if average else GEOMETRY
    d = _slots(b, dims, slots)
    planes = d[slots[0]]
    work = b.mul(planes, b.mul(d["H"], d["W"]))  # (the input's values, each read about once or a few times)
    part = _pool_part(module, pool, slots)
    array = stack(b, I8P, pointers)
    ptrs = b.bitcast(array, I8P)
    null = ir.Constant(F64.as_pointer(), None)
    with b.if_else(b.and_(b.icmp_signed(">=", work, I64(POOL_SPLIT)), b.icmp_signed(">=", planes, I64(2)))) \
            as (halves, whole):
        with halves:
            cut = b.sdiv(planes, I64(2))
            b.call(library.declare(module, "tscript_parallel2"),
                   [b.bitcast(part, I8P), stack(b, I64, [I64(0), cut]), ptrs, stack(b, I64, [cut, planes]), ptrs,
                    dims, null])
        with whole:
            b.call(part, [stack(b, I64, [I64(0), planes]), array, dims, null])


def _pool_part(module: ir.Module, pool: ir.Function, slots: tuple) -> ir.Function:
    """`void <pool>_part(i64* [first, end), i8** [x, y], i64* dims, double*)`: planes first..end of the
    pooling `pool` (its dims copied with end - first planes), in the kernel ABI tscript_parallel2 runs."""
    name = f"{pool.name}_part"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I8P.as_pointer(), I64.as_pointer(),
                                                             F64.as_pointer()]), name)
    fn.linkage = "internal"
    sizes, ptrs, dims, _ = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    d = _slots(b, dims, slots)
    first, end = b.load(sizes), b.load(b.gep(sizes, [I64(1)]))
    own = stack(b, I64, [b.sub(end, first)] + [d[s] for s in slots[1:]])
    fp = pool.args[1].type
    x, y = (b.bitcast(b.load(b.gep(ptrs, [I64(k)])), fp) for k in range(2))
    b.call(pool, [own, b.gep(x, [b.mul(first, b.mul(d["H"], d["W"]))]),
                  b.gep(y, [b.mul(first, b.mul(d["OH"], d["OW"]))])])
    b.ret_void()
    return fn


def _avg_pool_function(module: ir.Module, dtype) -> ir.Function:
    """`void tscript_avg_pool2d_<f32|f64>(i64* dims, T* x, T* y)`, once per module: each output the mean
    of its window (AVG_SLOTS at dims): PyTorch's adaptive windows [floor(i*H/OH), ceil((i+1)*H/OH)), or
    avg_pool2d's windows (zero padding), divided by the window's extent in the padded input
    (include_pad), its part inside the input, or the divisor given."""
    name = f"tscript_avg_pool2d_{_suffix(dtype)}"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fty = ir.FloatType() if dtype == np.float32 else F64
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), fty.as_pointer(), fty.as_pointer()]),
                     name)
    fn.linkage = "internal"
    dims_p, x, y = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    d = {s: b.load(b.gep(dims_p, [I64(i)])) for i, s in enumerate(AVG_SLOTS)}
    with counted(b, fn, I64(0), d["P"], 1, "plane") as p:
        x_p = b.gep(x, [b.mul(p, b.mul(d["H"], d["W"]))])
        with counted(b, fn, I64(0), d["OH"], 1, "row") as i:
            h0, h1, h_all = _window(b, d, i, "H", "OH", "kh", "sh", "ph")
            with counted(b, fn, I64(0), d["OW"], 1, "col") as j:
                w0, w1, w_all = _window(b, d, j, "W", "OW", "kw", "sw", "pw")
                total = _window_sum(b, fn, fty, x_p, d["W"], (h0, h1), (w0, w1))
                inside = b.mul(b.sub(h1, h0), b.sub(w1, w0))
                count = b.select(b.icmp_signed("!=", d["include_pad"], I64(0)), b.mul(h_all, w_all), inside)
                count = b.select(b.icmp_signed("!=", d["divisor"], I64(0)), d["divisor"], count)
                count = b.select(b.icmp_signed(">", count, I64(0)), count, I64(1))  # empty window: 0 / 1
                at = b.add(b.mul(b.add(b.mul(p, d["OH"]), i), d["OW"]), j)
                b.store(b.fdiv(total, b.sitofp(count, fty)), b.gep(y, [at]))
    b.ret_void()
    return fn


def _window(b: ir.IRBuilder, d: dict, i, size: str, out: str, k: str, s: str, p: str):
    """(first, end) of output i's window along one axis, clipped to the input, and its extent in the
    padded input (what count_include_pad divides by)."""
    adaptive = b.icmp_signed("!=", d["adaptive"], I64(0))
    n = d[size]
    a0 = b.sdiv(b.mul(i, n), d[out])
    a1 = b.sdiv(b.add(b.mul(b.add(i, I64(1)), n), b.sub(d[out], I64(1))), d[out])
    p0 = b.sub(b.mul(i, d[s]), d[p])
    p1 = smin(b, b.add(p0, d[k]), b.add(n, d[p]))
    start, end = b.select(adaptive, a0, p0), b.select(adaptive, a1, p1)
    first, last = smax(b, start, I64(0)), smin(b, end, n)
    return first, smax(b, last, first), b.sub(end, start)


def _window_sum(b: ir.IRBuilder, fn, fty, x, width, rows: tuple, cols: tuple):
    """The sum of x[h, w] over the window (rows and columns as [first, end)), in `fty`."""
    (h0, h1), (w0, w1) = rows, cols

    def row_sum(h, acc):
        row = b.gep(x, [b.mul(h, width)])
        (total,) = carried(b, fn, w0, w1, 1, "wcol", [fty(0.0)],
                           lambda w, a: [b.fadd(a[0], b.load(b.gep(row, [w], inbounds=True)), flags=REDUCE_FLAGS)])
        return [b.fadd(acc[0], total, flags=REDUCE_FLAGS)]
    return carried(b, fn, h0, h1, 1, "wrow", [fty(0.0)], row_sum)[0]




def _batched_function(module: ir.Module, product: ir.Function) -> ir.Function:
    """`void <product>_batched(i64* dims, i8* a, i8* b, i8* c, i8* bias, i8* pack)`, once per module: `product` for
    every index of the batch dims (GEMM_SLOTS' count, sizes and per-operand byte strides at dims)."""
    name = product.name + "_batched"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fn = ir.Function(module, product.ftype, name)
    fn.linkage = "internal"
    dims_p, a, bm, c, bias, pack = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    slot = {name: b.load(b.gep(dims_p, [I64(i)])) for i, name in enumerate(GEMM_SLOTS)}
    with counted(b, fn, I64(0), slot["count"], 1, "product") as i:
        index, offsets = i, [I64(0)] * 3
        for d in reversed(range(MAX_BATCH_RANK)):  # the batch index's digits, innermost first
            size = slot[f"size{d}"]
            digit, index = b.srem(index, size), b.sdiv(index, size)
            offsets = [b.add(o, b.mul(digit, slot[f"{x}_stride{d}"])) for o, x in zip(offsets, "abc")]
        b.call(product, [dims_p, *(b.gep(p, [o]) for p, o in zip((a, bm, c), offsets)), bias, pack])
    b.ret_void()
    return fn


def _product_function(module: ir.Module, function: str, small_m: int, split_min: int) -> ir.Function:
    """`void <function>_<small_m>_<split_min>(i64* dims, i8* a, i8* b, i8* c, i8* bias, i8* pack)`, once per
    module: C = op(A) @ op(B) (+ the bias rows, when `bias` is not null) with the call plan's GEMM_SLOTS
    at `dims`: float32 products of 3..small_m rows of a row-major A, or of fewer rows with at least
    `split_min` multiply-adds (split in column halves over two threads), by the kernel library's
    register-blocked GEMMs (also one row times a transposed B), other float32 products of several rows
    and columns by its packed GEMM (its panels in `pack`); other rows or columns by BLAS's GEMV; float64
    by BLAS."""
    name = f"{function}_{small_m}_{split_min}"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I8P, I8P, I8P, I8P, I8P]), name)
    fn.linkage = "internal"
    dims_p, a8, b8, c8, bias, pack = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ta, tb, m, n, k, lda, ldb, ldc, bias_rows = (b.load(b.gep(dims_p, [I64(i)])) for i in range(9))
    ta, tb = b.trunc(ta, I32), b.trunc(tb, I32)
    fty = FLOATS[function]
    size = I64(8 if fty == F64 else 4)
    with b.if_then(b.and_(b.icmp_signed(">", m, I64(0)), b.icmp_signed(">", n, I64(0)))):
        has_bias = b.icmp_unsigned("!=", bias, ir.Constant(I8P, None))
        a, bm, c = (b.bitcast(p, fty.as_pointer()) for p in (a8, b8, c8))
        packed = function == "cblas_sgemm" and packed_gemm_here()
        if function == "cblas_sgemm":
            row_nt = b.and_(b.icmp_signed("==", m, I64(1)), b.icmp_signed("==", tb, I32(TRANS)))
            few = b.and_(b.icmp_signed("<=", m, I64(small_m)),
                         b.or_(b.or_(b.icmp_signed(">=", m, I64(3)), _splits(b, m, n, k, split_min)), row_nt))
            long_k = b.and_(b.icmp_signed(">=", k, I64(LONG_K)), b.icmp_signed(">", m, I64(4)))
            few = b.and_(few, b.not_(long_k))  # (entry_plan._packed decides the same)
            library_gemm = b.and_(few, b.icmp_signed("==", ta, I32(NO_TRANS)))
        # the packed GEMM adds the bias to each finished block of C (in L1) rather than C being filled
        # with it first (a serial pass over C, which the GEMM then reads back)
        late_bias = I1(0) if not packed else b.and_(b.and_(has_bias, b.not_(library_gemm)), b.and_(
            b.icmp_signed(">", k, I64(0)), b.and_(b.icmp_signed(">", m, I64(1)), b.icmp_signed(">", n, I64(1)))))
        filled = b.and_(has_bias, b.not_(late_bias))
        with b.if_then(filled):
            _fill_rows(module, fn, b, c8, bias, m, b.mul(n, size), b.mul(bias_rows, size))
        beta = b.select(filled, fty(1.0), fty(0.0))
        if function != "cblas_sgemm":
            _blas_product(module, b, function, fty, [ta, tb, m, n, k, a, lda, bm, ldb, beta, c, ldc])
        else:  # the kernel library's GEMMs (library/gemm.py) for few rows of A, or one that splits
            # (one row times a transposed B, a linear layer's: as fast as BLAS's GEMV, whose threads
            # would then spin on the core our worker needs)
            ours = [a, bm, c, m, n, k, lda, ldb, ldc, has_bias]
            with b.if_else(library_gemm) as (ours_gemm, blas):
                with ours_gemm:
                    with b.if_else(b.icmp_signed("==", tb, I32(TRANS))) as (transposed, rowmajor):
                        with transposed:
                            _small_gemm(module, b, "tscript_gemm_nt_f32", ours, split_min)
                        with rowmajor:
                            _small_gemm(module, b, "tscript_gemm_nn_f32", ours, split_min)
                with blas:
                    pack = b.bitcast(pack, fty.as_pointer()) if packed else None
                    with b.if_else(late_bias) as (biased, plain):
                        with biased:
                            _biased_product(module, b, [ta, tb, m, n, k, a, lda, bm, ldb, beta, c, ldc, pack],
                                            bias, bias_rows)
                        with plain:
                            _blas_product(module, b, function, fty, [ta, tb, m, n, k, a, lda, bm, ldb, beta, c, ldc],
                                          pack)
    b.ret_void()
    return fn


def _biased_product(module: ir.Module, b: ir.IRBuilder, args: list, bias, bias_rows) -> None:
    """The packed GEMM's C = op(A) @ op(B) (`args` as tscript_sgemm_f32's) plus the bias rows, added by
    `_bias_epilogue` to each finished block of C; the context: [C, bias, bias_rows] as i64."""
    c = args[10]
    context = stack(b, I64, [b.ptrtoint(c, I64), b.ptrtoint(bias, I64), bias_rows])
    b.call(library.declare(module, "tscript_sgemm_epilogue_f32"),
           [*args, b.bitcast(_bias_epilogue(module), I8P), b.bitcast(context, I8P)])


def _bias_epilogue(module: ir.Module) -> ir.Function:
    """`void tscript_bias_epilogue_f32(i8* context, float* c, i64 rows, i64 cols, i64 ldc)` (the packed
    GEMM's epilogue ABI), once per module: the block at `c` += its rows of the bias (row i of C takes
    bias + i * bias_rows; bias_rows 0: one row for all), the block's first row and column found from its
    offset in C."""
    name = "tscript_bias_epilogue_f32"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fp = ir.FloatType().as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P, fp, I64, I64, I64]), name)
    fn.linkage = "internal"
    context8, c, rows, cols, ldc = fn.args
    c.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    context = b.bitcast(context8, I64.as_pointer())
    c0, bias0, bias_rows = (b.load(b.gep(context, [I64(i)])) for i in range(3))
    at = b.sdiv(b.sub(b.ptrtoint(c, I64), c0), I64(4))  # the block's first element's index in C
    row0, col0 = b.sdiv(at, ldc), b.srem(at, ldc)
    bias = b.inttoptr(bias0, fp)
    with counted(b, fn, I64(0), rows, 1, "row") as r:
        c_row = b.gep(c, [b.mul(r, ldc)])
        bias_row = b.gep(bias, [b.add(b.mul(b.add(row0, r), bias_rows), col0)])
        with counted(b, fn, I64(0), cols, 1, "col") as j:
            at_c = b.gep(c_row, [j], inbounds=True)
            b.store(b.fadd(b.load(at_c), b.load(b.gep(bias_row, [j], inbounds=True))), at_c)
    b.ret_void()
    return fn


def _blas_product(module: ir.Module, b: ir.IRBuilder, function: str, fty, args: list, pack=None) -> None:
    """C = op(A) @ op(B) (+ beta C) by BLAS's GEMV when C is one row or one column (a GEMM is slower
    there), else by BLAS's GEMM, or for float32 (`pack`: its scratch) the kernel library's packed GEMM."""
    ta, tb, m, n, k, a, lda, bm, ldb, beta, c, ldc = args
    gemv, gemm = blas_function(module, function.replace("gemm", "gemv"), fty), blas_function(module, function, fty)
    one, unit = fty(1.0), I64(1)
    no, yes = I32(NO_TRANS), I32(TRANS)
    with b.if_else(b.icmp_signed("==", m, unit)) as (row, other):
        with row:  # c = op(B)^T a
            plain = b.icmp_signed("==", tb, no)
            b.call(gemv, [I32(ROW_MAJOR), b.select(plain, yes, no), b.select(plain, k, n), b.select(plain, n, k),
                          one, bm, ldb, a, unit, beta, c, unit])
        with other:
            with b.if_else(b.icmp_signed("==", n, unit)) as (column, full):
                with column:  # c = op(A) b
                    plain = b.icmp_signed("==", ta, no)
                    b.call(gemv, [I32(ROW_MAJOR), b.select(plain, no, yes), b.select(plain, m, k),
                                  b.select(plain, k, m), one, a, lda, bm, unit, beta, c, unit])
                with full:
                    if pack is None:
                        b.call(gemm, [I32(ROW_MAJOR), ta, tb, m, n, k, one, a, lda, bm, ldb, beta, c, ldc])
                    else:
                        b.call(library.declare(module, "tscript_sgemm_f32"),
                               [ta, tb, m, n, k, a, lda, bm, ldb, beta, c, ldc, pack])


def _small_gemm(module: ir.Module, b: ir.IRBuilder, name: str, args: list, split_min: int) -> None:
    """The library GEMM `name` on `args` (A, B, C, M, N, K, lda, ldb, ldc, accumulate); with enough
    work, its columns of C in two halves at once (the library's worker computes the second)."""
    a, bm, c, m, n, k, lda, ldb, ldc, accumulate = args
    with b.if_else(_splits(b, m, n, k, split_min)) as (halves, whole):
        with halves:
            # halves on the kernel's own column blocks (each column computed as without the cut): NT's
            # blocks of 4 split N=288 into 144 + 144 where multiples of 32 made it 128 + 160
            block = COL_BLOCKS[0] if name == "tscript_gemm_nt_f32" else SPLIT_COLUMNS
            cut = b.and_(b.sdiv(n, I64(2)), I64(-block))
            sizes = stack(b, I64, [cut, b.sub(n, cut)])
            column = b.mul(cut, I64(4))  # bytes to the second half's first column of C (and of B in NN)
            b_step = b.mul(column, ldb) if name == "tscript_gemm_nt_f32" else column  # NT: B's rows are C's columns
            a8, bm8, c8 = (b.bitcast(p, I8P) for p in (a, bm, c))
            first = stack(b, I8P, [a8, bm8, c8])
            second = stack(b, I8P, [a8, b.gep(bm8, [b_step]), b.gep(c8, [column])])
            dims = stack(b, I64, [m, k, lda, ldb, ldc, b.zext(accumulate, I64)])
            part = _gemm_part(module, name)
            b.call(library.declare(module, "tscript_parallel2"),
                   [b.bitcast(part, I8P), sizes, b.bitcast(first, I8P), b.gep(sizes, [I64(1)]),
                    b.bitcast(second, I8P), dims, ir.Constant(F64.as_pointer(), None)])
        with whole:
            b.call(library.declare(module, name), args)


def _splits(b: ir.IRBuilder, m, n, k, split_min: int):
    """Does an (M, N, K) library GEMM compute its two column halves at once (`split_min` multiply-adds
    or more, and enough columns)?"""
    return b.and_(b.icmp_signed(">=", b.mul(b.mul(m, n), k), I64(split_min)),
                  b.icmp_signed(">=", n, I64(2 * SPLIT_COLUMNS)))



def _gemm_part(module: ir.Module, name: str) -> ir.Function:
    """`void <name>_part(i64* n, i8** [A, B, C], i64* [M, K, lda, ldb, ldc, accumulate], double*)`,
    once per module: the library GEMM `name` for the sizes[0] columns of C at the pointers, in the
    kernel ABI tscript_parallel2 runs."""
    part = f"{name}_part"
    try:
        return module.get_global(part)
    except KeyError:
        pass
    fp = ir.FloatType().as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I8P.as_pointer(), I64.as_pointer(),
                                                             F64.as_pointer()]), part)
    fn.linkage = "internal"
    sizes, ptrs, dims, _ = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    a, bm, c = (b.bitcast(b.load(b.gep(ptrs, [I64(i)])), fp) for i in range(3))
    m, k, lda, ldb, ldc, accumulate = (b.load(b.gep(dims, [I64(i)])) for i in range(6))
    b.call(library.declare(module, name), [a, bm, c, m, b.load(sizes), k, lda, ldb, ldc, b.trunc(accumulate, I1)])
    b.ret_void()
    return fn


def packed_gemm_here() -> bool:
    """Is the kernel library's packed GEMM the one for products of many rows on this CPU? It is tuned
    for AVX-512 (32 vector registers; with 16 its tile spills): elsewhere OpenBLAS is."""
    from .target import host
    return "+avx512f" in host()["features"].split(",")


def _suffix(dtype) -> str:
    return "f32" if np.dtype(dtype) == np.float32 else "f64"


def _fill_rows(module, fn, b, c, bias, rows, row_bytes, bias_step) -> None:
    """C[i, :] = bias row i (bias_step 0: the same row for every i), as memcpy of row_bytes each."""
    memcpy = module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
    with counted(b, fn, I64(0), rows, 1, "fill") as i:
        b.call(memcpy, [b.gep(c, [b.mul(i, row_bytes)]), b.gep(bias, [b.mul(i, bias_step)]), row_bytes,
                        ir.IntType(1)(0)])


# -- indexing and reductions: helpers the entry calls (it is not optimized; they are) ---------------------

def _helper(module: ir.Module, name: str, n_pointers: int, body) -> ir.Function:
    """`i64 name(i64* dims, i8* ...)` (n_pointers data pointers), once per module, built by
    `body(b, fn, dims, pointers)`; it returns 0 unless the body returns otherwise."""
    try:
        return module.get_global(name)
    except KeyError:
        pass
    fn = ir.Function(module, ir.FunctionType(I64, [I64.as_pointer()] + [I8P] * n_pointers), name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    body(b, fn, fn.args[0], list(fn.args[1:]))
    b.ret(I64(0))
    return fn


def _slots(b: ir.IRBuilder, dims, names: tuple) -> dict:
    return {s: b.load(b.gep(dims, [I64(i)])) for i, s in enumerate(names)}


def _gather_body(kind: str):
    def body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
        """Check every index, then copy what it picks: whole slices (index_select) or one element per
        index element (gather)."""
        d = _slots(b, dims, GATHER_SLOTS)
        source, index, out = ptrs
        memcpy = fn.module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
        if kind == "aten::index_select":
            _check(b, fn, index, d, b.mul(d["outer"], d["n_index"]), wrap=False)
            row = b.mul(d["inner"], d["item_bytes"])
            with counted(b, fn, I64(0), d["outer"], 1, "outer") as o:
                src = b.gep(source, [b.mul(b.mul(o, d["n_source"]), row)])
                dst = b.gep(out, [b.mul(b.mul(o, d["n_index"]), row)])
                with counted(b, fn, I64(0), d["n_index"], 1, "pick") as i:
                    b.call(memcpy, [b.gep(dst, [b.mul(i, row)]), b.gep(src, [b.mul(_index(b, index, d, i), row)]),
                                    row, I1(0)])
            return
        count = b.mul(b.mul(d["outer"], d["n_index"]), d["inner"])
        _check(b, fn, index, d, count, wrap=False)
        with counted(b, fn, I64(0), count, 1, "pick") as e:  # element e = (o, r, i) of the index
            target = _along(b, d, e, _index(b, index, d, e))
            b.call(memcpy, [b.gep(out, [b.mul(e, d["item_bytes"])]), b.gep(source, [b.mul(target, d["item_bytes"])]),
                            d["item_bytes"], I1(0)])
    return body


def _scatter_body(kind: str, fty):
    def body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
        """out = source, checked indices (index_put: negative ones wrap), then src added (or, for
        index_put without accumulate, written) where they say."""
        d = _slots(b, dims, GATHER_SLOTS)
        add = b.icmp_signed("!=", b.load(b.gep(dims, [I64(len(GATHER_SLOTS))])), I64(0))
        source, index, src, out = ptrs
        rows = kind == "aten::index_put"
        count = b.mul(d["outer"], d["n_index"]) if rows else b.mul(b.mul(d["outer"], d["n_index"]), d["inner"])
        _check(b, fn, index, d, count, wrap=rows)
        memcpy = fn.module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
        size = b.mul(b.mul(b.mul(d["outer"], d["n_source"]), d["inner"]), d["item_bytes"])
        b.call(memcpy, [out, source, size, I1(0)])
        values, target = b.bitcast(src, fty.as_pointer()), b.bitcast(out, fty.as_pointer())

        def put(at, value):
            place = b.gep(target, [at])
            b.store(b.select(add, b.fadd(b.load(place), value), value), place)
        if rows:  # index_put: slice r of src goes to slice index[r] (outer is 1)
            with counted(b, fn, I64(0), d["n_index"], 1, "row") as r:
                picked = _wrapped(b, _index(b, index, d, r), d["n_source"])
                with counted(b, fn, I64(0), d["inner"], 1, "col") as i:
                    put(b.add(b.mul(picked, d["inner"]), i), b.load(b.gep(values, [b.add(b.mul(r, d["inner"]), i)])))
            return
        with counted(b, fn, I64(0), count, 1, "put") as e:
            put(_along(b, d, e, _index(b, index, d, e)), b.load(b.gep(values, [e])))
    return body


def _check(b: ir.IRBuilder, fn, index, d: dict, count, wrap: bool) -> None:
    """Return 1 if one of `count` indices is outside [0, n_source) (`wrap`: [-n_source, n_source))."""
    with counted(b, fn, I64(0), count, 1, "check") as e:
        picked = _index(b, index, d, e)
        if wrap:
            picked = _wrapped(b, picked, d["n_source"])
        with b.if_then(b.icmp_unsigned(">=", picked, d["n_source"]), likely=False):
            b.ret(I64(1))


def _along(b: ir.IRBuilder, d: dict, e, picked):
    """The source element for index element e = (o, r, i) of an (outer, n_index, inner) index:
    (o, picked, i) of the (outer, n_source, inner) source."""
    i = b.srem(e, d["inner"])
    o = b.sdiv(e, b.mul(d["n_index"], d["inner"]))
    return b.add(b.mul(b.add(b.mul(o, d["n_source"]), picked), d["inner"]), i)


def _reduce_body(b: ir.IRBuilder, fn, dims, ptrs: list, fty) -> None:
    """out[o, i] = sum over r of x[o, r, i], times 1 / divisor (REDUCE_SLOTS): rows added in place
    (vectorized along i), or, when inner is 1, each row summed (a reordered, vectorized sum)."""
    d = _slots(b, dims, REDUCE_SLOTS)
    x, out = ptrs
    scale = b.fdiv(fty(1.0), b.sitofp(d["divisor"], fty))
    reduced, inner = d["reduced"], d["inner"]
    with b.if_else(b.icmp_signed("==", inner, I64(1))) as (rows, columns):
        with rows:
            with counted(b, fn, I64(0), d["outer"], 1, "row") as o:
                row = b.gep(x, [b.mul(o, reduced)])
                (total,) = carried(b, fn, I64(0), reduced, 1, "sum", [fty(0.0)], lambda r, a: [
                    b.fadd(a[0], b.load(b.gep(row, [r], inbounds=True)), flags=REDUCE_FLAGS)])
                b.store(b.fmul(total, scale), b.gep(out, [o]))
        with columns:
            with counted(b, fn, I64(0), d["outer"], 1, "block") as o:
                dst = b.gep(out, [b.mul(o, inner)])
                block = b.gep(x, [b.mul(b.mul(o, reduced), inner)])
                with counted(b, fn, I64(0), inner, 1, "zero") as i:
                    b.store(fty(0.0), b.gep(dst, [i], inbounds=True))
                with counted(b, fn, I64(0), reduced, 1, "add") as r:
                    row = b.gep(block, [b.mul(r, inner)])
                    with counted(b, fn, I64(0), inner, 1, "col") as i:
                        at = b.gep(dst, [i], inbounds=True)
                        b.store(b.fadd(b.load(at), b.load(b.gep(row, [i], inbounds=True))), at)
                with b.if_then(b.icmp_signed("!=", d["divisor"], I64(1))):  # a mean: one more pass
                    with counted(b, fn, I64(0), inner, 1, "scale") as i:
                        at = b.gep(dst, [i], inbounds=True)
                        b.store(b.fmul(b.load(at), scale), at)


def _fill_body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
    """count elements of item_bytes each set to the pattern's low bytes (FILL_SLOTS); zeros by memset."""
    d = _slots(b, dims, FILL_SLOTS)
    out, = ptrs
    with b.if_else(b.icmp_signed("==", d["pattern"], I64(0))) as (zero, other):
        with zero:
            memset = fn.module.declare_intrinsic("llvm.memset", [I8P, I64])
            b.call(memset, [out, I8(0), b.mul(d["count"], d["item_bytes"]), I1(0)])
        with other:
            for width in (1, 2, 4, 8):
                ty = ir.IntType(8 * width)
                with b.if_then(b.icmp_signed("==", d["item_bytes"], I64(width))):
                    value = b.trunc(d["pattern"], ty) if width < 8 else d["pattern"]
                    target = b.bitcast(out, ty.as_pointer())
                    with counted(b, fn, I64(0), d["count"], 1, f"fill{width}") as i:
                        b.store(value, b.gep(target, [i], inbounds=True))


def _embed_body(b: ir.IRBuilder, fn, dims, ptrs) -> None:
    """out = source, then src's (outer, count, inner) rows over rows start, start + step, ... (EMBED_SLOTS)."""
    d = _slots(b, dims, EMBED_SLOTS)
    source, src, out = ptrs
    memcpy = fn.module.declare_intrinsic("llvm.memcpy", [I8P, I8P, I64])
    b.call(memcpy, [out, source, d["bytes"], I1(0)])
    with counted(b, fn, I64(0), d["outer"], 1, "outer") as o:
        with counted(b, fn, I64(0), d["count"], 1, "row") as r:
            at = b.add(b.mul(o, d["n"]), b.add(d["start"], b.mul(r, d["step"])))
            b.call(memcpy, [b.gep(out, [b.mul(at, d["inner"])]),
                            b.gep(src, [b.mul(b.add(b.mul(o, d["count"]), r), d["inner"])]), d["inner"], I1(0)])
