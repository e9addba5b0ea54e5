"""The native plan: the compiler's code-generation decisions for one graph, as data. tscript.codegen
writes it (`<entry>.plan.json` in a saved model); the emitter (native/) realizes it.

    {"format": "tscript-native-plan", "version": 1,
     "kernels": {"k0": {"template": "pointwise", "tile": 16, "split_min": 65536},
                 "k1": {"template": "row", "split_min": 65536}},
     "entry": [{"node": 3, "template": "kernel"},
               {"node": 5, "template": "gemm", "small_m": 64, "split_min": 131072},
               {"node": 7, "template": "conv2d", "small_m": 64},
               {"node": 9, "template": "max_pool2d"}]}

- kernels: one per fusion group the graph names (`tscript::FusionGroup` -> template "pointwise",
  `tscript::RowGroup` -> "row"; the group node's `kernel` attribute is the key). `tile`: the side of
  the tiles transposed inputs are read in (0: no tiled walk); `split_min`: elements from which a
  launch runs as two halves on two threads. Groups without a kernel are interpreted.
- entry: the whole-graph entry's steps, one per top-level node that computes a tensor, in graph
  order (`node` indexes the top-level nodes); every other top-level node must be one the entry
  evaluates while planning a call (views, shape reads, scalar arithmetic, constants, attributes,
  tuples of outputs). `small_m`: the most rows (GEMM) or output channels (convolution) the kernel
  library's GEMM takes, BLAS the rest; `split_min`: multiply-adds from which a library GEMM computes
  its column halves on two threads. null: no entry (the executor runs the graph); then the optional
  "why_no_entry" says why, for people (`tsrt info`, `CompiledModel.explain()`).

`NativePlan.from_json(data, graph)` refuses with a ModelError anything that is not exactly this:
unknown or missing fields, numbers out of range, kernels for nodes that are not groups, subgraphs a
template cannot emit (kernel_specs.py), steps that do not match their nodes. A plan holds no
address, size or stride: the runtime computes those from the input shapes of each call, so no plan
can make the emitted code touch memory outside its buffers.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from .errors import ModelError
from .entry_layout import EntryLayout
from .entry_steps import NotLowerable
from .conv_epilogue import epilogue_spec
from .prims import CONV_GROUP, KERNEL_GROUPS
from .kernel_specs import KernelSpec, kernel_spec
from .typed_graph import Graph

FORMAT, VERSION = "tscript-native-plan", 1
MAX_KERNELS = 10_000
MAX_WHY = 2000  # characters of "why_no_entry"
SMALL_M = 64  # the kernel library's GEMMs are register-blocked for at most this many rows


@dataclass(frozen=True)
class Choice:
    """A field that takes one of `values` (ints)."""
    values: tuple

    def accepts(self, value: int) -> bool:
        return value in self.values

    def __str__(self) -> str:
        return f"one of {list(self.values)}"


@dataclass(frozen=True)
class Range:
    """A field that takes an int in low..high."""
    low: int
    high: int

    def accepts(self, value: int) -> bool:
        return self.low <= value <= self.high

    def __str__(self) -> str:
        return f"an int in {self.low}..{self.high}"


FIELDS = {"format", "version", "kernels", "entry", "why_no_entry"}
COUNT = Range(0, 1 << 62)
# template -> the group kind it emits, and its fields (name -> allowed values)
KERNEL_TEMPLATES = {
    "pointwise": ("tscript::FusionGroup", {"tile": Choice((0, 4, 8, 16)), "split_min": COUNT}),
    "row": ("tscript::RowGroup", {"split_min": COUNT}),
}
# step template -> its fields
STEP_FIELDS = {
    "kernel": {}, "gemm": {"small_m": Range(0, SMALL_M), "split_min": COUNT}, "conv2d": {"small_m": Range(0, SMALL_M)},
    "recurrent": {"split_min": COUNT}, "fill": {}, "embed": {}, "draw": {},
    "recurrent_backward": {"small_m": Range(0, SMALL_M), "split_min": COUNT},
    "conv_transpose2d": {}, "max_pool2d": {}, "avg_pool2d": {}, "cat": {}, "gather": {}, "scatter": {}, "reduce": {},
    "update": {}, "copy": {}, "max_pool2d_with_indices": {}, "columns": {}, "max_pool2d_backward": {},
}


@dataclass(frozen=True)
class KernelPlan:
    """One kernel: its template, schedule (`tile`, `split_min`) and the spec read off its subgraph."""
    name: str
    template: str
    tile: int
    split_min: int
    spec: KernelSpec
    node: object  # the group node (typed_graph.Node)
    code: tuple  #: what its code depends on (code_key): kernels with equal `code` share one function


@dataclass(frozen=True)
class StepPlan:
    """One step of the whole-graph entry: the top-level node it runs and its template's fields."""
    node: int
    template: str
    small_m: int = 0
    split_min: int = 0


