"""Derivatives of the recurrent sequence ops (tscript_runtime/ops/recurrent.py): the backward op walks
the steps in reverse for the pre-activation gradients; the recurrent weight's gradient is then one
GEMM over every step at once, and the bias's one sum."""
from __future__ import annotations

from .derivatives import call, derivative


def _previous(hs, h0, reverse: bool):
    """Each step's incoming state, (T, B, H): h0, then the states before the last (reversed: after)."""
    first = h0.unsqueeze(0)
    return call("aten::cat", [hs[1:], first]) if reverse else call("aten::cat", [first, hs[:-1]])


def _weights(d_pre, hs, h0, bias, reverse: bool, needs: tuple) -> tuple:
    """The gradients of weight_hh (sum over steps of d_pre^T h_prev) and bias_hh."""
    d_weight = d_bias = None
    if needs[0]:
        d_weight = d_pre.flatten(0, 1).t() @ _previous(hs, h0, reverse).flatten(0, 1)
    if needs[1] and bias is not None:
        d_bias = d_pre.sum((0, 1))
    return d_weight, d_bias


@derivative("aten::_lstm_sequence")
def _lstm_sequence(grad, gates, h0, c0, weight_hh, bias_hh, reverse, result, needs_input_grad):
    hs = result[0]
    d_pre, d_h0, d_c0 = call("aten::_lstm_sequence_backward", grad[0], grad[1], gates, h0, c0, weight_hh,
                             bias_hh, hs, reverse)
    return (d_pre, d_h0, d_c0) + _weights(d_pre, hs, h0, bias_hh, reverse, needs_input_grad[3:])


@derivative("aten::_gru_sequence")
def _gru_sequence(grad, gates, h0, weight_hh, bias_hh, reverse, result, needs_input_grad):
    d_x, d_h, d_h0 = call("aten::_gru_sequence_backward", grad, gates, h0, weight_hh, bias_hh, result, reverse)
    return (d_x, d_h0) + _weights(d_h, result, h0, bias_hh, reverse, needs_input_grad[2:])


@derivative("aten::_rnn_sequence")
def _rnn_sequence(grad, h0, weight_hh, bias_hh, relu, reverse, result, needs_input_grad):
    d_pre, d_h0 = call("aten::_rnn_sequence_backward", grad, result, weight_hh, relu, reverse)
    return (d_pre, d_h0) + _weights(d_pre, result, h0, bias_hh, reverse, needs_input_grad[2:])


@derivative("aten::_lstm_sequence_backward", "aten::_gru_sequence_backward", "aten::_rnn_sequence_backward")
def _second_order(grad):
    raise RuntimeError("double backward (create_graph=True) through a recurrent layer (nn.LSTM, nn.GRU, nn.RNN) "
                       "is not supported: its backward through time is one op without a derivative of its own")
