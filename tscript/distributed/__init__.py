"""tscript.distributed: one CPU process, no process groups (as `torch.distributed` before
`init_process_group`, on a build without distributed support).

`is_available()` and `is_initialized()` are False, so library code that checks them runs its
single-process path; the collectives and rank queries raise PyTorch's "Default process group has not
been initialized" ValueError, and `init_process_group` says why it cannot succeed.
"""
import enum
import os

__all__ = ["Backend", "GroupMember", "ReduceOp", "all_gather", "all_gather_object", "all_reduce", "barrier",
           "broadcast", "broadcast_object_list", "destroy_process_group", "gather", "get_backend", "get_rank",
           "get_world_size", "group", "init_process_group", "is_available", "is_gloo_available", "is_initialized",
           "is_mpi_available", "is_nccl_available", "is_torchelastic_launched", "new_group", "reduce",
           "reduce_scatter", "scatter"]

_NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."


class ReduceOp(enum.Enum):
    """How collectives combine values (`dist.ReduceOp.SUM`, ...)."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8


class Backend(str):
    """A backend name, as `torch.distributed.Backend` (`Backend.GLOO == "gloo"`)."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"


class GroupMember:
    """`group.WORLD` is None until a process group exists (here: always)."""
    WORLD = None
    NON_GROUP_MEMBER = -100


group = GroupMember


def is_available() -> bool:
    """False: tscript runs in one process, without process groups."""
    return False


def is_initialized() -> bool:
    """False: there is no default process group."""
    return False


def is_torchelastic_launched() -> bool:
    """Whether this process was started by torchelastic (`torchrun`), from its environment variable."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_nccl_available() -> bool:
    return False


def is_gloo_available() -> bool:
    return False


def is_mpi_available() -> bool:
    return False


def init_process_group(*args, **kwargs) -> None:
    """Raises: tscript has no process groups (train in one process)."""
    raise RuntimeError("torch.distributed process groups are not available: tscript runs in a single CPU process")


def _not_initialized(*args, **kwargs):
    raise ValueError(_NOT_INITIALIZED)


get_rank = get_world_size = get_backend = barrier = new_group = destroy_process_group = _not_initialized
all_reduce = all_gather = all_gather_object = broadcast = broadcast_object_list = _not_initialized
reduce = reduce_scatter = gather = scatter = _not_initialized
