"""Indexing in scripted code: `x[i]`, `x[a:b, None, ..., 0]`, `x[mask]` on tensors lowered to the
core ops eager indexing uses (`aten::select`, `aten::slice`, `aten::unsqueeze`, `aten::index`;
`aten::copy_` / `aten::fill_` / `aten::index_put_` for assignment), and indexing of lists, tuples,
dicts and strings (`aten::__getitem__`, `prim::TupleIndex`, `aten::slice.t`, `aten::_set_item`)."""
from __future__ import annotations

from tscript_runtime.ops import OPS

from ...ir.types import DTYPE, INT, STR, DictType, ListType, OptionalType, TensorType, TupleType
from .methods import check_item
from .values import ConstValue, SimpleValue, Sugared, TupleSugar


class SliceSugar(Sugared):
    """`a:b:c` inside an index (each bound a Sugared or None)."""
    describe = "a slice"

    def __init__(self, lower, upper, step):
        self.lower, self.upper, self.step = lower, upper, step

    def is_full(self) -> bool:
        """Is it `:` (every element)?"""
        return all(b is None or (isinstance(b, ConstValue) and b.value is None) for b in (self.lower, self.upper)) \
            and (self.step is None or (isinstance(self.step, ConstValue) and self.step.value == 1))

    def bounds(self) -> list:
        """start, end and step, with None for missing bounds and 1 for a missing step."""
        return [self.lower or ConstValue(None), self.upper or ConstValue(None), self.step or ConstValue(1)]

    def constant(self):
        """The slice as a Python slice when its bounds are constants (else None)."""
        if all(b is None or isinstance(b, ConstValue) for b in (self.lower, self.upper, self.step)):
            return slice(*(None if b is None else b.value for b in (self.lower, self.upper, self.step)))
        return None


def getitem(em, v: SimpleValue, index: Sugared, pos) -> Sugared:
    """`v[index]` for an IR value."""
    t = v.type
    if isinstance(t, TensorType):
        view, advanced = _tensor_view(em, v, _items(index), pos)
        if advanced:
            return em.call_ops([OPS["aten::index"]], [view, advanced], {}, pos, "index")
        return view if view is not v else em.call_ops([OPS["aten::alias"]], [v], {}, pos, "alias")
    if isinstance(t, TupleType):
        return _tuple_item(em, v, index, pos)
    if isinstance(index, SliceSugar) and (isinstance(t, ListType)):
        return em.call_ops([OPS["aten::slice.t"]], [v] + index.bounds(), {}, pos, "slice")
    if isinstance(t, ListType) or t == STR:
        _check_index(em, index, INT, pos)
        elem = t.elem if isinstance(t, ListType) else STR
        return SimpleValue(em.insert("aten::__getitem__", [v.value, index.as_value(em, pos)], [elem]).output)
    if isinstance(t, DictType):
        _check_index(em, index, t.key, pos)
        return SimpleValue(em.insert("aten::__getitem__", [v.value, index.as_value(em, pos)], [t.value]).output)
    if isinstance(t, OptionalType):
        raise em.error(f"cannot index a value of type '{t}': it may be None; refine it first with "
                       f"`if x is not None:`", pos)
    raise em.error(f"{v.describe} cannot be indexed", pos)


def _check_index(em, index: Sugared, expected, pos) -> None:
    if index.type != expected:
        got = index.type if index.type is not None else index.describe
        raise em.error(f"index must be of type '{expected}', not '{got}'", pos)


def _tuple_item(em, v: SimpleValue, index: Sugared, pos) -> Sugared:
    elems = v.type.elems
    if isinstance(index, ConstValue) and type(index.value) is int:
        if not -len(elems) <= index.value < len(elems):
            raise em.error(f"tuple index {index.value} is out of range (the tuple has {len(elems)} items)", pos)
        return v.unpack(em, len(elems), pos)[index.value]
    if isinstance(index, SliceSugar) and index.constant() is not None:
        return TupleSugar(v.unpack(em, len(elems), pos)[index.constant()])
    if index.type == INT and elems and all(e == elems[0] for e in elems):
        return SimpleValue(em.insert("prim::TupleIndex", [v.value, index.as_value(em, pos)], [elems[0]]).output)
    raise em.error("a tuple with items of different types can only be indexed by an integer constant", pos)


# -- tensors ------------------------------------------------------------------------------------------------
def _items(index: Sugared) -> list:
    return list(index.items) if isinstance(index, TupleSugar) else [index]


def _consumed(item) -> int:
    """How many dimensions of the tensor an index item uses (None and ... use none)."""
    if isinstance(item, ConstValue) and (item.value is None or item.value is Ellipsis):
        return 0
    return 1


