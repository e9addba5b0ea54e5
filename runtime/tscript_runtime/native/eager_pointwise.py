"""Large float32 elementwise eager ops on both cores: `add`, `mul` and `relu`, and their in-place forms
(installed into ops/accelerated.py by `native/eager.py`'s `install()`).

numpy runs each of them on one core, and an in-place op as a fresh result copied into its target
(`relu_`: two passes and an allocation). Here each is one native pass over C-contiguous arrays, its two
halves at once on the kernel library's worker (`tscript_parallel2`) from SPLIT elements, written
straight into the target for an in-place op. ResNet-18's eval-mode batch norm is two of them
(`x * scale`, then `+= shift` in place, per channel), then `relu_` and the residual `+=`.

The kernels are a small LLVM module of their own (eager_kernels.py: the scalar expression of each op from
the compiler's lowering table, `native/lowering.py`, so eager and compiled code compute alike; eager
max pooling's range-of-planes kernel is there too), built the first time one runs and kept in the object
cache. Each has the kernel ABI tscript_parallel2 runs:

    tscript_eager_<op>_f32(i64* [begin, end], i8** [y, a, b], i64* dims, f64*)
        y[i] = op(a[i], b[i]) (relu: op(a[i])) for i in [begin, end)
    tscript_eager_<op>_channels_f32(i64* [begin, end], i8** [y, a, v], i64* [channels, inner], f64*)
        y[r, j] = op(a[r, j], v[r % channels]) for rows r in [begin, end), j < inner: a per-channel
        operand, as batch norm's (1, C, 1, 1) scale and shift

Each Python entry returns None for what it does not cover (other dtypes, other layouts or broadcasts,
fewer than MIN_NATIVE elements (MIN_IN_PLACE in place), an `out` overlapping an input other than as the
same array, no kernel library here), and the numpy kernel runs instead. add and mul are exact in IEEE arithmetic either way;
relu keeps NaN as numpy's maximum does.
"""
from __future__ import annotations

import ctypes
import math
import threading
from functools import partial

import numpy as np

from . import recycled
from .eager import _address, functions

LOWERED = {"add": "aten::add", "mul": "aten::mul", "relu": "aten::relu"}  # eager op -> its lowering row
ARITY = {"add": 2, "mul": 2, "relu": 1}
NAMES = tuple(f"tscript_eager_{name}{kind}_f32" for name in LOWERED for kind in ("", "_channels")[:ARITY[name]]) + \
    ("tscript_eager_max_pool2d_part_f32",)
# elements from which an op runs natively: an in-place one (numpy: a fresh result, then a copy), and one
# with a fresh result (below, numpy's few microseconds of call beat the native call's ~10)
MIN_IN_PLACE, MIN_NATIVE = 1 << 14, 1 << 16
SPLIT = 1 << 16       # elements from which both cores run it
MIN_INNER = 16        # elements per row from which a per-channel operand runs natively
ALIGN = 16            # the flat kernels' halves meet at a multiple of this (whole vectors)
_F32 = np.dtype(np.float32)
_lock = threading.Lock()
_state: dict = {}


def install(accelerated) -> None:
    """Make the kernels the op table's accelerated add, mul and relu (functional and in-place)."""
    for name in LOWERED:
        accelerated.install(name, partial(binary, name) if ARITY[name] == 2 else relu, writes_into=True)
    accelerated.MIN_ELEMENTWISE = MIN_IN_PLACE


# -- the entry points ------------------------------------------------------------------------------

def binary(name: str, a, b, alpha=1, out=None):
    """`a op b` (add or mul; add's `alpha` only 1) of two float32 arrays, the same shape or `b` one value
    per channel (either operand: both ops commute), into `out` when given (an in-place op's target, the
    result's shape), else into a new array; or None."""
    if alpha != 1 or a.__class__ is not np.ndarray or b.__class__ is not np.ndarray \
            or a.dtype is not _F32 or b.dtype is not _F32:
        return None
    if max(a.size, b.size) < (MIN_NATIVE if out is None else MIN_IN_PLACE):
        return None
    if a.shape == b.shape:
        if not (a.flags.c_contiguous and b.flags.c_contiguous):
            return None
        return _flat(name, (a, b), out)
    if a.size < b.size:
        a, b = b, a
    geometry = _channels(a.shape, b.shape)
    if geometry is None or not a.flags.c_contiguous:
        return None
    return _per_channel(name, a, np.ascontiguousarray(b).reshape(-1), geometry, out)


def relu(x, out=None):
    """max(x, 0) of a float32 array (NaN kept), into `out` when given, else into a new array; or None."""
    if x.__class__ is not np.ndarray or x.dtype is not _F32 or x.size < (MIN_NATIVE if out is None else MIN_IN_PLACE) \
            or not x.flags.c_contiguous:
        return None
    return _flat("relu", (x,), out)


def _flat(name: str, inputs: tuple, out):
    native = kernels()
    y = _target(out, inputs[0].shape, inputs)
    if native is None or y is None:
        return None
    native.launch(f"tscript_eager_{name}_f32", (y,) + inputs, (), y.size, ALIGN)
    return y


