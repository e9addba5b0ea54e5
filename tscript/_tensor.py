"""Tensor: a numpy array plus autograd metadata. Every operation goes through `_dispatch.dispatch`
and the op library; this class holds only the object protocol (properties, operators,
conversions). Methods that are plain ops are generated from the op table in `_bindings.py`.
"""
import numpy as np

from tscript_runtime import dtypes as _dt
from tscript_runtime.ops import OPS

from . import _dtype
from ._tracing import state as _trace_state, warn_conversion
from ._device import CPU, NO_ACCELERATOR, DeviceUnavailableError, check_device, device as _device_cls, unavailable
from ._size import Size, size_args

_new = object.__new__


def _make(arr: np.ndarray) -> "Tensor":
    """Wrap an ndarray (already of a tscript dtype) without copying."""
    t = _new(Tensor)
    t._data = arr
    t._vc = [0]
    return t


class Tensor:
    """A multi-dimensional array on the CPU, as `torch.Tensor`. Create one with `tscript.tensor`,
    `tscript.zeros`, ...; views (`view`, slicing, `transpose`, `numpy()`) share memory."""

    # Defaults as class attributes keep creating a tensor cheap: an instance stores only what it sets.
    _base = None              # the tensor this one is a view of
    _requires_grad = False
    grad = None               # accumulated gradient (leaves), or retained gradient
    grad_fn = None            # the autograd node that created this tensor
    _retains_grad = False
    _hooks = None             # gradient hooks of a leaf, registered with register_hook
    _output_nr = 0            # which output of grad_fn this tensor is
    _view_version = None      # a recorded view: the version its grad_fn belongs to (views.py)
    _accumulator = None       # weak reference to a leaf's AccumulateGrad node
    __array_priority__ = 1000  # `ndarray + Tensor` defers to Tensor.__radd__ (which takes arrays)

    # -- metadata ---------------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        if _trace_state.recorder is not None:  # sizes read while tracing are recorded, not frozen
            return Size(_trace_state.recorder.traced_shape(self))
        return Size(self._data.shape)

    def size(self, dim=None):
        """The shape, or the size of one dimension."""
        if dim is None:
            return self.shape
        from tscript_runtime.ops.rules import wrap_dim
        if self._data.ndim == 0:
            raise IndexError("size(): dimension specified as 0 but tensor has no dimensions")
        return self.shape[wrap_dim(dim, self._data.ndim, "size")]

    def dim(self) -> int:
        return self._data.ndim

    ndim = property(dim)

    def ndimension(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        if _trace_state.recorder is not None:  # a product of traced sizes, not frozen
            return self.shape.numel()
        return self._data.size

    nelement = numel

    @property
    def dtype(self) -> _dtype.dtype:
        return _dtype.FROM_NP[self._data.dtype]

    @property
    def device(self):
        return CPU

    # The CPU is the only device (_device.py): every accelerator query answers no.
    is_cuda = is_xpu = is_mps = is_meta = is_sparse = is_quantized = is_mkldnn = False
    is_cpu = True

    def get_device(self) -> int:
        """-1: the tensor is on the CPU (PyTorch's answer for CPU tensors)."""
        return -1

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        return self._vc[0]

    def is_floating_point(self) -> bool:
        return _dt.is_float(self._data.dtype)

    def is_complex(self) -> bool:
        return _dt.is_complex(self._data.dtype)

    def is_conj(self) -> bool:
        """False: `conj()` of a complex tensor is computed at once (no lazy conjugate bit)."""
        return False

    def resolve_conj(self) -> "Tensor":
        return self

    @property
    def real(self) -> "Tensor":
        """The real part, a view (the tensor itself when it is not complex)."""
        return dispatch(OPS["aten::real"], (self,))

    @property
    def imag(self) -> "Tensor":
        """The imaginary part of a complex tensor, a view."""
        return dispatch(OPS["aten::imag"], (self,))

    def is_contiguous(self, memory_format=None) -> bool:
        """Does the memory lie row-major (or in the order `memory_format` names, e.g. channels_last)?"""
        if memory_format is None:
            return self._data.flags.c_contiguous
        from ._memory_format import is_laid_out
        return is_laid_out(self._data, memory_format)

    def element_size(self) -> int:
        return self._data.itemsize

    def stride(self, dim=None):
        """Strides in elements, as PyTorch reports them."""
        st = tuple(s // self._data.itemsize for s in self._data.strides)
        return st if dim is None else st[dim]

    def data_ptr(self) -> int:
        return self._data.ctypes.data

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set whether autograd records operations on this (leaf) tensor."""
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to "
                               "use a computed variable in a subgraph that doesn't require differentiation "
                               "use var_no_grad = var.detach().")
        if requires_grad and not _dt.is_inexact(self._data.dtype):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = bool(requires_grad)
        return self

    # -- autograd ---------------------------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Accumulate the gradient of this tensor into the `.grad` of the graph's leaves."""
        from .autograd import backward
        backward(self, gradient, retain_graph, create_graph, inputs)

    def register_hook(self, hook):
        """Call `hook(grad)` when this tensor's gradient is computed; a returned tensor replaces it."""
        from .autograd.graph import RemovableHandle
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn.add_tensor_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        return RemovableHandle(self._hooks, hook)

    def retain_grad(self) -> None:
        """Keep `.grad` for this non-leaf tensor after backward (leaves always keep it)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is not None:
            self.grad_fn.retain(self._output_nr, self)
            self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def data(self) -> "Tensor":
        """This tensor's data, detached from autograd (shares memory)."""
        return self.detach()

    @data.setter
    def data(self, other: "Tensor") -> None:
        self._data = other._data

    # -- conversion to Python and numpy --------------------------------------------------------------
    def item(self):
        """The value of a one-element tensor as a Python number."""
        warn_conversion("number")
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._data.reshape(()).item()

    def tolist(self):
        warn_conversion("list")
        return self._data.tolist()

    def numpy(self, force: bool = False) -> np.ndarray:
        """The data as an ndarray sharing memory with this tensor."""
        warn_conversion("NumPy array")
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        return self._data

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this tensor's memory (`np.from_dlpack(t)`, `torch.from_dlpack(t)` share it)."""
        if self._requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        kwargs = {"max_version": max_version, "dl_device": dl_device, "copy": copy}
        return self._data.__dlpack__(stream=stream, **{k: v for k, v in kwargs.items() if v is not None})

    def __dlpack_device__(self) -> tuple:
        """(kDLCPU, 0): the memory is on the CPU."""
        return (1, 0)

    def _scalar(self, kind: str):
        warn_conversion(kind)
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._data.reshape(()).item()

    def __bool__(self) -> bool:
        warn_conversion("boolean")
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(()).item())

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __index__(self) -> int:
        if not _dt.is_integral(self._data.dtype, include_bool=True):
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._scalar("index"))

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self) -> int:
        return id(self)

    def __deepcopy__(self, memo):
        """A copy with its own data and autograd identity (leaves only, as in PyTorch); the copy
        never shares the original's gradient accumulator."""
        import copy
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.")
        new = object.__new__(type(self))
        memo[id(self)] = new
        new._data, new._vc = self._data.copy(), [0]
        skip = {"_data", "_vc", "_base", "_accumulator", "grad", "_hooks"}
        for key, value in self.__dict__.items():
            if key not in skip:
                setattr(new, key, copy.deepcopy(value, memo))
        if self.grad is not None:
            new.grad = copy.deepcopy(self.grad, memo)
        return new

    def __repr__(self) -> str:
        from ._format import tensor_repr
        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0 and spec:
            return format(self._data.item(), spec)
        return repr(self)

    # -- copies, dtype and device ---------------------------------------------------------------------
    def to(self, *args, **kwargs) -> "Tensor":
        """`to(dtype)`, `to("cpu")`, `to(other)`, `to("cpu", dtype)`; returns self when nothing changes."""
        dtype = kwargs.pop("dtype", None)
        copy = kwargs.pop("copy", False)
        check_device(kwargs.pop("device", None))
        kwargs.pop("non_blocking", None)
        memory_format = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if memory_format is not None:
            from ._memory_format import check
            check(memory_format, self._data.ndim, "to")
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, str) and a not in _dt.BY_NAME or a.__class__.__name__ == "device":
                check_device(a)
            else:
                dtype = a
        return dispatch(OPS["aten::to"], (self, dtype, copy))

    def type(self, dtype=None, non_blocking: bool = False):
        """The legacy type name ("tscript.FloatTensor"), or this tensor converted to `dtype` (a dtype,
        a legacy type such as `LongTensor`, or its name "torch.LongTensor")."""
        if dtype is None:
            return f"tscript.{_dt.TORCH_NAMES[self._data.dtype]}Tensor"
        from ._legacy import as_dtype
        return self.to(as_dtype(dtype))

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(other.dtype)

    def float(self) -> "Tensor":
        return self.to(_dtype.float32)

    def double(self) -> "Tensor":
        return self.to(_dtype.float64)

    def long(self) -> "Tensor":
        return self.to(_dtype.int64)

    def int(self) -> "Tensor":
        return self.to(_dtype.int32)

    def bool(self) -> "Tensor":
        return self.to(_dtype.bool_)

    def half(self) -> "Tensor":
        return self.to(_dtype.float16)

    def bfloat16(self) -> "Tensor":
        return self.to(_dtype.bfloat16)

    def byte(self) -> "Tensor":
        return self.to(_dtype.uint8)

    def char(self) -> "Tensor":
        return self.to(_dtype.int8)

    def short(self) -> "Tensor":
        return self.to(_dtype.int16)

    def cfloat(self) -> "Tensor":
        return self.to(_dtype.complex64)

    def cdouble(self) -> "Tensor":
        return self.to(_dtype.complex128)

    def cpu(self) -> "Tensor":
        return self

    def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> "Tensor":
        """Raises PyTorch's error on a machine without CUDA (tscript runs on the CPU only)."""
        if device is not None:
            raise DeviceUnavailableError(NO_ACCELERATOR)
        raise unavailable(_device_cls("cuda"))

    def xpu(self, device=None, non_blocking: bool = False, memory_format=None) -> "Tensor":
        """Raises PyTorch's error on a machine without XPU."""
        raise unavailable(_device_cls("xpu"))

    def is_pinned(self, device=None) -> bool:
        return False

    def pin_memory(self, device=None) -> "Tensor":
        """Raises as PyTorch does without an accelerator (pinned memory is for copies to one)."""
        raise DeviceUnavailableError(NO_ACCELERATOR)

    def detach(self) -> "Tensor":
        """A new tensor sharing data (and version counter) with this one, outside autograd."""
        if _trace_state.recorder is not None:  # recorded, so the trace keeps the data flow
            return dispatch(OPS["aten::detach"], (self,))
        t = _make(self._data)
        t._vc = self._vc
        return t

    def detach_(self) -> "Tensor":
        """Make this tensor a leaf that does not require grad."""
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                               "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                               "as True, gradients are views of DDP buckets, and hence detach_() cannot be called "
                               "on these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                               "function in torch/optim/optimizer.py as the solution.")
        self.grad_fn = None
        self._requires_grad = False
        return self

    # -- shapes given as varargs --------------------------------------------------------------------
    def view(self, *shape) -> "Tensor":
        return dispatch(OPS["aten::view"], (self, size_args(shape, "view")))

    def reshape(self, *shape) -> "Tensor":
        return dispatch(OPS["aten::reshape"], (self, size_args(shape, "reshape")))

    def permute(self, *dims) -> "Tensor":
        return dispatch(OPS["aten::permute"], (self, size_args(dims, "permute")))

    def expand(self, *sizes) -> "Tensor":
        return dispatch(OPS["aten::expand"], (self, size_args(sizes, "expand")))

    def repeat(self, *sizes) -> "Tensor":
        return dispatch(OPS["aten::repeat"], (self, size_args(sizes, "repeat")))

    def flip(self, *dims) -> "Tensor":
        return dispatch(OPS["aten::flip"], (self, size_args(dims, "flip")))

    def view_as(self, other: "Tensor") -> "Tensor":
        return self.view(other._data.shape)

    def reshape_as(self, other: "Tensor") -> "Tensor":
        return self.reshape(other._data.shape)

    def expand_as(self, other: "Tensor") -> "Tensor":
        return self.expand(other._data.shape)

    @property
    def T(self) -> "Tensor":
        return self.permute(tuple(range(self._data.ndim - 1, -1, -1)))

    @property
    def mT(self) -> "Tensor":
        return self.transpose(-2, -1)

    def new_zeros(self, *sizes, size=None, dtype=None, device=None, requires_grad=False) -> "Tensor":
        from . import _creation
        return _creation.zeros(*sizes, size=size, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)

    def new_ones(self, *sizes, size=None, dtype=None, device=None, requires_grad=False) -> "Tensor":
        from . import _creation
        return _creation.ones(*sizes, size=size, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, requires_grad=False) -> "Tensor":
        from . import _creation
        return _creation.full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_tensor(self, data, dtype=None, requires_grad=False) -> "Tensor":
        from . import _creation
        return _creation.tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    # -- operators ------------------------------------------------------------------------------------
    def __add__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(_ADD, (self, other))

    def __radd__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(_ADD, (other, self))

    def __iadd__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::add_"], (self, other))

    def __sub__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(_SUB, (self, other))

    def __rsub__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(_SUB, (other, self))

    def __isub__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::sub_"], (self, other))

    def __mul__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(_MUL, (self, other))

    def __rmul__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(_MUL, (other, self))

    def __imul__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::mul_"], (self, other))

    def __truediv__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(_DIV, (self, other))

    def __rtruediv__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(_DIV, (other, self))

    def __itruediv__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::div_"], (self, other))

    def __floordiv__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::floor_divide"], (self, other))

    def __rfloordiv__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::floor_divide"], (other, self))

    def __ifloordiv__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::floor_divide_"], (self, other))

    def __mod__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::remainder"], (self, other))

    def __rmod__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::remainder"], (other, self))

    def __imod__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::remainder_"], (self, other))

    def __pow__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::pow"], (self, other))

    def __rpow__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::pow"], (other, self))

    def __ipow__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::pow_"], (self, other))

    def __matmul__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::matmul"], (self, other))

    def __rmatmul__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::matmul"], (other, self))

    def __neg__(self):
        return dispatch(OPS["aten::neg"], (self,))

    def __pos__(self):
        return self

    def __abs__(self):
        return dispatch(OPS["aten::abs"], (self,))

    def __invert__(self):
        return dispatch(OPS["aten::bitwise_not"], (self,))

    def __and__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::bitwise_and"], (self, other))

    __rand__ = __and__

    def __iand__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::bitwise_and_"], (self, other))

    def __or__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::bitwise_or"], (self, other))

    __ror__ = __or__

    def __ior__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::bitwise_or_"], (self, other))

    def __xor__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::bitwise_xor"], (self, other))

    __rxor__ = __xor__

    def __ixor__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::bitwise_xor_"], (self, other))

    def __eq__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::eq"], (self, other))

    def __ne__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::ne"], (self, other))

    def __lt__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::lt"], (self, other))

    def __le__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::le"], (self, other))

    def __gt__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::gt"], (self, other))

    def __ge__(self, other):
        if other.__class__ is _ndarray:
            other = _array_operand(other)
        return dispatch(OPS["aten::ge"], (self, other))

    def __getitem__(self, index):
        from ._indexing import getitem
        return getitem(self, index)

    def __setitem__(self, index, value):
        from ._indexing import setitem
        setitem(self, index, value)


_ADD, _SUB, _MUL, _DIV = (OPS[f"aten::{n}"] for n in ("add", "sub", "mul", "div"))
_ndarray = np.ndarray


def _array_operand(arr: np.ndarray) -> "Tensor":
    """A numpy array operand of an operator (`t + arr`, `arr < t`: numpy defers to the Tensor's method)
    as a tensor sharing its memory, so the operator runs as a tensor op, with promotion and autograd."""
    from ._creation import as_tensor
    return as_tensor(arr)

from ._dispatch import dispatch  # noqa: E402  (dispatch needs the Tensor class defined above)
