"""Call plans of the whole-graph entry: for one input signature, every plan slot's value (shapes by the
op table's rules, arena offsets, kernel sizes and strides, GEMM, convolution, indexing and reduction
dimensions), or Unplannable (the executor runs that signature)."""
from __future__ import annotations

import ctypes
import itertools
import math
import re
from dataclasses import dataclass

import numpy as np

from .arena import place
from .entry_layout import EntryLayout
from .entry_steps import (DRAWS, DRAWS_INTO, ALIASES, AVG_POOLS, CONVS, GEOMETRY, GEMMS, GEMM_DTYPES, GEMM_SLOTS, MAX_BATCH_RANK,
                          LONG_K, NO_TRANS, OFFSET_VIEWS, RECURRENT_SLOTS, SHAPE_READS, SPLIT_COLUMNS, STRIDED_VIEWS, TRANS,
                          VIEW_LISTS, BACKWARD_SLOTS, CatStep, DrawStep, EMBED_SLOTS, EmbedStep, FILLS, FILL_SLOTS, FillStep,
                          GatherStep, GemmStep, KernelStep, RecurrentBackwardStep, RecurrentStep, ReduceStep,
                          ScatterStep, WindowStep, window_slots, COLUMN_SLOTS, UPDATE_SLOTS, ColumnsStep,
                          PoolIndicesStep, UpdateStep)
from .entry_steps import IM2COLS, PoolBackwardStep
from .graph_json import TensorRef, decode_attr
from .ops import OPS
from .ops.recurrent import GATES
from .ops.reductions import reduce_dims
from .ops.registry import TensorMeta
from .conv_epilogue import CONV_ARITY, array_fits
from .prims import CONV_GROUP, KERNEL_GROUPS

@dataclass
class CallPlan:
    """One input signature's data for the entry: the numbers the entry's code reads."""
    ints: object              # ctypes int64 array: the plan slots
    scalars: object           # ctypes double array: the kernels' scalar inputs
    arena: int                # bytes of arena the entry uses
    outputs: list             # (shape, dtype) of each output root
    views: list               # per tensor output: (source, index, shape, byte strides or None, byte offset),
    #                           source OUT (index into outputs), INPUT (into tensor inputs) or FIXED
    direct: bool = False      # are the output roots the graph's outputs as they are?
    draws: list = ()          # Draws: the random tensors to fill before the call, in order

    def __post_init__(self):
        self.address, self.scalars_address = ctypes.addressof(self.ints), ctypes.addressof(self.scalars)


class Unplannable(Exception):
    """The entry cannot run this signature (the executor does)."""


def make_plan(layout: EntryLayout, launchers: dict, args: list, fixed: list) -> CallPlan:
    """The call plan for graph inputs `args` and fixed arrays `fixed` (all C-contiguous)."""
    env, kernel_plans = _evaluate(layout, launchers, args, fixed)
    ints = (ctypes.c_int64 * max(layout.n_slots, 1))()
    scalars = (ctypes.c_double * max(layout.n_scalars, 1))()
    nodes = layout.graph["nodes"]
    for step in layout.steps:
        if isinstance(step, KernelStep):
            _plan_kernel(step, kernel_plans[step.node], env, ints, scalars)
        else:
            _PLANNERS[type(step)](step, nodes[step.node], env, ints)
    for view, slot in layout.offset_slots.items():
        ints[slot] = _address(env[view]) - _address(env[layout.root_of[view]])
    arena = _place_arena(layout, env, ints)
    outputs = [(tuple(env[r].shape), np.dtype(env[r].dtype)) for r in layout.outputs]
    views = [(*_view_source(layout, layout.root_of[o]), env[o].shape,
              None if env[o].flags.c_contiguous else env[o].strides,
              _address(env[o]) - _address(env[layout.root_of[o]])) for o in layout.results]
    direct = not layout.containers and [(OUT, i, shape, None, 0) for i, (shape, _) in enumerate(outputs)] == views
    draws = [_draw(layout, step, nodes[step.node], env, ints) for step in layout.steps if isinstance(step, DrawStep)]
    return CallPlan(ints, scalars, arena, outputs, views, direct, draws)


@dataclass(frozen=True)
class Draw:
    """A random tensor of the call: its op's kernel fills (or makes) it from the process's generator."""
    kernel: object
    into: bool                # the kernel fills its first argument in place (else: returns the tensor)
    args: tuple               # the arguments after the tensor filled (or all of them)
    output: int | None        # index into the call's output arrays, or None: in the arena at `offset`
    offset: int
    shape: tuple
    dtype: object

    def fill(self, arena: np.ndarray, outs: list) -> None:
        target = outs[self.output] if self.output is not None else \
            np.ndarray(self.shape, self.dtype, arena, self.offset)
        if self.into:
            self.kernel(target, *self.args)
        else:
            target[...] = self.kernel(*self.args)


