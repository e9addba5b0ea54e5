"""Memory formats (`tscript.contiguous_format`, `channels_last`, ...), as `torch.memory_format`.

tscript accepts them wherever PyTorch does (`contiguous`, `clone`, `to`, `empty`, `*_like`) and
checks them as PyTorch does (channels_last needs a 4-d tensor), but the layout is a hint: results are
row-major (contiguous) whatever format is asked for. `is_contiguous(memory_format=...)` reads the
real strides.
"""


class memory_format:
    """A tensor memory layout, as `torch.memory_format`."""
    __slots__ = ("name", "order")

    def __init__(self, name: str, order: tuple | None = None):
        self.name = name
        self.order = order  # the dims from outermost to innermost in memory (channels last: N, H, W, C)

    def __repr__(self) -> str:
        return f"tscript.{self.name}"

    def __reduce__(self):
        return self.name


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last", (0, 2, 3, 1))
channels_last_3d = memory_format("channels_last_3d", (0, 2, 3, 4, 1))

FORMATS = {f.name: f for f in (preserve_format, contiguous_format, channels_last, channels_last_3d)}


def check(fmt, ndim: int, op: str) -> None:
    """Raise PyTorch's error when `fmt` is not a memory format or does not fit a tensor of rank `ndim`."""
    if fmt is None:
        return
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be torch.memory_format, not {type(fmt).__name__}")
    if fmt.order is not None and ndim != len(fmt.order):
        raise RuntimeError(f"required rank {len(fmt.order)} tensor to use {fmt.name} format")


def is_laid_out(array, fmt) -> bool:
    """Does `array` (an ndarray) lie in memory in the order `fmt` names?"""
    check(fmt, array.ndim, "is_contiguous")
    if fmt is None or fmt.order is None:
        return array.flags.c_contiguous
    return array.transpose(fmt.order).flags.c_contiguous
