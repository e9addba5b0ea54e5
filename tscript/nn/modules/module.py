"""`nn.Module`: the base class of layers and models, with PyTorch's registration, traversal,
state_dict, train/eval and hook API."""
from __future__ import annotations

import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import Callable, Iterator

from ..._tensor import Tensor
from ..._tracing import state as _trace_state
from ...autograd.graph import RemovableHandle
from ..parameter import Parameter


class IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What `load_state_dict` returns: the missing and the unexpected keys."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _load_error(key: str, value, target: Tensor) -> str | None:
    """PyTorch's message when `value` cannot be loaded into `target`, else None."""
    if not isinstance(value, Tensor):
        return (f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like object from '
                f"checkpoint but received {type(value)}")
    if tuple(value.shape) != tuple(target.shape):
        return (f"size mismatch for {key}: copying a param with shape {value.shape} from checkpoint, the shape "
                f"in current model is {target.shape}.")
    return None


def _add_hook(hooks: list, entry: tuple, prepend: bool) -> RemovableHandle:
    if prepend:
        hooks.insert(0, entry)
    else:
        hooks.append(entry)
    return RemovableHandle(hooks, entry)


class AttributeTable(OrderedDict):
    """A module's table of parameters, buffers or submodules. Every change anywhere bumps the
    class-wide `version`, so compiled models can keep the arrays they read from a module as long as
    no table changed (and re-read them when one did)."""
    version = 0
    _changes = itertools.count(1)

    @classmethod
    def _changed(cls) -> None:
        cls.version = next(cls._changes)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        AttributeTable._changed()

    def __delitem__(self, key):
        super().__delitem__(key)
        AttributeTable._changed()

    def pop(self, *args):
        AttributeTable._changed()
        return super().pop(*args)

    def popitem(self, last: bool = True):
        AttributeTable._changed()
        return super().popitem(last)

    def clear(self):
        AttributeTable._changed()
        super().clear()

    def setdefault(self, key, default=None):
        AttributeTable._changed()
        return super().setdefault(key, default)

    def update(self, *args, **kwargs):
        AttributeTable._changed()
        super().update(*args, **kwargs)

    def __ior__(self, other):
        AttributeTable._changed()
        return super().__ior__(other)


