"""`torch._foreach_*`: an op applied to every tensor of a list (what fused optimizers call).

`_foreach_add(tensors, other)` is `tuple(t.add(o) for ...)`: an argument that is a list gives one
entry per tensor, anything else (a number, a tensor) is shared by all; the `*_` forms work in place
and return the list. A `Tensor` of scalars (one per tensor) is accepted for `addcmul`/`addcdiv`'s
`scalars`, as PyTorch does.
"""
from tscript_runtime.errors import OpRuntimeError

from ._tensor import Tensor

BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "clamp_min", "clamp_max")
UNARY = ("sqrt", "neg", "reciprocal", "exp", "log", "abs", "sign", "sigmoid", "sin", "cos", "tanh", "floor", "ceil",
         "round", "trunc", "log1p", "expm1", "rsqrt", "erf", "log2", "tan")
TERNARY = ("addcmul", "addcdiv", "lerp")
# The method a binary op runs as when its other operand is a number (Tensor.maximum takes tensors only).
SCALAR_FORMS = {"maximum": "clamp_min", "minimum": "clamp_max"}


def _per_tensor(arg, n: int) -> list:
    """One value of `arg` per tensor of the list."""
    if isinstance(arg, (list, tuple)):
        if len(arg) != n:
            raise OpRuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(arg)
    return [arg] * n


def _check_list(tensors) -> list:
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"foreach ops take a list of Tensors, got {type(tensors).__name__}")
    if not tensors:
        raise OpRuntimeError("Tensor list must have at least one tensor.")
    return list(tensors)


def _apply(method: str, tensors, args, kwargs) -> list:
    tensors = _check_list(tensors)
    n = len(tensors)
    if method in ("addcmul", "addcdiv") and len(args) == 3 and isinstance(args[2], Tensor):
        args = args[:2] + (args[2].tolist(),)  # `scalars` as a tensor: one value per tensor
    if method in ("addcmul", "addcdiv") and len(args) == 3:
        kwargs = dict(kwargs, value=args[2])
        args = args[:2]
    per_arg = [_per_tensor(a, n) for a in args]
    per_kw = {k: _per_tensor(v, n) for k, v in kwargs.items()}
    out = []
    for i, t in enumerate(tensors):
        own = [a[i] for a in per_arg]
        name = SCALAR_FORMS.get(method, method) if own and not isinstance(own[0], Tensor) else method
        out.append(getattr(t, name)(*own, **{k: v[i] for k, v in per_kw.items()}))
    return out


def _functional(name: str):
    def fn(self, *args, **kwargs):
        return tuple(_apply(name, self, args, kwargs))
    fn.__name__ = fn.__qualname__ = f"_foreach_{name}"
    fn.__doc__ = f"`{name}` of every tensor of the list (a tuple of the results)."
    return fn


def _inplace(name: str):
    def fn(self, *args, **kwargs):
        for t, result in zip(self, _apply(name, self, args, kwargs)):
            t.copy_(result)
        return self
    fn.__name__ = fn.__qualname__ = f"_foreach_{name}_"
    fn.__doc__ = f"`{name}` of every tensor of the list, written into it."
    return fn


def _norm(self, ord=2, dtype=None) -> tuple:
    """The vector `ord`-norm of every tensor of the list."""
    return tuple(t.norm(ord, dtype=dtype) for t in _check_list(self))


def _zero_(self) -> list:
    for t in _check_list(self):
        t.zero_()
    return self


def _copy_(self, src, non_blocking: bool = False) -> list:
    for t, s in zip(_check_list(self), _per_tensor(src, len(self))):
        t.copy_(s)
    return self


FUNCTIONS: dict = {"_foreach_norm": _norm, "_foreach_zero_": _zero_, "_foreach_copy_": _copy_}
for _name in BINARY + UNARY + TERNARY:
    FUNCTIONS[f"_foreach_{_name}"] = _functional(_name)
    FUNCTIONS[f"_foreach_{_name}_"] = _inplace(_name)
METHODS: dict = {}
