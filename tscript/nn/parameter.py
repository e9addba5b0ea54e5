"""`nn.Parameter`: a tensor that a Module registers as a learnable parameter."""
from .._tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad (by default) and is registered when assigned to a Module."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from .._creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, not {type(data).__name__}")
        p = object.__new__(cls)
        p._data, p._vc = data._data, data._vc
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data=None, requires_grad: bool = True):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
