"""Gradients of a model run eagerly and compiled with backward=True, for the nn tests to compare."""
import tscript as ts


def eager_and_compiled_grads(model, x) -> list:
    """[eager, compiled]: each the gradients of sum(run(x) ** 2) w.r.t. x and then every parameter."""
    grads = []
    for run in (model, ts.jit.compile(model, (x,), backward=True)):
        model.zero_grad()
        xs = x.clone().requires_grad_()
        (run(xs) ** 2).sum().backward()
        grads.append([xs.grad] + [p.grad.clone() for p in model.parameters()])
    return grads
