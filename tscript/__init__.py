"""tscript: PyTorch-style eager tensors and a compiler for them.

`import tscript as torch` runs ordinary PyTorch model code on the CPU; every op comes from the op
library in `tscript_runtime.ops`.
"""
from tscript_runtime.ops.random import Generator, default_generator

from ._tensor import Tensor  # first: the dispatcher imports it

from ._creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like,
                        initial_seed, linspace, manual_seed, ones, ones_like, rand, rand_like, randint,
                        randn, randn_like, randperm, seed, tensor, zeros, zeros_like)
from ._device import device
from ._dtype import (bool_, dtype, float32, float64, get_default_dtype, int32, int64,
                     set_default_dtype)
from ._size import Size
from .tensor_file import load, save
from . import autograd, jit, nn
from . import optim, utils
from .autograd import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                       set_grad_enabled)
from . import _api_indexing, _api_linalg, _api_reductions, _bindings

float = float32  # noqa: A001  (PyTorch's aliases)
double = float64
long = int64
int = int32  # noqa: A001
bool = bool_  # noqa: A001


def is_tensor(obj) -> "builtins.bool":
    """True for tscript tensors."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> "builtins.int":
    return input.numel()


for _api in (_api_indexing, _api_linalg, _api_reductions):
    globals().update(_api.FUNCTIONS)
    _bindings.install_methods(_api.METHODS)
globals().update(_bindings.generated(globals()))

__version__ = "0.1.0"
