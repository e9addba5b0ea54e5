"""Op schemas in PyTorch's notation, parsed once when an op is registered.

    aten::add(Tensor self, Tensor|Scalar other, *, Scalar alpha=1) -> Tensor
    aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)

Types: Tensor, Scalar, int, float, bool, str, ScalarType, Generator, Any, `T?` (optional),
`T[]` (list), `Tensor|Scalar` (either). `Tensor(a)` marks an output that aliases input `a`
(a view); `Tensor(a!)` an input the op writes into.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from ..errors import OpTypeError

NO_DEFAULT = object()


@dataclass(frozen=True)
class Argument:
    """One formal argument: its name, type string, default and alias annotation."""
    name: str
    type: str                 # e.g. "Tensor", "int[]?", "Tensor|Scalar"
    default: object = NO_DEFAULT
    kwarg_only: bool = False
    alias: str | None = None  # "a" (aliased by an output) or "a!" (written in place)

    @property
    def optional(self) -> bool:
        return self.type.endswith("?")

    @property
    def base_type(self) -> str:
        return self.type.rstrip("?")

    @property
    def is_tensor(self) -> bool:
        return self.base_type in ("Tensor", "Tensor|Scalar")

    @property
    def is_tensor_list(self) -> bool:
        return self.base_type in ("Tensor[]", "Tensor?[]")


@dataclass(frozen=True)
class Return:
    """One output: type, optional name (for named tuples), alias annotation."""
    type: str
    name: str | None = None
    alias: str | None = None


@dataclass
class Schema:
    """A parsed schema: `name(args) -> returns`, with argument binding."""
    name: str                      # "aten::add"
    overload: str                  # "" or "dim"
    args: list[Argument]
    returns: list[Return]
    returns_tuple: bool = False    # "-> (Tensor, Tensor)" as opposed to "-> Tensor"
    index: dict = field(default_factory=dict)

    def __post_init__(self):
        self.index = {a.name: i for i, a in enumerate(self.args)}

    @property
    def short_name(self) -> str:
        return self.name.split("::", 1)[1]

    def __str__(self) -> str:
        args, star = [], False
        for a in self.args:
            if a.kwarg_only and not star:
                args.append("*")
                star = True
            t = a.type if a.alias is None else a.type.replace("Tensor", f"Tensor({a.alias})", 1)
            d = "" if a.default is NO_DEFAULT else "=" + _fmt_default(a.default)
            args.append(f"{t} {a.name}{d}")
        rets = [r.type if r.alias is None else r.type.replace("Tensor", f"Tensor({r.alias})", 1)
                for r in self.returns]
        rets = [f"{t} {r.name}" if r.name else t for t, r in zip(rets, self.returns)]
        ret = f"({', '.join(rets)})" if self.returns_tuple else rets[0]
        name = self.name + (f".{self.overload}" if self.overload else "")
        return f"{name}({', '.join(args)}) -> {ret}"

    def bind(self, args: tuple, kwargs: dict | None, is_tensor) -> list:
        """Match call arguments to the formals (positional, keyword, defaults); check their types.

        `is_tensor(x)` says what counts as a tensor (tscript.Tensor eagerly, ndarray in the runtime).
        Raises TypeError naming the op and the argument, as PyTorch does.
        """
        name = self.short_name
        n_pos = sum(1 for a in self.args if not a.kwarg_only)
        if len(args) > n_pos:
            raise OpTypeError(f"{name}() takes at most {n_pos} positional argument"
                              f"{'s' if n_pos != 1 else ''} ({len(args)} given)")
        bound = list(args) + [NO_DEFAULT] * (len(self.args) - len(args))
        for key, value in (kwargs or {}).items():
            i = self.index.get(key, self.index.get("self") if key == "input" else None)
            if i is None:
                raise OpTypeError(f"{name}() got an unexpected keyword argument '{key}'")
            if i < len(args):
                raise OpTypeError(f"{name}() got multiple values for argument '{key}'")
            bound[i] = value
        for i, a in enumerate(self.args):
            if bound[i] is NO_DEFAULT:
                if a.default is NO_DEFAULT:
                    raise OpTypeError(f"{name}() missing required argument '{a.name}' (pos {i + 1})")
                bound[i] = a.default
        self.check_types(bound, is_tensor)
        return bound

    def check_types(self, bound, is_tensor) -> None:
        """Raise TypeError naming the first argument of a fully bound call whose type is wrong."""
        for i, a in enumerate(self.args):
            if not type_matches(a.type, bound[i], is_tensor):
                raise OpTypeError(f"{self.short_name}(): argument '{a.name}' (position {i + 1}) must be "
                                  f"{_type_label(a.type)}, not {_value_label(bound[i], is_tensor)}")


def _fmt_default(v) -> str:
    return "None" if v is None else repr(v) if isinstance(v, str) else str(v)


def _type_label(t: str) -> str:
    t = t.rstrip("?")
    return {"Tensor|Scalar": "Tensor or number", "Scalar": "Number", "int[]": "tuple of ints",
            "Tensor[]": "tuple of Tensors", "Tensor?[]": "tuple of Tensors", "float[]": "tuple of floats"
            }.get(t, t)


def _value_label(v, is_tensor) -> str:
    return "Tensor" if is_tensor(v) else type(v).__name__


def _is_int(v) -> bool:
    import numpy as np
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_number(v) -> bool:
    import numpy as np
    return isinstance(v, (int, float, complex, bool, np.number, np.bool_))


def type_matches(t: str, v, is_tensor) -> bool:
    """Does value `v` fit schema type `t`?"""
    if t.endswith("?"):
        return v is None or type_matches(t[:-1], v, is_tensor)
    if t.endswith("[]"):
        elem = t[:-2]
        if elem == "int" and _is_int(v):        # int[] dims accept a single int, as in PyTorch
            return True
        if elem == "Tensor" and is_tensor(v):    # a list of tensors may not be a bare tensor
            return False
        return isinstance(v, (list, tuple)) and all(type_matches(elem, x, is_tensor) for x in v)
    check = _CHECKS.get(t)
    assert check is not None, f"unknown schema type {t}"
    return check(v, is_tensor)


_CHECKS = {
    "Tensor": lambda v, is_t: is_t(v),
    "Tensor|Scalar": lambda v, is_t: is_t(v) or _is_number(v),
    "Scalar": lambda v, is_t: _is_number(v),
    "int": lambda v, is_t: _is_int(v) or isinstance(v, bool),
    "float": lambda v, is_t: _is_number(v),
    "bool": lambda v, is_t: isinstance(v, bool) or _is_int(v),
    "str": lambda v, is_t: isinstance(v, str),
    "ScalarType": lambda v, is_t: v is not None,
    "Generator": lambda v, is_t: v is not None,
    "Any": lambda v, is_t: True,
}

_ARG = re.compile(r"^(?P<type>[\w|]+)(\((?P<alias>\w!?)\))?(?P<suffix>(\[\d*\]|\?)*)\s+(?P<name>\w+)"
                  r"(\s*=\s*(?P<default>.+))?$")


def _split_top(s: str) -> list[str]:
    """Split on commas that are not inside brackets or parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        depth += ch in "([" 
        depth -= ch in ")]"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _parse_default(text: str):
    text = text.strip()
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    return ast.literal_eval(text)


