"""Modules in scripted code: a module value (`self`, a submodule: a chain of prim::GetAttr from the
graph's %self), its class, its methods (compiled when called, prim::CallMethod), `super()`, and
plain Python objects holding settings (a @dataclass config) read when compiling. What attributes
mean is decided by the compiler (compiler.py); these only carry the module and ask it."""
from __future__ import annotations

import dataclasses
import inspect
import types as pytypes
from typing import TYPE_CHECKING

from ...ir.types import ModuleType
from .values import ConstValue, Sugared, TupleSugar, Unrolled

if TYPE_CHECKING:
    from .compiler import Compiler


class ModuleSugar(Sugared):
    """A module: `root` is the graph's %self (the module `base`), `path` the submodule names from
    it (a GetAttr chain, emitted where the module is used)."""

    def __init__(self, compiler: Compiler, module, root, path: tuple, base=None):
        self.compiler, self.module, self.root, self.path = compiler, module, root, path
        self.base = module if base is None else base

    @property
    def describe(self) -> str:
        return f"the module '{type(self.module).__name__}'"

    def child(self, name: str) -> "ModuleSugar":
        """The submodule `name`."""
        return ModuleSugar(self.compiler, self.module._modules[name], self.root, self.path + (name,), self.base)

    def as_value(self, em, pos):
        value, module = self.root, self.base
        for name in self.path:
            module = module._modules[name]
            node = em.insert("prim::GetAttr", [value], [module_type(module)], {"name": name})
            node.output.rename(attr_hint(name))
            value = node.output
        return value

    def attr(self, em, name, pos):
        return self.compiler.module_attribute(em, self, name, pos)

    def call(self, em, args, kwargs, pos):
        if isinstance(self.module, containers()[1:]) and not overrides_forward(self.module):
            raise em.error(f"{self.describe} is not callable; iterate over it or index it", pos)
        return self.compiler.call_method(em, self, "forward", type(self.module).forward, args, kwargs, pos)

    def _keys(self) -> list:
        """The names of a container's entries: submodules, or parameters of a ParameterList/Dict."""
        return list(self.module._parameters if holds_parameters(self.module) else self.module._modules)

    def _entry(self, em, key: str, pos) -> Sugared:
        return self.attr(em, key, pos) if holds_parameters(self.module) else self.child(key)

    def getitem(self, em, index, pos):
        if not is_container(self.module):
            return super().getitem(em, index, pos)
        keys = self._keys()
        if isinstance(index, ConstValue) and isinstance(index.value, str) and index.value in keys:
            return self._entry(em, index.value, pos)
        if isinstance(index, ConstValue) and type(index.value) is int and -len(keys) <= index.value < len(keys):
            return self._entry(em, keys[index.value], pos)
        if isinstance(index, ConstValue) and isinstance(index.value, (int, str)):
            raise em.error(f"index {index.value!r} is out of range for {self.describe} of {len(keys)} entries", pos)
        raise em.error(f"{self.describe} can only be indexed by a constant, or by the variable of a loop over "
                       f"range(len(...)) or enumerate(...) (which is then unrolled)", pos)

    def iterate(self, em, pos):
        if isinstance(self.module, by_key()):
            return Unrolled([ConstValue(k) for k in self._keys()])
        if is_container(self.module):
            return Unrolled([self._entry(em, k, pos) for k in self._keys()])
        return super().iterate(em, pos)

    def length(self, em, pos):
        if is_container(self.module):
            return ConstValue(len(self._keys()))
        return super().length(em, pos)

    def container_view(self, em, what: str, pos) -> Sugared:
        """`keys()`, `values()` or `items()` of a container, as tuples."""
        keys = self._keys()
        if what == "keys":
            return ConstValue(tuple(keys))
        if what == "values":
            return TupleSugar([self._entry(em, k, pos) for k in keys])
        return TupleSugar([TupleSugar([ConstValue(k), self._entry(em, k, pos)]) for k in keys])


class ModuleClassSugar(Sugared):
    """A module's class (`type(self)`): its static methods and class constants."""

    def __init__(self, compiler: Compiler, cls):
        self.compiler, self.cls = compiler, cls

    @property
    def describe(self) -> str:
        return f"the class '{self.cls.__name__}'"

    def attr(self, em, name, pos):
        if name in ("__name__", "__qualname__"):
            return ConstValue(getattr(self.cls, name))
        static = inspect.getattr_static(self.cls, name, None)
        if isinstance(static, staticmethod):
            return self.compiler.resolve(static.__func__, pos, name, em)
        if static is None or isinstance(static, (pytypes.FunctionType, property, classmethod)):
            raise em.error(f"{self.describe} has no static attribute '{name}' usable in scripted code", pos)
        return self.compiler.resolve(static, pos, name, em)


