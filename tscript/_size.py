"""`tscript.Size`: the tuple subclass `Tensor.shape` returns."""


class Size(tuple):
    """A tensor shape, as `torch.Size`."""

    def __repr__(self) -> str:
        return f"tscript.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n


def size_args(args, what: str = "size") -> tuple:
    """Sizes given as varargs `f(2, 3)` or as one sequence `f((2, 3))`, as PyTorch accepts them."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for a in args:
        if not isinstance(a, int) or isinstance(a, bool):
            if hasattr(a, "__index__") and not isinstance(a, bool):
                continue
            raise TypeError(f"{what}: expected a sequence of ints, but got an element of type "
                            f"{type(a).__name__}")
    return tuple(a if isinstance(a, int) else int(a) for a in args)  # int subclasses (TracedInt) kept
