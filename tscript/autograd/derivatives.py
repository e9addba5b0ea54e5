"""THE derivative table: op name -> backward formula, written with tscript tensor ops (never raw
numpy), so the same formula runs eagerly and can be recorded into IR for compiled backward passes.

A formula is `f(grad, <names>)`: `grad` is the output's gradient (a tuple for multi-output ops) and
each further parameter names what it reads: a schema argument (`self`, `other`, `dim`, ...), the
op's `result`, or `<arg>_shape` for just an input's shape (saving no tensor, so in-place changes of
that input stay legal). A parameter `needs_input_grad` receives one bool per Tensor argument, as
PyTorch's `ctx.needs_input_grad`, so a formula can skip gradients nobody wants. It returns one
gradient per Tensor argument of the schema, in order (a list for a Tensor[] argument; None for no
gradient). Gradients are summed to the input's shape and cast to its dtype by the engine, so
formulas may return broadcast results.

`save_if={"self": ("other",)}` saves `self` only when `other` needs a gradient (the formula then
gets None for it), as PyTorch does: less memory, and in-place changes of `self` stay legal.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Callable

from tscript_runtime.ops import OPS


@dataclass(frozen=True)
class Derivative:
    formula: Callable
    needs: tuple              # names the formula reads (schema args, "result", "<arg>_shape")
    save_if: dict             # name -> Tensor arguments of which one must need a gradient to save it
    wants_mask: bool = False  # the formula takes `needs_input_grad`


DERIVATIVES: dict[str, Derivative] = {}

# Ops whose outputs never carry gradients (comparisons, integer results, fresh values).
NOT_DIFFERENTIABLE = {
    f"aten::{n}" for n in (
        "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
        "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_and_", "bitwise_or_",
        "bitwise_xor_", "bitwise_not_", "detach", "zeros_like", "ones_like", "empty_like", "full_like",
        "size")}


def derivative(*names: str, save_if: dict | None = None):
    """Register the decorated formula for the ops `names`."""
    def deco(fn):
        params = list(inspect.signature(fn).parameters)[1:]
        needs = tuple(p for p in params if p != "needs_input_grad")
        for name in names:
            assert name in OPS, f"derivative for unknown op {name}"
            DERIVATIVES[name] = Derivative(fn, needs, save_if or {}, "needs_input_grad" in params)
        return fn
    return deco


def _matmul_name(args, result) -> str:
    dims = (args[0].dim(), args[1].dim())
    names = {(2, 2): "MmBackward0", (2, 1): "MvBackward0", (1, 1): "DotBackward0", (1, 2): "SqueezeBackward4"}
    return names.get(dims, "UnsafeViewBackward0")


def _numbered(stem: str, pick) -> Callable:
    return lambda args, result: f"{stem}Backward{pick(args)}"


def _reshape_name(args, result) -> str:
    return "ViewBackward0" if result._base is not None else "UnsafeViewBackward0"


# PyTorch names some nodes after the overload called (x.sum(1) -> SumBackward1) or after the op a call
# decomposes into (2-D matmul -> MmBackward0): these rules give that name from the call's arguments
# and result. Other nodes are named after the op ("aten::log_softmax" -> LogSoftmaxBackward0).
NODE_NAMES: dict[str, Callable] = {
    "aten::matmul": _matmul_name,
    "aten::sum": _numbered("Sum", lambda a: int(a[1] is not None)),
    "aten::mean": _numbered("Mean", lambda a: int(a[1] is not None)),
    "aten::prod": _numbered("Prod", lambda a: int(a[1] is not None)),
    "aten::clamp": _numbered("Clamp", lambda a: int(not (_is_tensor(a[1]) or _is_tensor(a[2])))),
    "aten::pow": _numbered("Pow", lambda a: 2 if not _is_tensor(a[0]) else int(_is_tensor(a[1]))),
    "aten::max": lambda args, result: "MaxBackward1",
    "aten::min": lambda args, result: "MinBackward1",
    "aten::reshape": _reshape_name,
    "aten::flatten": _reshape_name,
    "aten::narrow": lambda args, result: "SliceBackward0",
    "aten::chunk": lambda args, result: "SplitBackward0",
    "aten::norm": lambda args, result: "LinalgVectorNormBackward0",
    "aten::to": lambda args, result: "ToCopyBackward0",
    "aten::squeeze": _numbered("Squeeze", lambda a: 0 if a[1] is None else 1 if isinstance(a[1], int)
                               or len(a[1]) == 1 else 2),
    "aten::scatter": _numbered("Scatter", lambda a: int(not _is_tensor(a[3]))),
    "aten::sub": lambda args, result: "SubBackward0" if _is_tensor(args[0]) else "RsubBackward1",
    "aten::rsub": _numbered("Rsub", lambda a: int(not _is_tensor(a[1]))),
}


def call(name: str, *args, **kwargs):
    """Run op `name` through the dispatcher (for formulas needing ops without a Tensor method)."""
    from .._dispatch import dispatch
    return dispatch(OPS[name], args, kwargs or None)


def _zeros(shape, like):
    return call("aten::zeros", tuple(shape), dtype=like.dtype)


def _is_tensor(x) -> bool:
    return hasattr(x, "_data")


# -- arithmetic -----------------------------------------------------------------------------------

@derivative("aten::add")
def _add(grad, alpha):
    return grad, grad if alpha == 1 else grad * alpha


@derivative("aten::sub")
def _sub(grad, alpha):
    return grad, -grad if alpha == 1 else grad * -alpha


@derivative("aten::rsub")
def _rsub(grad, alpha):
    return -grad if alpha == 1 else grad * -alpha, grad


def _conj(x):
    """The complex conjugate of a complex tensor or number (complex gradients multiply by conjugates);
    anything real as it is, so real formulas record no extra op."""
    if _is_tensor(x):
        return x.conj() if x.is_complex() else x
    return x.conjugate() if isinstance(x, complex) else x


@derivative("aten::mul", save_if={"self": ("other",), "other": ("self",)})
def _mul(grad, self, other, needs_input_grad):
    g_self, g_other = needs_input_grad
    return grad * _conj(other) if g_self else None, grad * _conj(self) if g_other else None


@derivative("aten::div", save_if={"self": ("other",)})
def _div(grad, self, other, rounding_mode, needs_input_grad):
    if rounding_mode is not None:
        return None, None
    g_self, g_other = needs_input_grad
    return grad / _conj(other) if g_self else None, -grad * _conj(self) / _conj(other * other) if g_other else None


@derivative("aten::floor_divide")
def _floor_divide(grad):
    return None, None


@derivative("aten::remainder")
def _remainder(grad, self, other):
    return grad, -grad * call("aten::div", self, other, rounding_mode="floor")


def _log(x):
    return x.log() if _is_tensor(x) else math.log(x)


@derivative("aten::pow", save_if={"result": ("exponent",)})
def _pow(grad, self, exponent, result, needs_input_grad):
    wants_self, wants_exponent = needs_input_grad
    g_self = None
    if wants_self:
        g_self = grad * exponent * self ** (exponent - 1)
        if _is_tensor(exponent):
            g_self = call("aten::where", exponent == 0, 0.0, g_self)
        elif exponent == 0:
            g_self = grad * 0
    g_exp = None
    if wants_exponent:
        if _is_tensor(self):  # 0 ** e has zero slope in e for e >= 0; log(1) keeps the masked side finite
            at_zero = (self == 0) & (exponent >= 0)
            g_exp = call("aten::where", at_zero, 0.0, grad * result * call("aten::where", at_zero, 1.0, self).log())
        else:
            g_exp = grad * result * _log(self)
    return g_self, g_exp


def _extremum(grad, self, other, wins):
    half = grad / 2
    g_self = call("aten::where", self == other, half, call("aten::where", wins, grad, 0.0))
    g_other = call("aten::where", self == other, half, call("aten::where", wins, 0.0, grad))
    return g_self, g_other


@derivative("aten::maximum")
def _maximum(grad, self, other):
    return _extremum(grad, self, other, self > other)


@derivative("aten::minimum")
def _minimum(grad, self, other):
    return _extremum(grad, self, other, self < other)


# -- unary ----------------------------------------------------------------------------------------

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)

# Each rule's parameter names say what it reads (`self`: the input, `result`: the output), so only
# that is saved, as in PyTorch (e.g. exp keeps its result, not its input).
UNARY = {
    "exp": lambda grad, result: grad * result,
    "log": lambda grad, self: grad / self,
    "log1p": lambda grad, self: grad / (self + 1),
    "expm1": lambda grad, result: grad * (result + 1),
    "sqrt": lambda grad, result: grad / (2 * result),
    "rsqrt": lambda grad, result: grad * -0.5 * result * result * result,
    "sin": lambda grad, self: grad * self.cos(),
    "cos": lambda grad, self: -grad * self.sin(),
    "tanh": lambda grad, result: grad * (1 - result * result),
    "sigmoid": lambda grad, result: grad * result * (1 - result),
    "erf": lambda grad, self: grad * _TWO_OVER_SQRT_PI * (-(self * self)).exp(),
    "reciprocal": lambda grad, result: -grad * result * result,
    "neg": lambda grad: -grad,
    "abs": lambda grad, self: grad * self.sign(),
    "relu": lambda grad, result: call("aten::where", result > 0, grad, 0.0),
}
ZERO_GRAD = ("sign", "floor", "ceil", "round", "trunc")

for _name, _rule in UNARY.items():
    derivative(f"aten::{_name}")(_rule)
for _name in ZERO_GRAD:
    derivative(f"aten::{_name}")(lambda grad: None)


# -- ternary --------------------------------------------------------------------------------------

@derivative("aten::where")
def _where(grad, condition):
    return None, call("aten::where", condition, grad, 0.0), call("aten::where", condition, 0.0, grad)


@derivative("aten::clamp")
def _clamp(grad, self, min, max):
    inside = None
    if min is not None:
        inside = self >= min
    if max is not None:
        inside = (self <= max) if inside is None else inside & (self <= max)
    g_min = call("aten::where", self < min, grad, 0.0) if _is_tensor(min) else None
    g_max = call("aten::where", self > max, grad, 0.0) if _is_tensor(max) else None
    return call("aten::where", inside, grad, 0.0), g_min, g_max


@derivative("aten::lerp")
def _lerp(grad, self, end, weight):
    return grad * (1 - weight), grad * weight, grad * (end - self) if _is_tensor(weight) else None


# -- movement -------------------------------------------------------------------------------------

@derivative("aten::view", "aten::reshape", "aten::flatten", "aten::squeeze", "aten::unsqueeze")
def _reshape(grad, self_shape):
    return grad.reshape(self_shape)


@derivative("aten::permute")
def _permute(grad, dims):
    dims = [d % grad.dim() for d in dims] if isinstance(dims, (list, tuple)) else [dims % grad.dim()]
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return grad.permute(inverse)


@derivative("aten::transpose")
def _transpose(grad, dim0, dim1):
    return grad.transpose(dim0, dim1)


@derivative("aten::t")
def _t(grad):
    return grad.t()


@derivative("aten::expand", "aten::contiguous", "aten::clone", "aten::to")
def _identity(grad):
    return grad  # expand: the engine sums the gradient back to the input's shape


@derivative("aten::narrow")
def _narrow(grad, self_shape, dim, start, length):
    start = start % self_shape[dim] if start < 0 else start
    return call("aten::slice_scatter", _zeros(self_shape, grad), grad, dim, start, start + length, 1)


@derivative("aten::slice")
def _slice(grad, self_shape, dim, start, end, step):
    return call("aten::slice_scatter", _zeros(self_shape, grad), grad, dim, start, end, step)


@derivative("aten::select")
def _select(grad, self_shape, dim, index):
    return call("aten::select_scatter", _zeros(self_shape, grad), grad, dim, index)


@derivative("aten::slice_scatter")
def _slice_scatter(grad, src, dim, start, end, step):
    return (call("aten::slice_scatter", grad, call("aten::zeros_like", src), dim, start, end, step),
            grad.slice(dim, start, end, step))


@derivative("aten::select_scatter")
def _select_scatter(grad, src, dim, index):
    return call("aten::select_scatter", grad, call("aten::zeros_like", src), dim, index), grad.select(dim, index)


@derivative("aten::unbind")
def _unbind(grad, dim):
    return call("aten::stack", list(grad), dim)


@derivative("aten::split", "aten::chunk")
def _split(grad, dim):
    return call("aten::cat", list(grad), dim)


@derivative("aten::repeat")
def _repeat(grad, self_shape, repeats):
    repeats = tuple(repeats) if isinstance(repeats, (list, tuple)) else (repeats,)
    shape = (1,) * (len(repeats) - len(self_shape)) + tuple(self_shape)
    split = [x for r, s in zip(repeats, shape) for x in (r, s)]
    summed = grad.reshape(split).sum(dim=tuple(range(0, len(split), 2)))
    return summed.reshape(self_shape)


@derivative("aten::flip")
def _flip(grad, dims):
    return grad.flip(dims)


@derivative("aten::tril")
def _tril(grad, diagonal):
    return grad.tril(diagonal)


@derivative("aten::triu")
def _triu(grad, diagonal):
    return grad.triu(diagonal)


# -- in-place fills: the old value is overwritten, so it gets no gradient ---------------------------

@derivative("aten::zero_", "aten::uniform_", "aten::normal_", "aten::bernoulli_")
def _overwritten(grad):
    return None


@derivative("aten::fill_")
def _fill(grad):
    return None, grad.sum()


@derivative("aten::copy_")
def _copy(grad):
    return None, grad


# -- reductions -----------------------------------------------------------------------------------

NOT_DIFFERENTIABLE |= {f"aten::{n}" for n in ("argmax", "argmin", "all", "any", "count_nonzero", "argsort",
                                              "unique", "nonzero", "nonzero_numpy")}
# Tensors read as Python values by scripted code (tscript_runtime/ops/scalar.py).
NOT_DIFFERENTIABLE |= {f"aten::{n}" for n in ("Int.Tensor", "Float.Tensor", "Bool.Tensor", "item", "numel", "size.all",
                                              "is_floating_point", "is_complex")}


def _dims(dim, ndim: int) -> tuple:
    """Reduced dims, non-negative and sorted (None or [] means all, as for sum)."""
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return tuple(range(ndim))
    dims = dim if isinstance(dim, (list, tuple)) else (dim,)
    return tuple(sorted(d % ndim for d in dims)) if ndim else ()


def _unreduce(grad, shape, dim, keepdim: bool):
    """A reduction's gradient broadcast back over the input's shape."""
    if not keepdim and grad.dim():  # (a 0-d gradient of a full reduction expands as it is)
        for d in _dims(dim, len(shape)):
            grad = grad.unsqueeze(d)
    return grad.expand(shape)


def _count(shape, dim) -> int:
    n = 1
    for d in _dims(dim, len(shape)):
        n *= shape[d]
    return n


@derivative("aten::sum")
def _sum(grad, self_shape, dim, keepdim):
    return _unreduce(grad, self_shape, dim, keepdim)


@derivative("aten::mean")
def _mean(grad, self_shape, dim, keepdim):
    return _unreduce(grad, self_shape, dim, keepdim) / max(_count(self_shape, dim), 1)


@derivative("aten::prod")
def _prod(grad, self, dim, keepdim, result):
    shape = tuple(self.shape)
    full = dim is None
    g, r = _unreduce(grad, shape, dim, keepdim or full), _unreduce(result, shape, dim, keepdim or full)
    is_zero = self == 0
    nonzero = call("aten::where", is_zero, 1.0, self)
    if full:
        others, zeros = nonzero.prod(), is_zero.sum()
    else:
        others, zeros = nonzero.prod(dim, keepdim=True), is_zero.sum(dim, keepdim=True)
    others, zeros = others.expand(shape), zeros.expand(shape)
    # a zero's gradient is the product of the others when it is the only zero, else 0
    at_zero = call("aten::where", zeros == 1, others, 0.0)
    return g * call("aten::where", is_zero, at_zero, r / nonzero)


@derivative("aten::cumsum")
def _cumsum(grad, dim):
    return grad.flip(dim).cumsum(dim).flip(dim)


def _var_grad(grad, self, dim, correction, keepdim):
    n = _count(tuple(self.shape), dim)
    correction = 1 if correction is None else correction
    centered = self - self.mean(dim=_dims(dim, self.dim()), keepdim=True)
    return _unreduce(grad, tuple(self.shape), dim, keepdim) * centered * (2 / max(n - correction, 0))


@derivative("aten::var")
def _var(grad, self, dim, correction, keepdim):
    return _var_grad(grad, self, dim, correction, keepdim)


@derivative("aten::std")
def _std(grad, self, dim, correction, keepdim, result):
    return _var_grad(grad / (2 * result), self, dim, correction, keepdim)


def _evenly(grad, self, result, dim, keepdim):
    """Gradient of max/min/amax/amin: split evenly between the tied extreme values."""
    shape = tuple(self.shape)
    mask = (self == _unreduce(result, shape, dim, keepdim)).to(grad.dtype)
    count = mask.sum(dim=_dims(dim, len(shape)), keepdim=True)
    return _unreduce(grad, shape, dim, keepdim) * mask / count


@derivative("aten::max", "aten::min")
def _max_all(grad, self, result):
    return _evenly(grad, self, result, None, False)


@derivative("aten::amax", "aten::amin")
def _amax(grad, self, dim, keepdim, result):
    return _evenly(grad, self, result, dim, keepdim)


def _scatter_back(grad, self_shape, dim, indices, keepdim):
    """Gradient of ops that pick elements by index along `dim` (max.dim, sort, topk)."""
    if not keepdim:
        grad, indices = grad.unsqueeze(dim), indices.unsqueeze(dim)
    return call("aten::scatter", _zeros(self_shape, grad), dim, indices, grad)


@derivative("aten::max.dim", "aten::min.dim")
def _max_dim(grad, self_shape, dim, keepdim, result):
    return _scatter_back(grad[0], self_shape, dim, result[1], keepdim)


@derivative("aten::sort")
def _sort(grad, self_shape, dim, result):
    return _scatter_back(grad[0], self_shape, dim, result[1], True)


@derivative("aten::topk")
def _topk(grad, self_shape, dim, result):
    return _scatter_back(grad[0], self_shape, dim, result[1], True)


@derivative("aten::logsumexp")
def _logsumexp(grad, self, dim, keepdim, result):
    shape = tuple(self.shape)
    return _unreduce(grad, shape, dim, keepdim) * (self - _unreduce(result, shape, dim, keepdim)).exp()


@derivative("aten::norm")
def _norm(grad, self, p, dim, keepdim, result):
    shape = tuple(self.shape)
    g, r = _unreduce(grad, shape, dim, keepdim), _unreduce(result, shape, dim, keepdim)
    p = 2 if p is None or p == "fro" else p
    if p == 0:
        return None
    if p == 1:
        return g * self.sign()
    if p == math.inf or p == -math.inf:
        mask = (self.abs() == r).to(g.dtype)
        return g * self.sign() * mask / mask.sum(dim=_dims(dim, len(shape)), keepdim=True)
    scaled = self * self.abs() ** (p - 2) if p != 2 else self
    return call("aten::where", r == 0, 0.0, g * scaled / r ** (p - 1))


@derivative("aten::softmax")
def _softmax(grad, dim, result):
    return result * (grad - (grad * result).sum(dim=dim, keepdim=True))


@derivative("aten::log_softmax")
def _log_softmax(grad, dim, result):
    return grad - result.exp() * grad.sum(dim=dim, keepdim=True)


# -- indexing and joining ---------------------------------------------------------------------------

@derivative("aten::alias")
def _alias(grad):
    return grad


@derivative("aten::index")
def _index(grad, self_shape, indices):
    return call("aten::index_put", _zeros(self_shape, grad), indices, grad, True), [None] * len(indices)


@derivative("aten::index_put")
def _index_put(grad, indices, accumulate):
    g_self = grad if accumulate else call("aten::index_put", grad, indices, _zeros((), grad), False)
    return g_self, [None] * len(indices), call("aten::index", grad, indices)


@derivative("aten::gather")
def _gather(grad, self_shape, dim, index):
    return call("aten::scatter_add", _zeros(self_shape, grad), dim, index, grad), None


def _pad_to(grad, shape):
    """Zero-pad `grad` at the end of each dim up to `shape` (src may be larger than index)."""
    for d, (have, want) in enumerate(zip(grad.shape, shape)):
        if have < want:
            pad_shape = tuple(grad.shape[:d]) + (want - have,) + tuple(grad.shape[d + 1:])
            grad = call("aten::cat", [grad, _zeros(pad_shape, grad)], d)
    return grad


@derivative("aten::scatter")
def _scatter(grad, dim, index, src, reduce):
    if reduce is not None:
        raise RuntimeError(f"the derivative for 'scatter' with reduce='{reduce}' is not implemented")
    g_src = _pad_to(grad.gather(dim, index), src.shape) if _is_tensor(src) else None
    return call("aten::scatter", grad, dim, index, 0.0), None, g_src


@derivative("aten::scatter_add")
def _scatter_add(grad, dim, index, src):
    return grad, None, _pad_to(grad.gather(dim, index), src.shape)


@derivative("aten::index_select")
def _index_select(grad, self_shape, dim, index):
    dim = dim % len(self_shape)
    return call("aten::index_put", _zeros(self_shape, grad), [None] * dim + [index], grad, True), None


@derivative("aten::masked_fill")
def _masked_fill(grad, mask, value):
    g_value = call("aten::where", mask, grad, 0.0).sum() if _is_tensor(value) else None
    return call("aten::where", mask, 0.0, grad), None, g_value


@derivative("aten::cat")
def _cat(grad, tensors, dim):
    live = [t for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)]  # PyTorch skips legacy empty 1-D
    pieces = iter(grad.split([t.shape[dim] for t in live], dim))
    return [[None if (t.dim() == 1 and t.shape[0] == 0) else next(pieces) for t in tensors]]


@derivative("aten::stack")
def _stack(grad, dim):
    return [list(grad.unbind(dim))]


# -- linear algebra ---------------------------------------------------------------------------------

def _matmul_grads(grad, a, b):
    """(lambda for a's gradient, lambda for b's): only the wanted one is computed."""
    if a.dim() == 1 and b.dim() == 1:
        return lambda: grad * b, lambda: grad * a
    if a.dim() == 1:
        return lambda: (grad.unsqueeze(-2) @ b.mT).squeeze(-2), lambda: a.unsqueeze(-1) @ grad.unsqueeze(-2)
    if b.dim() == 1:
        return lambda: grad.unsqueeze(-1) @ b.unsqueeze(0), lambda: (a.mT @ grad.unsqueeze(-1)).squeeze(-1)
    return lambda: grad @ b.mT, lambda: a.mT @ grad


def _wanted(makers, needs_input_grad) -> tuple:
    return tuple(make() if wanted else None for make, wanted in zip(makers, needs_input_grad))


@derivative("aten::matmul")
def _matmul(grad, self, other, needs_input_grad):
    return _wanted(_matmul_grads(grad, self, other), needs_input_grad)


@derivative("aten::mm")
def _mm(grad, self, mat2, needs_input_grad):
    return _wanted((lambda: grad @ mat2.t(), lambda: self.t() @ grad), needs_input_grad)


@derivative("aten::bmm")
def _bmm(grad, self, mat2, needs_input_grad):
    return _wanted((lambda: grad.bmm(mat2.transpose(1, 2)), lambda: self.transpose(1, 2).bmm(grad)),
                   needs_input_grad)


@derivative("aten::dot")
def _dot(grad, self, tensor):
    return grad * tensor, grad * self


@derivative("aten::mv")
def _mv(grad, self, vec, needs_input_grad):
    return _wanted((lambda: call("aten::outer", grad, vec), lambda: self.t() @ grad), needs_input_grad)


@derivative("aten::outer")
def _outer(grad, self, vec2):
    return (grad * vec2).sum(dim=1), (self.unsqueeze(1) * grad).sum(dim=0)


@derivative("aten::addmm")
def _addmm(grad, mat1, mat2, beta, alpha, needs_input_grad):
    return _wanted((lambda: grad * beta, lambda: (grad @ mat2.t()) * alpha, lambda: (mat1.t() @ grad) * alpha),
                   needs_input_grad)


@derivative("aten::einsum")
def _einsum(grad, equation, tensors):
    from tscript_runtime.ops.linalg import explicit_equation
    lhs, rhs = explicit_equation(equation, [t._data for t in tensors]).split("->")
    terms = lhs.split(",")
    grads = []
    for i, (term, t) in enumerate(zip(terms, tensors)):
        if len(set(term)) != len(term):
            raise RuntimeError(f"einsum backward: repeated subscripts in operand '{term}' are not supported")
        others = [terms[j] for j in range(len(terms)) if j != i]
        present = set(rhs).union(*others)
        kept = "".join(c for c in term if c in present)
        g = call("aten::einsum", f"{','.join([rhs] + others)}->{kept}",
                 [grad] + [tensors[j] for j in range(len(terms)) if j != i])
        for pos, c in enumerate(term):  # letters summed only inside this operand: broadcast back
            if c not in present:
                g = g.unsqueeze(pos)
        grads.append(g.expand(t.shape))
    return [grads]


@derivative("aten::linear")
def _linear(grad, input, weight, bias):
    rows = grad.reshape(-1, grad.shape[-1])
    g_weight = rows.t() @ input.reshape(-1, input.shape[-1])
    return grad @ weight, g_weight, rows.sum(dim=0) if bias is not None else None


from . import derivatives_conv, derivatives_nn  # noqa: E402,F401  (rows of further op families)
from . import derivatives_extra  # noqa: E402,F401
from . import derivatives_padding, derivatives_windows  # noqa: E402,F401
from . import derivatives_conv_nd, derivatives_sampling  # noqa: E402,F401
from . import derivatives_complex, derivatives_recurrent  # noqa: E402,F401