def _draw(layout: EntryLayout, step: DrawStep, node: dict, env: dict, ints) -> Draw:
    root = layout.root_of[step.out]
    value, into = env[root], step.kind in DRAWS_INTO
    args = tuple(env[v] for v in node["inputs"][into:])
    where = layout.roots[root]
    output = layout.outputs.index(root) if root in layout.outputs else None
    if output is None and where.base != 0:
        raise Unplannable(f"{step.kind} into a buffer that is not the entry's")
    return Draw(OPS[step.kind].kernel, into, args, output, ints[where.slot] if output is None else 0,
                tuple(value.shape), value.dtype)


OUT, INPUT, FIXED = 0, 1, 2  # where an output's data is: an output array, a tensor input, a fixed array


def _view_source(layout: EntryLayout, root: str) -> tuple:
    """(OUT | INPUT | FIXED, index among those) of the buffer `root`."""
    if root in layout.outputs:
        return OUT, layout.outputs.index(root)
    base = layout.roots[root].base
    return (INPUT, base - 1) if base <= len(layout.inputs) else (FIXED, base - 1 - len(layout.inputs))


def _evaluate(layout: EntryLayout, launchers: dict, args: list, fixed: list) -> tuple[dict, dict]:
    """Every value of the graph for this signature (arrays for inputs and fixed arrays, data-less
    arrays with the shape, dtype and strides of computed tensors, Python values for the rest), and
    the launch plan of each kernel node."""
    env = {v["name"]: a for v, a in zip(layout.graph["inputs"], args)}
    fixed_values = iter(fixed)
    kernel_plans = {}
    for index, node in enumerate(layout.graph["nodes"]):
        kind, outs = node["kind"], [o["name"] for o in node["outputs"]]
        attrs = node.get("attrs", {})
        if kind == "prim::GetAttr":
            value = next(fixed_values) if layout.kinds[outs[0]] == "tensor" else None
        elif kind == "prim::Constant":
            value = decode_attr(attrs["value"]) if "value" in attrs else None
            if isinstance(value, TensorRef):
                value = next(fixed_values)
        elif kind in ("prim::ListConstruct", "prim::TupleConstruct"):
            value = (list if kind == "prim::ListConstruct" else tuple)(env[v] for v in node["inputs"])
        elif kind == CONV_GROUP:  # a conv2d (its first inputs) and pointwise ops keeping its shape
            value = _op_value(OPS["aten::conv2d"], [_meta(env[v]) for v in node["inputs"][:CONV_ARITY]])
            value = _dataless(value.shape, value.dtype)
        elif kind in KERNEL_GROUPS:
            launcher = launchers[attrs["kernel"]]
            tensors = [env[v] for v, k in zip(node["inputs"], launcher.kinds) if k == "tensor"]
            kernel_plans[index] = kplan = launcher._plan(tensors)
            value = [_dataless(kplan.out_shape, d) for d in launcher.out_dtypes]
            value = value[0] if len(value) == 1 else value
        elif kind in STRIDED_VIEWS or kind in OFFSET_VIEWS or kind in VIEW_LISTS:
            value = OPS[kind].kernel(*[env[v] for v in node["inputs"]])  # numpy views: nothing is read
        elif kind == "prim::ListUnpack":
            value = tuple(env[node["inputs"][0]])
        elif kind in ALIASES:
            value = _alias(kind, env[node["inputs"][0]], _op_value(OPS[kind], [_meta(env[v]) for v in node["inputs"]]))
        else:
            value = _op_value(OPS[kind], [_meta(env[v]) for v in node["inputs"]])
            if isinstance(value, TensorMeta):
                value = _dataless(value.shape, value.dtype)
            elif isinstance(value, tuple) and value and all(isinstance(m, TensorMeta) for m in value):
                value = tuple(_dataless(m.shape, m.dtype) for m in value)
        if len(outs) == 1 and kind != "prim::ListUnpack":
            env[outs[0]] = value
        else:
            env.update(zip(outs, value))
    return env, kernel_plans


def _meta(x):
    return TensorMeta(x.shape, x.dtype) if isinstance(x, np.ndarray) else x


def _alias(kind: str, x: np.ndarray, meta: TensorMeta) -> np.ndarray:
    """x seen with the shape `meta` says, as a view (a reshape numpy can make without copying), or
    Unplannable: a copy would have to run, and x may be a data-less array."""
    if kind == "aten::contiguous" and not x.flags.c_contiguous:
        raise Unplannable("contiguous() of a non-contiguous tensor (a copy)")
    try:
        return np.reshape(x, meta.shape, copy=False)
    except ValueError:
        raise Unplannable(f"{kind} of a tensor whose strides need a copy") from None


def _address(x: np.ndarray) -> int:
    return x.__array_interface__["data"][0]


def _op_value(op, args: list):
    """An op's result while planning: TensorMeta(s) by its rules, or its kernel on Python values
    (shape reads take TensorMetas: they only look at shape, dtype and rank; random ops are not drawn)."""
    if (op.tensor_pos or op.list_pos or op.name in DRAWS) and op.name not in SHAPE_READS:
        return op.meta(*args)
    return op.kernel(*args)


