"""tscript: PyTorch-style eager tensors and a compiler for them.

`import tscript as torch` runs ordinary PyTorch model code on the CPU; every op comes from the op
library in `tscript_runtime.ops`.
"""
from tscript_runtime.ops.random import Generator, default_generator

from ._tensor import Tensor  # first: the dispatcher imports it

from ._creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like,
                        initial_seed, linspace, manual_seed, ones, ones_like, rand, rand_like, randint,
                        randn, randn_like, randperm, seed, tensor, zeros, zeros_like)
from ._device import device, get_default_device, set_default_device
from ._dtype import (bfloat16, bool_, complex64, complex128, dtype, float16, float32, float64, get_default_dtype,
                     int8, int16, int32, int64, set_default_dtype, uint8)
from ._size import Size
from .serialization import load, save
from . import autograd, jit, nn
from . import optim, utils
from . import onnx  # ONNX export/import; the `onnx` package itself is imported only when used
from . import accelerator, amp, backends, cpu, cuda, distributed, fx, hub  # the CPU-only world, as PyTorch's
from .amp import (autocast, get_autocast_cpu_dtype, get_autocast_dtype, get_autocast_gpu_dtype,
                  is_autocast_cpu_enabled, is_autocast_enabled)
from .utils.dlpack import from_dlpack
from .autograd import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                       set_grad_enabled)
from . import _api_indexing, _api_linalg, _api_reductions, _bindings
from . import _api_compare, _api_dtypes, _api_foreach, _api_math, _api_shape, _api_tensor, compiler, linalg, testing
from .compiler import compile  # noqa: A004  (PyTorch's torch.compile, a pass-through)
from ._finfo import finfo, iinfo
from ._legacy import LEGACY_TYPES as _LEGACY_TYPES
from ._memory_format import channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format

float = float32  # noqa: A001  (PyTorch's aliases)
double = float64
half = float16
cfloat = complex64
cdouble = complex128
long = int64
int = int32  # noqa: A001
short = int16
bool = bool_  # noqa: A001


def is_tensor(obj) -> "builtins.bool":
    """True for tscript tensors."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> "builtins.int":
    return input.numel()


for _api in (_api_indexing, _api_linalg, _api_reductions, _api_compare, _api_dtypes, _api_foreach, _api_math,
             _api_shape, _api_tensor):
    globals().update(_api.FUNCTIONS)
    _bindings.install_methods(_api.METHODS)
globals().update(_bindings.generated(globals()))
globals().update(_LEGACY_TYPES)

__version__ = "0.1.0"
