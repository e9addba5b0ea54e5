"""The whole-graph entry's vocabulary: which graph nodes are steps of the entry (by kind), the step
records the layout makes of them, and the plan slots each step's code reads (see graph_entry.py for
the ABI, entry_layout.py for the layout, entry_plan.py for the values, native/entry.py for the code)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import dtypes as dt
from .ops import OPS
from .prims import CONV_GROUP, KERNEL_GROUPS

# Views that keep a C-contiguous input's element order: the output shares the input's root.
ALIASES = {"aten::view", "aten::reshape", "aten::flatten", "aten::squeeze", "aten::unsqueeze",
           "aten::contiguous", "aten::detach"}
# Views with other strides (same start): kernels read them through their strides, GEMMs as
# transposed operands. Their kernels only make numpy views, so planning runs them on data-less arrays.
STRIDED_VIEWS = {"aten::t", "aten::transpose", "aten::permute", "aten::expand"}
# Views that start elsewhere in their input: each gets a plan slot holding its byte offset from its root.
OFFSET_VIEWS = {"aten::slice", "aten::narrow", "aten::select"}
VIEW_LISTS = {"aten::split", "aten::chunk", "aten::unbind"}  # lists of such views, taken apart by ListUnpack
# Nodes that only read their tensor inputs' shape, dtype or rank: evaluated while planning.
SHAPE_READS = {"aten::size", "aten::dim", "prim::dtype", "prim::requires_grad"}
CONTAINERS = {"prim::ListConstruct": list, "prim::TupleConstruct": tuple}
PLANNED_PRIMS = {"prim::Constant", "prim::GetAttr", *CONTAINERS}


@dataclass(frozen=True)
class Gemm:
    """How a matrix-product op maps onto `C = A @ op(B) (+ bias)`: input positions of A, B and the
    bias (None: no bias), whether B is stored transposed (linear's weight), and input positions
    that must hold the scalar 1 (addmm's beta and alpha)."""
    a: int
    b: int
    bias: int | None
    trans_b: bool
    units: tuple = ()


GEMMS = {
    "aten::linear": Gemm(a=0, b=1, bias=2, trans_b=True),
    "aten::matmul": Gemm(a=0, b=1, bias=None, trans_b=False),
    "aten::mm": Gemm(a=0, b=1, bias=None, trans_b=False),
    "aten::bmm": Gemm(a=0, b=1, bias=None, trans_b=False),
    "aten::addmm": Gemm(a=1, b=2, bias=0, trans_b=False, units=(3, 4)),
}
# Convolutions (im2col into arena scratch, then one GEMM per image) and max-pooling (a native kernel).
CONVS = {"aten::conv2d": "tscript_conv2d", "aten::conv_transpose2d": "tscript_conv_transpose2d"}
AVG_POOLS = {"aten::avg_pool2d": "tscript_avg_pool2d", "aten::adaptive_avg_pool2d": "tscript_avg_pool2d"}
POOLS = {"aten::max_pool2d": "tscript_max_pool2d", **AVG_POOLS}
# Recurrent time loops (ops/recurrent.py): the cell each one runs.
RECURRENT = {"aten::_lstm_sequence": "lstm", "aten::_gru_sequence": "gru", "aten::_rnn_sequence": "rnn"}
# Tensors of one value (their sizes may be known only per call): the value, or the input holding it.
# (empty, empty_like: None, nothing is written).
FILLS = {"aten::zeros": 0, "aten::ones": 1, "aten::empty": None, "aten::zeros_like": 0, "aten::ones_like": 1,
         "aten::empty_like": None, "aten::full": ("input", 1), "aten::full_like": ("input", 1)}
# Random tensors: drawn by their op's kernel from the process's generator before the native call, in
# graph order (as the executor draws them), into buffers alive for the whole call. In-place draws fill
# a fresh `empty` tensor; the others make a tensor. Their other arguments are known when planning.
DRAWS_INTO = {"aten::bernoulli_", "aten::uniform_", "aten::normal_"}
DRAWS = DRAWS_INTO | {"aten::rand", "aten::randn", "aten::randint"}
FILL_SLOTS = ("count", "item_bytes", "pattern")  # elements, bytes each, the value's bits (as a little-endian int)
RECURRENT_BACKWARD = {f"{kind}_backward": cell for kind, cell in RECURRENT.items()}
# A copy of a tensor with a slice (select_scatter: one index) replaced: the tensor seen as (outer, n, inner
# bytes) around the dim, the slice's first index, step and length, and the whole tensor's bytes.
EMBED_SLOTS = ("outer", "n", "inner", "start", "step", "count", "bytes")
# Columns of images: the order of the output's dims as (image, row C*kh*kw, position L) -- im2col's
# (N, C*kh*kw, L); _im2col_rows' (C*kh*kw, N, L), the layout the weight gradient's GEMM reads.
IM2COLS = {"aten::im2col": (0, 1, 2), "aten::_im2col_rows": (1, 0, 2)}
STEP_KINDS = {"draw": DRAWS, "embed": {"aten::select_scatter", "aten::slice_scatter"}, "fill": set(FILLS), "recurrent": set(RECURRENT), "recurrent_backward": set(RECURRENT_BACKWARD), "kernel": set(KERNEL_GROUPS), "gemm": set(GEMMS), "conv2d": {"aten::conv2d", CONV_GROUP},
              "conv_transpose2d": {"aten::conv_transpose2d"}, "max_pool2d": {"aten::max_pool2d"},
              "avg_pool2d": set(AVG_POOLS), "cat": {"aten::cat", "aten::stack"},
              "gather": {"aten::index_select", "aten::gather"}, "scatter": {"aten::scatter_add", "aten::index_put"},
              "reduce": {"aten::sum", "aten::mean", "aten::var"}, "update": {"aten::add_"}, "copy": {"aten::copy_"},
              "max_pool2d_with_indices": {"aten::max_pool2d_with_indices"}, "columns": {*IM2COLS, "aten::col2im"},
              "max_pool2d_backward": {"aten::_max_pool2d_backward"}}
# Indexing along a dim of tensors seen as (outer, n, inner): the source's n, the index's n, the index's
# bytes per element and the data's. index_select and index_put pick whole (outer, inner) slices by a 1-d
# index; gather and scatter_add one element per index element (index shaped like the result). An index
# outside the source stops the entry (the executor then raises PyTorch's error).
GATHER_SLOTS = ("outer", "n_source", "n_index", "inner", "item_bytes", "index_bytes")
# A sum, mean or variance of a C-contiguous tensor seen as (outer, reduced, inner, reduced2): out[o, i]
# reduces x[o, :, i, :] (adjacent dims: reduced2 is 1; batch statistics over dims 0, 2, 3 of NCHW: outer 1,
# inner the channels). The sum is multiplied by 1 / divisor (mean: the count; sum: 1); a variance (flag 1)
# is the sum of squared deviations from the mean divided by divisor (the count less the correction).
REDUCE_SLOTS = ("outer", "reduced", "inner", "divisor", "reduced2", "variance")
# An in-place add of a plan-time scalar (other * alpha) into every element of a tensor (BatchNorm's
# num_batches_tracked += 1): elements, bytes each, the increment's bits in the tensor's dtype, is it float.
UPDATE_SLOTS = ("count", "item_bytes", "pattern", "float")
# The geometry of a convolution or pooling as the kernel library's im2col and max-pool kernels read it
# (i64 each; C counts planes for pooling), and a convolution step's slots: that, then its sizes.
GEOMETRY = ("C", "H", "W", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "OH", "OW")
# im2col / col2im: GEOMETRY of the image (C, H, W: the image's channels and size; OH, OW: the grid of
# blocks), the images, and the columns' element strides (images, rows, positions; col2im reads any).
COLUMN_SLOTS = GEOMETRY + ("N", "s_n", "s_k", "s_l")
CONV_SLOTS = GEOMETRY + ("N", "O", "K", "L", "G", "scratch", "pack")  # C and O: the channels of one group
# A transposed convolution: its input's geometry (C: one group's input channels, H, W), the kernel, stride,
# padding and dilation, its output size, images, one group's output channels, groups, the images one
# product computes, the scratch holding their columns (images*H*W, G*O*kh*kw) and their input's pixel rows
# (images*H*W, G*C), and the packed GEMM's panels (native/conv_transpose.py).
CONVT_SLOTS = ("C", "H", "W", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "OH", "OW", "N", "O", "G", "images",
               "scratch", "pack")
# An average pooling: planes, sizes, window (adaptive: 1, PyTorch's adaptive windows; else kernel,
# stride, padding), whether the divisor counts padding, a divisor override (0: none).
AVG_SLOTS = ("P", "H", "W", "OH", "OW", "kh", "kw", "sh", "sw", "ph", "pw", "adaptive", "include_pad", "divisor")
# One product C (M, N) = op(A) @ op(B), then, for batched products, how many and where each is: up to
# MAX_BATCH_RANK batch dims (sizes, outermost first) and each operand's byte strides along them.
MAX_BATCH_RANK = 4
BATCH_SLOTS = ("count", *(f"size{d}" for d in range(MAX_BATCH_RANK)),
               *(f"{x}_stride{d}" for x in "abc" for d in range(MAX_BATCH_RANK)))
GEMM_SLOTS = ("trans_a", "trans_b", "M", "N", "K", "lda", "ldb", "ldc", "bias_row_stride") + BATCH_SLOTS + ("pack",)
# (pack: the arena offset of the packed GEMM's scratch; while planning, the bytes it needs)
# A recurrent time loop: steps, batch, hidden size, relu (the RNN's nonlinearity), reverse, whether each
# step splits over two threads, and the arena offset of its scratch (native/recurrent.py).
RECURRENT_SLOTS = ("T", "B", "H", "relu", "reverse", "split", "scratch")
# Backward through time: sizes and flags as RECURRENT_SLOTS, scratch and the packed GEMM's panels, then
# three products as a GEMM reads them (GEMM_SLOTS' first nine each; native/recurrent_backward.py).
BACKWARD_SLOTS = ("T", "B", "H", "relu", "reverse", "scratch", "pack",
                  *(f"{g}_{s}" for g in ("first", "rest", "back") for s in GEMM_SLOTS[:9]))
NO_TRANS, TRANS = 111, 112  # CBLAS_TRANSPOSE
SPLIT_COLUMNS = 32  # a split library GEMM's halves start at a multiple of this many columns
# a product of more than 4 rows with a longer K goes to the packed GEMM, not the register-blocked GEMMs
# (they stream B once per 4 rows: a convolution's weight gradient, K = its output positions, ran 6x slower)
LONG_K = 4096
GEMM_DTYPES = {dt.float32: "cblas_sgemm", dt.float64: "cblas_dgemm"}
FLOAT_SUFFIX = {dt.float32: "f32", dt.float64: "f64"}
_TENSOR_TYPE = re.compile(r"(Tensor|Float|Double|Int|Long|Bool)(\(|\Z)")
_TYPE_DTYPES = {"Float": dt.float32, "Double": dt.float64, "Int": dt.int32, "Long": dt.int64, "Bool": dt.bool_}


class NotLowerable(Exception):
    """The graph has a node the entry cannot run (the executor runs it instead)."""


def tensor_type(type_str: str):
    """(is a tensor, its static dtype or None) from a graph type string such as `Float(1, 784)`."""
    m = _TENSOR_TYPE.match(type_str or "")
    if m is None:
        return False, None
    return True, _TYPE_DTYPES.get(m.group(1))


@dataclass
class KernelStep:
    node: int                # index into the graph's nodes
    kernel: str
    outputs: list            # value names
    tensors: list            # tensor input names
    scalars: list            # scalar input names
    sizes: int = 0           # plan slot of sizes[rank], followed by strides[n_ptrs * rank]
    rank: int = 0
    first_scalar: int = 0    # index into the scalars array
    split: int = 0           # plan slot of a flag: 1 to run in halves on two threads, followed by
    #                          the halves' sizes[rank] twice and the second half's byte offsets[n_ptrs]

    def values(self) -> list:
        """The tensor values the step reads or writes (outputs first)."""
        return self.outputs + self.tensors


@dataclass
class GemmStep:
    node: int
    kind: str
    a: str
    b: str
    bias: str | None
    out: str
    function: str            # cblas_sgemm / cblas_dgemm
    trans_b: bool
    small_m: int             # at most this many rows: the kernel library's GEMM (float32)
    split_min: int           # multiply-adds from which a library GEMM runs in column halves on two threads
    dims: int = 0            # plan slot of GEMM_SLOTS
    n_slots = len(GEMM_SLOTS)

    @property
    def outputs(self) -> list:
        return [self.out]

    def values(self) -> list:
        return [v for v in (self.out, self.a, self.b, self.bias) if v is not None]


@dataclass
class WindowStep:
    """conv2d (input, weight, bias) or max_pool2d (input): GEOMETRY-based native code. A ConvGroup is a
    conv2d step (kind aten::conv2d) with an epilogue reading `extras` (conv_epilogue.py)."""
    node: int
    kind: str
    input: str
    weight: str | None
    bias: str | None
    out: str
    function: str            # tscript_conv2d_f32, tscript_max_pool2d_f64, ...
    small_m: int = 0         # convolutions: at most this many output channels use the library GEMM
    dims: int = 0            # plan slot of CONV_SLOTS (convolutions) or GEOMETRY (pools)
    extras: list = field(default_factory=list)  # a ConvGroup's epilogue tensors (value names)
    epilogue: object = None  # a ConvGroup's conv_epilogue.EpilogueSpec: its pointwise ops, run as the epilogue
    direct: bool | None = None  # convolutions: one input channel per group (the depthwise kernel), by the
    #                             weight's static type; None: not known until planned (the code has both paths)

    @property
    def n_slots(self) -> int:
        return len(window_slots(self.kind))

    @property
    def outputs(self) -> list:
        return [self.out]

    def values(self) -> list:
        return [v for v in (self.out, self.input, self.weight, self.bias) if v is not None] + self.extras


@dataclass
class CatStep:
    """cat of a list of tensors: each copied, in rows, into its slice of the output."""
    node: int
    inputs: list             # tensor value names, in order
    out: str
    dims: int = 0            # plan slot of: outer rows, bytes of an output row, then per input its byte
    #                          offset in a row and bytes per row

    @property
    def n_slots(self) -> int:
        return 2 + 2 * len(self.inputs)

    @property
    def outputs(self) -> list:
        return [self.out]

    def values(self) -> list:
        return [self.out, *self.inputs]


@dataclass
class GatherStep:
    """index_select or gather: elements of `source` picked by `index` (checked in bounds)."""
    node: int
    kind: str
    source: str
    index: str
    out: str
    dims: int = 0            # plan slot of GATHER_SLOTS
    n_slots = len(GATHER_SLOTS)

    @property
    def outputs(self) -> list:
        return [self.out]

    def values(self) -> list:
        return [self.out, self.source, self.index]


@dataclass
class ScatterStep:
    """scatter_add or index_put: `out` is a copy of `source` with `src` added (index_put without
    accumulate: written) where `index` says (checked in bounds; index_put's negative indices wrap)."""
    node: int
    kind: str
    source: str
    index: str
    src: str
    out: str
    accumulate: str | None   # index_put's accumulate flag (a plan-time value)
    function: str            # the element type: f32 or f64
    dims: int = 0            # plan slot of GATHER_SLOTS (n_source: the output's size along the dim)
    n_slots = len(GATHER_SLOTS) + 1  # then: 1 to add, 0 to write

    @property
    def outputs(self) -> list:
        return [self.out]

    def values(self) -> list:
        return [self.out, self.source, self.index, self.src]


@dataclass
class ReduceStep:
    """sum or mean over adjacent dims (REDUCE_SLOTS)."""
    node: int
    source: str
    out: str
    function: str            # the element type: f32 or f64
    dims: int = 0
    n_slots = len(REDUCE_SLOTS)

    @property
    def outputs(self) -> list:
        return [self.out]

    def values(self) -> list:
        return [self.out, self.source]


@dataclass
class UpdateStep:
    """An in-place write into an existing buffer (a module's buffer, or a tensor computed earlier):
    `add_` of a scalar (UPDATE_SLOTS) or `copy_` of a tensor of the same shape and dtype (one slot: the
    bytes). `out` is the written tensor itself (it shares the target's root); later steps see the value."""
    node: int
    kind: str
    target: str
    source: str | None       # copy_: the tensor copied
    out: str
    dims: int = 0

    @property
    def n_slots(self) -> int:
        return len(UPDATE_SLOTS) if self.kind == "aten::add_" else 1

    @property
    def outputs(self) -> list:
        return []            # (no new root: the target's is written)

    def values(self) -> list:
        return [v for v in (self.target, self.source) if v is not None]


@dataclass
class PoolIndicesStep:
    """max_pool2d_with_indices: the maxima and, per output, the flat index into its input plane (GEOMETRY)."""
    node: int
    input: str
    out: str
    indices: str
    function: str            # f32 or f64
    dims: int = 0
    n_slots = len(GEOMETRY)

    @property
    def outputs(self) -> list:
        return [self.out, self.indices]

    def values(self) -> list:
        return [self.out, self.indices, self.input]


@dataclass
class PoolBackwardStep:
    """_max_pool2d_backward: each output's gradient added at its window's maximum in `input`, found again
    (GEOMETRY; C counts planes)."""
    node: int
    grad: str
    input: str
    out: str
    function: str            # f32 or f64
    dims: int = 0
    n_slots = len(GEOMETRY)

    @property
    def outputs(self) -> list:
        return [self.out]

    def values(self) -> list:
        return [self.out, self.grad, self.input]


@dataclass
class ColumnsStep:
    """im2col (an image's sliding blocks as columns) or col2im (columns summed back into an image)."""
    node: int
    kind: str
    input: str
    out: str
    function: str            # f32 or f64
    dims: int = 0
    n_slots = len(COLUMN_SLOTS)

    @property
    def outputs(self) -> list:
        return [self.out]

    def values(self) -> list:
        return [self.out, self.input]


@dataclass
class RecurrentStep:
    """A time loop (`_lstm_sequence`, `_gru_sequence`, `_rnn_sequence`): per step, the recurrent GEMM into
    scratch, then the cell over the batch, writing the step's h into `hs` (and the LSTM's c into `c`)."""
    node: int
    cell: str                # lstm, gru or rnn
    gates: str
    h0: str
    c0: str | None
    weight: str
    bias: str | None
    hs: str
    c: str | None
    function: str            # cblas_sgemm / cblas_dgemm
    split_min: int           # multiply-adds of a step's product from which it splits over two threads
    dims: int = 0            # plan slot of RECURRENT_SLOTS
    n_slots = len(RECURRENT_SLOTS)

    @property
    def outputs(self) -> list:
        return [self.hs] + ([self.c] if self.c else [])

    def values(self) -> list:
        return [v for v in (self.hs, self.c, self.gates, self.h0, self.c0, self.weight, self.bias) if v is not None]


@dataclass
class RecurrentBackwardStep:
    """Backward through time of a recurrent op (BACKWARD_SLOTS): `inputs` by the backward function's
    pointer names (grad_hs, grad_c, gates, h0, c0, w, bias, hs; None where the cell has none), `outs`
    its outputs in order."""
    node: int
    cell: str
    inputs: dict
    outs: list
    function: str            # cblas_sgemm / cblas_dgemm
    small_m: int
    split_min: int
    dims: int = 0
    n_slots = len(BACKWARD_SLOTS)

    @property
    def outputs(self) -> list:
        return list(self.outs)

    def values(self) -> list:
        return self.outs + [v for v in self.inputs.values() if v is not None]


@dataclass
class EmbedStep:
    """select_scatter / slice_scatter: `out` is `source` with `src` written into a slice (EMBED_SLOTS)."""
    node: int
    source: str
    src: str
    out: str
    dims: int = 0
    n_slots = len(EMBED_SLOTS)

    @property
    def outputs(self) -> list:
        return [self.out]

    def values(self) -> list:
        return [self.out, self.source, self.src]


@dataclass
class DrawStep:
    """A random tensor (DRAWS): no code; its root is filled before the call (entry_plan.Draw)."""
    node: int
    kind: str
    out: str
    n_slots = 0
    dims: int = 0

    @property
    def outputs(self) -> list:
        return [] if self.kind in DRAWS_INTO else [self.out]  # (an in-place draw's root is its empty's)

    def values(self) -> list:
        return [self.out]


@dataclass
class FillStep:
    """A tensor of one value (FILL_SLOTS)."""
    node: int
    kind: str
    out: str
    dims: int = 0
    n_slots = len(FILL_SLOTS)

    @property
    def outputs(self) -> list:
        return [self.out]

    def values(self) -> list:
        return [self.out]


@dataclass
class Root:
    """A buffer: `base` indexes `bases`; arena roots have a plan slot holding their byte offset."""
    base: int
    slot: int | None = None


WINDOW_ARITY = {"aten::conv2d": 7, "aten::conv_transpose2d": 8, "aten::max_pool2d": 6, "aten::avg_pool2d": 7,
                "aten::adaptive_avg_pool2d": 2}


def window_slots(kind: str) -> tuple:
    return {"aten::conv2d": CONV_SLOTS, "aten::conv_transpose2d": CONVT_SLOTS}.get(kind) or \
        (AVG_SLOTS if kind in AVG_POOLS else GEOMETRY)


def scalar_op(kind: str) -> bool:
    """An op on Python values only (int arithmetic on sizes, ...): evaluated while planning."""
    op = OPS.get(kind)
    return op is not None and not op.tensor_pos and not op.list_pos and \
        all(r.type != "Tensor" for r in op.schema.returns)
