"""`tscript.device`: every PyTorch device type can be named, only the CPU exists.

As on a PyTorch build without accelerators, `device("cuda")` is a valid object; putting a tensor
there (`.cuda()`, `.to("cuda")`, `device="cuda"`) raises the error PyTorch raises on such a machine.
"""

# PyTorch's device types, in the order its error message lists them.
DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")

# What PyTorch says when a tensor is sent to a device this build lacks.
_MISSING = {"cuda": "Torch not compiled with CUDA enabled", "xpu": "Torch not compiled with XPU enabled",
            "mps": "PyTorch is not linked with support for mps devices"}
NO_ACCELERATOR = "Cannot access accelerator device when none is available."


class DeviceUnavailableError(AssertionError, RuntimeError):
    """A device other than the CPU was asked for. PyTorch raises AssertionError for CUDA and XPU and
    RuntimeError for the others; this is both, so either `except` catches it."""


class device:
    """A device, as `torch.device`: `device("cpu")`, `device("cuda:0")`, `device("cuda", 1)`. Only
    the CPU holds tensors; any other device raises `DeviceUnavailableError` when it is used."""
    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, int) and not isinstance(type, bool):
            raise DeviceUnavailableError(NO_ACCELERATOR)  # a bare index means "the current accelerator"
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a string like 'cpu', got {type!r}")
        kind, sep, idx = type.partition(":")
        if kind not in DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device string: "
                               f"{type}")
        if sep:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: "
                                   f"{type}")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type = kind
        self.index = index

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, TypeError):
                return False
        if not isinstance(other, device):
            return NotImplemented
        if self.type == other.type == "cpu":  # there is one CPU, whatever its index
            return True
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash("cpu") if self.type == "cpu" else hash((self.type, self.index))


CPU = device("cpu")


def unavailable(d: device) -> DeviceUnavailableError:
    """PyTorch's error for placing a tensor on `d` on a machine with the CPU only."""
    reason = f"{_MISSING[d.type]}: " if d.type in _MISSING else ""
    return DeviceUnavailableError(f"{reason}device '{d}' is not available (tscript runs on the CPU only)")


def check_device(d) -> None:
    """Accept None, "cpu" or a cpu device; any other device raises PyTorch's error for a CPU-only machine."""
    if d is None or d is CPU or d.__class__ is str and d == "cpu":
        return
    d = d if isinstance(d, device) else device(d)
    if d.type != "cpu":
        raise unavailable(d)


def get_default_device() -> device:
    """The device new tensors are created on: the CPU."""
    return CPU


def set_default_device(d) -> None:
    """Accepts None or the CPU (the only device); any other raises PyTorch's error for a CPU-only machine."""
    check_device(d)
