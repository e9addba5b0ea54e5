"""Math functions PyTorch has as their own entry points but tscript writes over existing ops:
`square`, `addcmul`/`addcdiv` (and their in-place forms), `trace`, `scalar_tensor`, `dist`,
`clamp_min`/`clamp_max`, `index_add`, `trapezoid`, `cdist`, `normal`, `Tensor.where`, PyTorch's
aliases (`multiply`, `clip`, `less`, `arcsin`, ...) and the constants `pi`, `e`, `inf`, `nan`."""
import math

from tscript_runtime import dtypes as _dt
from tscript_runtime.errors import OpNotImplementedError, OpRuntimeError, OpTypeError
from tscript_runtime.ops import OPS

from ._dispatch import dispatch
from ._tensor import Tensor


def _op(name: str, *args, **kwargs):
    return dispatch(OPS[name], args, kwargs or None)


def square(input: Tensor) -> Tensor:
    """`input ** 2` (bool tensors give int64, as `pow` does)."""
    return _op("aten::pow", input, 2)


def square_(self: Tensor) -> Tensor:
    return _op("aten::pow_", self, 2)


def _value(value, *tensors):
    """`value` as the result dtype takes it: an integer result truncates it, as PyTorch casts a Scalar."""
    out = _dt.result_type(*(t._data if isinstance(t, Tensor) else t for t in tensors))
    return value if _dt.is_float(out) else int(value)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """`input + value * tensor1 * tensor2`, broadcasting."""
    return _op("aten::add", input, tensor1 * tensor2, alpha=_value(value, input, tensor1, tensor2))


def addcmul_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    return _op("aten::add_", self, tensor1 * tensor2, alpha=_value(value, self, tensor1, tensor2))


def _check_division(tensor1: Tensor, tensor2: Tensor) -> None:
    if not (tensor1.is_floating_point() or tensor2.is_floating_point()):
        raise OpRuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform "
            "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + "
            "value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * "
            "tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """`input + value * tensor1 / tensor2`, broadcasting (integer tensor1 and tensor2 are refused)."""
    _check_division(tensor1, tensor2)
    return _op("aten::add", input, tensor1 / tensor2, alpha=value)


def addcdiv_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    _check_division(tensor1, tensor2)
    return _op("aten::add_", self, tensor1 / tensor2, alpha=value)


def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a matrix (integer matrices sum to int64)."""
    if input.dim() != 2:
        raise OpRuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    if input._data.dtype == _dt.bool_:
        raise OpNotImplementedError("\"trace\" not implemented for 'Bool'")
    rows, cols = input.shape
    return input.reshape(-1)[::cols + 1][:min(rows, cols)].sum()


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad: bool = False) -> Tensor:
    """A 0-dim tensor holding the number `s`, of the default float dtype unless `dtype` is given."""
    from ._creation import full
    return full((), s, dtype=dtype or _dt.defaults.float_dtype, device=device, requires_grad=requires_grad)


def dist(input: Tensor, other: Tensor, p=2) -> Tensor:
    """The p-norm of `input - other`."""
    return _op("aten::norm", input - other, p)


def clamp_min(input: Tensor, min) -> Tensor:  # noqa: A002 (PyTorch's argument name)
    return _op("aten::clamp", input, min, None)


def clamp_max(input: Tensor, max) -> Tensor:  # noqa: A002
    return _op("aten::clamp", input, None, max)


def clamp_min_(self: Tensor, min) -> Tensor:  # noqa: A002
    return _op("aten::clamp_", self, min, None)


def clamp_max_(self: Tensor, max) -> Tensor:  # noqa: A002
    return _op("aten::clamp_", self, None, max)


def _index_add_args(input: Tensor, dim: int, index: Tensor, source: Tensor, alpha) -> tuple:
    dim = dim % max(input.dim(), 1)
    return [None] * dim + [index], source if alpha == 1 else source * alpha


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """A copy of `input` with `alpha * source` added at `index` along `dim` (repeated indices add up)."""
    indices, values = _index_add_args(input, dim, index, source, alpha)
    return _op("aten::index_put", input, indices, values, True)


