"""Entry-point signatures of saved models: what each input and output is, and the check that
turns what a caller passes into what the graph expects.

In a manifest a signature is JSON data. Every value is described by a *spec*:

    {"type": "tensor", "dtype": "float32" | null, "shape": ["batch", 4] | null}
    {"type": "int" | "float" | "bool" | "str" | "none" | "any"}
    {"type": "tuple", "items": [<spec>, ...]}
    {"type": "list", "item": <spec>}
    {"type": "dict", "key": "str" | "int", "value": <spec>}

Shape entries are ints (fixed sizes), strings (symbolic sizes: every dim of that name must have
the same size across the inputs of one call, e.g. "batch") or null (any size); a null dtype or
shape means "any". A tensor spec may carry "example_shape", the sizes it was traced with (what
`tsrt bench` feeds when no input is given, and what a loaded model plans its native entry for).
A file's example shapes may be anything, so loading plans for them only when the example inputs
hold at most MAX_EXAMPLE_ELEMENTS (2**24) elements together; for larger ones the first run plans.
An entry point's inputs are specs with a "name"; its outputs are a list of specs, one per graph
output.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import dtypes as dt
from .errors import InputError, ModelError, fmt_shape

SCALARS = ("int", "float", "bool", "str", "none", "any")
MAX_EXAMPLE_ELEMENTS = 1 << 24
DICT_KEYS = {"str": str, "int": int}


# -- specs ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TensorSpec:
    """A tensor: `dtype` (numpy dtype or None: any), `shape` (None: any rank; entries int, symbol
    str or None) and the sizes it was traced with (`example_shape`, optional)."""
    dtype: np.dtype | None = None
    shape: tuple | None = None
    example_shape: tuple | None = None

    def __str__(self) -> str:
        name = dt.NAMES[self.dtype] if self.dtype is not None else "Tensor"
        return name + ("[...]" if self.shape is None else _dims(self.shape))

    def to_json(self) -> dict:
        out = {"type": "tensor", "dtype": None if self.dtype is None else dt.NAMES[self.dtype],
               "shape": None if self.shape is None else list(self.shape)}
        if self.example_shape is not None:
            out["example_shape"] = list(self.example_shape)
        return out


@dataclass(frozen=True)
class ScalarSpec:
    """A Python value of one of SCALARS."""
    kind: str

    def __str__(self) -> str:
        return self.kind

    def to_json(self) -> dict:
        return {"type": self.kind}


@dataclass(frozen=True)
class TupleSpec:
    items: tuple

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.items)) + ("," if len(self.items) == 1 else "") + ")"

    def to_json(self) -> dict:
        return {"type": "tuple", "items": [i.to_json() for i in self.items]}


@dataclass(frozen=True)
class ListSpec:
    item: object

    def __str__(self) -> str:
        return f"List[{self.item}]"

    def to_json(self) -> dict:
        return {"type": "list", "item": self.item.to_json()}


@dataclass(frozen=True)
class DictSpec:
    key: str
    value: object

    def __str__(self) -> str:
        return f"Dict[{self.key}, {self.value}]"

    def to_json(self) -> dict:
        return {"type": "dict", "key": self.key, "value": self.value.to_json()}


def _dims(shape) -> str:
    return "[" + ", ".join("*" if d is None else str(d) for d in shape) + "]"


def spec_from_json(data):
    """The spec a manifest describes; ModelError when it is malformed (files are untrusted)."""
    kind = data.get("type") if isinstance(data, dict) else None
    kind = kind if isinstance(kind, str) else None
    if kind == "tensor":
        return TensorSpec(_dtype(data.get("dtype")), _shape(data.get("shape"), symbols=True),
                          _shape(data.get("example_shape"), symbols=False))
    if kind in SCALARS:
        return ScalarSpec(kind)
    if kind == "tuple" and isinstance(data.get("items"), list):
        return TupleSpec(tuple(spec_from_json(i) for i in data["items"]))
    if kind == "list":
        return ListSpec(spec_from_json(data.get("item")))
    if kind == "dict" and isinstance(data.get("key"), str) and data["key"] in DICT_KEYS:
        return DictSpec(data["key"], spec_from_json(data.get("value")))
    raise ModelError(f"malformed value description in the signature: {data!r}")


def _dtype(name):
    if name is None:
        return None
    if not isinstance(name, str) or name not in dt.BY_NAME:
        raise ModelError(f"unknown dtype {name!r} in the signature")
    return dt.BY_NAME[name]


def _shape(shape, symbols: bool):
    if shape is None:
        return None
    ok = isinstance(shape, list) and all(
        (type(d) is int and d >= 0) or (symbols and (d is None or (isinstance(d, str) and d)))
        for d in shape)
    if not ok:
        raise ModelError(f"malformed shape {shape!r} in the signature")
    return tuple(shape)


# -- signatures -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Signature:
    """An entry point's inputs (name, spec) and output specs."""
    name: str
    inputs: tuple
    outputs: tuple

    @classmethod
    def from_json(cls, name: str, inputs, outputs) -> "Signature":
        """A signature from manifest data; ModelError when it is malformed."""
        if not isinstance(inputs, list) or not isinstance(outputs, list):
            raise ModelError(f"entry point '{name}': 'inputs' and 'outputs' must be lists")
        args = []
        for i in inputs:
            if not isinstance(i, dict) or not isinstance(i.get("name"), str):
                raise ModelError(f"entry point '{name}': input without a name: {i!r}")
            args.append((i["name"], spec_from_json(i)))
        return cls(name, tuple(args), tuple(spec_from_json(o) for o in outputs))

    def to_json(self) -> dict:
        """The manifest form: {"inputs": [...], "outputs": [...]}."""
        return {"inputs": [{"name": n, **s.to_json()} for n, s in self.inputs],
                "outputs": [s.to_json() for s in self.outputs]}

    @property
    def input_names(self) -> list:
        return [n for n, _ in self.inputs]

    def __str__(self) -> str:
        args = ", ".join(f"{n}: {s}" for n, s in self.inputs)
        outs = ", ".join(map(str, self.outputs))
        return f"{self.name}({args}) -> {outs if len(self.outputs) == 1 else '(' + outs + ')'}"

    def check(self, values) -> list:
        """`values` as the graph expects them (arrays of the right dtype, Python scalars), or an
        InputError naming the input (name and position) with what was expected and what was given."""
        if len(values) != len(self.inputs):
            names = ", ".join(self.input_names)
            raise InputError(f"{self.name}() expects {len(self.inputs)} input{'s' * (len(self.inputs) != 1)} "
                             f"({names}), got {len(values)}")
        symbols: dict = {}
        return [_check(spec, v, f"input '{n}' (position {i})", symbols)
                for i, ((n, spec), v) in enumerate(zip(self.inputs, values))]

    def example_inputs(self, rng: np.random.Generator | None = None) -> list:
        """Inputs that satisfy the signature (example sizes where known, else 1): random numbers
        from `rng`, or zeros without one (enough to plan for: planning reads shapes only)."""
        return [_example(spec, rng) for _, spec in self.inputs]

    def example_elements(self) -> int:
        """How many elements the example inputs hold together (nothing is allocated)."""
        return sum(_example_elements(spec) for _, spec in self.inputs)