class RecordSugar(Sugared):
    """A plain Python object holding settings (a @dataclass config, a SimpleNamespace), e.g. a
    module's `self.config`: its attributes are read when compiling, captured by value."""

    def __init__(self, compiler: Compiler, obj, name: str):
        self.compiler, self.obj, self.name = compiler, obj, name

    @property
    def describe(self) -> str:
        return f"the {type(self.obj).__name__} object '{self.name}'"

    def attr(self, em, name, pos):
        if not hasattr(self.obj, name):
            raise em.error(f"'{type(self.obj).__name__}' object has no attribute '{name}'", pos)
        return self.compiler.resolve(getattr(self.obj, name), pos, f"{self.name}.{name}", em)


def closes_over_modules(fn) -> bool:
    """Does the function (a lambda stored on a module) hold modules in its closure cells?"""
    from ...nn.modules.module import Module
    return any(isinstance(c.cell_contents, Module) for c in fn.__closure__ or () if has_contents(c))


def has_contents(cell) -> bool:
    """Is the closure cell bound yet?"""
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def is_record(obj) -> bool:
    """A @dataclass instance or a SimpleNamespace: settings read when compiling."""
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type) or isinstance(obj, pytypes.SimpleNamespace)


class MethodSugar(Sugared):
    """A method of a module, compiled when called (prim::CallMethod)."""

    def __init__(self, owner: ModuleSugar, name: str, fn, public: bool = True):
        self.owner, self.name, self.fn, self.public = owner, name, fn, public

    @property
    def describe(self) -> str:
        return f"the method '{self.name}'"

    def call(self, em, args, kwargs, pos):
        return self.owner.compiler.call_method(em, self.owner, self.name, self.fn, args, kwargs, pos, self.public)


class SuperSugar(Sugared):
    """`super()` (or `super(Class, self)`) in a method of a module: the attributes of the classes
    after `cls` in the module's method resolution order."""

    def __init__(self, owner: ModuleSugar, cls: type):
        self.owner, self.cls = owner, cls

    @property
    def describe(self) -> str:
        return f"super() of '{self.cls.__name__}'"

    def attr(self, em, name, pos):
        mro = type(self.owner.module).__mro__
        for klass in mro[mro.index(self.cls) + 1:]:
            if name in vars(klass):
                return self.owner.compiler.class_member(em, self.owner, vars(klass)[name], f"{klass.__name__}.{name}",
                                                        pos)
        raise em.error(f"'super' object has no attribute '{name}'", pos)


def module_type(module) -> ModuleType:
    """The IR type of a module value."""
    return ModuleType(type(module).__name__)


def attr_hint(name: str) -> str:
    """The name of the value a GetAttr of `name` gives (`_0` for a numbered submodule)."""
    return f"_{name}" if name[:1].isdigit() else name


def module_class():
    """nn.Module (imported when first needed: nn imports the frontend's users)."""
    from ...nn.modules.module import Module
    return Module


def path_to(root, target) -> tuple | None:
    """The submodule names leading from `root` to `target` (None if it is not in the tree)."""
    stack = [(root, ())]
    seen = set()
    while stack:
        module, path = stack.pop()
        if module is target:
            return path
        if id(module) in seen:
            continue
        seen.add(id(module))
        stack.extend((child, path + (name,)) for name, child in module._modules.items() if child is not None)
    return None


def containers() -> tuple:
    """The container classes scripted code iterates and indexes."""
    from ...nn.modules.container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
    return Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict


def overrides_forward(module) -> bool:
    """Does a ModuleList/ModuleDict/Parameter* subclass define its own forward (then it is callable)?"""
    return all(type(module).forward is not kind.forward for kind in containers()[1:])


def is_container(module) -> bool:
    """Is the module a Sequential, ModuleList, ModuleDict, ParameterList or ParameterDict?"""
    return isinstance(module, containers())


def holds_parameters(module) -> bool:
    """Does the container hold parameters rather than modules?"""
    return isinstance(module, containers()[3:])


def by_key() -> tuple:
    """The containers iterated by key (dicts)."""
    return containers()[2], containers()[4]
