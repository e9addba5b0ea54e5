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

from typing import List, Optional

import tscript as torch

from ..._api_indexing import where
from ..._tensor import Tensor
from ...nn import functional as F
from ...nn.functional import activation as _activation
from ...nn.functional import loss as _loss
from ...nn.functional import norm as _norm
from ...nn.modules import container, conv, linear, rnn, sparse
from ...nn.parallel import DataParallel


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


def pick(logp: Tensor, target: Tensor, valid: Tensor, class_dim: int) -> Tensor:
    """nn.functional.loss._pick (which inspects the targets when gather raises; scripted code
    checks them first)."""
    bad = valid & ((target < 0) | (target >= logp.shape[class_dim]))
    if bool(bad.any()):
        raise IndexError(f"Target {int(target[bad].reshape(-1)[0])} is out of bounds.")
    safe = where(valid, target, 0).unsqueeze(class_dim)
    return logp.gather(class_dim, safe).squeeze(class_dim)


def rnn_forward(self, input: Tensor, hx=None):
    """nn.RNNBase.forward (RNN, GRU, LSTM): the same checks and steps, with the states of the
    layers taken apart by indexing (the eager code regroups them with zip(*...))."""
    if input.dim() not in (2, 3):
        raise ValueError(self._rank_message.format(input.dim()))
    batched = input.dim() == 3
    batch_dim = 0 if self.batch_first else 1
    if not batched:
        input = input.unsqueeze(batch_dim)
    state = self._initial_state(hx, input, batched)
    self.check_input(input)
    for i, (s, size) in enumerate(zip(state, self._expected_state_sizes(input))):
        self.check_hidden_size(s, size, self._state_message(i))
    if input.size(1 if self.batch_first else 0) == 0:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    output, finals = self._run_layers(input.transpose(0, 1) if self.batch_first else input, state)
    if self.batch_first:
        output = output.transpose(0, 1)
    if not batched:
        output = output.squeeze(batch_dim)
        finals = [s.squeeze(1) for s in finals]
    return output, self._pack_state((finals[0], finals[1]) if self.mode == "LSTM" else (finals[0],))


def rnn_layers(self, x: Tensor, state):
    """nn.RNNBase._run_layers: every layer and direction over a time-major x, unrolled over the
    layers (their weights are attributes named by layer) with a loop over the timesteps; `state`
    holds (h,) or (h, c) of every layer and direction, as a tuple or a list."""
    step, directions, lstm = rnn._STEPS[self.mode], self._directions, self.mode == "LSTM"
    h_0, c_0 = state[0].unbind(0), state[-1].unbind(0)
    h_n: List[Tensor] = []
    c_n: List[Tensor] = []
    outputs: List[Tensor] = []
    for k, _ in enumerate(self._all_weights):
        layer, direction = k // directions, k % directions
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, direction)
        x_gates = F.linear(x, w_ih, b_ih).unbind(0)
        h, c = h_0[k], c_0[k]
        steps: List[Tensor] = []
        n = len(x_gates)
        for i in range(n):
            if lstm:
                h, c = step(x_gates[n - 1 - i if direction == 1 else i], (h, c), w_hh, b_hh)
            else:
                h = step(x_gates[n - 1 - i if direction == 1 else i], (h,), w_hh, b_hh)[0]
            if w_hr is not None:
                h = F.linear(h, w_hr)
            steps.append(h)
        outputs.append(torch.stack(steps).flip([0]) if direction == 1 else torch.stack(steps))
        h_n.append(h)
        c_n.append(c)
        if direction == directions - 1:
            x = outputs[0] if directions == 1 else torch.cat(outputs, 2)
            outputs = []
            if self.training and self.dropout > 0 and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, training=True)
    return x, [torch.stack(h_n), torch.stack(c_n)] if lstm else [torch.stack(h_n)]


def data_parallel_forward(self, input):
    """nn.DataParallel.forward (`module(*inputs, **kwargs)`) for the common one-input module."""
    return self.module(input)


SHIMS = {
    linear.Linear.forward: linear_forward,
    container.Sequential.forward: sequential_forward,
    conv.ConvTranspose2d.forward: conv_transpose2d_forward,
    sparse.Embedding.forward: embedding_forward,
    _activation._check_float: check_float,
    _norm._check_channels: check_channels,
    _norm._update_running: update_running,
    _loss._pick: pick,
    rnn.RNNBase.forward: rnn_forward,
    rnn.RNNBase._run_layers: rnn_layers,
    DataParallel.forward: data_parallel_forward,
}