# -- checking inputs --------------------------------------------------------------------------------

def _check(spec, value, where: str, symbols: dict):
    if isinstance(spec, TensorSpec):
        return _check_tensor(spec, value, where, symbols)
    if isinstance(spec, ScalarSpec):
        return _check_scalar(spec.kind, value, where)
    if isinstance(spec, TupleSpec):
        if not isinstance(value, (tuple, list)) or len(value) != len(spec.items):
            raise InputError(f"{where}: expected a tuple of {len(spec.items)} items {spec}, got {_describe(value)}")
        return tuple(_check(s, v, f"{where} item {i}", symbols) for i, (s, v) in enumerate(zip(spec.items, value)))
    if isinstance(spec, ListSpec):
        if not isinstance(value, (tuple, list)):
            raise InputError(f"{where}: expected a list {spec}, got {_describe(value)}")
        return [_check(spec.item, v, f"{where} item {i}", symbols) for i, v in enumerate(value)]
    if not isinstance(value, dict) or not all(isinstance(k, DICT_KEYS[spec.key]) for k in value):
        raise InputError(f"{where}: expected a dict {spec}, got {_describe(value)}")
    return {k: _check(spec.value, v, f"{where} key {k!r}", symbols) for k, v in value.items()}


def _check_tensor(spec: TensorSpec, value, where: str, symbols: dict) -> np.ndarray:
    if not isinstance(value, (np.ndarray, np.generic, bool, int, float)):
        raise InputError(f"{where}: expected a numpy array {spec}, got {_describe(value)}")
    array = np.asarray(value)
    native = array.dtype.newbyteorder("=") if array.dtype.byteorder not in "=|" else array.dtype
    if native not in dt.NAMES:
        raise InputError(f"{where}: expected dtype {_dtype_name(spec.dtype)}, got {array.dtype} "
                         f"(not a tscript dtype)")
    if spec.dtype is not None and native != spec.dtype:
        raise InputError(f"{where}: expected dtype {dt.NAMES[spec.dtype]}, got {dt.NAMES[native]}")
    if native != array.dtype:
        array = array.astype(native)
    if spec.shape is not None:
        _check_shape(spec.shape, array.shape, where, symbols)
    return array


