"""Linear algebra ops: the matmul family (`matmul`, `mm`, `bmm`, `dot`, `mv`, `outer`, `addmm`) and
`einsum`, with PyTorch's shape rules, dtype rules and error messages.

Unlike elementwise ops, PyTorch does not promote the operands of a matrix product: both must have
the same dtype (integers work, bool does not). Kernels call numpy's BLAS-backed `matmul`, so a
float32 product is computed and returned in float32.
"""
import math
import string

import numpy as np

from .. import dtypes as dt
from ..errors import OpRuntimeError, OpValueError, fmt_shape
from . import accelerated
from ._cast import as_array, cast
from .registry import register
from .rules import broadcast_shapes, numel, promoted

_CPP_NAMES = dt.C_NAMES  # PyTorch's "expected m1 and m2 to have the same dtype, but got: float != double"


def _known(*sizes) -> bool:
    """All sizes are concrete ints (symbolic dims are assumed to agree at compile time)."""
    return all(isinstance(s, int) for s in sizes)


def _folded(dims) -> str:
    """The product of `dims` as PyTorch prints a folded batch size (symbols are kept as `a*b`)."""
    return str(numel(dims)) if _known(*dims) else "*".join(str(d) for d in dims)


# -- dtype rules ------------------------------------------------------------------------------------

def _not_bool(op: str, dtype) -> None:
    if dtype == dt.bool_:
        raise OpRuntimeError(f"{op}: \"{op}\" not implemented for 'Bool'")


def _mm_dtype_of(op: str, a, b):
    if a.dtype != b.dtype:
        raise OpRuntimeError(f"{op}: expected m1 and m2 to have the same dtype, but got: "
                             f"{_CPP_NAMES[a.dtype]} != {_CPP_NAMES[b.dtype]}")
    _not_bool(op, a.dtype)
    return a.dtype


def _vectors_dtype_of(op: str, a, b):
    if a.dtype != b.dtype:
        raise OpRuntimeError(f"{op}: expected both vectors to have same dtype, but found "
                             f"{dt.TORCH_NAMES[a.dtype]} and {dt.TORCH_NAMES[b.dtype]}")
    _not_bool(op, a.dtype)
    return a.dtype


def _matmul_dtype(self, other):
    if self.ndim == 1 and other.ndim == 1:
        return _vectors_dtype_of("matmul", self, other)
    return _mm_dtype_of("matmul", self, other)


def _mv_dtype(self, vec):
    if self.dtype != vec.dtype:
        raise OpRuntimeError(f"mv: expected the matrix and the vector to have the same dtype, but got "
                             f"{dt.TORCH_NAMES[self.dtype]} and {dt.TORCH_NAMES[vec.dtype]}")
    _not_bool("mv", self.dtype)
    return self.dtype


def _bmm_dtype(self, mat2):
    if self.dtype != mat2.dtype:
        raise OpRuntimeError(f"bmm: expected scalar type {dt.TORCH_NAMES[self.dtype]} but found "
                             f"{dt.TORCH_NAMES[mat2.dtype]}")
    _not_bool("bmm", self.dtype)
    return self.dtype


def _addmm_dtype(self, mat1, mat2, beta=1, alpha=1):
    for name, x in (("mat1", mat1), ("self", self)):
        if x.dtype != mat2.dtype:
            raise OpRuntimeError(f"addmm: {name} and mat2 must have the same dtype, but got "
                                 f"{dt.TORCH_NAMES[x.dtype]} and {dt.TORCH_NAMES[mat2.dtype]}")
    _not_bool("addmm", self.dtype)
    return self.dtype


# -- shape rules ------------------------------------------------------------------------------------

def _dot_sizes(op: str, n, m) -> None:
    if _known(n, m) and n != m:
        raise OpRuntimeError(f"{op}: inconsistent tensor size, expected tensor [{n}] and src [{m}] to have "
                             f"the same number of elements, but got {n} and {m} elements respectively")


