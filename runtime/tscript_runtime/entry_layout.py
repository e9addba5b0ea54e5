"""The static layout of a graph's whole-graph entry: its steps in order, where each tensor value lives
(its root buffer: an input, a parameter or constant, the arena or an output), and the plan slots
(graph_entry.py describes the ABI)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .entry_steps import (ALIASES, CONTAINERS, CONVS, FLOAT_SUFFIX, GEMM_DTYPES, GEMMS, OFFSET_VIEWS, PLANNED_PRIMS,
                          DRAWS_INTO, FILLS, POOLS, RECURRENT, RECURRENT_BACKWARD, SHAPE_READS, STEP_KINDS, STRIDED_VIEWS, VIEW_LISTS, WINDOW_ARITY, CatStep, GatherStep,
                          DrawStep, EmbedStep, FillStep, GemmStep, KernelStep, NotLowerable, ColumnsStep, PoolIndicesStep, UpdateStep, RecurrentBackwardStep, RecurrentStep, ReduceStep, Root, ScatterStep, WindowStep, scalar_op,
                          tensor_type)
from .entry_steps import PoolBackwardStep
from .conv_epilogue import CONV_ARITY
from .graph_json import TensorRef, decode_attr
from .prims import CONV_GROUP
from .types import parse_type

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
    empties: set = field(default_factory=set)     # torch.empty tensors (never written by the entry)
    drawn: list = field(default_factory=list)     # roots of random tensors, in the order they are drawn
    written_fixed: set = field(default_factory=set)  # fixed roots (module buffers) written in place by steps
    epilogues: dict = field(default_factory=dict)  # ConvGroup node index -> its conv_epilogue.EpilogueSpec
    value_types: dict = field(default_factory=dict)  # value name -> its type text in the graph

    @classmethod
    def build(cls, graph: dict, steps: list, specs: dict, epilogues: dict | None = None) -> "EntryLayout":
        """The layout of the entry running `steps` (native_plan.StepPlan) over `graph` (a checked
        graph document whose kernels have the KernelSpecs `specs`, by name, and whose ConvGroups the
        EpilogueSpecs `epilogues`, by node index), or NotLowerable naming the node that stops it."""
        layout = cls(graph, specs, epilogues=epilogues or {})
        layout._walk({s.node: s for s in steps})
        layout._place()
        return layout

    # -- static analysis ------------------------------------------------------------------------------
    def _walk(self, steps: dict) -> None:
        for v in self.graph["inputs"]:
            self.value_types[v["name"]] = v.get("type", "")
        for node in self.graph["nodes"]:
            for o in node["outputs"]:
                self.value_types[o["name"]] = o.get("type", "")
        for i, v in enumerate(self.graph["inputs"]):
            t = v.get("type", "")
            if i == 0 and t.startswith("__module__"):
                self.kinds[v["name"]], self.chains[v["name"]] = "module", ()
            elif tensor_type(t)[0]:
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
            elif step.template in ("update", "copy"):
                self._update(index, node, outs[0])
            elif step.template == "max_pool2d_with_indices":
                self._pool_indices(index, node, outs)
            elif step.template == "columns":
                self._columns(index, node, outs[0])
            elif step.template == "max_pool2d_backward":
                self._pool_backward(index, node, outs[0])
            elif step.template == "draw":
                self._draw(index, node, outs[0])
            elif step.template == "embed":
                if any(self.kinds.get(v) != "tensor" for v in ins[:2]):
                    raise NotLowerable(f"{kind} of values that are not tensors")
                self._tensor_out(node, outs[0])
                self._new_root(outs[0], 0)
                self.steps.append(EmbedStep(index, ins[0], ins[1], outs[0]))
            elif step.template == "fill":
                self._tensor_out(node, outs[0])
                self._new_root(outs[0], 0)
                self.steps.append(FillStep(index, kind, outs[0]))
                if FILLS[kind] is None:
                    self.empties.add(outs[0])
            elif step.template == "recurrent_backward":
                self._recurrent_backward(index, node, outs, step)
            elif step.template == "recurrent":
                self._recurrent(index, node, outs, step)
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
        elif kind in PLANNED_PRIMS or kind in SHAPE_READS or scalar_op(kind):
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
        elif tensor_type(t)[0]:
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
        function = GEMM_DTYPES.get(tensor_type(node["outputs"][0].get("type", ""))[1])
        if function is None:
            raise NotLowerable(f"{node['kind']} of dtype {node['outputs'][0].get('type')} (BLAS has float32/64)")
        self._tensor_out(node, out)
        self._new_root(out, 0)
        self.steps.append(GemmStep(index, node["kind"], ins[g.a], ins[g.b], bias, out, function, g.trans_b,
                                   step.small_m, step.split_min))

    def _window(self, index: int, node: dict, out: str, step) -> None:
        kind, ins = node["kind"], node["inputs"]
        group = kind == CONV_GROUP  # a conv2d's inputs, then its epilogue's tensors
        kind, ins, extras = ("aten::conv2d", ins[:CONV_ARITY], ins[CONV_ARITY:]) if group else (kind, ins, [])
        if len(ins) != WINDOW_ARITY[kind]:
            raise NotLowerable(f"{kind} with {len(ins)} inputs")
        if any(self.kinds.get(v) != "tensor" for v in extras):
            raise NotLowerable(f"{CONV_GROUP} whose epilogue reads values that are not tensors")
        suffix = FLOAT_SUFFIX.get(tensor_type(node["outputs"][0].get("type", ""))[1])
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
        self.steps.append(WindowStep(index, kind, ins[0], weight, bias, out, name, step.small_m, extras=list(extras),
                                     epilogue=self.epilogues.get(index) if group else None,
                                     direct=self._direct(weight) if kind == "aten::conv2d" else None))
        if group and index not in self.epilogues:
            raise NotLowerable(f"{CONV_GROUP} without its epilogue's spec")

    def _direct(self, weight: str):
        """Does the convolution's weight have one input channel per group (True), more (False), or is its
        shape not known statically (None)? Its code then has only that path (a model of ordinary
        convolutions never links the depthwise kernel); the planner checks each call's weight against it."""
        try:
            t = parse_type(self.value_types.get(weight, ""))
        except ValueError:
            return None
        shape = getattr(t, "shape", None)
        if shape is None or len(shape) != 4 or not isinstance(shape[1], int):
            return None
        return shape[1] == 1

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
        suffix = FLOAT_SUFFIX.get(tensor_type(node["outputs"][0].get("type", ""))[1])
        if suffix is None:
            raise NotLowerable(f"{kind} of dtype {node['outputs'][0].get('type')}")
        self._tensor_out(node, out)
        self._new_root(out, 0)
        self.steps.append(ScatterStep(index, kind, source, idx, src, out, accumulate, suffix))

    def _reduce(self, index: int, node: dict, out: str) -> None:
        source = node["inputs"][0]
        suffix = FLOAT_SUFFIX.get(tensor_type(node["outputs"][0].get("type", ""))[1])
        if self.kinds.get(source) != "tensor" or suffix is None:
            raise NotLowerable(f"{node['kind']} of other than a float32/float64 tensor")
        self._tensor_out(node, out)
        self._new_root(out, 0)
        self.steps.append(ReduceStep(index, source, out, suffix))

    def _update(self, index: int, node: dict, out: str) -> None:
        """add_ of a scalar or copy_ of a tensor into a module's buffer or a tensor computed earlier (not
        an input nor a tensor constant): written where it is, `out` the same tensor."""
        kind, ins = node["kind"], node["inputs"]
        target = ins[0]
        if self.kinds.get(target) != "tensor":
            raise NotLowerable(f"{kind} into a value that is not a tensor")
        root = self.root_of[target]
        if root not in self.computed and not any(src[0] == "attr" and name == root for src, name in self.fixed):
            raise NotLowerable(f"{kind} into an input or a tensor constant")
        source = ins[1] if kind == "aten::copy_" else None
        if kind == "aten::copy_" and self.kinds.get(source) != "tensor":
            raise NotLowerable("copy_ of a value that is not a tensor")
        if kind == "aten::add_" and any(self.kinds.get(v) in ("tensor", "container") for v in ins[1:]):
            raise NotLowerable("add_ of a tensor (only a scalar is added natively)")
        if root not in self.computed:
            self.written_fixed.add(root)
        self._view(node, out, target, False)
        self.steps.append(UpdateStep(index, kind, target, source, out))

    def _pool_indices(self, index: int, node: dict, outs: list) -> None:
        suffix = FLOAT_SUFFIX.get(tensor_type(node["outputs"][0].get("type", ""))[1])
        if len(node["inputs"]) != 6 or len(outs) != 2 or suffix is None or self.kinds.get(node["inputs"][0]) != "tensor":
            raise NotLowerable("max_pool2d_with_indices of other than a float32/float64 tensor")
        for o in outs:
            self._tensor_out(node, o)
            self._new_root(o, 0)
        self.steps.append(PoolIndicesStep(index, node["inputs"][0], outs[0], outs[1], suffix))

    def _pool_backward(self, index: int, node: dict, out: str) -> None:
        suffix = FLOAT_SUFFIX.get(tensor_type(node["outputs"][0].get("type", ""))[1])
        if len(node["inputs"]) != 7 or suffix is None or any(self.kinds.get(v) != "tensor" for v in node["inputs"][:2]):
            raise NotLowerable("_max_pool2d_backward of other than float32/float64 tensors")
        self._tensor_out(node, out)
        self._new_root(out, 0)
        self.steps.append(PoolBackwardStep(index, node["inputs"][0], node["inputs"][1], out, suffix))

    def _columns(self, index: int, node: dict, out: str) -> None:
        suffix = FLOAT_SUFFIX.get(tensor_type(node["outputs"][0].get("type", ""))[1])
        if suffix is None or self.kinds.get(node["inputs"][0]) != "tensor":
            raise NotLowerable(f"{node['kind']} of other than a float32/float64 tensor")
        self._tensor_out(node, out)
        self._new_root(out, 0)
        self.steps.append(ColumnsStep(index, node["kind"], node["inputs"][0], out, suffix))

    def _recurrent(self, index: int, node: dict, outs: list, step) -> None:
        cell, ins = RECURRENT[node["kind"]], node["inputs"]
        states = 2 if cell == "lstm" else 1
        if len(ins) < 3 + states or len(outs) != (2 if cell == "lstm" else 1):
            raise NotLowerable(f"{node['kind']} with {len(ins)} inputs")
        gates, weight, bias = ins[0], ins[1 + states], ins[2 + states]
        tensors = [gates, weight, *ins[1:1 + states]]
        if any(self.kinds.get(v) != "tensor" for v in tensors):
            raise NotLowerable(f"{node['kind']} of values that are not tensors")
        function = self._blas_outputs(node, outs)
        self.steps.append(RecurrentStep(index, cell, gates, ins[1], ins[2] if cell == "lstm" else None, weight,
                                        bias if self.kinds.get(bias) == "tensor" else None, outs[0],
                                        outs[1] if cell == "lstm" else None, function, step.split_min))

    def _blas_outputs(self, node: dict, outs: list) -> str:
        """The BLAS GEMM function of a node computing float32/float64 (its outputs: new roots)."""
        function = GEMM_DTYPES.get(tensor_type(node["outputs"][0].get("type", ""))[1])
        if function is None:
            raise NotLowerable(f"{node['kind']} of dtype {node['outputs'][0].get('type')} (BLAS has float32/64)")
        for o in outs:
            self._tensor_out(node, o)
            self._new_root(o, 0)
        return function

    def _draw(self, index: int, node: dict, out: str) -> None:
        kind, ins = node["kind"], node["inputs"]
        if any(self.kinds.get(v) in ("tensor", "container") for v in ins[kind in DRAWS_INTO:]):
            raise NotLowerable(f"{kind} with tensor arguments")
        self._tensor_out(node, out)
        if kind in DRAWS_INTO:
            target = ins[0]
            if target not in self.empties or self.root_of.get(target) != target:
                raise NotLowerable(f"{kind} into a tensor other than a fresh torch.empty")
            self.root_of[out] = target
        else:
            self._new_root(out, 0)
        self.drawn.append(self.root_of[out])
        self.steps.append(DrawStep(index, kind, out))

    def _recurrent_backward(self, index: int, node: dict, outs: list, step) -> None:
        cell, ins = RECURRENT_BACKWARD[node["kind"]], node["inputs"]
        names = {"lstm": ("grad_hs", "grad_c", "gates", "h0", "c0", "w", "bias", "hs"),
                 "gru": ("grad_hs", "gates", "h0", "w", "bias", "hs"), "rnn": ("grad_hs", "hs", "w")}[cell]
        if len(ins) < len(names) + 1 or len(outs) != (2 if cell == "rnn" else 3):
            raise NotLowerable(f"{node['kind']} with {len(ins)} inputs")
        inputs = dict.fromkeys(("grad_hs", "grad_c", "gates", "h0", "c0", "w", "bias", "hs"))
        for name, value in zip(names, ins):
            if self.kinds.get(value) == "tensor":
                inputs[name] = value
            elif name != "bias":
                raise NotLowerable(f"{node['kind']} of values that are not tensors")
        function = self._blas_outputs(node, outs)
        self.steps.append(RecurrentBackwardStep(index, cell, inputs, outs, function, step.small_m, step.split_min))

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
        if not tensor_type(next(o for o in node["outputs"] if o["name"] == name).get("type", "Tensor"))[0]:
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
