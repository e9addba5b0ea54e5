"""`tscript.nn.utils.rnn`: `pad_sequence` (variable-length sequences padded into one tensor)."""
from tscript_runtime.errors import OpRuntimeError
from tscript_runtime.ops import OPS

from ..._creation import full
from ..._dispatch import dispatch
from ..._tensor import Tensor


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors of shape (L_i, *) into (L_max, B, *) (or (B, L_max, *) with `batch_first`),
    each padded with `padding_value` after (`padding_side="left"`: before) its elements."""
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    if not sequences:
        raise OpRuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise OpRuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        fill = full((longest - s.shape[0],) + tuple(s.shape[1:]), padding_value, dtype=s.dtype)
        pieces = [s, fill] if padding_side == "right" else [fill, s]
        padded.append(dispatch(OPS["aten::cat"], (pieces, 0)))
    trailing = {tuple(p.shape[1:]) for p in padded}
    if len(trailing) > 1:
        a, b = sorted(trailing)[:2]
        raise OpRuntimeError(f"pad_sequence: every sequence must have the same trailing dims, got {list(a)} and "
                             f"{list(b)}")
    return dispatch(OPS["aten::stack"], (padded, 0 if batch_first else 1))