def _contiguous_strides(shape: tuple, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _dataless(shape, dtype) -> np.ndarray:
    """A C-contiguous array of `shape` and `dtype` that holds no data: what planning knows of a
    computed tensor (never read: only shapes and strides are looked at, and views made)."""
    d = np.dtype(dtype)
    return np.lib.stride_tricks.as_strided(np.zeros(1, d), tuple(shape), _contiguous_strides(tuple(shape), d.itemsize))


def _plan_kernel(step: KernelStep, kplan, env: dict, ints, scalars) -> None:
    n = step.rank * (1 + len(step.outputs) + len(step.tensors))
    ints[step.sizes:step.sizes + step.rank] = list(kplan.sizes)[:step.rank]
    ints[step.sizes + step.rank:step.sizes + n] = list(kplan.strides)[:n - step.rank]
    at, rank = step.split, step.rank
    ints[at] = kplan.halves is not None
    if kplan.halves is not None:
        first, second = (list(h)[:rank] for h in kplan.halves)
        ints[at + 1:at + 1 + 2 * rank + len(kplan.offsets)] = first + second + list(kplan.offsets)
    for j, v in enumerate(step.scalars):
        scalars[step.first_scalar + j] = float(env[v])


def _plan_gemm(step: GemmStep, node: dict, env: dict, ints) -> None:
    """C (M, N) = op(A) @ op(B) (+ bias rows), once or for every index of up to MAX_BATCH_RANK batch
    dims (broadcast as matmul does): A and B are read as stored (row-major, or a transposed row-major
    matrix: BLAS's transpose flags; rows any distance apart), anything else is for the executor."""
    a, b, out = env[step.a], env[step.b], env[step.out]
    bias = env[step.bias] if step.bias is not None else None
    dtype = {f: d for d, f in GEMM_DTYPES.items()}[step.function]
    if any(t.dtype != dtype for t in (a, b, out) + ((bias,) if bias is not None else ())):
        raise Unplannable(f"{step.kind} of mixed dtypes")
    ins = node["inputs"]
    if any(i < len(ins) and env[ins[i]] != 1 for i in GEMMS[step.kind].units):
        raise Unplannable(f"{step.kind} with beta or alpha other than 1")
    if a.ndim == 0 or b.ndim == 0 or (step.trans_b and b.ndim != 2):
        raise Unplannable(f"{step.kind} of shapes {a.shape} and {b.shape}")
    a, b = (a if a.ndim > 1 else a[None, :]), (b.T if step.trans_b else b if b.ndim > 1 else b[:, None])
    a, b, batch = _batch(a, b)
    (m, k), n = a.shape[-2:], b.shape[-1]
    count = int(np.prod(batch, dtype=np.int64))
    if b.shape[-2] != k or out.size != count * m * n:
        raise Unplannable(f"{step.kind} of shapes {a.shape} and {b.shape}")
    index = (0,) * len(batch)
    trans_a, lda = _operand(a[index], m, k)
    trans_b, ldb = _operand(b[index], k, n)
    c_strides = _contiguous_strides(tuple(batch) + (m * n,), out.itemsize)[:-1]
    pad = MAX_BATCH_RANK - len(batch)  # (batch dims padded in front: size 1, strides 0)
    values = [trans_a, trans_b, m, n, k, lda, ldb, max(n, 1), _bias_rows(bias, m, n), count,
              *(1,) * pad, *(int(d) for d in batch),
              *[s for x in (a.strides[:-2], b.strides[:-2], c_strides) for s in (0,) * pad + tuple(x)],
              _pack_bytes(m, n, k) if _packed(step, trans_a, m, n, k) else 0]
    ints[step.dims:step.dims + len(GEMM_SLOTS)] = values


def _plan_recurrent(step: RecurrentStep, node: dict, env: dict, ints) -> None:
    """The loop's sizes and flags, and its scratch's bytes; every operand C-contiguous and of the gates'
    dtype (the op's rules checked their shapes). A float32 step splits over two threads when its
    product is big enough and each thread gets a block of units."""
    from .native.recurrent import UNITS, scratch_bytes
    gates = env[step.gates]
    steps, batch, width = gates.shape
    hidden = env[step.weight].shape[1]
    if any(not t.flags.c_contiguous or t.dtype != gates.dtype for t in (env[v] for v in step.values())):
        raise Unplannable(f"{node['kind']} of a strided operand or mixed dtypes")
    relu = bool(env[node["inputs"][4]]) if step.cell == "rnn" else False
    split = gates.dtype == np.float32 and batch * width * hidden >= step.split_min and hidden >= 2 * UNITS
    ints[step.dims:step.dims + len(RECURRENT_SLOTS)] = [
        steps, batch, hidden, int(relu), int(bool(env[node["inputs"][-1]])), int(split),
        scratch_bytes(steps, batch, hidden, step.cell, gates.itemsize)]


def _plan_recurrent_backward(step: RecurrentBackwardStep, node: dict, env: dict, ints) -> None:
    """Sizes, flags, the scratch (the LSTM's cell states, the GRU's carried dh) and the three products:
    every step's h_prev @ W_hh^T (h0's, then the others': "first", "rest") and d_pre[t] @ W_hh ("back")."""
    grad = env[step.inputs["grad_hs"]]
    steps, batch, hidden = grad.shape
    width = GATES[step.cell] * hidden
    if any(not t.flags.c_contiguous or t.dtype != grad.dtype for t in (env[v] for v in step.values())):
        raise Unplannable(f"{node['kind']} of a strided operand or mixed dtypes")
    relu = bool(env[node["inputs"][3]]) if step.cell == "rnn" else False
    scratch = {"lstm": steps * batch * hidden, "gru": batch * hidden, "rnn": 1}[step.cell] * grad.itemsize
    products = {"first": (NO_TRANS, TRANS, batch, width, hidden, hidden, hidden, width),
                "rest": (NO_TRANS, TRANS, (steps - 1) * batch, width, hidden, hidden, hidden, width),
                "back": (NO_TRANS, NO_TRANS, batch, hidden, width, width, hidden, hidden)}
    pack = max([_pack_bytes(m, n, k) for ta, _, m, n, k, *_ in products.values() if _packed(step, ta, m, n, k)] + [0])
    ints[step.dims:step.dims + 7] = [steps, batch, hidden, int(relu), int(bool(env[node["inputs"][-1]])), scratch,
                                     pack]
    for name, values in products.items():
        at = step.dims + BACKWARD_SLOTS.index(f"{name}_trans_a")
        ints[at:at + 9] = [*values, 0]


def _plan_embed(step: EmbedStep, node: dict, env: dict, ints) -> None:
    """The source as (outer, n, inner) around the dim and the slice's start, step and length (PyTorch's
    clamping of slice bounds, as the op's kernel does); source, src and out C-contiguous."""
    source, src = env[step.source], env[step.src]
    if not (source.flags.c_contiguous and src.flags.c_contiguous) or src.dtype != source.dtype or source.ndim == 0:
        raise Unplannable(f"{node['kind']} of strided operands, mixed dtypes or a 0-d tensor")
    args = [env[v] for v in node["inputs"]]
    dim = args[2] % source.ndim
    n = source.shape[dim]
    if node["kind"] == "aten::select_scatter":
        start, stride, count = args[3] % n if n else 0, 1, 1
    else:
        start, stop, stride = slice(*(args[3:6] + [1] * (6 - len(args)))[:3]).indices(n)
        count = len(range(start, stop, stride))
    if src.size != source.size // max(n, 1) * count:
        raise Unplannable(f"{node['kind']}: src of shape {src.shape} does not fill the slice")
    outer = int(np.prod(source.shape[:dim], dtype=np.int64))
    inner = int(np.prod(source.shape[dim + 1:], dtype=np.int64)) * source.itemsize
    ints[step.dims:step.dims + len(EMBED_SLOTS)] = [outer, n, inner, start, stride, count, source.nbytes]


def _plan_fill(step: FillStep, node: dict, env: dict, ints) -> None:
    """The element count, size and bit pattern of the value (cast to the output's dtype as the op does);
    torch.empty writes nothing (count 0)."""
    out, value = env[step.out], FILLS[step.kind]
    if value is None:
        ints[step.dims:step.dims + len(FILL_SLOTS)] = [0, 1, 0]
        return
    if isinstance(value, tuple):
        value = env[node["inputs"][value[1]]]
    if out.dtype.itemsize not in (1, 2, 4, 8) or not isinstance(value, (bool, int, float)):
        raise Unplannable(f"{step.kind} of dtype {out.dtype} or value {value!r}")
    item = np.array(value).astype(out.dtype)
    ints[step.dims:step.dims + len(FILL_SLOTS)] = [out.size, out.dtype.itemsize,
                                                   int.from_bytes(item.tobytes(), "little", signed=True)]


def _pack_bytes(m: int, n: int, k: int) -> int:
    from .native.library.blocking import pack_bytes
    return pack_bytes(m, n, k)


def _packed(step: GemmStep | RecurrentBackwardStep, trans_a: int, m: int, n: int, k: int) -> bool:
    """Does the product go to the kernel library's packed GEMM (native/entry.py `_product_function`)?
    float32 with several rows and columns, unless it is for the register-blocked GEMMs (a row-major A
    of 3..small_m rows, or fewer rows whose product splits in column halves; K under LONG_K when more
    than 4 rows)."""
    splits = m * n * k >= step.split_min and n >= 2 * SPLIT_COLUMNS
    few = m <= step.small_m and (m >= 3 or splits) and trans_a == NO_TRANS and not (k >= LONG_K and m > 4)
    return step.function == "cblas_sgemm" and m > 1 and n > 1 and not few


def _batch(a: np.ndarray, b: np.ndarray) -> tuple:
    """(A, B, batch shape): A's leading dims flattened into its rows when B is a matrix and they flatten
    without a copy (one product); else both broadcast to their common batch dims (views, nothing read)."""
    if b.ndim == 2:
        try:
            return np.reshape(a, (-1, a.shape[-1]), copy=False), b, ()
        except ValueError:
            pass
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise Unplannable(f"batch dims {a.shape[:-2]} and {b.shape[:-2]} do not broadcast") from None
    if len(batch) > MAX_BATCH_RANK:
        raise Unplannable(f"more than {MAX_BATCH_RANK} batch dims")
    return np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:]), batch


