"""tscript_runtime: the standalone runtime for tscript models (numpy + llvmlite only, and ml_dtypes for
the bfloat16 dtype).

It holds THE op library (`tscript_runtime.ops`) that eager tensors in `tscript` also run on, and
`load(path) -> Model`, which checks and runs a saved model (`.tsm`) written by `tscript.jit.save`.
"""
import warnings

from . import dtypes, heap, ops
from .errors import InputError, ModelError
from .model import Model, load
from .native import eager as _eager
from .threads import get_num_threads, set_num_threads

heap.tune()  # arrays of a few MiB reused without page faults (heap.py)

_eager.install()  # conv, pooling and im2col kernels call the kernel library (linked at their first call)

# numpy warns about 1/0 and log(-1); PyTorch returns inf/nan silently, and so do our kernels.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"tscript_runtime\.ops(\..*)?$")

__all__ = ["dtypes", "ops", "InputError", "Model", "ModelError", "get_num_threads", "load", "set_num_threads"]
__version__ = "0.1.0"
