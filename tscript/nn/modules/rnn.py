"""Recurrent layers: RNN, LSTM, GRU and their one-step cells, with PyTorch's parameter names, gate
order (LSTM i, f, g, o; GRU r, z, n), initialisation, defaults and argument checks.

One direction of one layer runs as: the input projection `x W_ih^T + b_ih` of every timestep in one
matmul, then the time loop as one op (`_lstm_sequence`, `_gru_sequence`, `_rnn_sequence`: a loop in
native code when compiled); an LSTM with projections loops over the timesteps in Python, each step a
few whole-batch tensor ops."""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Optional, Tuple

import tscript as torch

from tscript_runtime.ops import OPS

from ..._creation import empty
from ..._dispatch import dispatch
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


# -- one timestep of each kind of cell ----------------------------------------------------------------
# `x_gates` is the precomputed input projection x W_ih^T + b_ih of this step; `state` is (h,) or, for
# the LSTM, (h, c). Each returns the new state; its first element is the step's output.

def _tanh_step(x_gates, state, w_hh, b_hh):
    return (torch.tanh(x_gates + F.linear(state[0], w_hh, b_hh)),)


def _relu_step(x_gates, state, w_hh, b_hh):
    return (F.relu(x_gates + F.linear(state[0], w_hh, b_hh)),)


def _lstm_step(x_gates, state, w_hh, b_hh):
    h, c = state
    i, f, g, o = (x_gates + F.linear(h, w_hh, b_hh)).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def _gru_step(x_gates, state, w_hh, b_hh):
    h = state[0]
    x_r, x_z, x_n = x_gates.chunk(3, 1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, 1)
    r = (x_r + h_r).sigmoid()
    z = (x_z + h_z).sigmoid()
    n = torch.tanh(x_n + r * h_n)
    return ((h - n) * z + n,)


def _lstm_sequence(x_gates, state, w_hh, b_hh, reverse):
    hs, c = dispatch(OPS["aten::_lstm_sequence"], (x_gates, state[0], state[1], w_hh, b_hh, reverse))
    return hs, (hs[0 if reverse else -1], c)


def _gru_sequence(x_gates, state, w_hh, b_hh, reverse):
    hs = dispatch(OPS["aten::_gru_sequence"], (x_gates, state[0], w_hh, b_hh, reverse))
    return hs, (hs[0 if reverse else -1],)


def _rnn_sequence(relu: bool):
    def run(x_gates, state, w_hh, b_hh, reverse):
        hs = dispatch(OPS["aten::_rnn_sequence"], (x_gates, state[0], w_hh, b_hh, relu, reverse))
        return hs, (hs[0 if reverse else -1],)
    return run


# A whole direction's time loop as one op (tscript_runtime/ops/recurrent.py): the output of every step
# and the final state (LSTMs with projections run `_run_direction`'s steps instead).
_SEQUENCES = {"LSTM": _lstm_sequence, "GRU": _gru_sequence, "RNN_TANH": _rnn_sequence(False),
              "RNN_RELU": _rnn_sequence(True)}
_STEPS = {"RNN_TANH": _tanh_step, "RNN_RELU": _relu_step, "LSTM": _lstm_step, "GRU": _gru_step}
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _run_direction(step, x_gates: list, state: tuple, w_hh, b_hh, w_hr, reverse: bool):
    """Run one direction over all timesteps: (outputs stacked on dim 0, final state)."""
    outputs = [None] * len(x_gates)
    for t in (reversed(range(len(x_gates))) if reverse else range(len(x_gates))):
        state = step(x_gates[t], state, w_hh, b_hh)
        if w_hr is not None:  # LSTM with projections: h is projected to proj_size
            state = (F.linear(state[0], w_hr),) + state[1:]
        outputs[t] = state[0]
    return torch.stack(outputs), state