def _mm_sizes(op: str, rows, k, k2, cols) -> None:
    if _known(k, k2) and k != k2:
        raise OpRuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied ({rows}x{k} and {k2}x{cols})")


def _mv_sizes(op: str, rows, k, k2) -> None:
    if _known(k, k2) and k != k2:
        raise OpRuntimeError(f"{op}: size mismatch, got input ({rows}), mat ({rows}x{k}), vec ({k2})")


def _bmm_sizes(op: str, batch, k, k2) -> None:
    if _known(k, k2) and k != k2:
        raise OpRuntimeError(f"{op}: Expected size for first two dimensions of batch2 tensor to be: "
                             f"[{batch}, {k}] but got: [{batch}, {k2}].")


def _matmul_shape(self, other):
    """PyTorch's matmul: 1-D operands get a dim prepended (left) or appended (right) that is removed
    from the result; leading (batch) dims broadcast. Errors are worded as for the op PyTorch
    reduces each case to (dot, mv, mm or bmm)."""
    a, b = tuple(self.shape), tuple(other.shape)
    if not a or not b:
        raise OpRuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                             f"{len(a)}D and {len(b)}D")
    if len(a) == 1 and len(b) == 1:
        _dot_sizes("matmul", a[0], b[0])
        return ()
    if len(b) == 1:
        _mv_sizes("matmul", _folded(a[:-1]), a[-1], b[0])
        return a[:-1]
    if len(b) == 2 and len(a) <= 2:
        rows = a[0] if len(a) == 2 else 1
        _mm_sizes("matmul", rows, a[-1], b[0], b[1])
        return a[:-1] + b[1:]
    if len(b) == 2:
        _mm_sizes("matmul", _folded(a[:-1]), a[-1], b[0], b[1])
        return a[:-1] + b[1:]
    batch = broadcast_shapes(a[:-2], b[:-2])
    _bmm_sizes("matmul", _folded(batch), a[-1], b[-2])
    return batch + a[-2:-1] + b[-1:]


def _require_ndim(op: str, x, name: str, ndim: int, what: str) -> None:
    if x.ndim != ndim:
        raise OpRuntimeError(f"{op}: {name} must be {what}, got {x.ndim}-D tensor")


def _mm_shape(self, mat2):
    _require_ndim("mm", self, "self", 2, "a matrix")
    _require_ndim("mm", mat2, "mat2", 2, "a matrix")
    _mm_sizes("mm", self.shape[0], self.shape[1], mat2.shape[0], mat2.shape[1])
    return (self.shape[0], mat2.shape[1])


def _bmm_shape(self, mat2):
    _require_ndim("bmm", self, "batch1", 3, "a 3D tensor")
    _require_ndim("bmm", mat2, "batch2", 3, "a 3D tensor")
    (n, rows, k), (n2, k2, cols) = self.shape, mat2.shape
    if _known(n, n2) and n != n2 or _known(k, k2) and k != k2:
        raise OpRuntimeError(f"bmm: Expected size for first two dimensions of batch2 tensor to be: "
                             f"[{n}, {k}] but got: [{n2}, {k2}].")
    return (n, rows, cols)


def _dot_shape(self, tensor):
    if self.ndim != 1 or tensor.ndim != 1:
        raise OpRuntimeError(f"dot: 1D tensors expected, but got {self.ndim}D and {tensor.ndim}D tensors")
    _dot_sizes("dot", self.shape[0], tensor.shape[0])
    return ()


def _mv_shape(self, vec):
    if self.ndim != 2 or vec.ndim != 1:
        raise OpRuntimeError(f"mv: expected a matrix (2-D) and a vector (1-D), but got {self.ndim}-D and "
                             f"{vec.ndim}-D tensors")
    _mv_sizes("mv", self.shape[0], self.shape[1], vec.shape[0])
    return self.shape[:1]


