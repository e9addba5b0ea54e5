"""Recurrent time loops as single ops: one direction of one layer of an LSTM, GRU or Elman RNN over
every timestep, and each one's backward through time.

`gates` is the input projection `x W_ih^T + b_ih` of all timesteps, (T, B, G*H), computed before
the loop by one GEMM (G = 4 for the LSTM's i, f, g, o; 3 for the GRU's r, z, n; 1 for the RNN). Step t
adds `h_{t-1} W_hh^T + b_hh` and applies the cell; `reverse` walks t from T-1 down to 0. The output
holds every step's h, (T, B, H), so the last one is a view of it and the backward recomputes the
gates from the saved inputs instead of keeping them; the LSTM also returns its last cell state.

Each backward op returns the gradient of the pre-activations: for the LSTM and RNN one array (it is
both the gradient of `gates` and of the step's `h W_hh^T + b_hh`); for the GRU two, as its n gate
sees `r * (h W_hn^T + b_hn)`: the gradient of `gates`, then that of the recurrent product. The
weight gradients are then one GEMM over all steps (autograd's formula), not one per step."""
from __future__ import annotations

import numpy as np

from ..errors import OpRuntimeError, fmt_shape
from .linalg import product
from .registry import register

GATES = {"lstm": 4, "gru": 3, "rnn": 1}  # gates a cell computes (per hidden unit)


def _sigmoid(x):
    return 0.5 * (np.tanh(0.5 * x) + 1.0)


def _order(steps: int, reverse: bool) -> range:
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _check(kind: str, gates, w_hh, b_hh, states) -> None:
    """The shapes a `kind` sequence op needs, or an error naming the argument that differs."""
    name = f"_{kind}_sequence"
    if gates.ndim != 3:
        raise OpRuntimeError(f"{name}(): gates must be 3-D (time, batch, {GATES[kind]} * hidden), got "
                             f"{fmt_shape(gates.shape)}")
    if w_hh.ndim != 2:
        raise OpRuntimeError(f"{name}(): weight_hh must be 2-D, got {fmt_shape(w_hh.shape)}")
    width, hidden = w_hh.shape
    batch = gates.shape[1]
    _expect(name, "weight_hh", w_hh.shape, (GATES[kind] * hidden if isinstance(hidden, int) else width, hidden))
    _expect(name, "gates", gates.shape, (gates.shape[0], batch, width))
    if b_hh is not None:
        _expect(name, "bias_hh", b_hh.shape, (width,))
    for label, state in states:
        _expect(name, label, state.shape, (batch, hidden))
    for label, t in (("weight_hh", w_hh), ("bias_hh", b_hh), *states):
        if t is not None and t.dtype != gates.dtype:
            raise OpRuntimeError(f"{name}(): {label} has dtype {t.dtype}, expected {gates.dtype} (as gates)")
    if gates.dtype.kind not in "fc":
        raise OpRuntimeError(f"{name}(): expected floating point gates, got {gates.dtype}")


def _expect(name: str, label: str, shape, want) -> None:
    if len(shape) != len(want) or any(isinstance(a, int) and isinstance(b, int) and a != b
                                      for a, b in zip(shape, want)):
        raise OpRuntimeError(f"{name}(): {label} must have shape {fmt_shape(want)}, got {fmt_shape(shape)}")


def _recurrent(h, w_hh, b_hh):
    s = product(h, w_hh.T)
    return s if b_hh is None else s + b_hh


# -- LSTM -------------------------------------------------------------------------------------------

def _lstm_shape(gates, h0, c0, w_hh, b_hh=None, reverse=False):
    _check("lstm", gates, w_hh, b_hh, (("h0", h0), ("c0", c0)))
    return tuple(gates.shape[:2]) + (w_hh.shape[1],), tuple(c0.shape)


def _lstm_cell(pre, c_prev):
    i, f, g, o = np.split(pre, 4, axis=-1)
    i, f, g, o = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
    c = f * c_prev + i * g
    return (i, f, g, o), c, o * np.tanh(c)


