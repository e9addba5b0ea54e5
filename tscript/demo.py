"""`tscript demo`: the main job on a built-in model. For now an eager tour: fit a linear
classifier to synthetic data with hand-derived gradients, using only tscript tensor ops."""
import time

import tscript as ts


def _data(n: int, gen: ts.Generator):
    x = ts.randn(n, 2, generator=gen)
    y = ((x[:, 0] + 0.5 * x[:, 1]) > 0).long()
    return x, y


def _loss_and_grads(w, b, x, y):
    """Softmax cross-entropy of a linear model and its gradients, written out by hand."""
    logits = x @ w + b
    probs = ts.softmax(logits, dim=1)
    onehot = ts.zeros_like(probs).scatter_(1, y.unsqueeze(1), 1.0)
    loss = -(onehot * ts.log_softmax(logits, dim=1)).sum(dim=1).mean()
    dlogits = (probs - onehot) / x.shape[0]
    return loss, x.t() @ dlogits, dlogits.sum(dim=0)


def run(seed: int = 0, steps: int = 50) -> None:
    gen = ts.Generator().manual_seed(seed)
    x, y = _data(512, gen)
    w, b = ts.zeros(2, 2), ts.zeros(2)
    start = time.perf_counter()
    for step in range(steps + 1):
        loss, gw, gb = _loss_and_grads(w, b, x, y)
        if step % 10 == 0:
            acc = ((x @ w + b).argmax(dim=1) == y).float().mean()
            print(f"step {step:3d}  loss {loss.item():.4f}  accuracy {acc.item():.3f}")
        w -= 1.0 * gw
        b -= 1.0 * gb
    elapsed = time.perf_counter() - start
    print(f"trained a 2-class linear model on {x.shape[0]} points in {elapsed * 1e3:.1f} ms (eager tscript)")
    print("weights:", w)
