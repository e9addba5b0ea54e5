"""Numerical gradient checks: `gradcheck` compares autograd's Jacobian with central finite
differences; `gradgradcheck` does the same for the gradient function (second derivatives)."""
from __future__ import annotations

import numpy as np

from tscript_runtime.dtypes import is_float


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when the Jacobians disagree."""


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _float_outputs(fn, inputs) -> list:
    return [o for o in _as_tuple(fn(*inputs)) if hasattr(o, "_data") and is_float(o._data.dtype)]


def _numerical(fn, inputs, wrt, eps: float) -> list[np.ndarray]:
    """Per output, the Jacobian d output / d inputs[wrt] by central differences."""
    from .grad_mode import no_grad
    flat = inputs[wrt]._data.flat  # writes through, whatever the layout
    columns = []
    with no_grad():
        for k in range(inputs[wrt]._data.size):
            orig = flat[k]
            flat[k] = orig + eps
            plus = [o._data.astype(np.float64).ravel().copy() for o in _float_outputs(fn, inputs)]
            flat[k] = orig - eps
            minus = [o._data.astype(np.float64).ravel().copy() for o in _float_outputs(fn, inputs)]
            flat[k] = orig
            columns.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
    if not columns:  # an empty input: every Jacobian has no columns
        return [np.zeros((o.numel(), 0)) for o in _float_outputs(fn, inputs)]
    return [np.stack([c[j] for c in columns], axis=1) for j in range(len(columns[0]))]


def _analytical(fn, inputs, wrt_list) -> dict:
    """{(output j, input i): Jacobian} from one vector-Jacobian product per output element."""
    from . import grad
    from .._creation import zeros_like
    outputs = _float_outputs(fn, inputs)
    jac = {(j, i): np.zeros((o.numel(), inputs[i].numel())) for j, o in enumerate(outputs) for i in wrt_list}
    for j, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        for r in range(out.numel()):
            seed = zeros_like(out)
            seed._data.reshape(-1)[r] = 1
            grads = grad(out, [inputs[i] for i in wrt_list], seed, retain_graph=True, allow_unused=True)
            for i, g in zip(wrt_list, grads):
                if g is not None:
                    jac[(j, i)][r] = g._data.astype(np.float64).ravel()
    return jac


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, **_ignored) -> bool:
    """Check autograd's gradients of `func` at `inputs` against finite differences (use float64)."""
    inputs = _as_tuple(inputs)
    wrt = [i for i, x in enumerate(inputs) if getattr(x, "requires_grad", False)]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the "
                         "them have requires_grad=True.")
    analytical = _analytical(func, inputs, wrt)
    for i in wrt:
        for j, num in enumerate(_numerical(func, inputs, i, eps)):
            ana = analytical[(j, i)]
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                if raise_exception:
                    raise GradcheckError(f"Jacobian mismatch for output {j} with respect to input {i},\n"
                                         f"numerical:{num}\nanalytical:{ana}\n")
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, raise_exception: bool = True, **_ignored) -> bool:
    """Check second derivatives: gradcheck of (inputs, grad_outputs) -> autograd.grad(func(inputs))."""
    from . import grad
    from .._creation import randn
    from .grad_mode import enable_grad
    inputs = _as_tuple(inputs)
    outputs = _float_outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(randn(o.shape, dtype=o.dtype, requires_grad=True) for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)
    wrt = [x for x in inputs if getattr(x, "requires_grad", False)]

    def first_derivative(*args):
        with enable_grad():  # the numerical Jacobian evaluates this under no_grad
            return _first_derivative(*args)

    def _first_derivative(*args):
        outs = _float_outputs(func, args[:n])
        gs = grad(outs, [a for a in args[:n] if getattr(a, "requires_grad", False)], list(args[n:]),
                  create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    assert wrt
    return gradcheck(first_derivative, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