def _operand(x: np.ndarray, rows: int, cols: int) -> tuple[int, int]:
    """(transpose flag, leading dimension) of a (rows, cols) matrix stored row-major or as the
    transpose of a row-major matrix, its rows (columns) any whole number of elements apart."""
    size = x.itemsize
    if x.ndim != 2:
        raise Unplannable("a GEMM operand that is not a matrix")
    step0, step1 = x.strides
    if (cols <= 1 or step1 == size) and (rows <= 1 or step0 % size == 0 and step0 // size >= cols):
        return NO_TRANS, step0 // size if rows > 1 else max(cols, 1)
    if (rows <= 1 or step0 == size) and (cols <= 1 or step1 % size == 0 and step1 // size >= rows):
        return TRANS, step1 // size if cols > 1 else max(rows, 1)
    raise Unplannable("a GEMM operand with other strides")


def _matrix(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """x as a (rows, cols) matrix without copying (its leading dims flattened), or Unplannable."""
    try:
        return np.reshape(x, (rows, cols), copy=False)
    except ValueError:
        raise Unplannable("a GEMM operand whose leading dims do not flatten without a copy") from None


def _bias_rows(bias, m: int, n: int) -> int:
    """Elements between the bias rows added to C's rows (0: one row for all)."""
    if bias is None:
        return 0
    if bias.ndim == 1 and bias.shape == (n,) and (n <= 1 or bias.strides[0] == bias.itemsize):
        return 0
    if bias.ndim == 2 and bias.shape[1] == n and bias.shape[0] in (1, m) and (n <= 1 or bias.strides[1] == bias.itemsize):
        return 0 if bias.shape[0] == 1 else bias.strides[0] // bias.itemsize
    raise Unplannable(f"a bias of shape {bias.shape}")


def _plan_window(step: WindowStep, node: dict, env: dict, ints) -> None:
    """The slots of a conv2d (CONV_SLOTS; the scratch size is replaced by its offset when the arena is
    placed), max_pool2d (GEOMETRY) or average pooling (AVG_SLOTS) with C-contiguous float operands."""
    x, out = env[step.input], env[step.out]
    operands = [env[v] for v in (step.input, step.weight, step.bias) if v is not None]
    dtype = np.float32 if step.function.endswith("f32") else np.float64
    if any(not t.flags.c_contiguous or t.dtype != dtype for t in operands + [out]) or x.ndim not in (3, 4):
        raise Unplannable(f"{step.kind} of non-contiguous operands or other dtypes than its code's")
    args = [env[v] for v in node["inputs"]]
    if step.epilogue is not None:
        _check_epilogue(step, env, out)
    plan = {"aten::conv2d": _plan_conv, "aten::conv_transpose2d": _plan_conv_transpose}.get(step.kind) or \
        (_plan_avg_pool if step.kind in AVG_POOLS else _plan_max_pool)
    values = plan(step, env, x, args)
    ints[step.dims:step.dims + len(values)] = values


def _check_epilogue(step: WindowStep, env: dict, out) -> None:
    """A ConvGroup's epilogue tensors are laid out as its code reads them (conv_epilogue.array_fits),
    of the dtypes it was generated for."""
    spec = step.epilogue
    for v, kind, dtype in zip(step.extras, spec.kinds, spec.kernel.in_dtypes[1:]):
        array = env[v]
        if array.dtype != dtype or not array_fits(kind, array, out):
            raise Unplannable(f"a convolution epilogue input of shape {array.shape} and dtype {array.dtype} "
                              f"(read as '{kind}' beside an output of shape {out.shape})")


def _plan_conv(step: WindowStep, env: dict, x, args: list) -> list:
    from .ops.conv import _conv_geometry
    w, groups = env[step.weight], args[6]
    g = _conv_geometry("conv2d", 2, _meta(x), _meta(w), _meta(env[step.bias]) if step.bias else None, *args[3:7])
    c, h, wd = x.shape[-3:]
    kernel, per_group = tuple(w.shape[2:]), c // groups
    k, length = per_group * kernel[0] * kernel[1], g.out[0] * g.out[1]
    o = w.shape[0] // groups
    geometry = [per_group, h, wd, *kernel, *g.stride, *g.padding, *g.dilation, *g.out]
    if step.direct is not None and step.direct != (per_group == 1):
        raise Unplannable(f"a convolution weight of shape {list(w.shape)}, unlike its graph type")
    if per_group == 1:  # one input channel per group (depthwise): the library's direct kernel, its rows of zeros
        from .native.library.depthwise import scratch_bytes
        scratch, pack = scratch_bytes(dict(zip(GEOMETRY, geometry)), x.itemsize), 0
    else:  # im2col columns (none for a 1x1 stride-1 unpadded convolution: its input is them), GEMM panels;
        # small images several at a time: their columns side by side, then the product's (O, images*L)
        # (none either where the GEMM packs its columns straight from the image: then the scratch holds only
        # the batched product)
        from .native.library.conv import PACKED_FROM, images_per_gemm, implicit_columns, packs_from_image
        from .native.library.direct_conv import scratch_bytes, uses_direct
        named = dict(zip(GEOMETRY, geometry))
        if uses_direct(x.dtype, named, o, groups):  # (no columns: the direct kernel's own scratch)
            return geometry + [x.shape[0] if x.ndim == 4 else 1, o, k, length, groups, 0, scratch_bytes(named, o)]
        images = images_per_gemm(x.shape[0] if x.ndim == 4 else 1, groups, length)
        pointwise = kernel == (1, 1) and tuple(g.stride) == (1, 1) and tuple(g.padding) == (0, 0)
        implicit = implicit_columns(x.dtype) and packs_from_image(pointwise, g.stride[1], o, images * length, images)
        columns = 0 if implicit else k
        scratch = (columns + o) * images * length * x.itemsize if images > 1 else \
            0 if pointwise else columns * length * x.itemsize
        few = 3 <= o <= min(step.small_m, PACKED_FROM - 1)
        pack = _pack_bytes(o, images * length, k) if x.dtype == np.float32 and not few else 0
    return geometry + [x.shape[0] if x.ndim == 4 else 1, o, k, length, groups, scratch, pack]


def _plan_conv_transpose(step: WindowStep, env: dict, x, args: list) -> list:
    from .ops.conv import _transposed_geometry
    w, groups = env[step.weight], args[6]
    g = _transposed_geometry(_meta(x), _meta(w), _meta(env[step.bias]) if step.bias else None, args[3], args[4],
                             args[5], groups, args[7])
    from .native.library.transposed import COLUMN_PAD, images_per_product, writes_output
    c, h, wd = x.shape[-3:]
    n, out_per_group, kernel = x.shape[0] if x.ndim == 4 else 1, w.shape[1], tuple(w.shape[2:])
    width = out_per_group * kernel[0] * kernel[1]  # one group's columns
    if writes_output(h * wd, kernel, g.padding, g.dilation, g.out):  # the product writes the output
        images, scratch = n, 0
    else:  # the columns of `images` images, then (but for 1x1 images) their pixel rows
        row = groups * width + COLUMN_PAD
        images = images_per_product(n, h * wd * row * x.itemsize)
        scratch = images * h * wd * (row + (c if h * wd > 1 else 0)) * x.itemsize
    pack = _pack_bytes(images * h * wd, width, c // groups) if x.dtype == np.float32 else 0
    return [c // groups, h, wd, *kernel, *g.stride, *g.padding, *g.dilation, *g.out, n, out_per_group, groups, images,
            scratch, pack]


def _plan_max_pool(step: WindowStep, env: dict, x, args: list) -> list:
    from .ops.conv import _pool_geometry
    g = _pool_geometry("max_pool2d", _meta(x), *args[1:6])
    planes = int(np.prod(x.shape[:-2], dtype=np.int64))
    return [planes, *x.shape[-2:], *g.kernel, *g.stride, *g.padding, *g.dilation, *g.out]


def _plan_avg_pool(step: WindowStep, env: dict, x, args: list) -> list:
    from .ops.conv import _adaptive_geometry, _avg_geometry
    planes, size = int(np.prod(x.shape[:-2], dtype=np.int64)), x.shape[-2:]
    if step.kind == "aten::adaptive_avg_pool2d":
        return [planes, *size, *_adaptive_geometry(_meta(x), args[1]), 0, 0, 1, 1, 0, 0, 1, 0, 0]
    g = _avg_geometry("avg_pool2d", _meta(x), *args[1:4], args[4], args[6])
    return [planes, *size, *g.out, *g.kernel, *g.stride, *g.padding, 0, int(bool(args[5])), args[6] or 0]


def _plan_cat(step: CatStep, node: dict, env: dict, ints) -> None:
    """The rows of the output (its dims before the cat dim) and each input's slice of a row, in
    bytes; inputs C-contiguous and of the output's dtype."""
    out, parts = env[step.out], [env[v] for v in step.inputs]
    if any(not t.flags.c_contiguous or t.dtype != out.dtype for t in parts):
        raise Unplannable("aten::cat of non-contiguous inputs or mixed dtypes")
    dim = env[node["inputs"][1]]
    dim = dim + out.ndim if dim < 0 else dim
    outer = int(np.prod(out.shape[:dim], dtype=np.int64))
    values, offset = [outer, out.nbytes // outer if outer else 0], 0
    for t in parts:
        chunk = t.nbytes // outer if outer else 0
        values += [offset, chunk]
        offset += chunk
    ints[step.dims:step.dims + len(values)] = values


def _plan_gather(step: GatherStep, node: dict, env: dict, ints) -> None:
    """Source and index seen as (outer, n, inner) around the dim; all C-contiguous."""
    source, index = env[step.source], env[step.index]
    ints[step.dims:step.dims + step.n_slots] = _along(step.kind, source, index, env[node["inputs"][1]],
                                                      source.dtype)


def _plan_scatter(step: ScatterStep, node: dict, env: dict, ints) -> None:
    """As a gather from the output's point of view, then whether values add up."""
    source, index, src = env[step.source], env[step.index], env[step.src]
    if src.dtype != source.dtype or not src.flags.c_contiguous:
        raise Unplannable(f"{step.kind} of non-contiguous or other-typed values")
    if step.kind == "aten::index_put":
        along = _along("aten::index_select", source, index, 0, source.dtype)
        if src.shape != (index.size,) + source.shape[1:]:
            raise Unplannable("index_put of values that are broadcast")
        add = bool(env[step.accumulate]) if step.accumulate is not None else False
    else:
        along, add = _along("aten::gather", source, index, env[node["inputs"][1]], source.dtype), True
        if src.shape != index.shape:
            raise Unplannable("scatter_add of a source shaped other than its index")
    ints[step.dims:step.dims + step.n_slots] = along + [int(add)]


def _along(kind: str, source, index, dim, dtype) -> list:
    """GATHER_SLOTS for indexing `source` along `dim` by `index`: whole slices (index_select) or, for
    gather, one element per index element (the index matching the source in every other dim)."""
    if not source.flags.c_contiguous or not index.flags.c_contiguous:
        raise Unplannable(f"{kind} of a non-contiguous source or index")
    shape = source.shape or (1,)
    dim = dim + len(shape) if dim < 0 else dim
    outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1:])
    if kind == "aten::gather" and (index.shape or (1,))[:dim] + (index.shape or (1,))[dim + 1:] != \
            shape[:dim] + shape[dim + 1:]:
        raise Unplannable("gather by an index smaller than its source")
    n_index = index.size if kind != "aten::gather" else (index.shape or (1,))[dim]
    return [outer, shape[dim], n_index, inner, np.dtype(dtype).itemsize, index.itemsize]


def _plan_reduce(step: ReduceStep, node: dict, env: dict, ints) -> None:
    """The source seen as (outer, reduced, inner, reduced2) (REDUCE_SLOTS): the reduced dims one run, or
    two runs around kept dims (batch statistics over dims 0, 2, 3); C-contiguous, of the output's dtype."""
    source, out = env[step.source], env[step.out]
    ins = [env[v] for v in node["inputs"]]
    if not source.flags.c_contiguous or out.dtype != source.dtype:
        raise Unplannable(f"{node['kind']} of a non-contiguous source or to another dtype")
    dims = set(reduce_dims(source, ins[1] if len(ins) > 1 else None, node["kind"]))
    marks = "".join("r" if d in dims else "k" for d in range(source.ndim) if source.shape[d] != 1)  # size-1 dims go anywhere
    pattern = re.fullmatch(r"(k*)(r*)(k*)(r*)", marks)
    if pattern is None:
        raise Unplannable(f"{node['kind']} over dims that are not in at most two runs around kept dims")
    wide = [source.shape[d] for d in range(source.ndim) if source.shape[d] != 1]
    ends = list(itertools.accumulate(len(g) for g in pattern.groups()))
    outer, reduced, inner, reduced2 = (math.prod(wide[a:b]) for a, b in zip([0] + ends[:-1], ends))
    count = math.prod(source.shape[d] for d in dims)
    divisor, variance = (count if node["kind"] == "aten::mean" else 1), 0
    if node["kind"] == "aten::var":
        correction = 1 if ins[2] is None else ins[2]
        if correction != int(correction):
            raise Unplannable("var with a fractional correction")
        divisor, variance = max(0, count - int(correction)), 1
    ints[step.dims:step.dims + step.n_slots] = [outer, reduced, inner, divisor, reduced2, variance]


def _plan_update(step: UpdateStep, node: dict, env: dict, ints) -> None:
    """add_: the increment (other * alpha) in the target's dtype; copy_: the bytes, a same-shaped,
    same-typed C-contiguous source into a C-contiguous target (anything else: the executor)."""
    target, ins = env[step.target], [env[v] for v in node["inputs"]]
    if not target.flags.c_contiguous:
        raise Unplannable(f"{step.kind} into a non-contiguous tensor")
    if step.kind == "aten::copy_":
        source = env[step.source]
        if source.shape != target.shape or source.dtype != target.dtype or not source.flags.c_contiguous:
            raise Unplannable("copy_ of another shape or dtype, or of a non-contiguous tensor")
        ints[step.dims] = target.nbytes
        return
    value = ins[1] * (ins[2] if len(ins) > 2 else 1)
    kind = target.dtype.kind
    if kind not in "fiu" or target.dtype.itemsize not in (1, 2, 4, 8) or not isinstance(value, (bool, int, float)) or \
            (kind != "f" and value != int(value)) or (kind == "f" and target.dtype.itemsize not in (4, 8)):
        raise Unplannable(f"add_ of {value!r} to a {target.dtype} tensor")
    bits = np.array(value).astype(target.dtype).tobytes()
    ints[step.dims:step.dims + len(UPDATE_SLOTS)] = [target.size, target.dtype.itemsize,
                                                     int.from_bytes(bits, "little", signed=True), int(kind == "f")]


def _plan_pool_indices(step: PoolIndicesStep, node: dict, env: dict, ints) -> None:
    x = env[step.input]
    if not x.flags.c_contiguous or x.ndim not in (3, 4):
        raise Unplannable("max_pool2d_with_indices of a non-contiguous input")
    ints[step.dims:step.dims + len(GEOMETRY)] = _plan_max_pool(step, env, x, [env[v] for v in node["inputs"]])


def _plan_pool_backward(step: PoolBackwardStep, node: dict, env: dict, ints) -> None:
    """The pooling's geometry (planes, sizes, window) over a C-contiguous input and gradient."""
    x, grad = env[step.input], env[step.grad]
    if not (x.flags.c_contiguous and grad.flags.c_contiguous) or x.ndim not in (3, 4):
        raise Unplannable("_max_pool2d_backward of a non-contiguous input or gradient")
    ints[step.dims:step.dims + len(GEOMETRY)] = _plan_max_pool(step, env, x, [env[v] for v in node["inputs"][1:]])


def _plan_columns(step: ColumnsStep, node: dict, env: dict, ints) -> None:
    """The image's geometry, the images and the columns' element strides. im2col reads a C-contiguous
    image into columns (N, C*kh*kw, L) or, _im2col_rows, (C*kh*kw, N, L); col2im reads columns with any
    strides and writes a C-contiguous image."""
    from .ops.conv import _col2im_geometry, _im2col_geometry
    x, out, args = env[step.input], env[step.out], [env[v] for v in node["inputs"]]
    image, cols = (x, out) if step.kind in IM2COLS else (out, x)
    if not image.flags.c_contiguous or not out.flags.c_contiguous or cols.ndim != 3:
        raise Unplannable(f"{step.kind} of a non-contiguous image or unbatched columns")
    if step.kind in IM2COLS:
        cols = cols.transpose(IM2COLS[step.kind])  # seen as (image, row, position)
        g = _im2col_geometry(_meta(x), *args[1:5])
    else:
        g = _col2im_geometry(_meta(x), *args[1:6])
    n, c, h, w = image.shape
    strides = [s // cols.itemsize for s in cols.strides]
    ints[step.dims:step.dims + len(COLUMN_SLOTS)] = [c, h, w, *g.kernel, *g.stride, *g.padding, *g.dilation, *g.grid,
                                                     n, *strides]


# step type -> its call plan
_PLANNERS = {GemmStep: _plan_gemm, WindowStep: _plan_window, CatStep: _plan_cat, GatherStep: _plan_gather,
             ScatterStep: _plan_scatter, ReduceStep: _plan_reduce, UpdateStep: _plan_update,
             PoolIndicesStep: _plan_pool_indices, PoolBackwardStep: _plan_pool_backward,
             ColumnsStep: _plan_columns, RecurrentStep: _plan_recurrent,
             FillStep: _plan_fill, DrawStep: lambda *args: None, EmbedStep: _plan_embed, RecurrentBackwardStep: _plan_recurrent_backward}


def _nbytes(meta) -> int:
    return int(np.prod(meta.shape, dtype=np.int64)) * np.dtype(meta.dtype).itemsize


def _scratch_slots(step) -> list:
    """Plan slots of a step's scratch areas (im2col columns, the packed GEMM's panels), alive during
    the step: while planning they hold the bytes needed, then the arena offset."""
    if isinstance(step, GemmStep):
        return [step.dims + GEMM_SLOTS.index("pack")]
    if isinstance(step, RecurrentBackwardStep):
        return [step.dims + BACKWARD_SLOTS.index(n) for n in ("scratch", "pack")]
    if isinstance(step, RecurrentStep):
        return [step.dims + RECURRENT_SLOTS.index("scratch")]
    if isinstance(step, WindowStep) and step.kind in CONVS:
        names = window_slots(step.kind)
        return [step.dims + names.index(n) for n in ("scratch", "pack") if n in names]
    return []


def _place_arena(layout: EntryLayout, env: dict, ints) -> int:
    """Arena offsets (arena.py) of the computed roots not in outputs, each alive from its step to
    the last reader of it or of a view of it, and of each step's scratch; returns the arena's size."""
    last = {}
    for i, step in enumerate(layout.steps):
        for v in step.values():
            last[layout.root_of[v]] = i
    buffers, slots = [], []
    for i, step in enumerate(layout.steps):
        for v in step.outputs:
            root = layout.roots[v]
            if root.base == 0:  # (a random tensor is drawn before the call: alive from its start)
                buffers.append((_nbytes(env[v]), 0 if v in layout.drawn else i, last.get(v, i)))
                slots.append(root.slot)
        for at in _scratch_slots(step):
            buffers.append((ints[at], i, i))
            slots.append(at)
    offsets, top = place(buffers)
    for slot, offset in zip(slots, offsets):
        ints[slot] = offset
    return top
