"""tscript.cuda: what `torch.cuda` answers on a machine without CUDA (tscript runs on the CPU only).

Queries answer no (`is_available()` False, `device_count()` 0, memory counters 0), settings that
concern nothing are accepted (`manual_seed`, `empty_cache`), and anything that needs a GPU raises
PyTorch's error, `AssertionError: Torch not compiled with CUDA enabled` (which is a RuntimeError too).
"""
from .._device import device as _device, unavailable as _unavailable
from . import amp

__all__ = ["Event", "OutOfMemoryError", "Stream", "amp", "current_device", "current_stream", "device",
           "device_count", "device_of", "empty_cache", "get_device_capability", "get_device_name",
           "get_device_properties", "get_rng_state", "init", "ipc_collect", "is_available", "is_bf16_supported",
           "is_initialized", "manual_seed", "manual_seed_all", "max_memory_allocated", "max_memory_reserved",
           "mem_get_info", "memory_allocated", "memory_reserved", "reset_peak_memory_stats", "seed", "seed_all",
           "set_device", "set_rng_state", "stream", "synchronize"]


class OutOfMemoryError(RuntimeError):
    """Raised by PyTorch when a GPU allocation fails (never raised here; exists for `except` clauses)."""


def _no_cuda(*args, **kwargs):
    raise _unavailable(_device("cuda"))


def _nothing(*args, **kwargs) -> None:
    return None


def _zero(device=None) -> int:
    return 0


def is_available() -> bool:
    """False: no CUDA device."""
    return False


def device_count() -> int:
    """0 CUDA devices."""
    return 0


def is_initialized() -> bool:
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


# Need a GPU: PyTorch's error.
current_device = synchronize = get_device_name = get_device_capability = get_device_properties = _no_cuda
set_device = init = get_rng_state = set_rng_state = current_stream = default_stream = _no_cuda
reset_peak_memory_stats = mem_get_info = ipc_collect = _no_cuda
# Concern no device: accepted (PyTorch queues seeds lazily and has no cache to empty).
manual_seed = manual_seed_all = seed = seed_all = empty_cache = _nothing
memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = _zero


class device:
    """`with torch.cuda.device(i):`: constructible, raises on entering."""

    def __init__(self, device):
        self.idx = device

    def __enter__(self):
        _no_cuda()

    def __exit__(self, *exc) -> bool:
        return False


class device_of:
    """`with torch.cuda.device_of(tensor):`: a CPU tensor selects no device, so nothing happens."""

    def __init__(self, obj):
        self.idx = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False


class Stream:
    """A CUDA stream: cannot be created without CUDA."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        raise RuntimeError("torch.cuda.Stream requires CUDA support (tscript runs on the CPU only)")


class Event:
    """A CUDA event: cannot be created without CUDA."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        raise RuntimeError("torch.cuda.Event requires CUDA support (tscript runs on the CPU only)")


class stream:
    """`with torch.cuda.stream(s):`: with `None` (the only stream there can be here) nothing happens."""

    def __init__(self, stream):
        if stream is not None:
            _no_cuda()
        self.stream = stream

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False
