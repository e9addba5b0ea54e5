"""Helpers of the autodiff tests: run a model eagerly and compiled (backward=True) on the same
parameters and inputs, and compare outputs, parameter gradients and input gradients."""
import copy

import numpy as np

import tscript as ts
from tests.conftest import assert_close


def clone(args) -> tuple:
    """Fresh copies of the tensors in `args` (keeping requires_grad), so the two runs share nothing."""
    return tuple(ts.tensor(a.detach().numpy().copy(), requires_grad=a.requires_grad) if isinstance(a, ts.Tensor)
                 else a for a in args)


def weighted_loss(outputs):
    """sum_i <out_i, W_i> with fixed pseudo-random W_i: every output element gets its own gradient."""
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    flat = [o for out in outs for o in (out if isinstance(out, (tuple, list)) else (out,))]
    rng = np.random.default_rng(7)
    return sum((o * ts.tensor(rng.standard_normal(o.shape).astype(o.detach().numpy().dtype))).sum() for o in flat)


def run(fn, params: list, args: tuple):
    """(outputs, gradients of params then of the inputs requiring grad; None where there is none)."""
    for p in params:
        p.grad = None
    out = fn(*args)
    weighted_loss(out).backward()
    grads = [p.grad for p in params] + [a.grad for a in args if isinstance(a, ts.Tensor) and a.requires_grad]
    return out, grads


def assert_same_run(a, b, rtol=1e-4, unreached_zero=False):
    """Outputs and gradients agree to `rtol` (relative to each tensor's largest value). Eager leaves
    the gradient of a parameter the outputs do not reach None; with `unreached_zero` the compiled one
    may be zeros instead (parameters of the branch of an If not taken)."""
    (out_a, grads_a), (out_b, grads_b) = a, b
    flat = lambda o: [t for x in (o if isinstance(o, tuple) else (o,)) for t in (x if isinstance(x, tuple) else (x,))]
    for x, y in zip(flat(out_a), flat(out_b)):
        assert_close(x.detach(), y.detach(), rtol=rtol, atol=rtol * float(np.abs(y.detach().numpy()).max(initial=1)))
    assert len(grads_a) == len(grads_b)
    for x, y in zip(grads_a, grads_b):
        if unreached_zero and y is None and x is not None:
            y = ts.zeros_like(x)
        assert (x is None) == (y is None)
        if y is not None:
            assert_close(x, y, rtol=rtol, atol=rtol * float(np.abs(y.numpy()).max(initial=1)))


def compile_twin(model, example: tuple, script: bool = False, **kwargs):
    """(compiled copy of `model`, that copy, an eager copy) with equal parameters and buffers:
    compiling traces (running forward once, as PyTorch's trace does), so the eager copy is taken
    after. With `script`, the copy is scripted (not traced) before compiling."""
    twin = copy.deepcopy(model)
    compiled = ts.jit.compile(ts.jit.script(twin) if script else twin, clone(example), backward=True, **kwargs)
    eager = copy.deepcopy(twin)
    return compiled, twin, eager


def check_model(model, example: tuple, *others: tuple, rtol=1e-4, unreached_zero=False, **kwargs):
    """Compiled and eager agree on `example` and `others` (outputs, parameter and input gradients,
    and buffers such as BatchNorm's running statistics); returns the compiled model. Keyword
    arguments go to `compile_twin` (`script`) and `tscript.jit.compile` (`dynamic`)."""
    compiled, twin, eager = compile_twin(model, example, **kwargs)
    for args in (example, *others):
        assert_same_run(run(compiled, list(twin.parameters()), clone(args)),
                        run(eager, list(eager.parameters()), clone(args)), rtol, unreached_zero)
    for (name, x), (_, y) in zip(twin.state_dict().items(), eager.state_dict().items()):
        assert_close(x, y, rtol=1e-5, atol=1e-6), name
    return compiled