@dataclass
class NativePlan:
    """A checked native plan; `layout` is the whole-graph entry's layout (None: no entry)."""
    kernels: dict
    entry: list | None
    layout: EntryLayout | None = None
    why_no_entry: str = ""

    @classmethod
    def from_json(cls, data, graph: Graph, doc: dict) -> "NativePlan":
        """The plan `data` of `graph` (typed; `doc` is its document), checked against it."""
        if not isinstance(data, dict) or not {"format", "version", "kernels", "entry"} <= set(data) <= FIELDS or \
                data["format"] != FORMAT:
            raise ModelError("not a native plan (expected the fields format, version, kernels, entry)")
        why = data.get("why_no_entry", "")
        if not isinstance(why, str) or len(why) > MAX_WHY or why and data["entry"] is not None:
            raise ModelError(f"native plan: 'why_no_entry' must be a text of at most {MAX_WHY} characters, given "
                             f"only without an entry")
        if type(data["version"]) is not int or data["version"] != VERSION:
            raise ModelError(f"unsupported native plan version {data['version']!r} (this runtime reads {VERSION})")
        kernels = _kernels(data["kernels"], graph)
        plan = cls(kernels, None if data["entry"] is None else _steps(data["entry"], graph), why_no_entry=why)
        if plan.entry is not None:
            specs = {name: k.spec for name, k in kernels.items()}
            epilogues = {s.node: epilogue_spec(graph.nodes[s.node]) for s in plan.entry
                         if graph.nodes[s.node].kind == CONV_GROUP}
            try:
                plan.layout = EntryLayout.build(doc, plan.entry, specs, epilogues)
            except NotLowerable as e:
                raise ModelError(f"the native plan's entry cannot run this graph: {e}") from None
        return plan

    def to_json(self) -> dict:
        """The plan as a JSON document (what `from_json` reads)."""
        kernels = {name: {"template": k.template, **({"tile": k.tile} if k.template == "pointwise" else {}),
                          "split_min": k.split_min} for name, k in self.kernels.items()}
        entry = None if self.entry is None else [
            {"node": s.node, "template": s.template, **{f: getattr(s, f) for f in STEP_FIELDS[s.template]}}
            for s in self.entry]
        return {"format": FORMAT, "version": VERSION, "kernels": kernels, "entry": entry,
                **({"why_no_entry": self.why_no_entry} if self.why_no_entry else {})}

    def fingerprint(self) -> str:
        """Canonical text of the plan (part of the object cache key)."""
        return json.dumps(self.to_json(), sort_keys=True)


def _fields(data: dict, template: str, fields: dict, where: str, keys: tuple = ("template",)) -> dict:
    """The template's fields of `data` (which has exactly those and `keys`), each checked against its
    allowed values."""
    if set(data) != {*keys, *fields}:
        raise ModelError(f"{where}: template '{template}' takes the fields {sorted(fields)}, got "
                         f"{sorted(k for k in data if k not in ('template', 'node'))}")
    out = {}
    for name, allowed in fields.items():
        value = data[name]
        if type(value) is not int or not allowed.accepts(value):
            raise ModelError(f"{where}: field '{name}' must be {allowed}, got {value!r}")
        out[name] = value
    return out