def _check_shape(expected: tuple, got: tuple, where: str, symbols: dict) -> None:
    if len(expected) != len(got):
        raise InputError(f"{where}: expected a {len(expected)}-d array of shape {_dims(expected)}, "
                         f"got shape {fmt_shape(got)} ({len(got)}-d)")
    for d, (want, size) in enumerate(zip(expected, got)):
        if isinstance(want, int) and want != size:
            raise InputError(f"{where}: expected shape {_dims(expected)}, got {fmt_shape(got)} "
                             f"(dim {d} must be {want})")
        if isinstance(want, str):
            bound = symbols.setdefault(want, (size, where, d))
            if bound[0] != size:
                raise InputError(f"{where}: dim {d} ('{want}') is {size}, but {bound[1]} has '{want}' = "
                                 f"{bound[0]} (dim {bound[2]}); inputs must agree on '{want}'")


_SCALAR_TYPES = {
    "int": ((int, np.integer), (bool, np.bool_), int),
    "float": ((float, int, np.floating, np.integer), (bool, np.bool_), float),
    "bool": ((bool, np.bool_), (), bool),
    "str": ((str,), (), str),
}


def _check_scalar(kind: str, value, where: str):
    if kind == "any":
        return value
    if kind == "none":
        if value is not None:
            raise InputError(f"{where}: expected None, got {_describe(value)}")
        return None
    accepted, refused, convert = _SCALAR_TYPES[kind]
    if isinstance(value, np.ndarray) and value.ndim == 0:  # e.g. a scalar read from a .npy file
        value = value[()]
    if not isinstance(value, accepted) or isinstance(value, refused):
        raise InputError(f"{where}: expected {kind}, got {_describe(value)}")
    return convert(value)


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"{dt.NAMES.get(value.dtype, str(value.dtype))} array of shape {fmt_shape(value.shape)}"
    if isinstance(value, (bool, int, float, str, np.generic)):
        return f"{type(value).__name__} {value!r}"
    return type(value).__name__


def _dtype_name(dtype) -> str:
    return "any tscript dtype" if dtype is None else dt.NAMES[dtype]


# -- example inputs ---------------------------------------------------------------------------------

_EXAMPLE_SCALARS = {"int": 1, "float": 1.0, "bool": False, "str": "", "none": None, "any": None}


def _example_shape(spec: TensorSpec) -> tuple:
    return spec.example_shape or tuple(d if isinstance(d, int) else 1 for d in spec.shape or ())


def _example_elements(spec) -> int:
    if isinstance(spec, TensorSpec):
        return math.prod(_example_shape(spec))
    if isinstance(spec, TupleSpec):
        return sum(map(_example_elements, spec.items))
    if isinstance(spec, ListSpec):
        return _example_elements(spec.item)
    return 0


def _example(spec, rng: np.random.Generator | None):
    if isinstance(spec, TensorSpec):
        shape, dtype = _example_shape(spec), spec.dtype or dt.float32
        if rng is not None and dt.is_float(dtype):
            return rng.standard_normal(shape).astype(dtype)
        return np.zeros(shape, dtype)  # zeros are valid indices and masks
    if isinstance(spec, ScalarSpec):
        return _EXAMPLE_SCALARS[spec.kind]
    if isinstance(spec, TupleSpec):
        return tuple(_example(s, rng) for s in spec.items)
    if isinstance(spec, ListSpec):
        return [_example(spec.item, rng)]
    return {}