def _outer_shape(self, vec2):
    for name, x in (("self", self), ("vec2", vec2)):
        if x.ndim != 1:
            raise OpRuntimeError(f"outer: Expected 1-D argument {name}, but got {x.ndim}-D")
    return (self.shape[0], vec2.shape[0])


def _addmm_shape(self, mat1, mat2, beta=1, alpha=1):
    """`self` must expand to the (n, m) product, as PyTorch's `expand` checks it."""
    _require_ndim("addmm", mat1, "mat1", 2, "a matrix")
    _require_ndim("addmm", mat2, "mat2", 2, "a matrix")
    _mm_sizes("addmm", mat1.shape[0], mat1.shape[1], mat2.shape[0], mat2.shape[1])
    out = (mat1.shape[0], mat2.shape[1])
    if self.ndim > 2:
        raise OpRuntimeError(f"addmm: the number of sizes provided (2) must be greater or equal to the "
                             f"number of dimensions in the tensor ({self.ndim})")
    for i, s in enumerate(self.shape, start=2 - self.ndim):
        if s != 1 and _known(s, out[i]) and s != out[i]:
            raise OpRuntimeError(f"addmm: The expanded size of the tensor ({out[i]}) must match the existing "
                                 f"size ({s}) at non-singleton dimension {i}.  Target sizes: "
                                 f"{fmt_shape(out)}.  Tensor sizes: {fmt_shape(self.shape)}")
    return out


# -- kernels ----------------------------------------------------------------------------------------
# Each kernel runs its rules first: numpy would silently promote mixed dtypes, multiply bools and
# broadcast bmm's batch dim, all of which PyTorch refuses.

@register("aten::matmul(Tensor self, Tensor other) -> Tensor", shape=_matmul_shape, dtype=_matmul_dtype)
def matmul(self, other):
    _matmul_dtype(self, other)
    _matmul_shape(self, other)
    fast = accelerated.call("matmul", self, other)
    if fast is not None:
        return fast
    if self.ndim > 2 and other.ndim == 2:  # one 2-d GEMM over the flattened leading dims, not a stack
        return _flat_product(self, other)
    return as_array(np.matmul(self, other))


