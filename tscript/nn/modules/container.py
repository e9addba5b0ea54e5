"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterable

from ..parameter import Parameter
from .module import Module


def _index(idx: int, n: int, what: str) -> int:
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for {what} of length {n}")
    return idx % n


class Sequential(Module):
    """Modules run one after another: `Sequential(a, b, c)` or `Sequential(OrderedDict(...))`."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self), "Sequential")]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        self.add_module(key, module)

    def __delitem__(self, idx) -> None:
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys), "Sequential")]]):
            del self._modules[key]
        _renumber(self)   # as PyTorch: the remaining modules are renamed 0..n-1, even named ones

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module) -> "Sequential":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "Sequential":
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        """Insert `module` before position `index` (-len <= index <= len)."""
        if not isinstance(module, Module):
            raise TypeError(f"Sequential.insert: module should be of type Module, got {type(module).__name__}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index = index + n if index < 0 else index
        for i in range(n, index, -1):   # shift the numbered entries up, as PyTorch
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def pop(self, idx) -> Module:
        module = self[idx]
        del self[idx]
        return module

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return Sequential(*self, *other)


class ModuleList(Module):
    """A list of modules, registered so their parameters are found."""

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx) -> None:
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys), "ModuleList")]]):
            del self._modules[key]
        _renumber(self)

    def __repr__(self) -> str:
        """PyTorch's compressed form: runs of modules with equal reprs print once as `(i-j): n x ...`."""
        if not len(self):
            return f"{self._get_name()}()"
        runs: list[list] = []   # [first index, last index, repr]
        for i, module in enumerate(self):
            text = repr(module)
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        lines = [(f"({a}): {text}" if a == b else f"({a}-{b}): {b - a + 1} x {text}").replace("\n", "\n  ")
                 for a, b, text in runs]
        return f"{self._get_name()}(\n  " + "\n  ".join(lines) + "\n)"

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: "ModuleList") -> "ModuleList":
        return ModuleList(list(self) + list(other))

    def append(self, module: Module) -> "ModuleList":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        if not hasattr(modules, "__iter__"):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got "
                            f"{type(modules).__name__}")
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        values = list(self._modules.values())
        values.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(values):
            self.add_module(str(i), m)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList is not callable; iterate over it in your forward")


class ModuleDict(Module):
    """A dict of modules keyed by name, in insertion order."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key: str) -> Module:
        return self._modules.pop(key)

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules) -> None:
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self.add_module(key, module)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict is not callable; index it in your forward")


class ParameterList(Module):
    """A list of parameters, registered so optimizers and state_dict see them."""

    def __init__(self, values=None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def __getitem__(self, idx: int) -> Parameter:
        if isinstance(idx, slice):
            return ParameterList(list(self._parameters.values())[idx])
        return self._parameters[str(_index(idx, len(self), "ParameterList"))]

    def __setitem__(self, idx: int, param) -> None:
        self.register_parameter(str(_index(idx, len(self), "ParameterList")), _as_parameter(param))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, value) -> "ParameterList":
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values) -> "ParameterList":
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({i}): Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
                         for i, p in enumerate(self))


class ParameterDict(Module):
    """A dict of parameters keyed by name."""

    def __init__(self, parameters=None):
        super().__init__()
        for k, v in (parameters.items() if hasattr(parameters, "items") else parameters or ()):
            self[k] = v

    def __getitem__(self, key: str) -> Parameter:
        return self._parameters[key]

    def __setitem__(self, key: str, value) -> None:
        self.register_parameter(key, _as_parameter(value))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key: str) -> bool:
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): Parameter containing: [{p.type()} of size {'x'.join(map(str, p.shape))}]"
                         for k, p in self.items())


def _renumber(container: Module) -> None:
    """Rename the modules of a container 0..n-1 in their order."""
    modules = list(container._modules.values())
    container._modules.clear()
    for i, module in enumerate(modules):
        container._modules[str(i)] = module


def _as_parameter(value):
    return value if isinstance(value, Parameter) else Parameter(value)
