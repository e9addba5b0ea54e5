"""Whole-graph native execution: when the native plan has an entry (native_plan.py), one generated
function runs all of a graph's kernels, GEMMs, convolutions and poolings in order over one arena, so
a model call is one native call.

The entry's code is fixed; whatever depends on the input shapes is data it reads:

    void entry(i8** bases, i64* plan, double* scalars)

`bases` = [arena, tensor inputs..., fixed arrays (parameters, tensor constants)..., outputs...].
Every tensor value lives in a *root* buffer (views such as reshape share their input's root): a
root computed by a step is in the arena at byte offset `plan[slot]`, or in an output array when a
graph output is (a view of) it. `EntryLayout.build` lays out the plan's steps over the graph (which
slots each step reads; the emitter, native/entry.py, generates the code from it) and refuses steps
that do not match their nodes. `make_plan` fills the slots once per input signature: shapes by the
op table's rules, arena offsets, kernel sizes and strides (the kernels' own launch plans), GEMM
dimensions.

Inputs are read with their strides where the plan can take them (else as C-contiguous copies);
everything computed is C-contiguous. A signature the entry cannot serve (a batched matmul, mixed
dtypes, shapes that are an error) gets no plan: the caller runs the executor instead, which also
raises the error that names the node.

`prepare` (at load, for the shapes a saved model names) makes a plan and this thread's arena ahead
of a first run, but no arena beyond MAX_PREPARED_ARENA (1 GiB): a larger one is made by the first
run that needs it, so a file cannot make loading take memory at its word.
"""
from __future__ import annotations

import ctypes
import math
import re
import threading
from dataclasses import dataclass, field

import numpy as np

from . import dtypes as dt
from .arena import place
from .errors import OpError
from .graph_json import TensorRef, decode_attr
from .ops import OPS
from .ops.reductions import reduce_dims
from .ops.registry import TensorMeta
from .prims import GROUPS
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
STEP_KINDS = {"kernel": set(GROUPS), "gemm": set(GEMMS), "conv2d": {"aten::conv2d"},
              "conv_transpose2d": {"aten::conv_transpose2d"}, "max_pool2d": {"aten::max_pool2d"},
              "avg_pool2d": set(AVG_POOLS), "cat": {"aten::cat", "aten::stack"},
              "gather": {"aten::index_select", "aten::gather"}, "scatter": {"aten::scatter_add", "aten::index_put"},
              "reduce": {"aten::sum", "aten::mean"}}
# Indexing along a dim of tensors seen as (outer, n, inner): the source's n, the index's n, the index's
# bytes per element and the data's. index_select and index_put pick whole (outer, inner) slices by a 1-d
# index; gather and scatter_add one element per index element (index shaped like the result). An index
# outside the source stops the entry (the executor then raises PyTorch's error).
GATHER_SLOTS = ("outer", "n_source", "n_index", "inner", "item_bytes", "index_bytes")
# A sum or mean over adjacent dims of a C-contiguous tensor seen as (outer, reduced, inner); the
# result is multiplied by 1 / divisor (mean: the count; sum: 1).
REDUCE_SLOTS = ("outer", "reduced", "inner", "divisor")
# The geometry of a convolution or pooling as the kernel library's im2col and max-pool kernels read it
# (i64 each; C counts planes for pooling), and a convolution step's slots: that, then its sizes.
GEOMETRY = ("C", "H", "W", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "OH", "OW")
CONV_SLOTS = GEOMETRY + ("N", "O", "K", "L", "G", "scratch")  # C and O count the channels of one group
# A transposed convolution: its input's geometry (C: one group's input channels, H, W), the kernel, stride,
# padding and dilation, its output size, images, one group's output channels, groups, and the scratch
# holding one group's columns (O*kh*kw, H*W).
CONVT_SLOTS = ("C", "H", "W", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "OH", "OW", "N", "O", "G", "scratch")
# An average pooling: planes, sizes, window (adaptive: 1, PyTorch's adaptive windows; else kernel,
# stride, padding), whether the divisor counts padding, a divisor override (0: none).
AVG_SLOTS = ("P", "H", "W", "OH", "OW", "kh", "kw", "sh", "sw", "ph", "pw", "adaptive", "include_pad", "divisor")
# One product C (M, N) = op(A) @ op(B), then, for batched products, how many and where each is: up to
# MAX_BATCH_RANK batch dims (sizes, outermost first) and each operand's byte strides along them.
MAX_BATCH_RANK = 4
BATCH_SLOTS = ("count", *(f"size{d}" for d in range(MAX_BATCH_RANK)),
               *(f"{x}_stride{d}" for x in "abc" for d in range(MAX_BATCH_RANK)))
