"""The gradient rule of a traced `autograd.Function` call (a prim::PythonOp with a `traced_call`):
the user's own `backward(ctx, *grads)` runs under the tracer, with `ctx.saved_tensors` standing
for the saved forward values, so what it computes is recorded into the backward graph (TorchScript
has to give up on these calls)."""
from __future__ import annotations

import copy

from ..ir.graph import Node
from .errors import unsupported


class _Held:
    """A saved tensor of the backward being recorded (what `ctx.saved_tensors` unpacks)."""
    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor

    def unpack(self, owner=None):
        return self.tensor


def backward_python_op(bw, node: Node) -> None:
    """Record the user's backward of one traced Function call (see the module docstring)."""
    call = node.callee.traced_call
    outs = node.outputs[:call.n_outputs]
    grads = [bw.grads.get(o) for o in outs]
    if call.ctx.materialize_grads:
        grads = [g if g is not None else bw.zeros(o) for g, o in zip(grads, outs)]
    saved = iter(node.outputs[call.n_outputs:])
    ctx = copy.copy(call.ctx)
    ctx._saved = tuple(None if s is None else _Held(bw.value(next(saved))) for s in call.saved)
    ctx._freed, ctx._node = False, None
    ctx.needs_input_grad = tuple(k is not None and node.inputs[k] in bw.live for k in call.arg_inputs)
    result = call.fn_cls.backward(ctx, *grads)
    result = result if isinstance(result, tuple) else (result,)
    if len(result) != len(call.arg_inputs):
        raise unsupported(node, f"{call.fn_cls.__name__}.backward returned {len(result)} gradients, but forward "
                                f"took {len(call.arg_inputs)} arguments")
    for k, g in zip(call.arg_inputs, result):
        if k is not None and g is not None and node.inputs[k] in bw.live:
            bw.accumulate(node.inputs[k], bw.fit(g, node.inputs[k]))
