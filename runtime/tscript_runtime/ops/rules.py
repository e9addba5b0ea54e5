"""Shape and dtype rules shared by many ops. Rules take the op's bound arguments with tensors as
anything that has `.shape`/`.dtype` (ndarrays eagerly, TensorMetas when compiling; shape entries
may be symbolic strings) and either return the output shape/dtype or raise PyTorch's error."""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import OpIndexError, OpRuntimeError, fmt_shape


def shape_of(x) -> tuple:
    """The shape of a tensor argument; () for a Python scalar."""
    return tuple(getattr(x, "shape", ()))


def broadcast_shapes(*shapes, names="ab") -> tuple:
    """NumPy/PyTorch broadcasting, with PyTorch's message naming the mismatching dimension."""
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for k, s in enumerate(shapes):
        for i, size in enumerate(s):
            j = n - len(s) + i
            cur = out[j]
            if size == 1 or size == cur:
                continue
            if cur == 1:
                out[j] = size
            elif isinstance(size, str) or isinstance(cur, str):
                out[j] = cur if isinstance(size, str) else size  # symbolic: assume they agree
            else:
                a = names[k - 1] if k - 1 < len(names) else "a"
                b = names[k] if k < len(names) else "b"
                raise OpRuntimeError(f"The size of tensor {a} ({cur}) must match the size of tensor "
                                     f"{b} ({size}) at non-singleton dimension {j}")
    return tuple(out)


def broadcast_args(*args) -> tuple:
    """Broadcast shape of all tensor/scalar arguments (scalars have shape ())."""
    return broadcast_shapes(*(shape_of(a) for a in args))


def wrap_dim(dim, ndim: int, op: str | None = None) -> int:
    """A dim in [-ndim, ndim) made non-negative; IndexError with PyTorch's message otherwise.
    A zero-dim tensor accepts dims 0 and -1, as in PyTorch."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise OpIndexError(f"{op + ': ' if op else ''}Dimension out of range (expected to be in range "
                           f"of [{-n}, {n - 1}], but got {dim})")
    return dim % n if ndim else 0


def wrap_dims(dims, ndim: int, op: str | None = None) -> tuple:
    """`dims` (None, an int or a sequence) as a sorted tuple of non-negative dims; None means all."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    out = tuple(sorted(wrap_dim(d, ndim, op) for d in dims)) if ndim else ()
    if len(set(out)) != len(out):
        raise OpRuntimeError(f"{op}: dim {list(dims)} appears multiple times in the list of dims")
    return out


def reduce_shape(shape, dims, keepdim: bool) -> tuple:
    """The shape after reducing `dims` (None = all)."""
    dims = wrap_dims(dims, len(shape))
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def same_shape(self, *rest):
    """Shape rule of ops whose output has the shape of `self`."""
    return shape_of(self)


def same_dtype(self, *rest):
    """Dtype rule of ops whose output has the dtype of `self`."""
    return self.dtype


def promoted(*args):
    """Dtype rule of elementwise ops over all tensor/scalar arguments."""
    return dt.result_type(*args)


def promoted_float(*args):
    """Dtype rule of float-valued elementwise ops (true division, pow of ints to floats, ...)."""
    return dt.float_result(dt.result_type(*args))


def float_of_self(self, *rest):
    return dt.float_result(self.dtype)


def boolean(*args):
    return dt.bool_


def int64(*args):
    return dt.int64


def check_float(op: str, dtype) -> None:
    """Ops defined only for floating tensors (PyTorch: `"mean" not implemented for 'Long'`)."""
    if not dt.is_float(dtype):
        raise OpRuntimeError(f"{op}(): expected a floating point tensor, got {dt.NAMES[dtype]} "
                             f"(\"{op}\" not implemented for '{dt.TORCH_NAMES[dtype]}')")


def check_same_numel(op: str, shape, new_shape) -> None:
    if numel(shape) != numel(new_shape):
        raise OpRuntimeError(f"{op}: shape '{fmt_shape(new_shape)}' is invalid for input of size "
                             f"{numel(shape)}")


def infer_size(op: str, shape, size) -> tuple:
    """Resolve a single -1 in a view/reshape size against the element count of `shape`."""
    size = tuple(size)
    if size.count(-1) > 1:
        raise OpRuntimeError(f"{op}: only one dimension can be inferred")
    for s in size:
        if not isinstance(s, (int, str)) or isinstance(s, int) and s < -1:
            raise OpRuntimeError(f"{op}: invalid shape dimension {s}")
    if any(isinstance(s, str) for s in tuple(shape) + size):
        return _infer_symbolic(op, tuple(shape), size)
    total = numel(shape)
    if -1 in size:
        known = numel(s for s in size if s != -1)
        if known == 0 or total % known:
            raise OpRuntimeError(f"{op}: shape '{fmt_shape(size)}' is invalid for input of size {total}")
        size = tuple(total // known if s == -1 else s for s in size)
    check_same_numel(op, shape, size)
    return size


def _infer_symbolic(op: str, shape: tuple, size: tuple) -> tuple:
    """infer_size with symbolic sizes: the symbols both sides share cancel; a -1 is resolved when what
    remains is one symbol or an exact quotient of ints (else the rule cannot tell, and says so)."""
    left, right = [s for s in shape if isinstance(s, str)], [s for s in size if isinstance(s, str)]
    for s in list(left):
        if s in right:
            left.remove(s)
            right.remove(s)
    have = numel(s for s in shape if isinstance(s, int))
    want = numel(s for s in size if isinstance(s, int) and s != -1)
    if -1 not in size:
        return size
    if right or len(left) > 1 or want == 0 or have % want or left and have != want:
        raise OpRuntimeError(f"{op}: cannot infer the size -1 of {fmt_shape(size)} from {fmt_shape(shape)}")
    inferred = left[0] if left else have // want
    return tuple(inferred if s == -1 else s for s in size)