def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    indices, values = _index_add_args(self, dim, index, source, alpha)
    return _op("aten::index_put_", self, indices, values, True)


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The integral of `y` along `dim` by the trapezoidal rule, at spacing `dx` (default 1) or at
    the sample points `x`."""
    if x is not None and dx is not None:
        raise OpRuntimeError("trapezoid: cannot take both x and dx")
    n = y.shape[dim]
    if n == 0:
        return y.sum(dim)
    pairs = y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)
    if x is None:
        return pairs.sum(dim) * ((1 if dx is None else dx) / 2)
    steps = x.diff(dim=dim if x.dim() > 1 else -1)
    if x.dim() == 1 and y.dim() > 1:
        steps = steps.reshape((-1,) + (1,) * (y.dim() - 1 - dim % y.dim()))
    return (pairs * steps).sum(dim) / 2


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode=None) -> Tensor:
    """The p-norm distance between every row of `x1` and every row of `x2` (batched over leading dims)."""
    if x1.dim() < 2 or x2.dim() < 2:
        raise OpRuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise OpRuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise OpRuntimeError("cdist only supports non-negative p values")
    return _op("aten::norm", x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad: bool = False):
    """Samples of N(mean, std**2): elementwise for tensor `mean`/`std` (broadcast), or of `size` for numbers."""
    from ._creation import randn
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        if isinstance(std, Tensor) and std.numel() and bool((std < 0).any()):
            raise OpRuntimeError("normal expects all elements of std >= 0.0")
        template = _op("aten::add", mean, std)  # the broadcast shape and the float dtype of the samples
        return mean + std * randn(tuple(template.shape), generator=generator, dtype=template.dtype)
    if size is None:
        raise OpTypeError("normal() received an invalid combination of arguments - got (float, float): with "
                          "numbers for mean and std, give a size")
    if std < 0:
        raise OpRuntimeError(f"normal expects std >= 0.0, but found std {std}")
    out = randn(size, generator=generator, dtype=dtype, device=device) * std + mean
    return out.requires_grad_() if requires_grad else out


def _where_method(self: Tensor, condition: Tensor, other) -> Tensor:
    """`x.where(condition, y)` is `where(condition, x, y)`."""
    return _op("aten::where", condition, self, other)


# PyTorch's alias -> the op it names (the in-place alias `name_` runs `op_` where that exists).
ALIASES = {"multiply": "mul", "subtract": "sub", "divide": "div", "true_divide": "div", "less": "lt",
           "less_equal": "le", "greater": "gt", "greater_equal": "ge", "not_equal": "ne", "absolute": "abs",
           "negative": "neg", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "clip": "clamp",
           "fix": "trunc"}


def _alias(alias: str, op_name: str):
    op = OPS[op_name]

    def fn(*args, **kwargs):
        return dispatch(op, args, kwargs or None)
    fn.__name__ = fn.__qualname__ = alias
    fn.__doc__ = f"Alias of `{op_name.split('::')[1]}`."
    return fn


def _aliases() -> dict:
    out = {}
    for alias, target in ALIASES.items():
        out[alias] = _alias(alias, f"aten::{target}")
        if f"aten::{target}_" in OPS:
            out[alias + "_"] = _alias(alias + "_", f"aten::{target}_")
    return out


CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}

_ALIASES = _aliases()
FUNCTIONS: dict = {"square": square, "square_": square_, "addcmul": addcmul, "addcdiv": addcdiv, "trace": trace,
                   "scalar_tensor": scalar_tensor, "dist": dist, "clamp_min": clamp_min, "clamp_max": clamp_max,
                   "clamp_min_": clamp_min_, "clamp_max_": clamp_max_, "index_add": index_add, "trapezoid": trapezoid,
                   "cdist": cdist, "normal": normal, **CONSTANTS,
                   **{k: v for k, v in _ALIASES.items() if not k.endswith("_")}}
METHODS: dict = {"square": square, "square_": square_, "addcmul": addcmul, "addcmul_": addcmul_,
                 "addcdiv": addcdiv, "addcdiv_": addcdiv_, "trace": trace, "dist": dist, "clamp_min": clamp_min,
                 "clamp_max": clamp_max, "clamp_min_": clamp_min_, "clamp_max_": clamp_max_,
                 "index_add": index_add, "index_add_": index_add_, "where": _where_method, **_ALIASES}
