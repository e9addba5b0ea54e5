"""tscript.cpu: the one device tscript runs on, as `torch.cpu` (and the deprecated `torch.cpu.amp`)."""
from . import amp

__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]


def is_available() -> bool:
    """Always True."""
    return True


def device_count() -> int:
    """1: the CPU."""
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """Nothing to wait for: CPU work is done when a call returns."""
