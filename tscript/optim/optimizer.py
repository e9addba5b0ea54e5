"""`optim.Optimizer`: the base of SGD, Adam, ...: parameter groups, per-parameter state,
`zero_grad`, `step(closure)` and `state_dict` / `load_state_dict` in PyTorch's format.

A subclass gives its defaults to `__init__` and implements `_update(param, grad, group)`, the
update of one parameter (its state is `self.state[param]`), written with in-place tensor ops on
`param` so that the parameter objects a model holds stay the same. `step` runs it under `no_grad`
for every parameter that has a gradient.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from copy import deepcopy
from itertools import chain
from typing import Callable, Iterable

from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, no_grad


class _RequiredParameter:
    """Marks a default that every parameter group must give (PyTorch's `optim.optimizer.required`)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

# Options PyTorch keeps in every group that select a kernel implementation; tscript has one (the
# single-tensor CPU loop), so they are accepted only with values that do not ask for anything else.
_UNSUPPORTED_TRUE = ("differentiable", "fused")


def check_range(name: str, value, low: float = 0.0, high: float | None = None) -> None:
    """PyTorch's hyper-parameter check: `low <= value (< high)` else `Invalid <name>: <value>`."""
    if not low <= value or (high is not None and not value < high):
        raise ValueError(f"Invalid {name}: {value}")


class Optimizer:
    """Base class of all optimizers: `params` is an iterable of tensors or of dicts (parameter
    groups, each with its own options overriding `defaults`)."""

    def __init__(self, params: Iterable, defaults: dict):
        for option in _UNSUPPORTED_TRUE:
            if defaults.get(option):
                raise ValueError(f"{type(self).__name__}: {option}=True is not supported by tscript "
                                 f"(the single-tensor CPU implementation is used)")
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or "
                            "dicts, but got tscript.Tensor")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # -- parameter groups ----------------------------------------------------------------------------
    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own options (missing options take the defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list instead.")
        param_group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in param_group["params"]]
        if len(ids) != len(set(ids)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this "
                          "will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                          "information", stacklevel=3)
        taken = {id(p) for group in self.param_groups for p in group["params"]}
        if not taken.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # -- stepping -------------------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors: to None (default) or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_()
                    p.grad.zero_()

    def step(self, closure: Callable | None = None):
        """One optimization step. `closure`, if given, re-evaluates the model (with grad enabled)
        and returns the loss, which `step` returns."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, p.grad, group)
        return loss

    def _update(self, param: Tensor, grad: Tensor, group: dict) -> None:
        """Update one parameter in place from its gradient (subclasses implement this)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    # -- state_dict -----------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """`{"state": {param_id: {...}}, "param_groups": [{..., "params": [param_id, ...]}]}`, where the
        ids number the parameters in group order. State tensors are cloned (a snapshot)."""
        ids: dict[int, int] = {}
        groups = []
        start = 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            ids.update({id(p): i for i, p in enumerate(group["params"], start) if id(p) not in ids})
            packed["params"] = [ids[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {(ids[id(k)] if isinstance(k, Tensor) else k): _clone(v) for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore options and state saved by `state_dict` (the groups must have the same sizes).
        Floating state tensors are cast to their parameter's dtype, except the step count."""
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in self.param_groups)))
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = {k: _cast_like(param, v, k) for k, v in value.items()}
            else:
                state[key] = _clone(value)
        for group, saved in zip(self.param_groups, saved_groups):
            saved["params"] = group["params"]
        self.state = state
        self.param_groups = saved_groups

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


def _clone(value):
    """A copy of nested state in which every tensor is cloned."""
    if isinstance(value, Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return type(value)((k, _clone(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value)
    return value


def _cast_like(param: Tensor, value, key):
    """A loaded state value for `param`: tensors cloned, and in the parameter's dtype when that is
    floating (the step count keeps its own dtype)."""
    value = _clone(value)
    if isinstance(value, Tensor) and key != "step" and param.is_floating_point():
        return value.to(param.dtype)
    return value


def addcmul_(self: Tensor, tensor1: Tensor, tensor2: Tensor, value: float = 1) -> Tensor:
    """`self += value * tensor1 * tensor2` in place, in PyTorch's evaluation order."""
    return self.add_(tensor1.mul(value).mul_(tensor2))


def addcdiv_(self: Tensor, tensor1: Tensor, tensor2: Tensor, value: float = 1) -> Tensor:
    """`self += value * tensor1 / tensor2` in place, in PyTorch's evaluation order."""
    return self.add_(tensor1.mul(value).div_(tensor2))
