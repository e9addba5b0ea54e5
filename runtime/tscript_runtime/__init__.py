"""tscript_runtime: the standalone runtime for tscript models (numpy + llvmlite only, and ml_dtypes for
the bfloat16 dtype).

It holds THE op library (`tscript_runtime.ops`) that eager tensors in `tscript` also run on, and
`load(path) -> Model`, which checks and runs a saved model (`.tsm`) written by `tscript.jit.save`.
"""
import warnings

from . import heap

heap.tune()  # before any array is allocated: arrays of a few MiB reused without page faults (heap.py)

from . import dtypes, ops  # noqa: E402
from .errors import InputError, ModelError  # noqa: E402
from .model import Model, load  # noqa: E402
from .native import eager as _eager  # noqa: E402
from .threads import get_num_threads, set_num_threads  # noqa: E402

_eager.install()  # conv, pooling and im2col kernels call the kernel library (linked at their first call)

# numpy warns about 1/0 and log(-1); PyTorch returns inf/nan silently, and so do our kernels.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"tscript_runtime\.ops(\..*)?$")

__all__ = ["dtypes", "ops", "InputError", "Model", "ModelError", "get_num_threads", "load", "set_num_threads"]
__version__ = "0.1.0"
