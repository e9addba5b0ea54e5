"""linear: the affine map of nn.Linear."""
from ..._dispatch import dispatch
from ..._tensor import Tensor
from tscript_runtime.ops import OPS

__all__ = ["linear"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = input @ weight^T + bias (recorded as one `aten::linear` op)."""
    return dispatch(OPS["aten::linear"], (input, weight, bias))
