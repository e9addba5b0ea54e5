"""THE op table: one `OpDef` per op, holding its schema, shape rule, dtype rule and numpy kernel.

Eager tensors (`tscript`) and the graph executor both call `OpDef.kernel`; the compiler calls the
rules on `TensorMeta`s (dtype + shape, no data). Kernels take numpy arrays and Python values in
schema order and return arrays with PyTorch's dtype semantics.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .. import dtypes as dt
from ..errors import OpRuntimeError, fmt_shape
from . import accelerated, narrow
from .schema import NO_DEFAULT, Schema, parse_schema

OPS: dict[str, "OpDef"] = {}


class TensorMeta:
    """A tensor without data: what shape/dtype rules see at compile time (shape entries may be
    ints or symbol strings)."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"TensorMeta({dt.NAMES[self.dtype]}, {fmt_shape(self.shape)})"


@dataclass(eq=False)
class OpDef:
    """An op: its schema, rules and reference kernel, plus facts the dispatcher precomputes."""
    schema: Schema
    kernel: Callable
    shape: Callable | None          # rule: bound args (tensors as metas/arrays) -> shape(s)
    dtype: Callable | None          # rule: bound args -> dtype(s)
    name: str = ""                  # "aten::add" or "aten::max.dim"
    defaults: tuple = ()
    n_required: int = 0
    n_positional: int = 0
    tensor_pos: tuple = ()          # positions of Tensor / Tensor? / Tensor|Scalar arguments
    list_pos: tuple = ()            # positions of Tensor[] arguments
    out_alias: int | None = None    # input position a single output is a view of
    mutates: int | None = None      # input position written in place
    extra: dict = field(default_factory=dict)
    facts: object = None            # OpFacts (facts.py): pointwise, row reduction, cheap
    direct: Callable | None = None  # the kernel without narrow.py's float16/bfloat16 check, for callers
                                    # that know no argument is one (the eager dispatcher checks as it unwraps)

    def __post_init__(self):
        s = self.schema
        self.name = s.name + (f".{s.overload}" if s.overload else "")
        self.defaults = tuple(a.default for a in s.args)
        required = [i for i, a in enumerate(s.args) if a.default is NO_DEFAULT]
        self.n_required = required[-1] + 1 if required else 0
        self.n_positional = sum(1 for a in s.args if not a.kwarg_only)
        self.tensor_pos = tuple(i for i, a in enumerate(s.args) if a.is_tensor)
        self.list_pos = tuple(i for i, a in enumerate(s.args) if a.is_tensor_list)
        aliases = {a.alias.rstrip("!"): i for i, a in enumerate(s.args) if a.alias}
        if len(s.returns) == 1 and s.returns[0].alias:
            self.out_alias = aliases[s.returns[0].alias.rstrip("!")]
        written = [i for i, a in enumerate(s.args) if a.alias and a.alias.endswith("!")]
        self.mutates = written[0] if written else None

    def meta(self, *args):
        """Output TensorMeta(s) for bound args whose tensors are metas (or arrays)."""
        shape, dtype = self.shape(*args), self.dtype(*args)
        if isinstance(dtype, tuple):
            return tuple(TensorMeta(s, d) for s, d in zip(shape, dtype))
        return TensorMeta(shape, dtype)

    def __repr__(self) -> str:
        return f"<op {self.schema}>"


def register(schema: str, *, shape, dtype, inplace: bool = False, **extra):
    """Decorator adding a kernel to the table. `inplace=True` also registers `name_`, which
    computes the same result and writes it into `self` (checking shape and dtype as PyTorch)."""
    def deco(kernel):
        s = parse_schema(schema)
        op = _add(OpDef(s, kernel, shape, dtype, extra=extra))
        if inplace:
            _add(_inplace_variant(op))
        return kernel
    return deco


def _add(op: OpDef) -> OpDef:
    assert op.name not in OPS, f"op {op.name} registered twice"
    op.direct = op.kernel
    if narrow.computes(op):
        op.kernel = narrow.widening(op.kernel, op.dtype, op.tensor_pos, op.list_pos)
    OPS[op.name] = op
    return op


def _inplace_variant(op: OpDef) -> OpDef:
    s = op.schema
    text = str(s).replace("(Tensor self", "(Tensor(a!) self", 1).replace("(Tensor|Scalar self",
                                                                          "(Tensor(a!) self", 1)
    head, _, _ = text.rpartition(" -> ")
    name = s.name + "_"
    head = head.replace(s.name + (f".{s.overload}" if s.overload else ""),
                        name + (f".{s.overload}" if s.overload else ""), 1)
    kernel = op.kernel
    short = name.split("::")[1]
    functional = s.name.split("::")[1]

    def inplace_kernel(self, *rest):
        if accelerated.call_into(functional, self, self, *rest) is None:  # (an accelerated kernel writes in place)
            write_into(self, kernel(self, *rest), short)
        return self

    return OpDef(parse_schema(head + " -> Tensor(a!)"), inplace_kernel,
                 lambda self, *rest: self.shape, lambda self, *rest: self.dtype,
                 extra=dict(op.extra, functional=op.name))


def write_into(target, result, opname: str) -> None:
    """Store `result` into the array `target` in place, as PyTorch's out=/in-place ops do."""
    if result.shape != target.shape:
        raise OpRuntimeError(f"{opname}: output with shape {fmt_shape(target.shape)} doesn't match "
                             f"the broadcast shape {fmt_shape(_broadcast_shape(result.shape, target.shape))}")
    if result.dtype != target.dtype and not dt.can_cast(result.dtype, target.dtype):
        raise OpRuntimeError(f"{opname}: result type {dt.TORCH_NAMES[result.dtype]} can't be cast to "
                             f"the desired output type {dt.TORCH_NAMES[target.dtype]}")
    target[...] = result


def _broadcast_shape(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def get(name: str) -> OpDef:
    """The op called `name` (`aten::add`, `aten::max.dim`); KeyError naming it if unknown."""
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}") from None
