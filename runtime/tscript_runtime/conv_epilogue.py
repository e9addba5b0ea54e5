"""What the whole-graph entry requires of a `tscript::ConvGroup` (a convolution and the pointwise ops
after it, fused by the compiler's fuse_conv pass) to run the pointwise part as the convolution's
epilogue, and the spec read off it.

The group's subgraph takes the node's inputs: the seven of `aten::conv2d` (input, weight, bias,
stride, padding, dilation, groups), then the epilogue's tensors; its first node is that conv2d, the
others are pointwise ops on the convolution's result and those tensors, and it returns one value of
the convolution's shape and dtype. Each epilogue tensor is read at the position being written
("full": the convolution's shape), per output channel ("channel": size 1 but for the channel dim), or
once ("one": a single value). Subgraphs come from files: everything is checked here (a ModelError
names what fails) before code is emitted; the call plan then checks each call's arrays (entry_plan).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import dtypes as dt
from .errors import ModelError
from .kernel_specs import KernelSpec, kernel_spec
from .typed_graph import Graph, Node
from .types import TensorType

CONV_ARITY = 7  # the node's inputs before the epilogue's: conv2d's
FLOATS = (dt.float32, dt.float64)


@dataclass(frozen=True)
class EpilogueSpec:
    """The pointwise part of a ConvGroup: `graph` (inputs: the convolution's result, then the epilogue
    tensors; its nodes after the conv2d; the group's output), how each epilogue tensor is read
    ("full", "channel" or "one"), and the pointwise kernel spec of `graph`."""
    graph: Graph
    kinds: tuple
    kernel: KernelSpec


def epilogue_spec(node: Node) -> EpilogueSpec:
    """The epilogue of ConvGroup `node` (typed), after checking everything the entry requires of it."""
    sub = node.attrs.get("subgraph")
    if not isinstance(sub, Graph) or len(sub.inputs) < CONV_ARITY or not sub.nodes:
        raise ModelError(f"{node.kind}: its subgraph must take conv2d's {CONV_ARITY} inputs and start with it")
    conv, rest = sub.nodes[0], sub.nodes[1:]
    if conv.kind != "aten::conv2d" or conv.inputs != sub.inputs[:CONV_ARITY] or len(conv.outputs) != 1:
        raise ModelError(f"{node.kind}: its subgraph's first node must be aten::conv2d of its first "
                         f"{CONV_ARITY} inputs, in order")
    result, head = conv.output, set(sub.inputs[:CONV_ARITY])
    t = result.type
    if not isinstance(t, TensorType) or t.dtype not in FLOATS or t.shape is None or len(t.shape) not in (3, 4):
        raise ModelError(f"{node.kind}: a convolution of type {t} (float32/float64 of rank 3 or 4 is needed)")
    if any(v in head for n in rest for v in n.inputs) or any(o in head for o in sub.outputs):
        raise ModelError(f"{node.kind}: its pointwise ops read the convolution's own inputs")
    graph = Graph([result, *sub.inputs[CONV_ARITY:]], rest, list(sub.outputs))
    kernel = kernel_spec("pointwise", graph)
    out = sub.outputs[0].type
    if len(sub.outputs) != 1 or out.dtype != t.dtype or len(out.shape) != len(t.shape) or \
            not all(_same(a, b) for a, b in zip(out.shape, t.shape)):
        raise ModelError(f"{node.kind}: its output is {out}, the convolution gives {t}")
    if "scalar" in kernel.inputs:
        raise ModelError(f"{node.kind}: its epilogue takes scalar inputs (constants only)")
    return EpilogueSpec(graph, tuple(_kind(v.type, t.shape, node.kind) for v in sub.inputs[CONV_ARITY:]), kernel)


def _kind(t: TensorType, shape: tuple, kind: str) -> str:
    """How an epilogue tensor of type `t` is read beside a convolution result of `shape`."""
    s = tuple(t.shape)
    if all(d == 1 for d in s):
        return "one"
    channel = len(shape) - 3
    if len(s) >= 3 and all(d == 1 for i, d in enumerate(s) if i != len(s) - 3) and _same(s[-3], shape[channel]):
        return "channel"
    if len(s) == len(shape) and all(_same(a, b) and (a != 1 or b == 1) for a, b in zip(s, shape)):
        return "full"
    raise ModelError(f"{kind}: an epilogue input of shape {list(s)} is neither the convolution's {list(shape)}, "
                     f"one value per channel, nor one value")


def _same(a, b) -> bool:
    """Sizes that may be equal (a symbolic size is checked per call)."""
    return a == b or not (type(a) is int and type(b) is int)


def array_fits(kind: str, array, out) -> bool:
    """Does `array` (a call's numpy array) have the layout the epilogue code reads for `kind`, beside
    the output `out` (N, C, OH, OW) or (C, OH, OW)?"""
    if kind == "one":
        return array.size == 1
    if kind == "full":
        return array.shape == out.shape and array.flags.c_contiguous
    channels = out.shape[-3]
    return (array.ndim >= 3 and array.size == channels and array.shape[-3] == channels
            and (channels == 1 or array.strides[-3] == array.itemsize))
