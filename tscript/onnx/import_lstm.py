"""The import row of ONNX `LSTM`: per direction, one matmul projects every time step's input at once,
then the time loop is one `_lstm_sequence` op (as tracing an `nn.LSTM` makes it), its gate rows
reordered from ONNX's (input, output, forget, cell) to PyTorch's (input, forget, cell, output):

    i, o, f, g = sigmoid, sigmoid, sigmoid, tanh of the four quarters of x_t W^T + h R^T + Wb + Rb
    c = f * c + i * g;  h = o * tanh(c)

Forward, reverse and bidirectional LSTMs, batch-major or sequence-major (`layout`), initial states
given or zero; peepholes, `clip`, `input_forget` and other activations are refused by name.
"""
from __future__ import annotations

import numpy as np

from .import_context import ImportContext, optional_input, require_inputs

_DEFAULT_ACTIVATIONS = ["Sigmoid", "Tanh", "Tanh"]
_PYTORCH_ORDER = (0, 2, 3, 1)  # PyTorch's gate k (i, f, g, o) is ONNX's gate _PYTORCH_ORDER[k] (i, o, f, c)


def lstm(ctx: ImportContext, node, attrs) -> list:
    """The LSTM row: [Y, Y_h, Y_c] (as many as the node's outputs)."""
    require_inputs(ctx, node, 3)
    _refuse_options(ctx, node, attrs)
    layout = attrs.get("layout", 0)
    x = ctx.tensor(node.input[0])
    if layout:
        x = ctx.emit("aten::transpose", x, 0, 1)  # sequence-major from here on
    _check_lengths(ctx, node, ctx.shape(x)[0] if ctx.shape(x) is not None else None)
    directions = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}.get(
        attrs.get("direction", "forward"))
    if directions is None:
        raise ctx.error(f"unknown direction {attrs.get('direction')!r}")
    hidden = attrs.get("hidden_size")
    if not isinstance(hidden, int) or hidden <= 0:
        raise ctx.error("LSTM needs a positive hidden_size")
    states = [_states(ctx, node, i, layout) for i in (5, 6)]
    runs = [_direction(ctx, node, x, states, d, reverse, hidden) for d, reverse in enumerate(directions)]
    y = ctx.emit("aten::stack", [ys for ys, _, _ in runs], 1)                       # seq, dirs, batch, H
    h = ctx.emit("aten::stack", [hn for _, hn, _ in runs], 0)                       # dirs, batch, H
    c = ctx.emit("aten::stack", [cn for _, _, cn in runs], 0)
    if layout:
        y = ctx.emit("aten::permute", y, [2, 0, 1, 3])
        h, c = ctx.emit("aten::transpose", h, 0, 1), ctx.emit("aten::transpose", c, 0, 1)
    return [y, h, c][:len(node.output)]


def _refuse_options(ctx, node, attrs) -> None:
    if optional_input(node, 7) is not None:
        raise ctx.error("LSTM peepholes (input P) are not supported")
    if "clip" in attrs or attrs.get("input_forget", 0):
        raise ctx.error("LSTM with clip or input_forget is not supported")
    activations = attrs.get("activations")
    if activations is not None and [a.capitalize() for a in activations[:3]] != _DEFAULT_ACTIVATIONS:
        raise ctx.error(f"LSTM activations {activations} (only Sigmoid, Tanh, Tanh are supported)")


def _check_lengths(ctx, node, seq) -> None:
    name = optional_input(node, 4)
    if name is None:
        return
    lengths = ctx.array(name)
    if lengths is None or not isinstance(seq, int) or np.any(lengths != seq):
        raise ctx.error("LSTM sequence_lens must be absent or all equal to the sequence length")


def _states(ctx, node, index: int, layout: int):
    """initial_h / initial_c as (directions, batch, hidden), or None when not given."""
    name = optional_input(node, index)
    if name is None:
        return None
    state = ctx.tensor(name)
    return ctx.emit("aten::transpose", state, 0, 1) if layout else state


def _direction(ctx, node, x, states: list, d: int, reverse: bool, hidden: int) -> tuple:
    """(outputs stacked over time, last h, last c) of direction `d`: the input projection of every
    step, then the time loop as one `_lstm_sequence` (gate rows reordered to PyTorch's i, f, g, o)."""
    rows = np.concatenate([np.arange(g * hidden, (g + 1) * hidden) for g in _PYTORCH_ORDER])

    def gate_rows(name: str, start: int = 0):
        picked = ctx.emit("aten::select", ctx.tensor(name), 0, d)
        if start:
            picked = ctx.emit("aten::slice", picked, 0, start, start + 4 * hidden)
        return ctx.emit("aten::index_select", picked, 0, rows)
    bias_x = bias_h = None
    if optional_input(node, 3) is not None:
        bias_x, bias_h = gate_rows(node.input[3]), gate_rows(node.input[3], 4 * hidden)
    gates = ctx.emit("aten::linear", x, gate_rows(node.input[1]), bias_x)
    h, c = (ctx.emit("aten::select", s, 0, d) if s is not None else
            ctx.emit("aten::full", [ctx.size(x, 1), hidden], 0.0, dtype=ctx.dtype(x)) for s in states)
    hs, c = ctx.emit("aten::_lstm_sequence", gates, h, c, gate_rows(node.input[2]), bias_h, reverse)
    return hs, ctx.emit("aten::select", hs, 0, 0 if reverse else -1), c
