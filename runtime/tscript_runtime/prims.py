"""The `prim::` nodes the executor runs (control flow aside): each entry builds the node's run
function from its attributes. Values are whatever the executor's domain uses (numpy arrays in the
runtime, tscript tensors in the compiler), so these only move values around."""
from __future__ import annotations

from operator import itemgetter

from .errors import ModelError, OpRuntimeError


def _raise(message=None):
    raise OpRuntimeError(str(message) if message is not None else "Exception raised by the model")


def _getitem(container, index):
    try:
        return container[index]
    except (IndexError, KeyError) as e:
        raise OpRuntimeError(f"__getitem__: {type(e).__name__}: {e}") from None


def _python_op(attrs: dict, domain):
    """A call of a Python function a scripted model left to Python (@tscript.jit.ignore): only a
    domain that knows the function (tscript's) can run it."""
    runner = getattr(domain, "python_op", None)
    if runner is None:
        raise ModelError(f"the graph calls the Python function '{attrs.get('name')}' (marked @tscript.jit.ignore), "
                         f"which only tscript can run")
    return runner(attrs["name"])


def _constant(attrs: dict, domain):
    value = attrs.get("value")
    if domain.is_tensor_ref(value):
        value = domain.constant_tensor(value)
    return lambda: value


def _fusion_group(attrs: dict, domain):
    """A fused elementwise group: the domain's native kernel when it has one, otherwise the group's
    subgraph run by the same executor (reference kernels, or tensors with autograd)."""
    native = getattr(domain, "native_kernel", None)
    kernel = native(attrs["kernel"]) if native is not None and "kernel" in attrs else None
    return kernel if kernel is not None else _interpreted_group(attrs, domain)


def _interpreted_group(attrs: dict, domain):
    """A group without a kernel of its own (a ConvGroup: the whole-graph entry runs it natively): its
    subgraph run by the executor."""
    from .executor import Program
    program = Program(attrs["subgraph"], domain)
    return lambda *xs: program.run(list(xs))[0]


PRIMS = {
    "tscript::FusionGroup": _fusion_group,
    "tscript::RowGroup": _fusion_group,
    "tscript::ConvGroup": _interpreted_group,
    "prim::Constant": _constant,
    # A module is a mapping from attribute name to value (saved models: nested dicts of arrays).
    "prim::GetAttr": lambda attrs, domain: itemgetter(attrs["name"]),
    "prim::ListConstruct": lambda attrs, domain: (lambda *xs: list(xs)),
    "prim::TupleConstruct": lambda attrs, domain: (lambda *xs: tuple(xs)),
    "prim::DictConstruct": lambda attrs, domain: (lambda *kv: dict(zip(kv[::2], kv[1::2]))),
    "prim::ListUnpack": lambda attrs, domain: tuple,
    "prim::TupleUnpack": lambda attrs, domain: tuple,
    "prim::TupleIndex": lambda attrs, domain: _getitem,
    "aten::__getitem__": lambda attrs, domain: _getitem,
    "aten::len": lambda attrs, domain: len,
    "aten::dim": lambda attrs, domain: (lambda x: x.ndim),
    # a numpy dtype, as dtype constants are (a domain's tensors may wrap theirs: tscript's in `.np`)
    "prim::dtype": lambda attrs, domain: (lambda x: getattr(x.dtype, "np", x.dtype)),
    # arrays of the runtime never require grad; tscript's tensors say whether they do
    "prim::requires_grad": lambda attrs, domain: (lambda x: bool(getattr(x, "requires_grad", False))),
    "prim::RaiseException": lambda attrs, domain: _raise,
    "prim::Uninitialized": lambda attrs, domain: (lambda: None),
    "prim::unchecked_cast": lambda attrs, domain: (lambda x: x),
    "prim::PythonOp": _python_op,
}

KERNEL_GROUPS = ("tscript::FusionGroup", "tscript::RowGroup")  # fused ops with a native "kernel" of their own
CONV_GROUP = "tscript::ConvGroup"  # a conv2d and its pointwise epilogue (conv_epilogue.py), one entry step
GROUPS = KERNEL_GROUPS + (CONV_GROUP,)  # fused ops: a "subgraph" attribute

# What a graph document must give each prim (checked when it is loaded, graph_json.check_graph):
# (fewest inputs, most inputs or None for any, outputs or None for any, {attribute: its type}).
# Groups and control flow have checks of their own there.
NODE_SHAPES = {
    "prim::Constant": (0, 0, 1, {}),
    "prim::GetAttr": (1, 1, 1, {"name": str}),
    "prim::ListConstruct": (0, None, 1, {}),
    "prim::TupleConstruct": (0, None, 1, {}),
    "prim::DictConstruct": (0, None, 1, {}),  # and an even count: keys and values (graph_json)
    "prim::ListUnpack": (1, 1, None, {}),
    "prim::TupleUnpack": (1, 1, None, {}),
    "prim::TupleIndex": (2, 2, 1, {}),
    "aten::__getitem__": (2, 2, 1, {}),
    "aten::len": (1, 1, 1, {}),
    "aten::dim": (1, 1, 1, {}),
    "prim::dtype": (1, 1, 1, {}),
    "prim::requires_grad": (1, 1, 1, {}),
    "prim::RaiseException": (0, 1, 0, {}),
    "prim::Uninitialized": (0, 0, 1, {}),
    "prim::unchecked_cast": (1, 1, 1, {}),
    "prim::PythonOp": (0, None, None, {"name": str}),
}

# Multi-output prims return a tuple that is spread over the node's outputs.
SPREAD = {"prim::ListUnpack", "prim::TupleUnpack"}

# Nodes without inputs whose value is fixed when the graph is loaded: evaluated once, not per run.
COMPILE_TIME = {"prim::Constant"}
