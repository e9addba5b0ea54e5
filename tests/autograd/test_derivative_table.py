"""Every op in the derivative table passes gradcheck and gradgradcheck (float64) on its sample
calls, so an op added without a correct derivative fails here."""
import numpy as np
import pytest

import tscript as ts
from tscript._dispatch import dispatch
from tscript.autograd import gradcheck, gradgradcheck
from tscript.autograd.derivatives import DERIVATIVES, NOT_DIFFERENTIABLE
from tscript_runtime.ops import OPS
from tests.runtime.op_samples import SAMPLES

# Ops whose gradient is zero almost everywhere or that only make new values: nothing to check numerically.
NOTHING_TO_CHECK = {f"aten::{n}" for n in ("sign", "floor", "ceil", "round", "trunc", "floor_divide", "zero_",
                                           "uniform_", "normal_", "bernoulli_")}
# Second derivatives that are not smooth at the sample points (ties / kinks are avoided by the samples), or
# that raise a clear error instead (backward through time of the recurrent layers: test_recurrent_ops.py).
NO_GRADGRAD = {f"aten::_{cell}_sequence" for cell in ("lstm", "gru", "rnn")}
NOTHING_TO_CHECK |= {f"{n}_backward" for n in NO_GRADGRAD}


def _to_tensor(x):
    if isinstance(x, np.ndarray):
        t = ts.tensor(x.astype(np.float64) if x.dtype.kind == "f" else x)
        return t.requires_grad_() if x.dtype.kind == "f" else t
    if isinstance(x, list) and any(isinstance(y, np.ndarray) for y in x):
        return [_to_tensor(y) for y in x]
    return x


def _differentiable(name):
    return sorted(n for n in DERIVATIVES if n not in NOTHING_TO_CHECK and n in SAMPLES)


def _call(name, args):
    args = [_to_tensor(a) for a in tuple(args) + OPS[name].defaults[len(args):]]
    flat = [a for a in args if isinstance(a, ts.Tensor) and a.requires_grad] + \
           [t for a in args if isinstance(a, list) for t in a if isinstance(t, ts.Tensor) and t.requires_grad]

    def fn(*inputs):
        it = iter(inputs)
        rebuilt = [next(it) if isinstance(a, ts.Tensor) and a.requires_grad else a for a in args]
        rebuilt = [[next(it) if isinstance(t, ts.Tensor) and t.requires_grad else t for t in a]
                   if isinstance(a, list) else a for a in rebuilt]
        return dispatch(OPS[name], tuple(rebuilt))
    return fn, flat


def test_every_op_is_differentiable_or_declared_not():
    missing = [n for n, op in OPS.items() if n not in DERIVATIVES and n not in NOT_DIFFERENTIABLE
               and op.extra.get("functional", n) not in DERIVATIVES and op.tensor_pos + op.list_pos]
    assert not missing, f"ops with tensor inputs but no derivative entry: {missing}"


@pytest.mark.parametrize("name", _differentiable(None))
def test_gradcheck(name):
    for args in SAMPLES[name]:
        fn, inputs = _call(name, args)
        if inputs:
            assert gradcheck(fn, tuple(inputs), eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("name", [n for n in _differentiable(None) if n not in NO_GRADGRAD])
def test_gradgradcheck(name):
    for args in SAMPLES[name]:
        fn, inputs = _call(name, args)
        if inputs:
            assert gradgradcheck(fn, tuple(inputs), eps=1e-6, atol=1e-5, rtol=1e-3)
