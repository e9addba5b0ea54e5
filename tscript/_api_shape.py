"""Shape functions that are composites of views, `repeat` and `index_select`, with PyTorch's
signatures and errors: `meshgrid`, `repeat_interleave`, `tile`, `roll` (`dims=None`), `unflatten`,
`diff`, `tensor_split`, `diag`, `cartesian_prod`."""
import warnings

from tscript_runtime.errors import OpRuntimeError, OpTypeError
from tscript_runtime.ops import OPS
from tscript_runtime.ops.rules import wrap_dim

from ._dispatch import dispatch
from ._size import size_args
from ._tensor import Tensor


def _op(name: str, *args, **kwargs):
    return dispatch(OPS[name], args, kwargs or None)


# -- meshgrid -----------------------------------------------------------------------------------

def _meshgrid_inputs(tensors) -> list:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    tensors = list(tensors)
    if not tensors:
        raise OpRuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise OpTypeError(f"meshgrid(): expected Tensor as element of the tensor list, got {type(t).__name__}")
        if t.dim() > 1:
            raise OpRuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a tensor "
                                 f"of shape {list(t.shape)}")
    if len({t.dtype for t in tensors}) > 1:
        raise OpRuntimeError("meshgrid expects all tensors to have the same dtype")
    return tensors


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids of 1-D (or 0-D) tensors as expanded views: with `indexing="ij"` (the
    default, with PyTorch's warning when not given) grid k varies along dim k; with `"xy"` the first
    two dims are swapped (Cartesian, as NumPy's default)."""
    tensors = _meshgrid_inputs(tensors)
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise OpRuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    swap = indexing == "xy" and len(tensors) > 1
    if swap:
        tensors[0], tensors[1] = tensors[1], tensors[0]
    shape = tuple(t.numel() for t in tensors)
    grids = []
    for k, t in enumerate(tensors):
        view = tuple(-1 if i == k else 1 for i in range(len(tensors)))
        grids.append(t.reshape(view).expand(shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


# -- repeat_interleave ---------------------------------------------------------------------------

def _repeat_each(input: Tensor, repeats: int, dim: int, output_size) -> Tensor:
    """Every slice along `dim` repeated `repeats` times, as a view expanded and reshaped."""
    if repeats < 0:
        raise OpRuntimeError("Repeats must be non-negative")
    shape = tuple(input.shape)
    if output_size is not None and output_size != shape[dim] * repeats:
        raise OpRuntimeError(f"repeat_interleave: Invalid output_size, expected {shape[dim] * repeats} but got "
                             f"{output_size}")
    expanded = input.unsqueeze(dim + 1).expand(shape[:dim + 1] + (repeats,) + shape[dim + 1:])
    return expanded.reshape(shape[:dim] + (shape[dim] * repeats,) + shape[dim + 1:])


def _repeat_by_tensor(input: Tensor, repeats: Tensor, dim: int, output_size) -> Tensor:
    if repeats.dim() > 1:
        raise OpRuntimeError("repeats must be 0-dim or 1-dim tensor")
    size = input.shape[dim]
    if repeats.numel() == 1:
        repeats = repeats.reshape(1).expand(size)
    elif repeats.shape[0] != size:
        raise OpRuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                             f"{repeats.shape[0]} and input.size({dim}) = {size}")
    index = _op("aten::repeat_interleave.Tensor", repeats, output_size=output_size)
    return input.index_select(dim, index)


def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *, output_size: int | None = None):
    """Repeat each element (each slice along `dim`; of the flattened tensor when `dim` is None)
    `repeats` times, an int or one count per slice. `repeat_interleave(counts)` alone gives the
    indices `[0] * counts[0] + [1] * counts[1] + ...`."""
    if repeats is None:
        return _op("aten::repeat_interleave.Tensor", input, output_size=output_size)
    if dim is None:
        input, dim = input.reshape(-1), 0
    dim = wrap_dim(dim, input.dim())
    if input.dim() == 0:
        input = input.reshape(1)
    if isinstance(repeats, Tensor):
        return _repeat_by_tensor(input, repeats, dim, output_size)
    if not isinstance(repeats, int) or isinstance(repeats, bool):
        raise OpTypeError(f"repeat_interleave(): argument 'repeats' must be int or Tensor, not "
                          f"{type(repeats).__name__}")
    return _repeat_each(input, repeats, dim, output_size)


# -- tile, roll, unflatten -------------------------------------------------------------------------

def tile(input: Tensor, dims) -> Tensor:
    """`input` repeated `dims[i]` times along each dim; fewer dims than `input` has are padded with
    ones in front (unlike `repeat`)."""
    dims = size_args((dims,), "tile")
    dims = (1,) * (input.dim() - len(dims)) + dims
    return input.repeat(dims)


def _tile_method(self: Tensor, *dims) -> Tensor:
    """`x.tile(2, 3)` or `x.tile((2, 3))`."""
    return tile(self, size_args(dims, "tile"))


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Shift the elements along `dims` (of the flattened tensor when None), wrapping around."""
    return _op("aten::roll", input, shifts, () if dims is None else dims)


def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Dim `dim` split into `sizes` (one entry may be -1)."""
    sizes = size_args((sizes,), "unflatten")
    if not sizes:
        raise OpRuntimeError("unflatten: sizes must be non-empty")
    shape = tuple(input.shape)
    d = wrap_dim(dim, len(shape), "unflatten")
    if -1 in sizes:
        known = 1
        for s in sizes:
            known *= s if s != -1 else 1
        sizes = tuple(shape[d] // known if s == -1 and known else s for s in sizes)
    total = 1
    for s in sizes:
        total *= s
    if total != shape[d]:
        raise OpRuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                             f"({shape[d]}) in the input tensor")
    return input.view(shape[:d] + sizes + shape[d + 1:])


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """The n-th forward difference along `dim` (`logical_xor` of neighbours for bool tensors), after
    joining `prepend` and `append` to `input`."""
    if input.dim() == 0:
        raise OpRuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise OpRuntimeError(f"order must be non-negative but got {n}")
    pieces = [t for t in (prepend, input, append) if t is not None]
    if len(pieces) > 1:
        input = _op("aten::cat", pieces, dim)
    for _ in range(n):
        length = input.shape[dim]
        if length == 0:
            break
        after, before = input.narrow(dim, 1, length - 1), input.narrow(dim, 0, length - 1)
        input = after ^ before if input.dtype.name == "bool" else after - before
    return input


def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    """Views of `input` split along `dim` into `n` nearly equal parts (the first `size % n` one
    longer), or at the given indices."""
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.dim() > 1:
            raise OpRuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                                 f"one-dimensional tensor, but got a tensor with {indices_or_sections.dim()} dims")
        indices_or_sections = indices_or_sections.tolist()
    if input.dim() == 0:
        raise OpRuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = wrap_dim(dim, input.dim())
    size = input.shape[d]
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise OpRuntimeError(f"number of sections must be larger than 0, got {n}")
        cuts = [k * (size // n) + min(k, size % n) for k in range(1, n)]
    else:
        cuts = list(indices_or_sections)
    bounds = [min(max(c if c >= 0 else c + size, 0), size) for c in cuts]
    pieces, start = [], 0
    for end in bounds + [size]:
        pieces.append(input.narrow(d, start, max(end - start, 0)))
        start = max(start, end)
    return tuple(pieces)


def _flat_diagonal(input: Tensor, offset: int) -> Tensor:
    """The `offset` diagonal of a matrix, as every (cols + 1)-th element of the flattened matrix."""
    rows, cols = input.shape
    start = offset if offset >= 0 else -offset * cols
    count = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    return input.reshape(-1)[start::cols + 1][:count]


def _diag_matrix(input: Tensor, offset: int) -> Tensor:
    """The square matrix with `input` on its `offset` diagonal: the vector spread `m + 1` apart in
    a flat zero vector (cat of views and zeros, so it is differentiable)."""
    from ._creation import zeros
    n = input.shape[0]
    m = n + abs(offset)
    start = offset if offset >= 0 else -offset * m
    spread = _op("aten::cat", [input.unsqueeze(1), zeros((n, m), dtype=input.dtype)], 1).reshape(-1)
    tail = max(0, m * m - start - spread.shape[0])
    flat = _op("aten::cat", [zeros((start,), dtype=input.dtype), spread, zeros((tail,), dtype=input.dtype)])
    return flat[:m * m].reshape(m, m)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-D tensor made the `diagonal` of a square matrix, or a matrix's `diagonal` as a 1-D tensor."""
    if input.dim() == 1:
        return _diag_matrix(input, diagonal)
    if input.dim() == 2:
        return _flat_diagonal(input, diagonal)
    raise OpRuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


def cartesian_prod(*tensors) -> Tensor:
    """Every combination of one element of each 1-D tensor, as rows (a 1-D tensor for one input)."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return _op("aten::stack", [g.reshape(-1) for g in grids], 1)


FUNCTIONS: dict = {"meshgrid": meshgrid, "repeat_interleave": repeat_interleave, "tile": tile, "roll": roll,
                   "unflatten": unflatten, "diff": diff, "tensor_split": tensor_split, "diag": diag,
                   "cartesian_prod": cartesian_prod}
METHODS: dict = {"repeat_interleave": repeat_interleave, "tile": _tile_method, "roll": roll,
                 "unflatten": unflatten, "diff": diff, "tensor_split": tensor_split, "diag": diag}
