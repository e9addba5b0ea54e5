"""tscript.accelerator: `torch.accelerator` on a machine with the CPU only — there is none.

`is_available()` is False, `current_accelerator()` None and `device_count()` 0, as in PyTorch 2.13
without an accelerator; everything that would act on one raises PyTorch's RuntimeError.
"""
from ._device import NO_ACCELERATOR, DeviceUnavailableError

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "current_stream", "device_count",
           "device_index", "empty_cache", "get_device_capability", "is_available", "max_memory_allocated",
           "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx", "set_device_index",
           "set_stream", "synchronize"]


def is_available() -> bool:
    """False: no accelerator."""
    return False


def current_accelerator(check_available: bool = False):
    """None: no accelerator."""
    return None


def device_count() -> int:
    """0 accelerator devices."""
    return 0


def _none_available(*args, **kwargs):
    raise DeviceUnavailableError(NO_ACCELERATOR)


current_device_index = current_device_idx = set_device_index = set_device_idx = _none_available
current_stream = set_stream = synchronize = get_device_capability = empty_cache = _none_available
memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = memory_stats = _none_available
reset_accumulated_memory_stats = reset_peak_memory_stats = _none_available


class device_index:
    """`with torch.accelerator.device_index(i):`: constructible; `None` selects nothing, any index raises."""

    def __init__(self, device):
        self.idx = device

    def __enter__(self):
        if self.idx is not None:
            _none_available()
        return self

    def __exit__(self, *exc) -> bool:
        return False
