"""The import row of ONNX `LSTM`: unrolled over the (static) sequence length into tscript ops, as
tracing an `nn.LSTM` unrolls it. One matmul projects every time step's input at once; each step then
adds the recurrent projection and applies the gates in ONNX's order (input, output, forget, cell):

    i, o, f, g = sigmoid, sigmoid, sigmoid, tanh of the four quarters of x_t W^T + h R^T + Wb + Rb
    c = f * c + i * g;  h = o * tanh(c)

Forward, reverse and bidirectional LSTMs, batch-major or sequence-major (`layout`), initial states
given or zero; peepholes, `clip`, `input_forget` and other activations are refused by name.
"""
from __future__ import annotations

import numpy as np

from .import_context import ImportContext, optional_input, require_inputs

_DEFAULT_ACTIVATIONS = ["Sigmoid", "Tanh", "Tanh"]
MAX_STEPS = 10_000  # as the script frontend's MAX_UNROLL


def lstm(ctx: ImportContext, node, attrs) -> list:
    """The LSTM row: [Y, Y_h, Y_c] (as many as the node's outputs)."""
    require_inputs(ctx, node, 3)
    _refuse_options(ctx, node, attrs)
    layout = attrs.get("layout", 0)
    x = ctx.tensor(node.input[0])
    if layout:
        x = ctx.emit("aten::transpose", x, 0, 1)  # sequence-major from here on
    seq = ctx.shape(x)[0] if ctx.shape(x) is not None else None
    if not isinstance(seq, int):
        raise ctx.error("LSTM needs a static sequence length (the loop is unrolled at import)")
    if seq > MAX_STEPS:
        raise ctx.error(f"LSTM over {seq} time steps (unrolled at import: at most {MAX_STEPS})")
    _check_lengths(ctx, node, seq)
    directions = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}.get(
        attrs.get("direction", "forward"))
    if directions is None:
        raise ctx.error(f"unknown direction {attrs.get('direction')!r}")
    hidden = attrs.get("hidden_size")
    if not isinstance(hidden, int) or hidden <= 0:
        raise ctx.error("LSTM needs a positive hidden_size")
    states = [_states(ctx, node, i, layout) for i in (5, 6)]
    runs = [_direction(ctx, node, x, states, d, reverse, seq, hidden) for d, reverse in enumerate(directions)]
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


def _check_lengths(ctx, node, seq: int) -> None:
    name = optional_input(node, 4)
    if name is None:
        return
    lengths = ctx.array(name)
    if lengths is None or np.any(lengths != seq):
        raise ctx.error("LSTM sequence_lens must be absent or all equal to the sequence length")


def _states(ctx, node, index: int, layout: int):
    """initial_h / initial_c as (directions, batch, hidden), or None when not given."""
    name = optional_input(node, index)
    if name is None:
        return None
    state = ctx.tensor(name)
    return ctx.emit("aten::transpose", state, 0, 1) if layout else state


def _direction(ctx, node, x, states: list, d: int, reverse: bool, seq: int, hidden: int) -> tuple:
    """(outputs stacked over time, last h, last c) of direction `d`."""
    w = ctx.emit("aten::select", ctx.tensor(node.input[1]), 0, d)
    r = ctx.emit("aten::select", ctx.tensor(node.input[2]), 0, d)
    bias = None
    if optional_input(node, 3) is not None:
        b = ctx.emit("aten::select", ctx.tensor(node.input[3]), 0, d)
        bias = ctx.emit("aten::add", ctx.emit("aten::slice", b, 0, 0, 4 * hidden),
                        ctx.emit("aten::slice", b, 0, 4 * hidden, 8 * hidden))
    steps = ctx.unpack(ctx.emit("aten::unbind", ctx.emit("aten::linear", x, w, bias), 0), seq)
    h, c = (ctx.emit("aten::select", s, 0, d) if s is not None else
            ctx.emit("aten::full", [ctx.size(x, 1), hidden], 0.0, dtype=ctx.dtype(x)) for s in states)
    outputs = [None] * seq
    for t in (reversed(range(seq)) if reverse else range(seq)):
        gates = ctx.emit("aten::add", steps[t], ctx.emit("aten::linear", h, r, None))
        i, o, f, g = ctx.unpack(ctx.emit("aten::chunk", gates, 4, -1), 4)
        c = ctx.emit("aten::add", ctx.emit("aten::mul", ctx.emit("aten::sigmoid", f), c),
                     ctx.emit("aten::mul", ctx.emit("aten::sigmoid", i), ctx.emit("aten::tanh", g)))
        h = ctx.emit("aten::mul", ctx.emit("aten::sigmoid", o), ctx.emit("aten::tanh", c))
        outputs[t] = h
    return ctx.emit("aten::stack", outputs, 0), h, c