def _parse_type(base: str, suffix: str) -> str:
    return base + re.sub(r"\[\d+\]", "[]", suffix)


def parse_schema(text: str) -> Schema:
    """Parse `ns::name.overload(args) -> returns` into a Schema."""
    m = re.match(r"^\s*(?P<name>[\w:]+)(\.(?P<ov>\w+))?\((?P<args>.*)\)\s*->\s*(?P<ret>.+?)\s*$", text)
    if not m:
        raise ValueError(f"bad schema: {text}")
    args, kwarg_only = [], False
    for part in _split_top(m["args"]):
        if part == "*":
            kwarg_only = True
            continue
        a = _ARG.match(part)
        if not a:
            raise ValueError(f"bad argument {part!r} in schema: {text}")
        default = NO_DEFAULT if a["default"] is None else _parse_default(a["default"])
        args.append(Argument(a["name"], _parse_type(a["type"], a["suffix"] or ""), default,
                             kwarg_only, a["alias"]))
    ret = m["ret"]
    is_tuple = ret.startswith("(")
    returns = []
    for part in _split_top(ret[1:-1] if is_tuple else ret):
        r = re.match(r"^(?P<type>[\w|]+)(\((?P<alias>\w!?)\))?(?P<suffix>(\[\]|\?)*)(\s+(?P<name>\w+))?$", part)
        if not r:
            raise ValueError(f"bad return {part!r} in schema: {text}")
        returns.append(Return(_parse_type(r["type"], r["suffix"] or ""), r["name"], r["alias"]))
    return Schema(m["name"], m["ov"] or "", args, returns, is_tuple)
