"""tscript.nn.parallel: data parallelism on a machine with one CPU and no process group, as
`torch.nn.parallel` there: `DataParallel` runs the module it wraps, `DistributedDataParallel`
needs a process group and says so."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