def _per_channel(name: str, a, vector, geometry: tuple, out):
    native = kernels()
    y = _target(out, a.shape, (a, vector))
    if native is None or y is None:
        return None
    rows, channels, inner = geometry
    native.launch(f"tscript_eager_{name}_channels_f32", (y, a, vector), (channels, inner), rows, 1, inner)
    return y


def _channels(shape: tuple, vector: tuple) -> tuple | None:
    """(rows, channels, inner) when an array of shape `vector` holds one value per index of one dim d of
    `shape` (size 1 elsewhere; as many dims or fewer): rows = shape[:d + 1] flattened, inner = shape[d + 1:]
    flattened, of at least MIN_INNER elements; else None."""
    if len(vector) > len(shape):
        return None
    aligned = (1,) * (len(shape) - len(vector)) + tuple(vector)
    dims = [d for d, n in enumerate(aligned) if n != 1]
    if len(dims) != 1 or aligned[dims[0]] != shape[dims[0]]:
        return None
    d = dims[0]
    rows, inner = math.prod(shape[:d + 1]), math.prod(shape[d + 1:])
    return (rows, shape[d], inner) if inner >= MIN_INNER else None


def _target(out, shape: tuple, inputs: tuple):
    """The array to write: `out` if it is a C-contiguous float32 array of `shape` sharing no memory with
    the inputs but for being one of them (elementwise, each element is read before it is written), a
    fresh or recycled one (recycled.py) when `out` is None; else None."""
    if out is None:
        return recycled.empty(shape, _F32)
    if out.__class__ is not np.ndarray or out.dtype is not _F32 or out.shape != shape or not out.flags.c_contiguous:
        return None
    for x in inputs:
        if x is not out and not _same_memory(x, out) and np.may_share_memory(x, out):
            return None
    return out


def _same_memory(x: np.ndarray, y: np.ndarray) -> bool:
    return _address(x) == _address(y) and x.shape == y.shape and x.strides == y.strides


# -- the native side -------------------------------------------------------------------------------

class _Kernels:
    """The linked kernels: `address` and ctypes `fn` by name; `launch` runs one over both cores."""

    def __init__(self, code, library):
        self.code, self.library = code, library  # (the object code stays loaded while this lives)
        self.address = {name: code.address(name) for name in NAMES}
        self.fn = {name: ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4)(self.address[name]) for name in NAMES}
        self.parallel2 = library.fn["tscript_parallel2"]
        self._local = threading.local()

    def launch(self, name: str, arrays: tuple, dims: tuple, count: int, align: int, work: int = 1) -> None:
        """Kernel `name` over [0, count) (elements or rows, `work` elements each), in two halves meeting at
        a multiple of `align` on both cores from SPLIT elements."""
        ptrs, geo, sizes = self._buffers()
        for i, x in enumerate(arrays):
            ptrs[i] = x.__array_interface__["data"][0]
        geo[:len(dims)] = dims
        cut = count // 2 // align * align
        if count * work < SPLIT or cut == 0:
            sizes[0], sizes[1] = 0, count
            self.fn[name](sizes, ptrs, geo, None)
            return
        sizes[:] = 0, cut, cut, count
        self.parallel2(self.address[name], sizes, ptrs, ctypes.addressof(sizes) + 16, ptrs, geo, None)

    def _buffers(self) -> tuple:
        """This thread's argument buffers (pointers, dims, the halves' bounds), made once: a call builds no
        ctypes arrays (each costs about a microsecond)."""
        local = self._local
        try:
            return local.buffers
        except AttributeError:
            local.buffers = ((ctypes.c_void_p * 3)(), (ctypes.c_int64 * 16)(), (ctypes.c_int64 * 4)())
            return local.buffers


def kernels() -> _Kernels | None:
    """The kernels, linked the first time (once per process); None when the kernel library (its worker)
    or LLVM is not available here."""
    try:
        return _state["kernels"]
    except KeyError:
        with _lock:  # (another thread may have linked them meanwhile)
            return _state["kernels"] if "kernels" in _state else _state.setdefault("kernels", _link())


def _link() -> _Kernels | None:
    library = functions()
    if library is None or "tscript_parallel2" not in library.fn:
        return None
    try:
        from .cache import cache_key, cached_object
        from .link import NativeLibrary
        obj, imports = cached_object(cache_key("eager_kernels"), _emit)
        return _Kernels(NativeLibrary(obj, list(NAMES), imports), library)
    except Exception:  # whatever stops LLVM here only means the numpy kernels run: eager must not fail
        return None


def _emit() -> tuple[bytes, set[str]]:
    """(object code, imports) of the kernels' module (eager_kernels.py), compiled here."""
    from . import eager_kernels
    from .link import imports_of
    from .target import optimize_and_emit
    module = eager_kernels.module()
    obj = optimize_and_emit(str(module))
    return obj, imports_of(module, obj)