GEMM_SLOTS = ("trans_a", "trans_b", "M", "N", "K", "lda", "ldb", "ldc", "bias_row_stride") + BATCH_SLOTS
NO_TRANS, TRANS = 111, 112  # CBLAS_TRANSPOSE
GEMM_DTYPES = {dt.float32: "cblas_sgemm", dt.float64: "cblas_dgemm"}
FLOAT_SUFFIX = {dt.float32: "f32", dt.float64: "f64"}
_TENSOR_TYPE = re.compile(r"(Tensor|Float|Double|Int|Long|Bool)(\(|\Z)")
_TYPE_DTYPES = {"Float": dt.float32, "Double": dt.float64, "Int": dt.int32, "Long": dt.int64, "Bool": dt.bool_}


class NotLowerable(Exception):
    """The graph has a node the entry cannot run (the executor runs it instead)."""


def _tensor_type(type_str: str):
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
    """conv2d (input, weight, bias) or max_pool2d (input): GEOMETRY-based native code."""
    node: int
    kind: str
    input: str
    weight: str | None
    bias: str | None
    out: str
    function: str            # tscript_conv2d_f32, tscript_max_pool2d_f64, ...
    small_m: int = 0         # convolutions: at most this many output channels use the library GEMM
    dims: int = 0            # plan slot of CONV_SLOTS (convolutions) or GEOMETRY (pools)

    @property
    def n_slots(self) -> int:
        return len(_window_slots(self.kind))

    @property
    def outputs(self) -> list:
        return [self.out]

    def values(self) -> list:
        return [v for v in (self.out, self.input, self.weight, self.bias) if v is not None]


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
class Root:
    """A buffer: `base` indexes `bases`; arena roots have a plan slot holding their byte offset."""
    base: int
    slot: int | None = None


