"""Adam and AdamW (decoupled weight decay), with AMSGrad."""
from __future__ import annotations

from .. import _creation
from .._dtype import float32
from .._tensor import Tensor
from .optimizer import Optimizer, addcdiv_, addcmul_, check_range


class Adam(Optimizer):
    """`torch.optim.Adam`: moments `m = lerp(m, g, 1 - beta1)`, `v = beta2 * v + (1 - beta2) * g * g`,
    `p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)`; with `amsgrad` the running
    maximum of `v` replaces `v` in the denominator. Weight decay adds `weight_decay * p` to the
    gradient, or (`decoupled_weight_decay`, AdamW) multiplies `p` by `1 - lr * weight_decay` first."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False):
        check_range("learning rate", lr)
        check_range("epsilon value", eps)
        check_range("beta parameter at index 0", betas[0], high=1.0)
        check_range("beta parameter at index 1", betas[1], high=1.0)
        check_range("weight_decay value", weight_decay)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, group: dict) -> None:
        state = self.state[param]
        if not state:
            _init_state(state, param, group["amsgrad"])
        lr, (beta1, beta2), weight_decay = group["lr"], group["betas"], group["weight_decay"]
        if group["maximize"]:
            grad = -grad
        state["step"].add_(1)
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)
        step = state["step"].item()
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if group["amsgrad"]:
            second = state["max_exp_avg_sq"]
            second.copy_(second.maximum(exp_avg_sq))
        else:
            second = exp_avg_sq
        denom = (second.sqrt() / bias_correction2_sqrt).add_(group["eps"])
        addcdiv_(param, exp_avg, denom, value=-step_size)


class AdamW(Adam):
    """`torch.optim.AdamW`: Adam with decoupled weight decay (default 1e-2)."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


def _init_state(state: dict, param: Tensor, amsgrad: bool) -> None:
    """Step count (a float32 scalar tensor, as PyTorch) and zeroed moment estimates."""
    state["step"] = _creation.tensor(0.0, dtype=float32)
    state["exp_avg"] = _creation.zeros_like(param)
    state["exp_avg_sq"] = _creation.zeros_like(param)
    if amsgrad:
        state["max_exp_avg_sq"] = _creation.zeros_like(param)
