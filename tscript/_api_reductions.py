"""Hand-written bindings for reduction and sorting ops whose Python signature PyTorch parses
specially: `max`/`min` (three overloads), `var`/`std` (`unbiased` or `correction`), `norm`
(`p='fro'`) and `unique` (a tensor or a tuple, depending on its flags). They only pick the op and
normalise arguments; the ops themselves live in `tscript_runtime.ops.reductions`/`sorting`."""
from tscript_runtime.errors import OpRuntimeError, OpTypeError
from tscript_runtime.ops import OPS

from ._dispatch import dispatch
from ._tensor import Tensor


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def _describe(args, kwargs) -> str:
    """The argument types of a call, as PyTorch lists them in "invalid combination" errors."""
    label = lambda v: "Tensor" if _is_tensor(v) else type(v).__name__  # noqa: E731
    return ", ".join([label(a) for a in args] + [f"{k}={label(v)}" for k, v in kwargs.items()])


def _overloaded(name: str, *ops):
    """A function running the first of `ops` whose schema accepts the call, as PyTorch's argument
    parser chooses among the signatures of `torch.max`."""
    def fn(*args, **kwargs):
        for op in ops:
            try:
                op.schema.bind(args, kwargs, _is_tensor)
            except OpTypeError:
                continue
            return dispatch(op, args, kwargs or None)
        expected = "\n".join(f" * {op.schema}" for op in ops)
        raise OpTypeError(f"{name}() received an invalid combination of arguments - got "
                          f"({_describe(args, kwargs)}), but expected one of:\n{expected}")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"`{name}(input)`, `{name}(input, dim, keepdim=False)` -> (values, indices), or " \
                 f"`{name}(input, other)` (elementwise), as in PyTorch."
    return fn


max = _overloaded("max", OPS["aten::max"], OPS["aten::max.dim"], OPS["aten::maximum"])  # noqa: A001
min = _overloaded("min", OPS["aten::min"], OPS["aten::min.dim"], OPS["aten::minimum"])  # noqa: A001


def _correction_kwargs(name: str, args: tuple, kwargs: dict) -> dict:
    """PyTorch's three var/std signatures, `(unbiased)`, `(dim, unbiased=True, keepdim=False)` and
    `(dim=None, *, correction=None, keepdim=False)`, as keywords of the correction form."""
    if args and isinstance(args[0], bool):
        if len(args) > 1 or kwargs:
            raise OpTypeError(f"{name}() received an invalid combination of arguments - got "
                              f"({_describe(args, kwargs)})")
        return {"correction": int(args[0])}
    if len(args) > 3:
        raise OpTypeError(f"{name}() takes at most 4 positional arguments ({len(args) + 1} given)")
    out = dict(zip(("dim", "unbiased", "keepdim"), args))
    for key, value in kwargs.items():
        if key in out:
            raise OpTypeError(f"{name}() got multiple values for argument '{key}'")
        out[key] = value
    if "unbiased" in out:
        unbiased = out.pop("unbiased")
        if "correction" in out or not isinstance(unbiased, bool):
            raise OpTypeError(f"{name}() received an invalid combination of arguments - got "
                              f"({_describe(args, kwargs)})")
        out["correction"] = int(unbiased)
    return out


def var(input: Tensor, *args, **kwargs) -> Tensor:
    """Variance over `dim` with Bessel's correction by default (`unbiased=` or `correction=`)."""
    return dispatch(OPS["aten::var"], (input,), _correction_kwargs("var", args, kwargs))


def std(input: Tensor, *args, **kwargs) -> Tensor:
    """Standard deviation over `dim`, corrected as `var`."""
    return dispatch(OPS["aten::std"], (input,), _correction_kwargs("std", args, kwargs))


def _norm_order(p, dim):
    """`p` as a number: the Frobenius norm is the 2-norm over the (at most two) reduced dims."""
    if not isinstance(p, str):
        return p
    if p != "fro":
        raise OpRuntimeError(f"norm(): Order {p} not supported (tscript supports p='fro' and numbers)")
    if isinstance(dim, (list, tuple)) and len(dim) > 2:
        raise OpRuntimeError(f"norm(): linalg.matrix_norm: dim must be a 2-tuple. Got "
                             f"{' '.join(str(d) for d in dim)}")
    return 2


def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """The vector p-norm (`'fro'` = 2, `inf`, `-inf`, 0, 1, any number) over `dim`."""
    return dispatch(OPS["aten::norm"], (input, _norm_order(p, dim), dim, keepdim), {"dtype": dtype})


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
           dim=None):
    """The sorted unique values (or slices along `dim`); with the flags, a tuple that adds the
    inverse indices and/or the counts."""
    out, inverse, counts = dispatch(OPS["aten::unique"], (input, sorted, return_inverse, return_counts, dim))
    extra = tuple(t for t, wanted in ((inverse, return_inverse), (counts, return_counts)) if wanted)
    return (out,) + extra if extra else out


FUNCTIONS: dict = {"max": max, "min": min, "var": var, "std": std, "norm": norm, "unique": unique}
METHODS: dict = dict(FUNCTIONS)