class Module:
    """Base class for all neural network modules; subclasses define `forward`."""

    training: bool

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = AttributeTable()
        d["_buffers"] = AttributeTable()
        d["_non_persistent_buffers"] = set()
        d["_modules"] = AttributeTable()
        d["_forward_hooks"] = []
        d["_forward_pre_hooks"] = []

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # -- calling ------------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        for hook, with_kwargs in list(self._forward_pre_hooks):
            if with_kwargs:
                out = hook(self, args, kwargs)
                if out is not None:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {out}.")
                    args, kwargs = out
            else:
                out = hook(self, args)
                if out is not None:
                    args = out if isinstance(out, tuple) else (out,)
        recorder = _trace_state.recorder
        if recorder is not None:  # tracing: the call becomes prim::CallMethod with its own graph
            result = recorder.call_module(self, args, kwargs)
        else:
            result = self.forward(*args, **kwargs)
        for hook, with_kwargs in list(self._forward_hooks):
            out = hook(self, args, kwargs, result) if with_kwargs else hook(self, args, result)
            if out is not None:
                result = out
        return result

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """`hook(module, args)` runs before forward; a returned value replaces the args. With
        `with_kwargs`, `hook(module, args, kwargs)` may return `(args, kwargs)`. `prepend` runs it first."""
        return _add_hook(self._forward_pre_hooks, (hook, with_kwargs), prepend)

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False) -> RemovableHandle:
        """`hook(module, args, output)` (with `with_kwargs`: `hook(module, args, kwargs, output)`) runs
        after forward; a returned value replaces the output. `prepend` runs it first."""
        return _add_hook(self._forward_hooks, (hook, with_kwargs), prepend)

    # -- registration -----------------------------------------------------------------------------------
    def _check_name(self, name, kind: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f"{kind} name can't be empty or contain \".\", got: {name!r}")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or None, a declared but absent one) under `name`."""
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            f"(tscript.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter, e.g. BatchNorm's running mean)."""
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            f"(tscript Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module under `name`."""
        self._check_name(name, "module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params, modules, buffers = d.get("_parameters"), d.get("_modules"), d.get("_buffers")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(tscript.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                f"(tscript.nn.Module or None expected)")
            modules[name] = None
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(tscript Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        for table in ("_parameters", "_buffers", "_modules"):
            self.__dict__[table].pop(name, None)
        self._non_persistent_buffers.discard(name)
        self.__dict__.pop(name, None)

    def __getattr__(self, name: str):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(table, {}):
                del self.__dict__[table][name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path `target` ("" is self)."""
        module = self
        for part in target.split(".") if target else []:
            if part not in module._modules:
                raise AttributeError(f"{module._get_name()} has no attribute `{part}`")
            module = module._modules[part]
        return module

    def get_parameter(self, target: str) -> Parameter:
        prefix, _, name = target.rpartition(".")
        module = self.get_submodule(prefix)
        if name not in module._parameters:
            raise AttributeError(f"{module._get_name()} has no parameter `{name}`")
        return module._parameters[name]

    # -- traversal ------------------------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        """(name, module) for this module and all below it, each module once."""
        memo = set() if memo is None else memo
        if remove_duplicate and id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator["Module"]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, table: str, prefix: str, recurse: bool, remove_duplicate: bool = True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for mod_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # -- state --------------------------------------------------------------------------------------------
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name (detached unless keep_vars)."""
        out = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(out, prefix + name + ".", keep_vars)
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False) -> IncompatibleKeys:
        """Copy values from `state_dict` into parameters and persistent buffers (shapes must match;
        values are cast to their dtype). With `strict`, missing or unexpected keys are an error listing
        them; with `assign`, the tensors of `state_dict` replace the module's instead of being copied."""
        from ...autograd.grad_mode import no_grad
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = [error for key, target in own.items() if key in state_dict
                  for error in [_load_error(key, state_dict[key], target)] if error]
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {self._get_name()}:\n\t" + "\n\t".join(errors))
        with no_grad():
            for key, target in own.items():
                if key not in state_dict:
                    continue
                if assign:
                    self._assign(key, target, state_dict[key])
                else:
                    target.copy_(state_dict[key])
        return IncompatibleKeys(missing, unexpected)

    def _assign(self, key: str, target: Tensor, value: Tensor) -> None:
        """`load_state_dict(assign=True)`: make `value` the tensor at `key` (a parameter stays a
        Parameter with the same requires_grad)."""
        prefix, _, name = key.rpartition(".")
        if isinstance(target, Parameter):
            value = Parameter(value, requires_grad=target.requires_grad) if not isinstance(value, Parameter) \
                else value.requires_grad_(target.requires_grad)
        setattr(self.get_submodule(prefix), name, value)

    # -- modes and conversion -----------------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode (affects Dropout, BatchNorm, ...) here and in all submodules."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for child in self.children():
            child.train(mode)   # through the method, so a submodule's own train() override runs
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to None by default, as PyTorch 2)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_()
                    p.grad.zero_()

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call `fn` on every submodule (children first) and then on self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def _apply_to_tensors(self, convert: Callable[[Tensor], Tensor]) -> "Module":
        from ...autograd.grad_mode import no_grad
        with no_grad():
            for module in self.modules():
                for name, p in module._parameters.items():
                    if p is not None:
                        p.data = convert(p.data)
                        if p.grad is not None:
                            p.grad = convert(p.grad)
                for name, b in module._buffers.items():
                    if b is not None:
                        module._buffers[name] = convert(b)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """Convert floating parameters and buffers to a dtype; devices other than the CPU raise."""
        from ..._device import check_device
        from ..._dtype import dtype as dtype_cls
        dtype = kwargs.pop("dtype", None)
        check_device(kwargs.pop("device", None))
        for a in args:
            if isinstance(a, dtype_cls):
                dtype = a
            elif isinstance(a, Tensor):
                dtype = a.dtype
            else:
                check_device(a)
        if dtype is None:
            return self
        if not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")
        # as PyTorch: complex tensors are converted too (to a real dtype they keep their real part)
        return self._apply_to_tensors(lambda t: t.to(dtype) if t.is_floating_point() or t.is_complex() else t)

    def _floats_to(self, dtype) -> "Module":
        """Floating parameters and buffers converted to `dtype` (`half()`, `float()`, ...: complex ones stay)."""
        return self._apply_to_tensors(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self) -> "Module":
        from ..._dtype import float32
        return self._floats_to(float32)

    def double(self) -> "Module":
        from ..._dtype import float64
        return self._floats_to(float64)

    def half(self) -> "Module":
        from ..._dtype import float16
        return self._floats_to(float16)

    def bfloat16(self) -> "Module":
        from ..._dtype import bfloat16
        return self._floats_to(bfloat16)

    def cpu(self) -> "Module":
        return self

    def cuda(self, device=None) -> "Module":
        """Moves every parameter and buffer with `Tensor.cuda`: raises PyTorch's error on a machine without
        CUDA, as soon as there is one (a module without tensors stays as it is)."""
        for t in itertools.chain(self.parameters(), self.buffers()):
            t.cuda(device)
        return self

    def xpu(self, device=None) -> "Module":
        """As `cuda`, for XPU."""
        for t in itertools.chain(self.parameters(), self.buffers()):
            t.xpu(device)
        return self

    def type(self, dst_type) -> "Module":
        return self.to(dst_type)

    # -- repr -----------------------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """Extra text inside the parentheses of this module's repr (layers override it)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + repr(child).replace("\n", "\n  ") for name, child in self._modules.items()]
        if len(extra_lines) == 1 and not child_lines:
            return f"{self._get_name()}({extra_lines[0]})"
        if not extra_lines + child_lines:
            return f"{self._get_name()}()"
        return f"{self._get_name()}(\n  " + "\n  ".join(extra_lines + child_lines) + "\n)"
