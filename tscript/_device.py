"""`tscript.device`: CPU only."""


class device:
    """A device, as `torch.device`; only "cpu" exists. Any other device raises RuntimeError."""
    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a string like 'cpu', got {type!r}")
        kind, _, idx = type.partition(":")
        if kind != "cpu":
            raise RuntimeError(f"tscript runs on the CPU only; device '{type}' is not available")
        self.type = "cpu"
        self.index = int(idx) if idx else index

    def __repr__(self) -> str:
        return "device(type='cpu')"

    def __str__(self) -> str:
        return "cpu"

    def __eq__(self, other) -> bool:
        return isinstance(other, (device, str)) and str(other).split(":")[0] == "cpu"

    def __hash__(self) -> int:
        return hash("cpu")


CPU = device("cpu")


def check_device(d) -> None:
    """Accept None, "cpu" or a cpu device; raise RuntimeError for anything else."""
    if d is not None:
        device(d)
