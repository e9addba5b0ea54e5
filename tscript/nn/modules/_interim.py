"""TEMPORARY stand-ins until the norm/dropout/activation helpers land. Remove."""
import math
import tscript as torch
from ..parameter import Parameter
from .module import Module
from .. import functional as F


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = Parameter(torch.ones(*self.normalized_shape, dtype=dtype))
        self.bias = Parameter(torch.zeros(*self.normalized_shape, dtype=dtype)) if bias else None

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        y = (x - mean) / (var + self.eps).sqrt() * self.weight
        return y if self.bias is None else y + self.bias

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
