"""Hand-written bindings for linalg ops whose Python signature PyTorch parses specially."""
import string

from tscript_runtime.errors import OpTypeError, OpValueError
from tscript_runtime.ops import OPS

from ._dispatch import dispatch

# Sublist labels 0..51 name the letters a-z then A-Z, as in PyTorch.
_LETTERS = string.ascii_letters


def einsum(*args, **kwargs):
    """`einsum(equation, *operands)`, `einsum(equation, [operands])` or the sublist form
    `einsum(op1, [0, 1], op2, [1, 2], [0, 2])`, as `torch.einsum`."""
    if not args:
        raise OpValueError("einsum(): must specify the equation string and at least one operand, or at "
                           "least one operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = operands[0]
    else:
        equation, operands = _sublist_equation(args)
    return dispatch(OPS["aten::einsum"], (equation, list(operands)), kwargs or None)


def _sublist_equation(args) -> tuple[str, tuple]:
    """The equation and operands of the sublist form: operand, subscripts, operand, subscripts, ...,
    and optionally the output subscripts last."""
    operands, sublists = args[0::2], args[1::2]
    output = None
    if len(args) % 2:
        operands, output = operands[:-1], args[-1]
    terms = [_sublist_term(s) for s in sublists]
    return ",".join(terms) + ("" if output is None else "->" + _sublist_term(output)), operands


def _sublist_term(sublist) -> str:
    if not isinstance(sublist, (list, tuple)):
        raise OpTypeError(f"einsum(): expected a list of subscripts, got {type(sublist).__name__}")
    out = []
    for s in sublist:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, int) and 0 <= s < len(_LETTERS):
            out.append(_LETTERS[s])
        else:
            raise OpValueError(f"einsum(): subscript in subscript list is not within the valid range "
                               f"[0, {len(_LETTERS)}), got {s!r}")
    return "".join(out)


FUNCTIONS: dict = {"einsum": einsum}   # name -> function exported as tscript.<name>
METHODS: dict = {}                     # name -> function installed as Tensor.<name>