@dataclass
class EntryLayout:
    """The static shape of a graph's entry: its steps, where each tensor value lives, plan slots."""
    graph: dict
    specs: dict                                   # kernel name -> LaunchSpec
    steps: list = field(default_factory=list)
    roots: dict = field(default_factory=dict)     # root value name -> Root
    root_of: dict = field(default_factory=dict)   # tensor value name -> its root value name
    inputs: list = field(default_factory=list)    # graph input positions of tensor inputs
    fixed: list = field(default_factory=list)     # fixed arrays: (("attr", chain) | ("constant", name), value)
    outputs: list = field(default_factory=list)   # output roots, in bases order
    n_slots: int = 0
    n_scalars: int = 0
    kinds: dict = field(default_factory=dict)     # value name -> "tensor" | "module" | "value"
    chains: dict = field(default_factory=dict)    # module value name -> attribute chain from %self
    computed: list = field(default_factory=list)  # roots computed by steps, in order
    containers: dict = field(default_factory=dict)  # tuple/list of tensors -> (constructor, items)
    results: list = field(default_factory=list)   # the graph's tensor outputs, containers flattened
    start_of: dict = field(default_factory=dict)  # view -> the offset view whose slot says where it starts
    offset_slots: dict = field(default_factory=dict)  # offset view -> plan slot of its byte offset

    @classmethod
    def build(cls, graph: dict, steps: list, specs: dict) -> "EntryLayout":
        """The layout of the entry running `steps` (native_plan.StepPlan) over `graph` (a checked
        graph document whose kernels have the KernelSpecs `specs`, by name), or NotLowerable naming
        the node that stops it."""
        layout = cls(graph, specs)
        layout._walk({s.node: s for s in steps})
        layout._place()
        return layout

    # -- static analysis ------------------------------------------------------------------------------
    def _walk(self, steps: dict) -> None:
        for i, v in enumerate(self.graph["inputs"]):
            t = v.get("type", "")
            if i == 0 and t.startswith("__module__"):
                self.kinds[v["name"]], self.chains[v["name"]] = "module", ()
            elif _tensor_type(t)[0]:
                self.kinds[v["name"]] = "tensor"
                self._new_root(v["name"], 1 + len(self.inputs))
                self.inputs.append(i)
            else:
                self.kinds[v["name"]] = "value"
        for index, node in enumerate(self.graph["nodes"]):
            try:
                self._node(index, node, steps.get(index))
            except NotLowerable as e:
                source = node.get("source")
                raise NotLowerable(f"{node['kind']}{f' at {source}' if isinstance(source, str) else ''} (node {index}): "
                                   f"{e}") from None
        for name in self.graph["outputs"]:
            self._result(name)

    def _result(self, name: str) -> None:
        """Add a graph output's tensors (a tuple or list of them: its items) to `results`."""
        if name in self.containers:
            for item in self.containers[name][1]:
                self._result(item)
        elif self.kinds.get(name) == "tensor":  # computed, or an input or parameter (or a view of one)
            self.results.append(name)
        else:
            raise NotLowerable(f"output '{name}' is not a tensor")

    def _node(self, index: int, node: dict, step) -> None:
        kind, ins = node["kind"], node["inputs"]
        outs = [o["name"] for o in node["outputs"]]
        if node.get("blocks"):
            raise NotLowerable("control flow (blocks) does not lower")
        if step is not None:
            if kind not in STEP_KINDS[step.template] or len(outs) < 1:
                raise NotLowerable(f"it cannot be a '{step.template}' step")
            if step.template == "kernel":
                self._kernel(index, node, outs)
            elif step.template == "gemm":
                self._gemm(index, node, outs[0], step)
            elif step.template == "cat":
                self._cat(index, node, outs[0])
            elif step.template == "gather":
                self._gather(index, node, outs[0])
            elif step.template == "scatter":
                self._scatter(index, node, outs[0])
            elif step.template == "reduce":
                self._reduce(index, node, outs[0])
            else:
                self._window(index, node, outs[0], step)
        elif kind == "prim::GetAttr":
            self._get_attr(node, outs[0])
        elif any(kind in kinds for kinds in STEP_KINDS.values()):
            raise NotLowerable("it has no step in the native plan")
        elif kind in ALIASES or kind in STRIDED_VIEWS or kind in OFFSET_VIEWS:
            if self.kinds.get(ins[0]) != "tensor":
                raise NotLowerable(f"{kind} of a value that is not a tensor")
            self._view(node, outs[0], ins[0], kind in OFFSET_VIEWS)
        elif kind in VIEW_LISTS and self.kinds.get(ins[0]) == "tensor" and len(outs) == 1:
            self.kinds[outs[0]] = "views"
            self.containers[outs[0]] = (kind, [ins[0]])
        elif kind == "prim::ListUnpack" and self.kinds.get(ins[0]) == "views":
            for o in outs:
                self._view(node, o, self.containers[ins[0]][1][0], True)
        elif kind in CONTAINERS and ins and all(self.kinds.get(v) in ("tensor", "container") for v in ins):
            self.kinds[outs[0]] = "container"  # of tensors: only a graph output may be one
            self.containers[outs[0]] = (kind, ins)
        elif kind in PLANNED_PRIMS or kind in SHAPE_READS or _scalar_op(kind):
            if any(self.kinds.get(v) in ("container", "views") for v in ins) or \
                    (kind not in SHAPE_READS and any(self.kinds.get(v) == "tensor" for v in ins)):
                raise NotLowerable(f"{kind} takes a tensor")
            value = decode_attr(node.get("attrs", {}).get("value")) if kind == "prim::Constant" else None
            for o in node["outputs"]:  # a constant is a tensor when it refers to one, not for its other tagged values
                self.kinds[o["name"]] = "tensor" if isinstance(value, TensorRef) else "value"
                if isinstance(value, TensorRef):
                    self._fixed_root(o["name"], ("constant", value.name))
        else:
            raise NotLowerable("no native lowering for this op yet")

    def _get_attr(self, node: dict, out: str) -> None:
        owner = node["inputs"][0]
        if self.kinds.get(owner) != "module":
            raise NotLowerable("prim::GetAttr of a value that is not the module")
        chain = self.chains[owner] + (node["attrs"]["name"],)
        t = node["outputs"][0].get("type", "")
        if t.startswith("__module__"):
            self.kinds[out], self.chains[out] = "module", chain
        elif _tensor_type(t)[0]:
            self.kinds[out] = "tensor"
            self._fixed_root(out, ("attr", chain))
        else:
            raise NotLowerable(f"module attribute '{'.'.join(chain)}' of type {t} is read by the graph")

    def _kernel(self, index: int, node: dict, outs: list) -> None:
        name = node.get("attrs", {}).get("kernel")
        if not isinstance(name, str) or name not in self.specs:
            raise NotLowerable(f"{node['kind']} without a kernel in the native plan")
        spec = self.specs[name]
        if len(node["inputs"]) != len(spec.inputs) or len(outs) != len(spec.out_dtypes):
            raise NotLowerable(f"kernel {name}: its node's inputs and outputs do not match its subgraph's")
        tensors = [v for v, k in zip(node["inputs"], spec.inputs) if k == "tensor"]
        scalars = [v for v, k in zip(node["inputs"], spec.inputs) if k == "scalar"]
        if any(self.kinds.get(v) != "tensor" for v in tensors) or \
                any(self.kinds.get(v) in ("tensor", "container") for v in scalars):
            raise NotLowerable(f"kernel {name}: inputs do not match its launch spec")
        for o in outs:
            self._tensor_out(node, o)
            self._new_root(o, 0)
        self.steps.append(KernelStep(index, name, outs, tensors, scalars, rank=spec.rank))

    def _gemm(self, index: int, node: dict, out: str, step) -> None:
        g = GEMMS[node["kind"]]
        ins = node["inputs"]
        if len(ins) <= max(g.a, g.b):
            raise NotLowerable(f"{node['kind']} with {len(ins)} inputs")
        # inputs left out take the schema's defaults: no bias, beta and alpha 1 (_plan_gemm)
        bias = ins[g.bias] if g.bias is not None and g.bias < len(ins) and self.kinds.get(ins[g.bias]) == "tensor" \
            else None
        if self.kinds.get(ins[g.a]) != "tensor" or self.kinds.get(ins[g.b]) != "tensor":
            raise NotLowerable(f"{node['kind']} of values that are not tensors")
        function = GEMM_DTYPES.get(_tensor_type(node["outputs"][0].get("type", ""))[1])
        if function is None:
            raise NotLowerable(f"{node['kind']} of dtype {node['outputs'][0].get('type')} (BLAS has float32/64)")
        self._tensor_out(node, out)
        self._new_root(out, 0)
        self.steps.append(GemmStep(index, node["kind"], ins[g.a], ins[g.b], bias, out, function, g.trans_b,
                                   step.small_m, step.split_min))

    def _window(self, index: int, node: dict, out: str, step) -> None:
        kind, ins = node["kind"], node["inputs"]
        if len(ins) != WINDOW_ARITY[kind]:
            raise NotLowerable(f"{kind} with {len(ins)} inputs")
        suffix = FLOAT_SUFFIX.get(_tensor_type(node["outputs"][0].get("type", ""))[1])
        if suffix is None:
            raise NotLowerable(f"{kind} of dtype {node['outputs'][0].get('type')}")
        tensors = ins[:3] if kind in CONVS else ins[:1]
        if any(self.kinds.get(v) != "tensor" for v in tensors[:2]):
            raise NotLowerable(f"{kind} of values that are not tensors")
        bias = tensors[2] if len(tensors) == 3 and self.kinds.get(tensors[2]) == "tensor" else None
        weight = tensors[1] if kind in CONVS else None
        self._tensor_out(node, out)
        self._new_root(out, 0)
        name = (CONVS.get(kind) or POOLS[kind]) + "_" + suffix
        self.steps.append(WindowStep(index, kind, ins[0], weight, bias, out, name, step.small_m))

    def _cat(self, index: int, node: dict, out: str) -> None:
        ins = node["inputs"]
        if len(ins) != 2 or ins[0] not in self.containers or self.containers[ins[0]][0] != "prim::ListConstruct" \
                or self.kinds.get(ins[1]) != "value":
            raise NotLowerable(f"{node['kind']} of something other than a list of tensors made here")
        items = self.containers[ins[0]][1]
        if any(self.kinds.get(v) != "tensor" for v in items):
            raise NotLowerable(f"{node['kind']} of a list holding lists")
        self._tensor_out(node, out)
        self._new_root(out, 0)
        self.steps.append(CatStep(index, list(items), out))

    def _gather(self, index: int, node: dict, out: str) -> None:
        source, dim, idx = node["inputs"][:3]
        if self.kinds.get(source) != "tensor" or self.kinds.get(idx) != "tensor" or self.kinds.get(dim) != "value":
            raise NotLowerable(f"{node['kind']} of values that are not tensors")
        self._tensor_out(node, out)
        self._new_root(out, 0)
        self.steps.append(GatherStep(index, node["kind"], source, idx, out))

    def _scatter(self, index: int, node: dict, out: str) -> None:
        kind, ins = node["kind"], node["inputs"]
        if kind == "aten::scatter_add":
            (source, _, idx, src), accumulate = ins, None
        else:
            source, indices, src, accumulate = ins if len(ins) == 4 else ins + [None]
            items = self.containers.get(indices, (None, []))[1]
            if len(items) != 1 or self.kinds.get(items[0]) != "tensor":
                raise NotLowerable("index_put with other than one index tensor")
            idx = items[0]
        if any(self.kinds.get(v) != "tensor" for v in (source, idx, src)):
            raise NotLowerable(f"{kind} of values that are not tensors")
        suffix = FLOAT_SUFFIX.get(_tensor_type(node["outputs"][0].get("type", ""))[1])
        if suffix is None:
            raise NotLowerable(f"{kind} of dtype {node['outputs'][0].get('type')}")
        self._tensor_out(node, out)
        self._new_root(out, 0)
        self.steps.append(ScatterStep(index, kind, source, idx, src, out, accumulate, suffix))

    def _reduce(self, index: int, node: dict, out: str) -> None:
        source = node["inputs"][0]
        suffix = FLOAT_SUFFIX.get(_tensor_type(node["outputs"][0].get("type", ""))[1])
        if self.kinds.get(source) != "tensor" or suffix is None:
            raise NotLowerable(f"{node['kind']} of other than a float32/float64 tensor")
        self._tensor_out(node, out)
        self._new_root(out, 0)
        self.steps.append(ReduceStep(index, source, out, suffix))

    def _view(self, node: dict, out: str, source: str, moves_start: bool) -> None:
        """`out` is a view of tensor `source`: same root; it starts where `source` does, or, for a view
        that moves the start (`moves_start`), where its own offset slot says."""
        self._tensor_out(node, out)
        self.root_of[out] = self.root_of[source]
        if moves_start:
            self.start_of[out] = out
        elif source in self.start_of:
            self.start_of[out] = self.start_of[source]

    def _tensor_out(self, node: dict, name: str) -> None:
        if not _tensor_type(next(o for o in node["outputs"] if o["name"] == name).get("type", "Tensor"))[0]:
            raise NotLowerable(f"{node['kind']} output '{name}' is not typed as a tensor")
        self.kinds[name] = "tensor"

    def _new_root(self, name: str, base: int) -> None:
        self.root_of[name] = name
        self.roots[name] = Root(base)
        if base == 0:
            self.computed.append(name)

    def _fixed_root(self, name: str, source: tuple) -> None:
        self.kinds[name] = "tensor"
        self.root_of[name] = name
        self.roots[name] = Root(-1)  # numbered in _place, after the inputs
        self.fixed.append((source, name))

    def _place(self) -> None:
        """Bases and plan slots: outputs' roots go to output arrays, other computed roots to the arena."""
        if not self.steps:
            raise NotLowerable("nothing to run natively")
        n_in = 1 + len(self.inputs)
        for k, (_, name) in enumerate(self.fixed):
            self.roots[name].base = n_in + k
        base = n_in + len(self.fixed)
        for name in self.results:
            root = self.root_of[name]
            if root in self.computed and root not in self.outputs:
                self.roots[root].base = base + len(self.outputs)
                self.outputs.append(root)
        slot = 0
        for name in self.computed:
            if self.roots[name].base == 0:
                self.roots[name].slot, slot = slot, slot + 1
        for view in dict.fromkeys(self.start_of.values()):
            self.offset_slots[view], slot = slot, slot + 1
        for step in self.steps:
            if isinstance(step, KernelStep):
                n_ptrs = len(step.outputs) + len(step.tensors)
                step.sizes, slot = slot, slot + step.rank * (1 + n_ptrs)
                step.split, slot = slot, slot + 1 + 2 * step.rank + n_ptrs
                step.first_scalar, self.n_scalars = self.n_scalars, self.n_scalars + len(step.scalars)
            else:
                step.dims, slot = slot, slot + step.n_slots
        self.n_slots = slot

    def address(self, value: str) -> Root:
        """Where a tensor value's root lives (its base and arena offset slot)."""
        return self.roots[self.root_of[value]]

    def start_slot(self, value: str) -> int | None:
        """The plan slot of a view's byte offset from its root's start (None: it starts there)."""
        view = self.start_of.get(value)
        return None if view is None else self.offset_slots[view]