@register("aten::_lstm_sequence(Tensor gates, Tensor h0, Tensor c0, Tensor weight_hh, Tensor? bias_hh=None, "
          "bool reverse=False) -> (Tensor, Tensor)",
          shape=_lstm_shape, dtype=lambda gates, *rest: (gates.dtype, gates.dtype))
def lstm_sequence(gates, h0, c0, w_hh, b_hh=None, reverse=False):
    """(every step's h, the last cell state c) of an LSTM direction (see the module docstring)."""
    hs = np.empty(_lstm_shape(gates, h0, c0, w_hh, b_hh, reverse)[0], gates.dtype)
    h, c = h0, c0
    for t in _order(hs.shape[0], reverse):
        _, c, h = _lstm_cell(gates[t] + _recurrent(h, w_hh, b_hh), c)
        hs[t] = h
    return hs, np.array(c, gates.dtype)


def _previous(hs, h0, reverse: bool):
    """Each step's incoming h: h0, then every h but the last (reverse: but the first)."""
    return np.concatenate([hs[1:], h0[None]]) if reverse else np.concatenate([h0[None], hs[:-1]])


@register("aten::_lstm_sequence_backward(Tensor grad_hs, Tensor grad_c, Tensor gates, Tensor h0, Tensor c0, "
          "Tensor weight_hh, Tensor? bias_hh, Tensor hs, bool reverse) -> (Tensor, Tensor, Tensor)",
          shape=lambda g_hs, g_c, gates, h0, c0, *rest: (tuple(gates.shape), tuple(h0.shape), tuple(c0.shape)),
          dtype=lambda g_hs, g_c, gates, *rest: (gates.dtype,) * 3)
def lstm_sequence_backward(g_hs, g_c, gates, h0, c0, w_hh, b_hh, hs, reverse):
    """(d pre-activations (T, B, 4H), d h0, d c0) of `_lstm_sequence`, through time. Every step's
    incoming h is saved (hs), so the pre-activations are one product; the cells run forward again."""
    pre = gates + _recurrent(_previous(hs, h0, reverse), w_hh, b_hh)
    steps = gates.shape[0]
    acts, cs = [None] * steps, np.empty(hs.shape, gates.dtype)
    c = c0
    for t in _order(steps, reverse):
        acts[t], c, _ = _lstm_cell(pre[t], c)
        cs[t] = c
    d_pre = np.empty(gates.shape, gates.dtype)
    dh, dc = np.zeros_like(h0), np.array(g_c, gates.dtype)
    for t in _order(steps, not reverse):
        before = t + 1 if reverse else t - 1
        c_prev = c0 if before in (-1, steps) else cs[before]
        (i, f, g, o), tanh_c = acts[t], np.tanh(cs[t])
        dh = g_hs[t] + dh
        dc = dc + dh * o * (1 - tanh_c * tanh_c)
        d_pre[t] = np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g),
                                   dh * tanh_c * o * (1 - o)], axis=-1)
        dc, dh = dc * f, product(d_pre[t], w_hh)
    return d_pre, dh, dc


# -- GRU --------------------------------------------------------------------------------------------

def _gru_shape(gates, h0, w_hh, b_hh=None, reverse=False):
    _check("gru", gates, w_hh, b_hh, (("h0", h0),))
    return tuple(gates.shape[:2]) + (w_hh.shape[1],)


def _gru_cell(x_gates, h_gates, h_prev):
    x_r, x_z, x_n = np.split(x_gates, 3, axis=-1)
    h_r, h_z, h_n = np.split(h_gates, 3, axis=-1)
    r, z = _sigmoid(x_r + h_r), _sigmoid(x_z + h_z)
    n = np.tanh(x_n + r * h_n)
    return (r, z, n, h_n), (h_prev - n) * z + n


@register("aten::_gru_sequence(Tensor gates, Tensor h0, Tensor weight_hh, Tensor? bias_hh=None, "
          "bool reverse=False) -> Tensor", shape=_gru_shape, dtype=lambda gates, *rest: gates.dtype)
