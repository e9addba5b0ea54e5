"""Scriptable stand-ins for library code whose Python source goes beyond the TorchScript language
(a result typed by a union, `with no_grad()`, `**kwargs`, autograd-only tricks). Each stand-in
computes exactly what the library code computes, with the same ops; the compiler uses it wherever
scripted code calls the original.

Most of nn and nn.functional compiles from its own source: library code is specialized on
constant arguments, so Python-side branches on them (`if inplace:`, `if stride is None:`) fold
away, lambdas passed to helpers are compiled where they are called, and
`dispatch(OPS["aten::x"], (...))` is understood as a call of that op.
"""
from __future__ import annotations

from typing import Optional

from ..._api_indexing import where
from ..._tensor import Tensor
from ...nn import functional as F
from ...nn.functional import activation as _activation
from ...nn.functional import norm as _norm
from ...nn.modules import container, conv, linear, sparse


def linear_forward(self, input: Tensor) -> Tensor:
    """nn.Linear (its eager input check builds a message of two types)."""
    return F.linear(input, self.weight, self.bias)


def sequential_forward(self, input):
    """nn.Sequential (which iterates over its `_modules` dict)."""
    for module in self:
        input = module(input)
    return input


def conv_transpose2d_forward(self, input: Tensor) -> Tensor:
    """nn.ConvTranspose2d without the `output_size` argument."""
    return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                              self.groups, self.dilation)


def embedding_forward(self, input: Tensor) -> Tensor:
    """nn.Embedding: the rows of the weight; the padding row gets no gradient."""
    if self.max_norm is not None:
        raise NotImplementedError("Embedding(max_norm=...) renormalizes its weight in place; it is not supported "
                                  "in scripted code")
    out = self.weight.index_select(0, input.reshape(-1)).reshape(input.shape + [self.weight.shape[1]])
    if self.padding_idx is not None:
        out = where((input == self.padding_idx).unsqueeze(-1), out.detach(), out)
    return out


def check_float(name: str, input: Tensor):
    """nn.functional.activation._check_float (whose message names the dtype by Tensor.type())."""
    if not input.is_floating_point():
        raise NotImplementedError(f'"{name}" not implemented for integer tensors')


def check_channels(channels: int, running_mean: Optional[Tensor] = None, running_var: Optional[Tensor] = None,
                   weight: Optional[Tensor] = None, bias: Optional[Tensor] = None):
    """nn.functional.norm._check_channels (which takes **tensors)."""
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")


def update_running(running: Tensor, batch_value: Tensor, momentum: float):
    """nn.functional.norm._update_running (eagerly under no_grad; here the values are detached)."""
    running.copy_(running * (1 - momentum) + batch_value.detach().reshape(-1).to(running.dtype) * momentum)


SHIMS = {
    linear.Linear.forward: linear_forward,
    container.Sequential.forward: sequential_forward,
    conv.ConvTranspose2d.forward: conv_transpose2d_forward,
    sparse.Embedding.forward: embedding_forward,
    _activation._check_float: check_float,
    _norm._check_channels: check_channels,
    _norm._update_running: update_running,
}