WINDOW_ARITY = {"aten::conv2d": 7, "aten::conv_transpose2d": 8, "aten::max_pool2d": 6, "aten::avg_pool2d": 7,
                "aten::adaptive_avg_pool2d": 2}


def _window_slots(kind: str) -> tuple:
    return {"aten::conv2d": CONV_SLOTS, "aten::conv_transpose2d": CONVT_SLOTS}.get(kind) or \
        (AVG_SLOTS if kind in AVG_POOLS else GEOMETRY)


def _scalar_op(kind: str) -> bool:
    """An op on Python values only (int arithmetic on sizes, ...): evaluated while planning."""
    op = OPS.get(kind)
    return op is not None and not op.tensor_pos and not op.list_pos and \
        all(r.type != "Tensor" for r in op.schema.returns)


# -- plans: everything that depends on the input signature ---------------------------------------------

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
    return CallPlan(ints, scalars, arena, outputs, views, direct)


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
        elif kind in GROUPS:
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
        if len(outs) == 1:
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
    (shape reads take TensorMetas: they only look at shape, dtype and rank)."""
    if (op.tensor_pos or op.list_pos) and op.name not in SHAPE_READS:
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
              *[s for x in (a.strides[:-2], b.strides[:-2], c_strides) for s in (0,) * pad + tuple(x)]]
    ints[step.dims:step.dims + len(GEMM_SLOTS)] = values


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
    plan = {"aten::conv2d": _plan_conv, "aten::conv_transpose2d": _plan_conv_transpose}.get(step.kind) or \
        (_plan_avg_pool if step.kind in AVG_POOLS else _plan_max_pool)
    values = plan(step, env, x, args)
    ints[step.dims:step.dims + len(values)] = values


def _plan_conv(step: WindowStep, env: dict, x, args: list) -> list:
    from .ops.conv import _conv_geometry
    w, groups = env[step.weight], args[6]
    g = _conv_geometry("conv2d", 2, _meta(x), _meta(w), _meta(env[step.bias]) if step.bias else None, *args[3:7])
    c, h, wd = x.shape[-3:]
    kernel, per_group = tuple(w.shape[2:]), c // groups
    k, length = per_group * kernel[0] * kernel[1], g.out[0] * g.out[1]
    return [per_group, h, wd, *kernel, *g.stride, *g.padding, *g.dilation, *g.out,
            x.shape[0] if x.ndim == 4 else 1, w.shape[0] // groups, k, length, groups, k * length * x.itemsize]


def _plan_conv_transpose(step: WindowStep, env: dict, x, args: list) -> list:
    from .ops.conv import _transposed_geometry
    w, groups = env[step.weight], args[6]
    g = _transposed_geometry(_meta(x), _meta(w), _meta(env[step.bias]) if step.bias else None, args[3], args[4],
                             args[5], groups, args[7])
    c, h, wd = x.shape[-3:]
    out_per_group, kernel = w.shape[1], tuple(w.shape[2:])
    scratch = out_per_group * kernel[0] * kernel[1] * h * wd * x.itemsize
    return [c // groups, h, wd, *kernel, *g.stride, *g.padding, *g.dilation, *g.out,
            x.shape[0] if x.ndim == 4 else 1, out_per_group, groups, scratch]


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
    """The reduced dims as one run: (outer, reduced, inner) of a C-contiguous source."""
    source, out = env[step.source], env[step.out]
    ins = [env[v] for v in node["inputs"]]
    if not source.flags.c_contiguous or out.dtype != source.dtype:
        raise Unplannable(f"{node['kind']} of a non-contiguous source or to another dtype")
    dims = set(reduce_dims(source, ins[1] if len(ins) > 1 else None, node["kind"]))
    wide = [d for d in range(source.ndim) if source.shape[d] != 1]  # size-1 dims go anywhere
    run = [d for d in wide if d in dims]
    if run and any(d not in dims for d in wide if run[0] < d < run[-1]):
        raise Unplannable(f"{node['kind']} over dims that are not adjacent")
    first, last = (run[0], run[-1]) if run else (source.ndim, source.ndim - 1)
    count = math.prod(source.shape[d] for d in dims)
    mean = node["kind"] == "aten::mean"
    ints[step.dims:step.dims + step.n_slots] = [math.prod(source.shape[:first]), math.prod(source.shape[first:last + 1]),
                                                math.prod(source.shape[last + 1:]), count if mean else 1]


# step type -> its call plan
_PLANNERS = {GemmStep: _plan_gemm, WindowStep: _plan_window, CatStep: _plan_cat, GatherStep: _plan_gather,
             ScatterStep: _plan_scatter, ReduceStep: _plan_reduce}


def _nbytes(meta) -> int:
    return int(np.prod(meta.shape, dtype=np.int64)) * np.dtype(meta.dtype).itemsize


def _place_arena(layout: EntryLayout, env: dict, ints) -> int:
    """Arena offsets (arena.py) of the computed roots not in outputs, each alive from its step to
    the last reader of it or of a view of it, and of each convolution's im2col scratch, alive during
    its step; returns the arena's size."""
    last = {}
    for i, step in enumerate(layout.steps):
        for v in step.values():
            last[layout.root_of[v]] = i
    buffers, slots = [], []
    for i, step in enumerate(layout.steps):
        for v in step.outputs:
            root = layout.roots[v]
            if root.base == 0:
                buffers.append((_nbytes(env[v]), i, last.get(v, i)))
                slots.append(root.slot)
        if isinstance(step, WindowStep) and step.kind in CONVS:
            scratch = step.dims + _window_slots(step.kind).index("scratch")
            buffers.append((ints[scratch], i, i))
            slots.append(scratch)
    offsets, top = place(buffers)
    for slot, offset in zip(slots, offsets):
        ints[slot] = offset
    return top


