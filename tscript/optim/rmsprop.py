"""RMSprop, optionally centered and with momentum."""
from __future__ import annotations

from .. import _creation
from .._dtype import float32
from .._tensor import Tensor
from .optimizer import Optimizer, addcdiv_, addcmul_, check_range


class RMSprop(Optimizer):
    """`torch.optim.RMSprop`: `v = alpha * v + (1 - alpha) * g * g`, `avg = sqrt(v) + eps` (centered:
    `sqrt(v - mean(g)^2) + eps` with `mean(g) = lerp(mean(g), g, 1 - alpha)`), then
    `p -= lr * g / avg`, or with momentum `buf = momentum * buf + g / avg`, `p -= lr * buf`."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False):
        check_range("learning rate", lr)
        check_range("epsilon value", eps)
        check_range("momentum value", momentum)
        check_range("weight_decay value", weight_decay)
        check_range("alpha value", alpha)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, group: dict) -> None:
        state = self.state[param]
        if not state:
            _init_state(state, param, group)
        alpha = group["alpha"]
        if group["maximize"]:
            grad = -grad
        state["step"].add_(1)
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        square_avg = state["square_avg"]
        addcmul_(square_avg.mul_(alpha), grad, grad, value=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = addcmul_(square_avg.clone(), grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(group["eps"])
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            addcdiv_(buf.mul_(group["momentum"]), grad, avg)
            param.add_(buf, alpha=-group["lr"])
        else:
            addcdiv_(param, grad, avg, value=-group["lr"])


def _init_state(state: dict, param: Tensor, group: dict) -> None:
    state["step"] = _creation.zeros((), dtype=float32)
    state["square_avg"] = _creation.zeros_like(param)
    if group["momentum"] > 0:
        state["momentum_buffer"] = _creation.zeros_like(param)
    if group["centered"]:
        state["grad_avg"] = _creation.zeros_like(param)