def _tensor_view(em, x: SimpleValue, items: list, pos):
    """Apply the basic items as views; returns (view, Tensor?[] list of advanced indices or None)."""
    ellipses = [k for k, it in enumerate(items) if isinstance(it, ConstValue) and it.value is Ellipsis]
    if len(ellipses) > 1:
        raise em.error("an index can only have a single ellipsis ('...')", pos)
    view, dim, advanced = x, 0, {}
    for k, item in enumerate(items):
        if isinstance(item, ConstValue) and item.value is Ellipsis:
            continue
        if ellipses and k > ellipses[0]:  # counted from the end: the rank is not known statically
            rest = sum(_consumed(i) for i in items[k + 1:])
            dim = -(rest + 1) if _consumed(item) else -rest - 1
        if advanced and not (isinstance(item, SliceSugar) and item.is_full()):
            raise em.error("after a tensor index only ':' may follow in scripted code", pos)
        view, dim = _apply_item(em, view, dim, item, advanced, pos)
    if not advanced:
        return view, None
    last = max(advanced)
    entries = [advanced.get(d, ConstValue(None)) for d in range(last + 1)]
    return view, TupleSugar(entries)


def _apply_item(em, view, dim: int, item, advanced: dict, pos):
    """Apply one index item at view dimension `dim`; returns the view and the next dimension."""
    if isinstance(item, SliceSugar):
        if not item.is_full():
            view = em.call_ops([OPS["aten::slice"]], [view, ConstValue(dim)] + item.bounds(), {}, pos, "slice")
        return view, dim + 1
    if isinstance(item, ConstValue) and item.value is None:
        return em.call_ops([OPS["aten::unsqueeze"]], [view, ConstValue(dim)], {}, pos, "unsqueeze"), dim + 1
    if item.type == INT:
        return em.call_ops([OPS["aten::select"]], [view, ConstValue(dim), item], {}, pos, "select"), dim
    values = _constant_list(item)
    if values is not None:  # x[:, [-1]]: a list of indices is a tensor index, as in PyTorch
        import tscript
        item = em.resolve_python(tscript.tensor(values), pos, "index")
    if isinstance(item.type, TensorType):
        if dim < 0:
            raise em.error("tensor indices after '...' are not supported in scripted code", pos)
        advanced[dim] = item
        return view, dim + 1
    what = item.type if item.type is not None else item.describe
    raise em.error(f"only integers, slices, None, ... and tensors are valid tensor indices (got '{what}')", pos)


def _constant_list(item: Sugared) -> list | None:
    """The values of a list literal of int or bool constants (None for anything else)."""
    node = getattr(getattr(item, "value", None), "node", None)
    if not (isinstance(item.type, ListType) and node is not None and node.kind == "prim::ListConstruct"):
        return None
    consts = [v.node for v in node.inputs]
    if not consts or not all(c is not None and c.kind == "prim::Constant" and type(c.attrs.get("value")) in (int, bool)
                             for c in consts):
        return None
    return [c.attrs["value"] for c in consts]


def setitem(em, target: SimpleValue, index: Sugared, value: Sugared, pos) -> None:
    """`target[index] = value`."""
    t = target.type
    if isinstance(t, TensorType):
        _tensor_setitem(em, target, index, value, pos)
    elif isinstance(t, ListType):
        _check_index(em, index, INT, pos)
        check_item(em, t, value, pos)
        em.call_ops([OPS["aten::_set_item.t"]], [target, index, value], {}, pos, "__setitem__")
    elif isinstance(t, DictType):
        _check_index(em, index, t.key, pos)
        em.call_ops([OPS["aten::_set_item.dict"]], [target, index, value], {}, pos, "__setitem__")
    else:
        raise em.error(f"{target.describe} does not support item assignment", pos)


def _tensor_setitem(em, x: SimpleValue, index: Sugared, value: Sugared, pos) -> None:
    view, advanced = _tensor_view(em, x, _items(index), pos)
    if advanced is not None:
        if not isinstance(value.type, TensorType):
            dtype = SimpleValue(em.insert("prim::dtype", [x.value], [DTYPE]).output)
            value = em.call_ops([OPS["aten::full"]], [ConstValue(()), value], {"dtype": dtype}, pos, "full")
        em.call_ops([OPS["aten::index_put_"]], [view, advanced, value], {}, pos, "index_put_")
    elif isinstance(value.type, TensorType):
        em.call_ops([OPS["aten::copy_"]], [view, value], {}, pos, "copy_")
    else:
        em.call_ops([OPS["aten::fill_"]], [view, value], {}, pos, "fill_")

