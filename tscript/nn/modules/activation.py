"""Activation modules: thin wrappers over nn.functional with PyTorch's arguments and reprs."""
from __future__ import annotations

from ..._creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "Hardtanh", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Softplus",
           "Sigmoid", "Tanh", "LogSigmoid", "Hardsigmoid", "Hardswish", "Softsign", "Tanhshrink", "Threshold",
           "PReLU", "GLU", "Softmax", "LogSoftmax", "Softmin"]


class _Inplace(Module):
    """An activation with an `inplace` flag, shown in the repr only when set."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    """max(x, 0)."""

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)


class ReLU6(_Inplace):
    """min(max(x, 0), 6)."""

    def forward(self, input):
        return F.relu6(input, inplace=self.inplace)


class SELU(_Inplace):
    """Scaled ELU with the self-normalising constants."""

    def forward(self, input):
        return F.selu(input, inplace=self.inplace)


class SiLU(_Inplace):
    """x * sigmoid(x)."""

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)


class Mish(_Inplace):
    """x * tanh(softplus(x))."""

    def forward(self, input):
        return F.mish(input, inplace=self.inplace)


class Hardsigmoid(Module):
    """relu6(x + 3) / 6."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardsigmoid(input, inplace=self.inplace)


class Hardswish(Hardsigmoid):
    """x * relu6(x + 3) / 6."""

    def forward(self, input):
        return F.hardswish(input, inplace=self.inplace)


class LeakyReLU(Module):
    """x where positive, negative_slope * x elsewhere."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class Hardtanh(Module):
    """x clamped to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None):
        super().__init__()
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise ValueError(f"Hardtanh: max_val ({self.max_val}) must be greater than min_val ({self.min_val})")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x where positive, alpha * (exp(x) - 1) elsewhere."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class GELU(Module):
    """x * Phi(x), exactly (approximate='none') or with the tanh approximation."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, linear above threshold."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Threshold(Module):
    """x where x > threshold, else value."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class PReLU(Module):
    """leaky_relu with a learnt slope `weight` (one, or one per channel), initialised to `init`."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """a * sigmoid(b) for the two halves a, b of the input along `dim`."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _Stateless(Module):
    """An activation without arguments."""
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class Sigmoid(_Stateless):
    """1 / (1 + exp(-x))."""
    _fn = staticmethod(F.sigmoid)


class Tanh(_Stateless):
    """tanh(x)."""
    _fn = staticmethod(F.tanh)


class LogSigmoid(_Stateless):
    """log(sigmoid(x))."""
    _fn = staticmethod(F.logsigmoid)


class Softsign(_Stateless):
    """x / (1 + |x|)."""
    _fn = staticmethod(F.softsign)


class Tanhshrink(_Stateless):
    """x - tanh(x)."""
    _fn = staticmethod(F.tanhshrink)


class _SoftmaxBase(Module):
    """softmax-like along `dim` (None: PyTorch's legacy choice of dim, with a warning)."""
    _fn = None

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """exp(x) / sum(exp(x)) along dim."""
    _fn = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxBase):
    """log(softmax(x)) along dim."""
    _fn = staticmethod(F.log_softmax)


class Softmin(_SoftmaxBase):
    """softmax(-x) along dim."""
    _fn = staticmethod(F.softmin)