def _check_int(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")


class RNNBase(Module):
    """The multi-layer, optionally bidirectional recurrent layer behind RNN, LSTM and GRU."""

    _rank_message = "RNN: Expected input to be 2D or 3D, got {}D tensor instead"

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device=None, dtype=None):
        super().__init__()
        self._check_args(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        self._flat_weights_names, self._all_weights = [], []
        gate_size, real_hidden = _GATES[mode] * hidden_size, proj_size or hidden_size
        for layer in range(num_layers):
            for direction in range(self._directions):
                layer_input = input_size if layer == 0 else real_hidden * self._directions
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = [f"{kind}_{self._suffix(layer, direction)}" for kind, _ in shapes]
                for name, (_, shape) in zip(names, shapes):
                    setattr(self, name, Parameter(empty(*shape, dtype=dtype, device=device)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @staticmethod
    def _check_args(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size) -> None:
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of "
                             "an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=3)
        for name, value in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
        for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            _check_int(name, value)
            if value <= 0:
                raise ValueError(f"{name} must be greater than zero")
        _check_int("num_layers", num_layers)
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _STEPS:
            raise ValueError("Unrecognized RNN mode: " + mode)

    @staticmethod
    def _suffix(layer: int, direction: int) -> str:
        return f"l{layer}" + ("_reverse" if direction else "")

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """The parameters of each layer and direction, in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """A no-op (PyTorch compacts cuDNN weights here; there is no cuDNN on the CPU)."""

    # -- argument checks ------------------------------------------------------------------------------
    def check_input(self, input, batch_sizes=None) -> None:
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                             f"Convert input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        if input.dim() != 3:
            raise RuntimeError(f"input must have 3 dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes=None) -> tuple:
        mini_batch = input.size(0) if self.batch_first else input.size(1)
        return self.num_layers * self._directions, mini_batch, self.proj_size or self.hidden_size

    def _expected_state_sizes(self, input) -> list:
        return [self.get_expected_hidden_size(input)]

    def check_hidden_size(self, hx, expected_hidden_size, msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.size())))

    def _state_message(self, index: int) -> str:
        return "Expected hidden size {}, got {}"

    def _initial_state(self, hx, input, batched: bool) -> tuple:
        """`hx` as a tuple of batched state tensors (zeros when None), each checked for rank."""
        if hx is None:
            return tuple(torch.zeros(*size, dtype=input.dtype) for size in self._expected_state_sizes(input))
        want = 3 if batched else 2
        if hx.dim() != want:
            kind = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {hx.dim()}-D tensor")
        return (hx if batched else hx.unsqueeze(1),)

    def _pack_state(self, state: tuple):
        return state[0]

    # -- forward ----------------------------------------------------------------------------------------
    def forward(self, input, hx=None):
        """(output, h_n) — for the LSTM (output, (h_n, c_n)) — for a 3-D input (seq, batch, feature)
        (batch first when `batch_first`) or an unbatched 2-D input (seq, feature)."""
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
        output, state = self._run_layers(input.transpose(0, 1) if self.batch_first else input, state)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output, state = output.squeeze(batch_dim), tuple(s.squeeze(1) for s in state)
        return output, self._pack_state(state)

    def _run_layers(self, x, state: tuple):
        """All layers over a time-major input x (seq, batch, feature): (output, final state tuple)."""
        step, directions = _STEPS[self.mode], self._directions
        starts = list(zip(*(s.unbind(0) for s in state)))  # one state tuple per layer and direction
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, direction)
                x_gates, start = F.linear(x, w_ih, b_ih), starts[layer * directions + direction]
                if w_hr is None:
                    out, final = _SEQUENCES[self.mode](x_gates, start, w_hh, b_hh, direction == 1)
                else:
                    out, final = _run_direction(step, x_gates.unbind(0), start, w_hh, b_hh, w_hr, direction == 1)
                outputs.append(out)
                finals.append(final)
            x = outputs[0] if directions == 1 else torch.cat(outputs, 2)
            if self.training and self.dropout > 0 and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, training=True)
        return x, tuple(torch.stack(list(s)) for s in zip(*finals))

    def _weights(self, layer: int, direction: int) -> tuple:
        suffix = self._suffix(layer, direction)
        return tuple(getattr(self, f"{kind}_{suffix}", None)
                     for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"))

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None):
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(modes[nonlinearity], input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's formulation (gates r, z, n; n = tanh(W_in x + b_in +
    r * (W_hn h + b_hn)); h' = (1 - z) * n + z * h)."""

    _rank_message = "GRU: Expected input to be 2D or 3D, got {}D instead"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o), optionally with projections (`proj_size`)."""

    _rank_message = "LSTM: Expected input to be 2D or 3D, got {}D instead"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)

    def forward(self, input, hx: Optional[Tuple[Tensor, Tensor]] = None):
        """(output, (h_n, c_n)); `hx` is (h_0, c_0) or None (zeros)."""
        return super().forward(input, hx)

    def get_expected_cell_size(self, input, batch_sizes=None) -> tuple:
        mini_batch = input.size(0) if self.batch_first else input.size(1)
        return self.num_layers * self._directions, mini_batch, self.hidden_size

    def _expected_state_sizes(self, input) -> list:
        return [self.get_expected_hidden_size(input), self.get_expected_cell_size(input)]

    def _state_message(self, index: int) -> str:
        return f"Expected hidden[{index}] size {{}}, got {{}}"

    def _initial_state(self, hx, input, batched: bool) -> tuple:
        if hx is None:
            return super()._initial_state(hx, input, batched)
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError(f"LSTM: hx must be a tuple (h_0, c_0) of two tensors, got {type(hx).__name__}")
        want = 3 if batched else 2
        if hx[0].dim() != want or hx[1].dim() != want:
            kind = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                               f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        return tuple(hx) if batched else (hx[0].unsqueeze(1), hx[1].unsqueeze(1))

    def _pack_state(self, state: tuple):
        return state


# -- cells ---------------------------------------------------------------------------------------------

class RNNCellBase(Module):
    """One step of a recurrent layer: weight_ih (G*H, I), weight_hh (G*H, H), bias_ih, bias_hh (G*H)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, dtype=dtype, device=device))
        for name in ("bias_ih", "bias_hh"):
            if bias:
                setattr(self, name, Parameter(empty(num_chunks * hidden_size, dtype=dtype, device=device)))
            else:
                self.register_parameter(name, None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _step(self, mode: str, input, state: tuple) -> tuple:
        """Check shapes like PyTorch's cell kernels, then run one step of `mode` on batched tensors."""
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected "
                               f"{self.input_size}")
        for i, s in enumerate(state):
            if input.size(0) != s.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{i} batch size "
                                   f"{s.size(0)}")
            if s.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {s.size(1)}, expected "
                                   f"{self.hidden_size}")
        x_gates = F.linear(input, self.weight_ih, self.bias_ih)
        return _STEPS[mode](x_gates, state, self.weight_hh, self.bias_hh)

    def _single(self, mode: str, input, hx):
        """Forward of the one-state cells (RNNCell, GRUCell), batched or unbatched."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = torch.zeros(input.size(0), self.hidden_size, dtype=input.dtype)
        elif not batched:
            hx = hx.unsqueeze(0)
        (h,) = self._step(mode, input, (hx,))
        return h if batched else h.squeeze(0)


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx: Optional[Tensor] = None):
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._single("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU", input, hx)


class GRUCell(RNNCellBase):
    """One GRU step (gates r, z, n)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._single("GRU", input, hx)


class LSTMCell(RNNCellBase):
    """One LSTM step (gates i, f, g, o): returns (h', c')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx: Optional[Tuple[Tensor, Tensor]] = None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for i, value in enumerate(hx or ()):
            if value.dim() not in (1, 2):
                raise ValueError(f"LSTMCell: Expected hx[{i}] to be 1D or 2D, got {value.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = torch.zeros(input.size(0), self.hidden_size, dtype=input.dtype)
            hx = (zeros, zeros)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = self._step("LSTM", input, tuple(hx))
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))