def gru_sequence(gates, h0, w_hh, b_hh=None, reverse=False):
    """Every step's h of a GRU direction (PyTorch's formulation; see the module docstring)."""
    hs = np.empty(_gru_shape(gates, h0, w_hh, b_hh, reverse), gates.dtype)
    h = h0
    for t in _order(hs.shape[0], reverse):
        _, h = _gru_cell(gates[t], _recurrent(h, w_hh, b_hh), h)
        hs[t] = h
    return hs


@register("aten::_gru_sequence_backward(Tensor grad_hs, Tensor gates, Tensor h0, Tensor weight_hh, "
          "Tensor? bias_hh, Tensor hs, bool reverse) -> (Tensor, Tensor, Tensor)",
          shape=lambda g_hs, gates, h0, *rest: (tuple(gates.shape), tuple(gates.shape), tuple(h0.shape)),
          dtype=lambda g_hs, gates, *rest: (gates.dtype,) * 3)
def gru_sequence_backward(g_hs, gates, h0, w_hh, b_hh, hs, reverse):
    """(d gates, d recurrent pre-activations (both (T, B, 3H)), d h0) of `_gru_sequence`."""
    d_x, d_h = np.empty(gates.shape, gates.dtype), np.empty(gates.shape, gates.dtype)
    dh = np.zeros_like(h0)
    steps = gates.shape[0]
    for t in _order(steps, not reverse):
        before = t + 1 if reverse else t - 1
        h_prev = h0 if before in (-1, steps) else hs[before]
        (r, z, n, h_n), _ = _gru_cell(gates[t], _recurrent(h_prev, w_hh, b_hh), h_prev)
        dh = g_hs[t] + dh
        d_n = dh * (1 - z) * (1 - n * n)
        d_r = d_n * h_n * r * (1 - r)
        d_z = dh * (h_prev - n) * z * (1 - z)
        d_x[t] = np.concatenate([d_r, d_z, d_n], axis=-1)
        d_h[t] = np.concatenate([d_r, d_z, d_n * r], axis=-1)
        dh = dh * z + product(d_h[t], w_hh)
    return d_x, d_h, dh


# -- Elman RNN ----------------------------------------------------------------------------------------

def _rnn_shape(gates, h0, w_hh, b_hh=None, relu=False, reverse=False):
    _check("rnn", gates, w_hh, b_hh, (("h0", h0),))
    return tuple(gates.shape[:2]) + (w_hh.shape[1],)


def _rnn_cell(pre, relu: bool):
    return np.maximum(pre, 0) if relu else np.tanh(pre)


@register("aten::_rnn_sequence(Tensor gates, Tensor h0, Tensor weight_hh, Tensor? bias_hh=None, bool relu=False, "
          "bool reverse=False) -> Tensor", shape=_rnn_shape, dtype=lambda gates, *rest: gates.dtype)
def rnn_sequence(gates, h0, w_hh, b_hh=None, relu=False, reverse=False):
    """Every step's h = tanh (or relu) of gates[t] + h W_hh^T + b_hh, of an RNN direction."""
    hs = np.empty(_rnn_shape(gates, h0, w_hh, b_hh, relu, reverse), gates.dtype)
    h = h0
    for t in _order(hs.shape[0], reverse):
        h = hs[t] = _rnn_cell(gates[t] + _recurrent(h, w_hh, b_hh), relu)
    return hs


@register("aten::_rnn_sequence_backward(Tensor grad_hs, Tensor hs, Tensor weight_hh, bool relu, bool reverse) "
          "-> (Tensor, Tensor)",
          shape=lambda g_hs, hs, w_hh, *rest: (tuple(hs.shape), tuple(hs.shape[1:])),
          dtype=lambda g_hs, hs, *rest: (hs.dtype,) * 2)
def rnn_sequence_backward(g_hs, hs, w_hh, relu, reverse):
    """(d pre-activations (T, B, H), d h0) of `_rnn_sequence` (the cell's derivative reads its output)."""
    d_pre = np.empty(hs.shape, hs.dtype)
    dh = np.zeros(hs.shape[1:], hs.dtype)
    for t in _order(hs.shape[0], not reverse):
        dh = g_hs[t] + dh
        d_pre[t] = dh * (hs[t] > 0) if relu else dh * (1 - hs[t] * hs[t])
        dh = product(d_pre[t], w_hh)
    return d_pre, dh
