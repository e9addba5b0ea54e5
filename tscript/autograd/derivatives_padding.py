"""Derivative rows for the border-padding ops (same table and conventions as derivatives.py).

A pad is linear in its input: its gradient is the adjoint op `*_backward` (each output gradient added
back to the input position it was copied from), and the adjoint's gradient is the pad itself, so
double backward works.
"""
from .derivatives import NODE_NAMES, call, derivative


def _rows(kind: str, k: int) -> None:
    name = f"{kind}_pad{k}d"

    @derivative(f"aten::{name}")
    def _pad(grad, self, padding):
        return call(f"aten::{name}_backward", grad, self, padding)

    @derivative(f"aten::{name}_backward")
    def _pad_backward(grad, self, padding):
        return call(f"aten::{name}", grad, padding), None

    node = f"{kind.title()}Pad{k}DBackward0"  # PyTorch's spelling (capital D)
    NODE_NAMES[f"aten::{name}"] = lambda args, result: node


for _kind in ("reflection", "replication"):
    for _k in (1, 2, 3):
        _rows(_kind, _k)
