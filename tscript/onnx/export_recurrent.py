"""Export rows of the recurrent sequence ops (`_lstm_sequence`, `_gru_sequence`, `_rnn_sequence`) as
ONNX's LSTM, GRU (linear_before_reset, PyTorch's formulation) and RNN, one direction each.

The op's input is the already projected `gates` (x W_ih^T + b_ih), so the ONNX node's input weight
W is the permutation taking PyTorch's gate order to ONNX's (LSTM i,f,g,o -> i,o,f,c; GRU r,z,n ->
z,r,h); R and the recurrent bias are the op's, rows permuted the same way."""
from __future__ import annotations

import numpy as np

from .export_rows import row
from .import_recurrent import CELLS

# ONNX's gate k is PyTorch's gate _ORDERS[op][k]: the inverse of the import rows' order
_ORDERS = {op: tuple(cell.order.index(k) for k in range(len(cell.order))) for op, cell in CELLS.items()}


def _rows(order: tuple, hidden: int) -> np.ndarray:
    return np.concatenate([np.arange(g * hidden, (g + 1) * hidden) for g in order])


def _node(ctx, node, onnx_op: str, states: list, reverse_at: int, **attrs):
    """The ONNX node for `node` (inputs gates, states..., weight_hh, bias_hh): its outputs."""
    gates, w_hh, b_hh = node.inputs[0], node.inputs[1 + len(states)], node.inputs[2 + len(states)]
    shape = ctx.shape(w_hh)
    if shape is None or not all(isinstance(s, int) for s in shape):
        raise ctx.unsupported("the recurrent weight needs a static shape for ONNX export")
    width, hidden = shape
    dtype = ctx.value_dtype(gates)
    perm = _rows(_ORDERS[onnx_op], hidden)
    w = ctx.initializer(np.eye(width, dtype=dtype)[perm][None], "rnn_identity")
    r = ctx.unsqueeze(ctx.emit("Gather", [ctx.tensor(w_hh), ctx.ints(perm, "gate_rows")], axis=0), [0])
    zeros = ctx.initializer(np.zeros(width, dtype), "rnn_zero_bias")
    has_bias = not (ctx.is_const(b_hh) and ctx.const(b_hh) is None)
    recurrent_bias = ctx.emit("Gather", [ctx.tensor(b_hh), ctx.ints(perm, "gate_rows")], axis=0) if has_bias else zeros
    bias = ctx.unsqueeze(ctx.emit("Concat", [zeros, recurrent_bias], axis=0), [0])
    initial = [ctx.unsqueeze(ctx.tensor(s), [0]) for s in states]
    reverse = bool(ctx.const(node.inputs[reverse_at]))
    n_out = 3 if onnx_op == "LSTM" else 2
    outs = ctx.emit(onnx_op, [ctx.tensor(gates), w, r, bias, None, *initial], n_out, hidden_size=hidden,
                    direction="reverse" if reverse else "forward", **attrs)
    return [ctx.squeeze(outs[0], [1])] + [ctx.squeeze(o, [0]) for o in outs[2:]]


@row("aten::_lstm_sequence")
def _lstm_sequence(ctx, node):
    hs, c = _node(ctx, node, "LSTM", node.inputs[1:3], 5)
    return hs, c


@row("aten::_gru_sequence")
def _gru_sequence(ctx, node):
    return _node(ctx, node, "GRU", node.inputs[1:2], 4, linear_before_reset=1)[0]


@row("aten::_rnn_sequence")
def _rnn_sequence(ctx, node):
    relu = bool(ctx.const(node.inputs[4]))
    return _node(ctx, node, "RNN", node.inputs[1:2], 5, activations=["Relu" if relu else "Tanh"])[0]
