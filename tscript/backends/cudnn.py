"""tscript.backends.cudnn: cuDNN's flags, with PyTorch's defaults; cuDNN itself is not available."""
import contextlib

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: no cuDNN without CUDA."""
    return False


def version():
    """None: no cuDNN."""
    return None


def is_acceptable(tensor) -> bool:
    """False: cuDNN takes no CPU tensors."""
    return False


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the flags inside a `with` block, restoring them after (as `torch.backends.cudnn.flags`)."""
    module = globals()
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    saved = {n: module[n] for n in names}
    module.update(zip(names, (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)))
    try:
        yield
    finally:
        module.update(saved)
