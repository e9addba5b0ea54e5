"""The import rows of ONNX `LSTM`, `GRU` and `RNN`: per direction, one matmul projects every time step's
input at once, then the time loop is one op (`_lstm_sequence`, `_gru_sequence`, `_rnn_sequence`, as tracing
an `nn.LSTM`/`nn.GRU`/`nn.RNN` makes it), the gate rows reordered from ONNX's order to PyTorch's:

    LSTM  ONNX i, o, f, c  -> PyTorch i, f, g, o
    GRU   ONNX z, r, h     -> PyTorch r, z, n   (linear_before_reset=1: PyTorch's formulation)
    RNN   one gate, Tanh or Relu

Forward, reverse and bidirectional layers, batch-major or sequence-major (`layout`), initial states
given or zero; peepholes, `clip`, `input_forget`, other activations and GRU's linear_before_reset=0 are
refused by name.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .import_context import ImportContext, optional_input, require_inputs


@dataclass(frozen=True)
class _Cell:
    op: str                 # the tscript time-loop op
    order: tuple            # PyTorch's gate k is ONNX's gate order[k]
    states: tuple           # node input positions of the initial states
    activations: tuple      # the supported `activations` attribute values (per direction)


CELLS = {"LSTM": _Cell("aten::_lstm_sequence", (0, 2, 3, 1), (5, 6), (("Sigmoid", "Tanh", "Tanh"),)),
         "GRU": _Cell("aten::_gru_sequence", (1, 0, 2), (5,), (("Sigmoid", "Tanh"),)),
         "RNN": _Cell("aten::_rnn_sequence", (0,), (5,), (("Tanh",), ("Relu",)))}


def recurrent(ctx: ImportContext, node, attrs) -> list:
    """The row of an LSTM, GRU or RNN node: [Y, Y_h(, Y_c)] (as many as the node's outputs)."""
    cell = CELLS[node.op_type]
    require_inputs(ctx, node, 3)
    relu = _refuse_options(ctx, node, attrs, cell)
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
        raise ctx.error(f"{node.op_type} needs a positive hidden_size")
    states = [_states(ctx, node, i, layout) for i in cell.states]
    runs = [_direction(ctx, node, cell, x, states, d, reverse, hidden, relu) for d, reverse in enumerate(directions)]
    y = ctx.emit("aten::stack", [run[0] for run in runs], 1)                            # seq, dirs, batch, H
    finals = [ctx.emit("aten::stack", [run[k] for run in runs], 0) for k in range(1, 1 + len(cell.states))]
    if layout:
        y = ctx.emit("aten::permute", y, [2, 0, 1, 3])
        finals = [ctx.emit("aten::transpose", f, 0, 1) for f in finals]
    return [y, *finals][:len(node.output)]


def _refuse_options(ctx, node, attrs, cell: _Cell) -> bool:
    """Refuse what the time-loop ops do not compute; returns whether an RNN uses Relu."""
    kind = node.op_type
    if kind == "LSTM" and optional_input(node, 7) is not None:
        raise ctx.error("LSTM peepholes (input P) are not supported")
    if "clip" in attrs or attrs.get("input_forget", 0):
        raise ctx.error(f"{kind} with clip or input_forget is not supported")
    if kind == "GRU" and not attrs.get("linear_before_reset", 0):
        raise ctx.error("GRU with linear_before_reset=0 is not supported (PyTorch's GRU, and torch.onnx.export, "
                        "use linear_before_reset=1)")
    activations = attrs.get("activations")
    if activations is None:
        return False
    width = len(cell.activations[0])
    given = [a.capitalize() for a in activations]
    per_direction = {tuple(given[i:i + width]) for i in range(0, len(given), width)}
    if len(per_direction) != 1 or next(iter(per_direction)) not in cell.activations:
        raise ctx.error(f"{kind} activations {activations} (supported: "
                        f"{' or '.join(', '.join(a) for a in cell.activations)})")
    return next(iter(per_direction)) == ("Relu",)


def _check_lengths(ctx, node, seq) -> None:
    name = optional_input(node, 4)
    if name is None:
        return
    lengths = ctx.array(name)
    if lengths is None or not isinstance(seq, int) or np.any(lengths != seq):
        raise ctx.error(f"{node.op_type} sequence_lens must be absent or all equal to the sequence length")


def _states(ctx, node, index: int, layout: int):
    """An initial state as (directions, batch, hidden), or None when not given."""
    name = optional_input(node, index)
    if name is None:
        return None
    state = ctx.tensor(name)
    return ctx.emit("aten::transpose", state, 0, 1) if layout else state


def _direction(ctx, node, cell: _Cell, x, states: list, d: int, reverse: bool, hidden: int, relu: bool) -> tuple:
    """(outputs stacked over time, last h(, last c)) of direction `d`: the input projection of every
    step, then the time loop as one op (gate rows reordered to PyTorch's order)."""
    width = len(cell.order) * hidden
    rows = np.concatenate([np.arange(g * hidden, (g + 1) * hidden) for g in cell.order])

    def gate_rows(name: str, start: int = 0):
        picked = ctx.emit("aten::select", ctx.tensor(name), 0, d)
        if start:
            picked = ctx.emit("aten::slice", picked, 0, start, start + width)
        return ctx.emit("aten::index_select", picked, 0, rows)
    bias_x = bias_h = None
    if optional_input(node, 3) is not None:
        bias_x, bias_h = gate_rows(node.input[3]), gate_rows(node.input[3], width)
    gates = ctx.emit("aten::linear", x, gate_rows(node.input[1]), bias_x)
    initial = [ctx.emit("aten::select", s, 0, d) if s is not None else
               ctx.emit("aten::full", [ctx.size(x, 1), hidden], 0.0, dtype=ctx.dtype(x)) for s in states]
    weight = gate_rows(node.input[2])
    if node.op_type == "LSTM":
        hs, c = ctx.emit(cell.op, gates, *initial, weight, bias_h, reverse)
        return hs, ctx.emit("aten::select", hs, 0, 0 if reverse else -1), c
    extra = (relu, reverse) if node.op_type == "RNN" else (reverse,)
    hs = ctx.emit(cell.op, gates, *initial, weight, bias_h, *extra)
    return hs, ctx.emit("aten::select", hs, 0, 0 if reverse else -1)