# -- running ---------------------------------------------------------------------------------------------

# The entry returns 0, or 1 + the index of the step that found an index out of range (nothing after it ran).
_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_MAX_PLANS = 64
MAX_PREPARED_ARENA = 1 << 30


def _interface_pointer(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _struct_pointer(a: np.ndarray) -> int:
    """The data pointer read from the ndarray object itself (the `data` field after the object
    header, as numpy's C API lays it out): 6x cheaper than __array_interface__."""
    return _from_address(id(a) + 16).value


_from_address = ctypes.c_void_p.from_address
_probe = np.empty(3)
data_pointer = _struct_pointer if _struct_pointer(_probe) == _interface_pointer(_probe) else _interface_pointer
del _probe


class GraphEntry:
    """A graph's native entry point: `run(args)` takes the executor's inputs (the module's attribute
    tree first when the graph reads one) and returns the outputs, or None when this input signature
    is for the executor. Several threads may run it at once (each has its own arena).

    Parameters are read from the tree on every call by `reader(trie, n)(tree)`, which returns the
    list of fixed arrays (None at tensor constants) or None; the default reads nested mappings."""

    def __init__(self, layout: EntryLayout, address: int, launchers: dict, constants: dict, reader=None, owner=None):
        self.owner = owner  # the native library holding the code: alive as long as this runner
        self.layout = layout
        self.fn = _ENTRY(address)
        self.launchers = launchers
        n = len(layout.fixed)
        self._constants = [np.ascontiguousarray(constants[src[1]]) if src[0] == "constant" else None
                           for src, _ in layout.fixed]
        attrs = [(i, src[1]) for i, (src, _) in enumerate(layout.fixed) if src[0] == "attr"]
        self._read = (reader or TreeReader)(attribute_trie(attrs), n) if attrs else None
        self._none = [None] * n
        self._fixed_base = 1 + len(layout.inputs)
        tensors = set(layout.inputs)
        module = bool(layout.graph["inputs"]) and layout.graph["inputs"][0].get("type", "").startswith("__module__")
        self._others = [i for i in range(len(layout.graph["inputs"])) if i not in tensors and not (module and i == 0)]
        self._n_bases = self._fixed_base + n + len(layout.outputs)
        self._structure = None  # graph outputs as trees of indices into the flat results, if not flat
        if layout.containers:
            flat = iter(range(len(layout.results)))
            self._structure = [_structure(layout, o, flat) for o in layout.graph["outputs"]]
        self._plans: dict = {}
        self._local = threading.local()

    def run(self, args: list):
        """The graph's outputs for `args`, or None (run the executor instead)."""
        found = self._plan_of(args)
        if found is None:
            return None
        plan, tensors, local, bases = found
        if local.arena.nbytes < plan.arena:
            self._grow_arena(local, bases, plan.arena)
        k = 1
        for a in tensors:
            bases[k] = data_pointer(a)
            k += 1
        k = self._n_bases - len(plan.outputs)
        outs = []
        for shape, dtype in plan.outputs:
            o = np.empty(shape, dtype)
            bases[k] = data_pointer(o)
            outs.append(o)
            k += 1
        if self.fn(local.address, plan.address, plan.scalars_address):
            return None  # an index out of range: the executor raises the op's own error
        if plan.direct:
            return outs
        sources = (outs, tensors, self._fixed_arrays())
        results = []
        for source, i, shape, strides, offset in plan.views:
            a = sources[source][i]
            if source == OUT:
                results.append(a if a.shape == shape and offset == 0 and strides is None
                               else a.reshape(shape) if strides is None and offset == 0 and a.size == math.prod(shape)
                               else np.ndarray(shape, a.dtype, a, offset, strides))
            else:  # an input or parameter of any strides, or a view of one
                results.append(a if a.shape == shape and offset == 0 and (strides or a.strides) == a.strides
                               else np.asarray(_View(a, shape, strides, offset)))
        return results if self._structure is None else [_rebuild(s, results) for s in self._structure]

    def _fixed_arrays(self) -> list:
        """The fixed arrays of this thread's last call: tensor constants and parameters."""
        return [c if c is not None else a for c, a in zip(self._constants, self._local.kept)]

    def prepare(self, args: list) -> bool:
        """Make the plan for the signature of `args` now, and this thread's arena for it up to
        MAX_PREPARED_ARENA bytes (a first run then costs what later ones do); False when that
        signature is for the executor."""
        found = self._plan_of(args)
        if found is not None and found[2].arena.nbytes < found[0].arena <= MAX_PREPARED_ARENA:
            self._grow_arena(found[2], found[3], found[0].arena)
        return found is not None

    @staticmethod
    def _grow_arena(local, bases, nbytes: int) -> None:
        """This thread's arena, `nbytes` large, its pages touched (a first run pays no page faults)."""
        local.arena = np.empty(nbytes, np.uint8)
        local.arena.fill(0)
        bases[0] = data_pointer(local.arena)

    def _plan_of(self, args: list):
        """(plan, tensor inputs, thread state, pointer array), or None. Kernels read inputs of any
        strides; a signature whose plan cannot take them as they are runs on C-contiguous copies."""
        tensors = []
        strided = False
        for i in self.layout.inputs:
            a = args[i]
            if a.__class__ is not np.ndarray:
                return None
            strided = strided or not a.flags.c_contiguous
            tensors.append(a)
        local = self._local
        try:
            bases, held = local.bases, local.held
        except AttributeError:
            bases, held = self._thread_state()
        fixed = self._read(args[0]) if self._read is not None else self._none
        if fixed is None:
            return None
        if fixed is not held:
            for a, b in zip(fixed, held):
                if a is not b:
                    if not self._hold(fixed, bases):
                        return None
                    break
        try:
            plan = self._plan_for(args, tensors, strided)
            if plan is None and strided:
                tensors = [a if a.flags.c_contiguous else np.ascontiguousarray(a) for a in tensors]
                plan = self._plan_for(args, tensors, False)
        except TypeError:  # an unhashable scalar input
            return None
        if plan is None:
            return None
        return plan, tensors, local, bases

    def _plan_for(self, args: list, tensors: list, strided: bool):
        """The plan of this signature (input strides count when `strided`), made the first time."""
        shapes = tuple([(a.shape, a.strides, a.dtype.num) if strided else (a.shape, a.dtype.num) for a in tensors])
        key = (shapes, self._local.fixed_key, tuple([args[i] for i in self._others]) if self._others else ())
        try:
            return self._plans[key]
        except KeyError:
            return self._new_plan(key, args, tensors)

    def _thread_state(self) -> tuple:
        """This thread's pointer array (tensor constants filled in) and arena."""
        local = self._local
        local.bases = (ctypes.c_void_p * self._n_bases)()
        local.address = ctypes.addressof(local.bases)
        local.arena = np.empty(1 << 16, np.uint8)
        local.bases[0] = data_pointer(local.arena)
        for k, a in enumerate(self._constants):
            if a is not None:
                local.bases[self._fixed_base + k] = data_pointer(a)
        local.held, local.kept, local.fixed_key = self._none, self._none, ()
        return local.bases, local.held

    def _hold(self, fixed: list, bases) -> bool:
        """Use new parameter arrays: write their pointers (C-contiguous copies of those that are not)
        and keep them referenced, so their addresses stay theirs. False if one is not an array."""
        kept = []
        for k, a in enumerate(fixed):
            if a is not None:
                if a.__class__ is not np.ndarray:
                    return False
                a = a if a.flags.c_contiguous else np.ascontiguousarray(a)
                bases[self._fixed_base + k] = data_pointer(a)
            kept.append(a)
        local = self._local
        local.held, local.kept = fixed, kept
        local.fixed_key = tuple([(a.shape, a.dtype.num) for a in kept if a is not None])
        return True

    def _new_plan(self, key: tuple, args: list, tensors: list):
        graph_args = list(args)
        for i, a in zip(self.layout.inputs, tensors):
            graph_args[i] = a
        fixed = [c if c is not None else a for c, a in zip(self._constants, self._local.kept)]
        try:
            plan = make_plan(self.layout, self.launchers, graph_args, fixed)
        except (Unplannable, OpError, TypeError, ValueError, IndexError):
            plan = None  # the executor runs it (and raises the error that names the node)
        if len(self._plans) >= _MAX_PLANS:
            self._plans.clear()
        self._plans[key] = plan
        return plan


class _View:
    """A view of array `base` (any strides) with `shape` and byte `strides` (None: C-contiguous) from
    `offset` bytes past its start: numpy keeps this object, and so `base`, alive."""

    def __init__(self, base: np.ndarray, shape: tuple, strides, offset: int):
        self.base = base
        self.__array_interface__ = {"version": 3, "shape": tuple(shape), "strides": strides, "typestr": base.dtype.str,
                                    "data": (data_pointer(base) + offset, not base.flags.writeable)}


def _structure(layout: EntryLayout, name: str, flat):
    if name in layout.containers:
        kind, items = layout.containers[name]
        return CONTAINERS[kind], [_structure(layout, item, flat) for item in items]
    return next(flat)


def _rebuild(structure, results: list):
    if isinstance(structure, int):
        return results[structure]
    kind, items = structure
    return kind(_rebuild(s, results) for s in items)


def attribute_trie(attrs: list) -> tuple:
    """[(fixed index, attribute chain)] as a trie of (name, fixed index or None, children), so a
    shared prefix (a submodule) is looked up once per call."""
    root: dict = {}
    for index, chain in attrs:
        node = root
        for name in chain[:-1]:
            node = node.setdefault(name, [None, {}])[1]
        node.setdefault(chain[-1], [None, {}])[0] = index

    def freeze(level: dict) -> tuple:
        return tuple((name, index, freeze(children)) for name, (index, children) in level.items())
    return freeze(root)


class TreeReader:
    """Reads the parameters from an attribute tree of nested mappings (a saved model's)."""

    def __init__(self, trie: tuple, n: int):
        self.trie, self.n = trie, n

    def __call__(self, tree) -> list | None:
        fixed = [None] * self.n
        return fixed if _read(tree, self.trie, fixed) else None


def _read(obj, trie: tuple, fixed: list) -> bool:
    for name, index, children in trie:
        x = obj[name]
        if index is not None:
            if x.__class__ is not np.ndarray:
                return False
            fixed[index] = x
        if children and not _read(x, children, fixed):
            return False
    return True