def _flat_product(x: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """x (..., K) @ matrix (K, N) as one 2-d product (x copied once when its rows do not flatten)."""
    rows = np.reshape(x, (math.prod(x.shape[:-1]), x.shape[-1]))
    return (rows @ matrix).reshape(x.shape[:-1] + (matrix.shape[1],))


@register("aten::mm(Tensor self, Tensor mat2) -> Tensor", shape=_mm_shape,
          dtype=lambda self, mat2: _mm_dtype_of("mm", self, mat2))
def mm(self, mat2):
    _mm_dtype_of("mm", self, mat2)
    _mm_shape(self, mat2)
    return product(self, mat2)


@register("aten::bmm(Tensor self, Tensor mat2) -> Tensor", shape=_bmm_shape, dtype=_bmm_dtype)
def bmm(self, mat2):
    _bmm_dtype(self, mat2)
    _bmm_shape(self, mat2)
    return product(self, mat2)


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b, on the kernel library when it covers the case (ops/accelerated.py), else numpy."""
    fast = accelerated.call("matmul", a, b)
    return np.matmul(a, b) if fast is None else fast


@register("aten::dot(Tensor self, Tensor tensor) -> Tensor", shape=_dot_shape,
          dtype=lambda self, tensor: _vectors_dtype_of("dot", self, tensor))
def dot(self, tensor):
    _vectors_dtype_of("dot", self, tensor)
    _dot_shape(self, tensor)
    return as_array(np.dot(self, tensor))


@register("aten::mv(Tensor self, Tensor vec) -> Tensor", shape=_mv_shape, dtype=_mv_dtype)
def mv(self, vec):
    _mv_dtype(self, vec)
    _mv_shape(self, vec)
    return np.matmul(self, vec)


@register("aten::outer(Tensor self, Tensor vec2) -> Tensor", shape=_outer_shape, dtype=promoted)
def outer(self, vec2):
    """The outer product; unlike the matrix products it promotes mixed dtypes (it is a `mul`)."""
    _outer_shape(self, vec2)
    out = promoted(self, vec2)
    return np.multiply.outer(cast(self, out), cast(vec2, out))


@register("aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
          shape=_addmm_shape, dtype=_addmm_dtype, inplace=True)
def addmm(self, mat1, mat2, beta=1, alpha=1):
    """`beta * self + alpha * (mat1 @ mat2)`. As with BLAS, a zero beta ignores `self` (NaNs in it do
    not propagate) and a zero alpha ignores the product; integer tensors truncate beta and alpha."""
    out = _addmm_dtype(self, mat1, mat2)
    shape = _addmm_shape(self, mat1, mat2)
    beta, alpha = cast(beta, out), cast(alpha, out)
    if alpha == 0:
        product = np.zeros(shape, out)
    else:
        product = np.matmul(mat1, mat2)
        if alpha != 1:
            product *= alpha
    if beta == 0:
        return product
    return as_array(product + (self if beta == 1 else self * beta), out)


# -- einsum -----------------------------------------------------------------------------------------

class _Equation:
    """A parsed einsum equation: per operand its labels (with "..." for an ellipsis), and the
    output's labels (implicit output: ellipsis, then labels seen once, in alphabetical order)."""

    def __init__(self, equation: str, n_operands: int):
        if n_operands == 0:
            raise OpValueError("einsum(): must specify the equation string and at least one operand")
        text = equation.replace(" ", "")
        lhs, arrow, rhs = text.partition("->")
        self.inputs = [_labels(term, text, f"operand {i}") for i, term in enumerate(lhs.split(","))]
        if len(self.inputs) != n_operands:
            fewer = "fewer" if n_operands < len(self.inputs) else "more"
            raise OpRuntimeError(f"einsum(): {fewer} operands were provided than specified in the equation")
        self.output = _labels(rhs, text, "the output") if arrow else self._implicit_output()
        self._check_output()

    def _implicit_output(self) -> list:
        counts: dict = {}
        for labels in self.inputs:
            for c in labels:
                counts[c] = counts.get(c, 0) + 1
        ellipsis = ["..."] if "..." in counts else []
        return ellipsis + sorted(c for c, n in counts.items() if n == 1 and c != "...")

    def _check_output(self) -> None:
        seen = {c for labels in self.inputs for c in labels}
        for i, c in enumerate(self.output):
            if c not in seen:
                what = "ellipsis" if c == "..." else f"subscript {c}"
                raise OpRuntimeError(f"einsum(): output {what} does not appear in the equation for any input "
                                     f"operand")
            if c in self.output[:i]:
                raise OpRuntimeError(f"einsum(): output subscript {c} appears more than once in the output")

    def summed_alone(self, k: int) -> bool:
        """Does operand k have a label no other operand and not the output has (summed by itself)?"""
        others = {c for j, labels in enumerate(self.inputs) if j != k for c in labels} | set(self.output)
        return any(c not in others for c in self.inputs[k])

    def contracts_shared(self) -> bool:
        """Is a label shared by several operands summed out (a real contraction)?"""
        return any(c not in self.output and sum(c in labels for labels in self.inputs) > 1
                   for labels in self.inputs for c in labels)

    def explicit(self, operands, n_ellipsis: int) -> str:
        """The equation with the ellipsis spelled out as unused letters and an explicit output, so
        numpy sums ellipsis dims missing from the output as PyTorch does."""
        used = {c for labels in self.inputs for c in labels}
        free = [c for c in string.ascii_letters if c not in used]
        if len(free) < n_ellipsis:
            raise OpRuntimeError("einsum(): too many dimensions: ran out of subscript letters for the ellipsis")
        spread = "".join(free[:n_ellipsis])

        def term(labels, ndim):
            n_own = ndim - (len(labels) - 1)  # dims this operand's ellipsis covers (right-aligned)
            return "".join(spread[n_ellipsis - n_own:] if c == "..." else c for c in labels)

        inputs = [term(labels, x.ndim) for labels, x in zip(self.inputs, operands)]
        return ",".join(inputs) + "->" + term(self.output, n_ellipsis + len(self.output) - 1)


def _labels(term: str, text: str, where: str) -> list:
    """The labels of one term; "..." stands for the ellipsis."""
    out, i = [], 0
    while i < len(term):
        if term.startswith("...", i):
            if "..." in out:
                raise OpRuntimeError(f"einsum(): found more than one ellipsis for {where}")
            out.append("...")
            i += 3
            continue
        c = term[i]
        if c == ".":
            raise OpRuntimeError(f"einsum(): found '.' for {where} that is not part of any ellipsis")
        if c not in string.ascii_letters:
            raise OpRuntimeError(f"einsum(): invalid subscript given at index {text.index(c)} in the equation "
                                 f"string, subscripts must be in [a-zA-Z]")
        out.append(c)
        i += 1
    return out


def _label_sizes(eq: _Equation, operands) -> tuple[dict, tuple]:
    """Each label's size (size-1 dims broadcast, as in PyTorch) and the ellipsis' broadcast shape."""
    sizes, ellipses = {}, []
    for k, (labels, x) in enumerate(zip(eq.inputs, operands)):
        shape = tuple(x.shape)
        n_named = len(labels) - ("..." in labels)
        _check_rank(labels, n_named, len(shape), k)
        if "..." in labels:
            at = labels.index("...")
            ellipses.append(shape[at:at + len(shape) - n_named])
            shape = shape[:at] + ("...",) + shape[at + len(shape) - n_named:]
        own: dict = {}
        for c, size in zip(labels, shape):
            if c == "...":
                continue
            if own.setdefault(c, size) != size and _known(own[c], size):
                raise OpRuntimeError(f"einsum(): subscript {c} is repeated for operand {k} but the sizes "
                                     f"don't match, {own[c]} != {size}")
            sizes[c] = _merge_size(sizes.get(c), size, c, k)
    return sizes, _ellipsis_shape(ellipses)


def _check_rank(labels, n_named: int, ndim: int, k: int) -> None:
    if "..." in labels and n_named > ndim:
        raise OpRuntimeError(f"einsum(): the number of subscripts in the equation ({n_named}) is more than "
                             f"the number of dimensions ({ndim}) for operand {k}")
    if "..." not in labels and n_named != ndim:
        raise OpRuntimeError(f"einsum(): the number of subscripts in the equation ({n_named}) does not match "
                             f"the number of dimensions ({ndim}) for operand {k} and no ellipsis was given")


def _merge_size(seen, size, label: str, k: int):
    """A label's size over operands: size 1 broadcasts; symbolic sizes are assumed to agree."""
    if seen is None or seen == 1:
        return size
    if size == 1 or size == seen:
        return seen
    if not _known(seen, size):
        return seen if isinstance(seen, int) else size
    raise OpRuntimeError(f"einsum(): subscript {label} has size {size} for operand {k} which does not "
                         f"broadcast with previously seen size {seen}")


def _ellipsis_shape(ellipses: list) -> tuple:
    try:
        return broadcast_shapes(*ellipses)
    except OpRuntimeError as e:
        raise OpRuntimeError(f"einsum(): the dimensions covered by the ellipsis do not broadcast: {e}") from None


def _output_shape(eq: _Equation, operands) -> tuple:
    sizes, ellipsis = _label_sizes(eq, operands)
    return tuple(d for c in eq.output for d in (ellipsis if c == "..." else (sizes[c],)))


def _output_dtype(eq: _Equation, operands):
    """All operands share one dtype. An operand with a label summed by itself is reduced like `sum`
    (integers and bools to int64), as PyTorch does; bools cannot be contracted with each other."""
    first = operands[0].dtype
    for x in operands[1:]:
        if x.dtype != first:
            raise OpRuntimeError(f"einsum(): expected scalar type {dt.TORCH_NAMES[first]} but found "
                                 f"{dt.TORCH_NAMES[x.dtype]}")
    if first == dt.bool_ and eq.contracts_shared():
        raise OpRuntimeError("einsum(): \"einsum\" not implemented for 'Bool' (contracting bool operands)")
    if not dt.is_float(first) and any(eq.summed_alone(k) for k in range(len(operands))):
        return dt.int64
    return first


@register("aten::einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor",
          shape=lambda equation, tensors, path=None: _output_shape(_Equation(equation, len(tensors)), tensors),
          dtype=lambda equation, tensors, path=None: _output_dtype(_Equation(equation, len(tensors)), tensors))
def einsum(equation, tensors, path=None):
    """Einstein summation via `np.einsum` (which picks a BLAS-backed contraction order); `path`
    (PyTorch's opt_einsum contraction order) is accepted and ignored."""
    eq = _Equation(equation, len(tensors))
    out = _output_dtype(eq, tensors)
    n_ellipsis = len(_label_sizes(eq, tensors)[1])
    operands = [cast(x, out) for x in tensors]
    return as_array(np.einsum(eq.explicit(tensors, n_ellipsis), *operands, optimize=True), out)


def explicit_equation(equation: str, operands) -> str:
    """`equation` with the ellipsis spelled out as letters and an explicit output (for the backward)."""
    eq = _Equation(equation, len(operands))
    return eq.explicit(operands, len(_label_sizes(eq, operands)[1]))


def _linear_shape(input, weight, bias=None):
    if weight.ndim != 2:
        raise OpRuntimeError(f"linear: weight must be 2-D, got {weight.ndim}-D")
    if input.ndim == 0 or (_known(input.shape[-1], weight.shape[1]) and input.shape[-1] != weight.shape[1]):
        rows = "x".join(str(s) for s in input.shape[:-1]) or "1"
        raise OpRuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied ({rows}x"
                             f"{input.shape[-1] if input.ndim else 0} and {weight.shape[1]}x{weight.shape[0]})")
    if bias is not None and tuple(bias.shape) not in ((weight.shape[0],), (), (1,)):
        raise OpRuntimeError(f"linear: bias must have shape [{weight.shape[0]}], got {list(bias.shape)}")
    return tuple(input.shape[:-1]) + (weight.shape[0],)


def _linear_dtype(input, weight, bias=None):
    out = _mm_dtype_of("linear", input, weight)
    if bias is not None and bias.dtype != out:
        raise OpRuntimeError(f"linear: expected bias to have dtype {dt.TORCH_NAMES[out]}, got "
                             f"{dt.TORCH_NAMES[bias.dtype]}")
    return out


@register("aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
          shape=_linear_shape, dtype=_linear_dtype, method_only=True)
def linear(input, weight, bias=None):
    """input @ weight.T + bias: nn.Linear's op (one GEMM; the compiler fuses the bias)."""
    fast = (input.dtype is weight.dtype and weight.ndim == 2 and input.ndim and input.shape[-1] == weight.shape[1]
            and (bias is None or bias.dtype is weight.dtype and bias.shape == weight.shape[:1])
            and weight.dtype.kind == "f")
    if not fast:  # the rules raise PyTorch's messages for anything out of the ordinary
        _linear_shape(input, weight, bias)
        _linear_dtype(input, weight, bias)
    out = accelerated.call("matmul", input, weight.T) if input.ndim >= 2 else None
    if out is None:
        out = _flat_product(input, weight.T) if input.ndim > 2 else np.matmul(input, weight.T)
    if bias is not None:
        out += bias
    return as_array(out)