def code_key(template: str, tile: int, split_min: int, sub: Graph) -> tuple:
    """What a kernel's code depends on: its template, schedule, and subgraph up to value names. Two
    subgraphs with one key are the same up to renaming their values (each name is numbered where it
    first appears, and every value carries its type: types are immutable and compare by their fields),
    so what the templates require of one they require of the other."""
    number: dict = {}

    def values(vs) -> tuple:
        return tuple([(number.setdefault(v.name, len(number)), v.type) for v in vs])
    nodes = tuple([(n.kind, values(n.inputs), values(n.outputs), repr(sorted(n.attrs.items())) if n.attrs else "")
                   for n in sub.nodes])
    return template, tile, split_min, values(sub.inputs), nodes, values(sub.outputs)


def _kernels(data, graph: Graph) -> dict:
    """The plan's kernels, checked against the groups of `graph`. Kernels whose code is the same
    (code_key: a transformer's layers, an unrolled loop's steps) are checked against the templates
    once."""
    if not isinstance(data, dict) or len(data) > MAX_KERNELS:
        raise ModelError(f"native plan: 'kernels' must map at most {MAX_KERNELS} kernel names to kernels")
    groups = _group_nodes(graph)
    unknown = sorted(set(data) - set(groups))
    if unknown:
        raise ModelError(f"native plan: kernel {unknown[0]!r} is not named by any fusion group of the graph")
    kernels, specs = {}, {}
    for name, entry in data.items():
        where = f"native plan: kernel {name!r}"
        template = entry.get("template") if isinstance(entry, dict) else None
        if not isinstance(template, str) or template not in KERNEL_TEMPLATES:
            raise ModelError(f"{where}: template must be one of {sorted(KERNEL_TEMPLATES)}, got {template!r}")
        kind, fields = KERNEL_TEMPLATES[template]
        node = groups[name]
        if node.kind != kind:
            raise ModelError(f"{where}: template '{template}' emits {kind} nodes, the graph's node is {node.kind}")
        values = _fields(entry, template, fields, where)
        sub = node.attrs.get("subgraph")
        if not hasattr(sub, "nodes") or len(node.inputs) != len(sub.inputs) or len(node.outputs) != len(sub.outputs):
            raise ModelError(f"{where}: its {node.kind} node does not match its subgraph's inputs and outputs")
        code = code_key(template, values.get("tile", 0), values["split_min"], sub)
        if code not in specs:
            try:
                specs[code] = kernel_spec(template, sub)
            except ModelError as e:
                raise ModelError(f"{where}: {e}") from None
        kernels[name] = KernelPlan(name, template, values.get("tile", 0), values["split_min"], specs[code], node, code)
    missing = sorted(set(groups) - set(kernels))
    if missing:
        raise ModelError(f"native plan: the graph runs kernel {missing[0]!r}, which the plan does not describe")
    return kernels


def _group_nodes(graph: Graph) -> dict:
    """kernel name -> the group node naming it (in nested blocks too); a name used twice is refused."""
    found: dict = {}
    stack = list(graph.nodes)
    while stack:
        node = stack.pop()
        stack.extend(n for b in node.blocks for n in b.nodes)
        name = node.attrs.get("kernel")
        if node.kind not in KERNEL_GROUPS or name is None:
            continue
        if not isinstance(name, str) or name in found:
            raise ModelError(f"native plan: kernel name {name!r} is not a string naming one group")
        found[name] = node
    return found


def _steps(data, graph: Graph) -> list:
    if not isinstance(data, list) or len(data) > len(graph.nodes):
        raise ModelError("native plan: 'entry' must be null or a list of at most one step per node")
    steps, last = [], -1
    for i, entry in enumerate(data):
        where = f"native plan: entry step {i}"
        template = entry.get("template") if isinstance(entry, dict) else None
        if not isinstance(template, str) or template not in STEP_FIELDS:
            raise ModelError(f"{where}: template must be one of {sorted(STEP_FIELDS)}, got {template!r}")
        node = entry.get("node")
        if type(node) is not int or not last < node < len(graph.nodes):
            raise ModelError(f"{where}: 'node' must index a top-level node after the previous step's, got {node!r}")
        steps.append(StepPlan(node, template, **_fields(entry, template, STEP_FIELDS[template], where,
                                                        ("template", "node"))))
        last = node
    return steps
