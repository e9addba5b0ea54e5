"""The conformance corpus of `tscript.jit.script`: programs in the TorchScript language (functions
and modules), each with example inputs, run eagerly and scripted by test_conformance.py. They live
in a module of their own because scripting reads their source."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import numpy as np

import tscript as ts
import tscript.nn.functional as F
from tscript import Tensor, nn
from tscript.jit import Final

SCALE: Final[float] = 0.5
OFFSETS = (1, 2, 3)
TABLE = {"a": 1, "b": 2}
BIAS = ts.tensor([1.0, -1.0, 0.5])


def T(*shape, seed: int = 0, dtype=np.float32):
    """A deterministic random tensor."""
    return ts.tensor(np.random.RandomState(seed).randn(*shape).astype(dtype))


def I(*values):
    return ts.tensor(list(values))


# -- expressions and scalars ----------------------------------------------------------------------------
def arith(x: Tensor, y: Tensor) -> Tensor:
    return x * 2 + y / 3 - 1 + x @ y.t() @ y


def scalar_math(a: int, b: float) -> float:
    return a // 3 + a % 3 + b ** 2 - a / 2 + (-a) * 1.5


def int_ops(a: int, b: int) -> Tuple[int, int, int, int, int, int, int, int, int, bool, bool]:
    return a + b, a - b, a * b, a // b, a % b, a ** 2, -a, a & b, a | b, a < b, a == b


def chained_compare(x: float) -> Tuple[bool, bool]:
    return 0 < x < 10, 0 <= x <= 1 != 2


def bool_logic(a: bool, b: bool) -> bool:
    return (a and not b) or (b and not a)


def ternary(x: Tensor, k: int) -> Tensor:
    return x * 2 if k > 0 else x - 1


def globals_and_constants(x: Tensor) -> Tensor:
    for k in OFFSETS:
        x = x + k * SCALE
    return x + TABLE["b"] + BIAS


def make_closure(power: int):
    scale = 3.0

    def closure(x: Tensor) -> Tensor:
        return x ** power * scale
    return closure


closure_fn = make_closure(2)


def math_module(x: float, n: int) -> Tuple[float, float, int, int, float, bool]:
    return (math.sqrt(x) + math.exp(-x) + math.log(x + 1), math.sin(x) * math.cos(x) + math.pi,
            math.floor(x), math.ceil(x), math.atan2(x, 2.0) + math.tanh(x) + math.e, math.isnan(x + n))


def builtin_functions(a: int, b: float) -> Tuple[int, float, float, int, float, bool, int, int, float, bool, bool]:
    xs = [a, 2, 3]
    return (min(a, 3), max(b, 1.5, 0.5), abs(-b), abs(-a), float(a), bool(a), int(b), sum(xs), sum([b, 1.0]),
            any([v > 2 for v in xs]), all([v > 2 for v in xs]))


def conversions(x: Tensor) -> Tuple[float, int, bool, float]:
    s = x.sum()
    return float(s), int(s), bool(s > 0), s.item() * 2


def strings(name: str, n: int) -> str:
    s = "hello " + name
    if s == "hello world" and "wor" in s:
        s = s + "!"
    return f"{s} has {len(s)} chars, n={n:03d}, pi~{math.pi:.2f} " + str(n * 2) + "-".join(["a", "b"])


def fstring_tensor(x: Tensor) -> str:
    return f"mean={x.mean().item():.3f} n={x.numel()}"


def dtypes(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, bool]:
    return x.long(), x.to(ts.float64) * 2, x.int().float(), x.dtype == ts.float32


def lambda_local(x: Tensor) -> Tensor:
    double = lambda t: t * 2  # noqa: E731
    return double(x) + double(x + 1)


def docstring_and_comments(x: Tensor, y: Tensor) -> Tensor:
    """A docstring; comments and continuations follow."""
    # a comment line
    z = (x +  # trailing comment
         y)
    w = z * \
        2
    return w


def string_annotations(x: "Tensor", n: "int" = 2) -> "Tensor":
    return x * n


def modern_annotations(xs: list[int], y: int | None = None, pair: tuple[int, int] = (1, 2)) -> int:
    total = pair[0] + pair[1]
    for v in xs:
        total += v
    if y is not None:
        total += y
    return total


def default_types(x, n=3, scale=0.5, flag=True):
    return x * n * scale if flag else x


def keyword_only(x: Tensor, *, power: int = 2, shift: float = 0.0) -> Tensor:
    return x ** power + shift


# -- control flow -------------------------------------------------------------------------------------------
def if_elif_else(x: Tensor, n: int) -> Tensor:
    if n < 0:
        y = -x
    elif n == 0:
        y = x * 0
    elif n < 5:
        y = x + n
    else:
        y = x * n
    return y


def nested_if(a: int, b: int) -> int:
    r = 0
    if a > 0:
        if b > 0:
            r = 1
        else:
            r = 2
        r = r * 10
    else:
        if b > 0:
            r = 3
    return r


def if_on_tensor(x: Tensor) -> Tensor:
    if x.sum() > 0:
        return x * 2
    else:
        return x - 100


def loop_until(x: Tensor) -> Tensor:
    while x.abs().sum() < 100:
        x = x * 2
    return x


def while_counter(n: int) -> Tuple[int, int]:
    i, total = 0, 0
    while i < n:
        total += i * i
        i += 1
    return i, total


def for_range_forms(n: int) -> List[int]:
    out: List[int] = []
    for i in range(n):
        out.append(i)
    for i in range(2, n):
        out.append(i * 10)
    for i in range(1, n, 3):
        out.append(i * 100)
    for i in range(n, 0, -2):
        out.append(-i)
    return out


def for_over_list(xs: List[float]) -> float:
    acc = 0.0
    for v in xs:
        acc = acc * 2 + v
    return acc


def for_over_tuple(x: Tensor) -> Tensor:
    for k in (1, 2, 3):
        x = x * k
    for t in (x, x + 1):
        x = x + t
    return x


def for_over_tensor(x: Tensor) -> Tensor:
    acc = ts.zeros(x.shape[1])
    for row in x:
        acc = acc + row * row
    return acc


def enumerate_and_zip(a: List[int], b: List[int]) -> int:
    total = 0
    for i, v in enumerate(a):
        total += i * v
    for i, v in enumerate(b, 10):
        total += i - v
    for x, y in zip(a, b):
        total += x * y
    return total


def break_continue(n: int) -> int:
    total = 0
    for i in range(n):
        if i == 7:
            break
        if i % 2 == 0:
            continue
        total += i
    return total


def nested_loops(n: int) -> int:
    count = 0
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            if (i + j) % 3 == 0:
                continue
            count += i * j
    return count


def while_break(x: Tensor) -> Tuple[Tensor, int]:
    steps = 0
    while True:
        x = x * 1.5
        steps += 1
        if x.max() > 10 or steps >= 50:
            break
    return x, steps


def return_in_loop(xs: List[int], target: int) -> int:
    for i, v in enumerate(xs):
        if v == target:
            return i
    return -1


def return_in_while(x: Tensor) -> Tensor:
    i = 0
    while i < 10:
        if x.sum() > 50:
            return x
        x = x * 2
        i += 1
    return -x


def early_return_chain(x: int) -> str:
    if x < 0:
        return "negative"
    if x == 0:
        return "zero"
    if x < 10:
        return "small"
    return "large"


def implicit_none(x: Tensor, flag: bool) -> Optional[Tensor]:
    if flag:
        return x * 2
    return None


def no_return(xs: List[int]):
    xs.append(1)


def unrolled_break(x: Tensor) -> Tensor:
    for k in (1.0, 2.0, 3.0, 4.0):
        if x.sum() > 20:
            break
        x = x * k
    return x


def unrolled_continue_return(x: Tensor) -> Tensor:
    for k in (1.0, -1.0, 2.0, 3.0):
        if k < 0:
            continue
        if x.sum() > 30:
            return x
        x = x * k + 1
    return x - 1


def inner_unrolled_break(n: int) -> int:
    total = 0
    for i in range(n):
        for k in (1, 2, 3):
            if k == i:
                break
            total += k * i
    return total


def while_continue(n: int) -> int:
    i, odd = 0, 0
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        odd += i
    return odd


def carry_tuple(x: Tensor, n: int) -> Tensor:
    state = (x, x * 0)
    for i in range(n):
        a, b = state
        state = (a + 1, b + a)
    return state[1]


def loop_carries_many(n: int) -> Tuple[Tensor, List[int], int, float]:
    t = ts.zeros(2)
    lst: List[int] = []
    i = 0
    f = 1.0
    for k in range(n):
        t = t + k
        lst.append(k * k)
        i += 2
        f = f / 2
    return t, lst, i, f


def loop_return_tuple(xs: List[int]) -> Tuple[int, int]:
    for i in range(len(xs)):
        if xs[i] < 0:
            return i, xs[i]
    return -1, 0


# -- data structures ----------------------------------------------------------------------------------------
def tuple_unpacking(x: Tensor) -> Tuple[Tensor, Tensor, int]:
    a, b = x.max(dim=1)
    b, a = a, b
    (p, (q, r)) = (1, (2, 3))
    values, indices = ts.sort(x, 1)
    return a.float() + values.sum(), b + indices.float().sum(), p + q + r


def augmented_assignment(x: Tensor, n: int) -> Tuple[Tensor, int, float, List[int]]:
    y = x.clone()
    y += 1
    y *= 2
    y -= x
    y /= 4
    n += 3
    n *= 2
    n //= 3
    f = 1.5
    f **= 2
    lst = [1]
    lst += [2, 3]
    return y, n, f, lst


def list_ops(n: int) -> Tuple[List[int], int, int, bool, List[int], int]:
    lst = [3, 1, 4]
    lst.append(n)
    lst.insert(0, 9)
    last = lst.pop()
    lst[1] = lst[1] + 100
    first = lst[-1]
    tail = lst[1:3] + lst[:1]
    lst.extend([5, 6])
    return lst, last, first, 4 in lst, tail, len(lst)


def list_of_tensors(x: Tensor) -> Tensor:
    parts: List[Tensor] = []
    for i in range(3):
        parts.append(x * i)
    stacked = ts.stack(parts)
    return ts.cat([stacked.sum(0), parts[-1], parts[0]], dim=0)


def comprehensions(n: int, x: Tensor) -> Tuple[List[int], List[int], List[float], Tensor, List[int]]:
    squares = [i * i for i in range(n)]
    evens = [v for v in squares if v % 2 == 0]
    rows = [float(r.sum()) for r in x]
    scaled = ts.stack([x * k for k in (1, 2)])
    pairs = [a + b for a, b in zip(squares, evens)]
    return squares, evens, rows, scaled, pairs


def nested_comprehension(n: int) -> List[List[int]]:
    return [[i * j for j in range(i)] for i in range(n)]


def dicts(keys: List[str]) -> Tuple[Dict[str, int], int, List[str], int, bool]:
    d: Dict[str, int] = {}
    for i, k in enumerate(keys):
        d[k] = i
    d["z"] = 26
    total = 0
    for k in d:
        total += d[k]
    for k, v in d.items():
        total += v * len(k)
    return d, d.get("missing", -1), list(d.keys()), total, "z" in d


def dict_comprehension(n: int) -> Dict[int, float]:
    return {i: i * 0.5 for i in range(n) if i != 2}


def dict_of_tensors(x: Tensor) -> Dict[str, Tensor]:
    out = {"double": x * 2, "half": x / 2}
    out["sum"] = out["double"] + out["half"]
    return out


# -- types: Optional, isinstance ----------------------------------------------------------------------------
def optional_refinement(x: Tensor, y: Optional[Tensor] = None) -> Tensor:
    if y is None:
        return x
    return x + y


def optional_early_exit(x: Tensor, bias: Optional[Tensor]) -> Tensor:
    if bias is None:
        return x * 2
    out = x + bias
    return out * bias


def optional_and(x: Tensor, y: Optional[Tensor]) -> Tensor:
    if y is not None and y.sum() > 0:
        return x + y
    return x


def optional_ternary(x: Tensor, n: Optional[int] = None) -> Tensor:
    k = n if n is not None else 5
    return x * k


def optional_assert(x: Tensor, y: Optional[Tensor]) -> Tensor:
    assert y is not None, "y is required"
    return x * y


def optional_merge(x: Tensor, flag: bool) -> Tensor:
    best: Optional[Tensor] = None
    for k in range(3):
        if flag or k == 2:
            best = x * k
    if best is None:
        return x
    return best


def isinstance_checks(x: Tensor, n: int, y: Optional[Tensor]) -> Tuple[bool, bool, bool, bool]:
    a = isinstance(x, Tensor)
    b = isinstance(n, float)
    c = isinstance(y, Tensor)
    d = isinstance(n, int) and not isinstance(x, int)
    return a, b, c, d


# -- tensors ------------------------------------------------------------------------------------------------
def tensor_methods(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, List[int], int, int]:
    a = x.view(-1, 2).permute(1, 0).reshape(2, 3)
    b = x.unsqueeze(0).squeeze(0).transpose(0, 1).contiguous().flatten()
    c = x.t().repeat(2, 1).expand(2, 4, 3)
    d = x.new_zeros(2, 2) + x.new_ones([2, 2]).sum()
    return a, b, c, d, list(x.size()), x.shape[-1] * x.dim(), x.numel()


def reductions(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    values, indices = x.max(dim=1)
    top, top_i = x.topk(2, dim=1)
    return (x.sum(1), x.mean(dim=0, keepdim=True), values + indices.float(), x.argmax(1),
            F.softmax(x, dim=-1), F.log_softmax(x, 1), top + top_i.float())


def creation(n: int) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    return (ts.zeros(n, 2), ts.ones([2, n], dtype=ts.float64), ts.full((2, 2), 7.0), ts.arange(n),
            ts.eye(n), ts.zeros_like(ts.ones(n)) + 3)


def indexing(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    i = 1
    return (x[0], x[-1], x[1:3], x[:, 0], x[..., i], x[None], x[:, None, :2], x[::2, ::-1 + 2])


def advanced_indexing(x: Tensor, idx: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    mask = x > 0
    return x[mask], x[idx], x[:, idx]


def setitem(x: Tensor, v: Tensor) -> Tensor:
    y = x.clone()
    y[0] = 1.0
    y[:, 1] = v
    y[y > 1.5] = -1.0
    y[2, 0] += 10
    return y


def inplace_ops(x: Tensor) -> Tensor:
    y = x.clone()
    y.add_(1).mul_(2)
    y.clamp_(min=-1.0, max=3.0)
    z = ts.zeros(3)
    z.fill_(2.0)
    return y + z.sum()


def where_masks(x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    return ts.where(x > 0, x, x * 0.1), x.masked_fill(x < 0, 0.0), x.clamp(-0.5, 0.5)


def matmuls(a: Tensor, b: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    return a @ b, ts.mm(a, b), ts.bmm(a.unsqueeze(0), b.unsqueeze(0))


def tensor_not(x: Tensor) -> Tensor:
    if not (x > 100).any():
        x = x + 1
    if len(x) == 3:
        x = x * 3
    return x


def functional(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    return (F.relu(x), F.gelu(x), F.dropout(x, 0.5, training=False), F.leaky_relu(x, 0.2),
            F.layer_norm(x, (x.shape[-1],)))


def conv_pool(x: Tensor, w: Tensor) -> Tensor:
    y = F.conv2d(x, w, padding=1)
    y = F.max_pool2d(y, 2)
    return F.avg_pool2d(y, kernel_size=2, stride=1)


def assert_and_raise(x: Tensor, n: int) -> Tensor:
    assert n >= 0, f"n must be non-negative, got {n}"
    if n > 100:
        raise ValueError("n is too large")
    return x * n


# -- calls between functions ------------------------------------------------------------------------------
def helper_scale(x: Tensor, factor: float = 2.0) -> Tensor:
    return x * factor


def helper_pair(x: Tensor) -> Tuple[Tensor, Tensor]:
    return x.min(), x.max()


def helper_untyped(x, n):
    return x + n


def calls(x: Tensor) -> Tensor:
    lo, hi = helper_pair(x)
    y = helper_scale(x) + helper_scale(x, 3.0) + helper_scale(x, factor=0.5)
    return y + lo + hi + helper_untyped(x, 2) + helper_untyped(x, 0.5)


@ts.jit.script
def scripted_helper(x: Tensor, k: int = 1) -> Tensor:
    return x + k


def calls_scripted(x: Tensor) -> Tensor:
    return scripted_helper(x) * scripted_helper(x, k=3)


def recursive_helper_user(n: int) -> int:
    total = 0
    for i in range(n):
        total += triangle(i)
    return total


def triangle(i: int) -> int:
    return i * (i + 1) // 2


# -- modules ----------------------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self, sizes=(8, 16, 16, 4)):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])])
        self.act = nn.ReLU()

    def forward(self, x):
        for i in range(len(self.layers)):
            x = self.layers[i](x)
            if i < len(self.layers) - 1:
                x = self.act(x)
        return x


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d((2, 2)))
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.features(x)
        x = x.flatten(1)
        return F.log_softmax(self.fc(self.drop(x)), dim=1)


class LSTMCellLoop(nn.Module):
    """An LSTM written with an explicit time loop."""

    def __init__(self, input_size: int = 3, hidden: int = 5):
        super().__init__()
        self.hidden = hidden
        self.ih = nn.Linear(input_size, 4 * hidden)
        self.hh = nn.Linear(hidden, 4 * hidden)

    def forward(self, seq: Tensor, state: Optional[Tuple[Tensor, Tensor]] = None) -> Tuple[Tensor, Tensor]:
        if state is None:
            h = ts.zeros(seq.shape[1], self.hidden)
            c = ts.zeros(seq.shape[1], self.hidden)
        else:
            h, c = state
        outputs: List[Tensor] = []
        for t in range(seq.size(0)):
            gates = self.ih(seq[t]) + self.hh(h)
            i, f, g, o = gates.chunk(4, 1)
            c = ts.sigmoid(f) * c + ts.sigmoid(i) * ts.tanh(g)
            h = ts.sigmoid(o) * ts.tanh(c)
            outputs.append(h)
        return ts.stack(outputs), c


class BeamDecoder(nn.Module):
    """A beam-search-style greedy expansion with a while loop until every beam ends."""

    def __init__(self, vocab: int = 6, hidden: int = 4, eos: int = 0):
        super().__init__()
        self.eos = eos
        self.embed = nn.Embedding(vocab, hidden)
        self.proj = nn.Linear(hidden, vocab)

    def forward(self, start: Tensor, beam: int = 2, max_len: int = 8) -> Tuple[Tensor, Tensor]:
        tokens = start.unsqueeze(1)
        scores = ts.zeros(start.shape[0])
        finished = ts.zeros(start.shape[0], dtype=ts.bool)
        step = 0
        while step < max_len and not bool(finished.all()):
            logits = self.proj(ts.tanh(self.embed(tokens[:, -1])))
            logp = F.log_softmax(logits, dim=-1)
            best, idx = logp.topk(beam, dim=-1)
            choice = idx[:, 0]
            gain = best[:, 0]
            scores = scores + ts.where(finished, ts.zeros_like(gain), gain)
            choice = ts.where(finished, ts.full_like(choice, self.eos), choice)
            tokens = ts.cat([tokens, choice.unsqueeze(1)], dim=1)
            finished = finished | (choice == self.eos)
            step += 1
        return tokens, scores


class Residual(nn.Module):
    def __init__(self, dim: int = 6):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, dim))
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x + self.block(x))


class Tower(nn.Module):
    """Submodules reused, enumerate over a ModuleList, a ModuleDict, a helper method."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Residual(6), Residual(6)])
        self.heads = nn.ModuleDict({"a": nn.Linear(6, 2), "b": nn.Linear(6, 3)})
        self.scale = 2

    def forward(self, x):
        for k, block in enumerate(self.blocks):
            x = block(x) * (k + 1)
        return self.combine(x)

    def combine(self, x: Tensor) -> Tensor:
        outs: List[Tensor] = []
        for name, head in self.heads.items():
            outs.append(head(x) * self.scale)
        return ts.cat(outs, dim=1)


class Flags(nn.Module):
    """Constant attributes fold: flags, sizes, None submodules and parameters."""

    def __init__(self, use_bias: bool = False, extra: bool = True):
        super().__init__()
        self.use_bias = use_bias
        self.fc = nn.Linear(4, 4, bias=use_bias)
        self.extra = nn.Linear(4, 4) if extra else None
        self.sizes = [2, 2]
        self.mode = "sum"

    def forward(self, x):
        y = self.fc(x)
        if self.use_bias:
            y = y + 1
        if self.extra is not None:
            y = self.extra(y)
        if self.mode == "sum":
            y = y.view(self.sizes[0], -1).sum(1)
        return y


class Counter(nn.Module):
    """A buffer updated in place by forward."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", ts.zeros(1))
        self.register_buffer("total", ts.zeros(3))

    def forward(self, x):
        self.count.add_(1)
        self.total.add_(x.sum(0))
        return self.total / self.count


class Attention(nn.Module):
    def __init__(self, dim: int = 4):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        scores = self.q(x) @ self.k(x).transpose(-2, -1) * self.scale
        if mask is not None:
            scores = scores.masked_fill(mask, -1e9)
        weights = scores.softmax(-1)
        return weights @ self.v(x), weights


class DictOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x) -> Dict[str, Tensor]:
        h = self.fc(x)
        return {"out": h, "norm": h.norm(dim=1)}


class GlobalCall(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(T(3, seed=3))

    def forward(self, x):
        return helper_scale(x * self.weight, 0.5) + closure_fn(self.weight)


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4, padding_idx=0)
        self.gru_like = nn.Linear(8, 4)

    def forward(self, tokens: Tensor) -> Tensor:
        e = self.embed(tokens)
        h = ts.zeros(e.shape[0], 4)
        for t in range(e.shape[1]):
            h = ts.tanh(self.gru_like(ts.cat([e[:, t], h], dim=1)))
        return h


class Stateless(nn.Module):
    def forward(self, x: Tensor, y: Tensor, alpha: float = 0.5) -> Tensor:
        return F.sigmoid(x) * alpha + ts.tanh(y) * (1 - alpha)


class UsesRangeSequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(2, 2, 3, padding=1) for _ in range(3)])

    def forward(self, x):
        outs = [conv(x) for conv in self.convs]
        for i in range(len(self.convs)):
            x = x + self.convs[i](outs[i])
        return x


# -- the corpus: (name, program or module factory, example inputs) -------------------------------------------
FUNCTIONS = [
    ("arith", arith, (T(2, 3), T(2, 3, seed=1))),
    ("scalar_math", scalar_math, (7, 2.5)),
    ("int_ops", int_ops, (13, 5)),
    ("int_ops_negative", int_ops, (-13, 4)),
    ("chained_compare", chained_compare, (3.5,)),
    ("bool_logic", bool_logic, (True, False)),
    ("bool_logic_both", bool_logic, (True, True)),
    ("ternary", ternary, (T(3), -1)),
    ("globals_and_constants", globals_and_constants, (T(3),)),
    ("closure", closure_fn, (T(4),)),
    ("math_module", math_module, (2.25, 3)),
    ("builtin_functions", builtin_functions, (5, 2.75)),
    ("conversions", conversions, (T(4),)),
    ("strings", strings, ("world", 7)),
    ("strings_other", strings, ("there", -3)),
    ("fstring_tensor", fstring_tensor, (T(5),)),
    ("dtypes", dtypes, (T(3) * 3,)),
    ("lambda_local", lambda_local, (T(3),)),
    ("docstring_and_comments", docstring_and_comments, (T(2), T(2, seed=1))),
    ("string_annotations", string_annotations, (T(2),)),
    ("modern_annotations", modern_annotations, ([1, 2, 3], 10)),
    ("modern_annotations_none", modern_annotations, ([4],)),
    ("default_types", default_types, (T(3),)),
    ("keyword_only", keyword_only, (T(3),)),
    ("if_elif_else_neg", if_elif_else, (T(3), -2)),
    ("if_elif_else_zero", if_elif_else, (T(3), 0)),
    ("if_elif_else_small", if_elif_else, (T(3), 3)),
    ("if_elif_else_large", if_elif_else, (T(3), 9)),
    ("nested_if", nested_if, (1, -1)),
    ("nested_if_other", nested_if, (-1, 1)),
    ("if_on_tensor_pos", if_on_tensor, (ts.ones(3),)),
    ("if_on_tensor_neg", if_on_tensor, (-ts.ones(3),)),
    ("loop_until", loop_until, (T(4),)),
    ("while_counter", while_counter, (6,)),
    ("for_range_forms", for_range_forms, (7,)),
    ("for_over_list", for_over_list, ([0.5, 1.5, -2.0],)),
    ("for_over_tuple", for_over_tuple, (T(2),)),
    ("for_over_tensor", for_over_tensor, (T(4, 3),)),
    ("enumerate_and_zip", enumerate_and_zip, ([3, 1, 4, 1], [5, 9, 2])),
    ("break_continue", break_continue, (12,)),
    ("nested_loops", nested_loops, (6,)),
    ("while_break", while_break, (T(3),)),
    ("return_in_loop", return_in_loop, ([5, 7, 9], 7)),
    ("return_in_loop_missing", return_in_loop, ([5, 7, 9], 4)),
    ("return_in_while", return_in_while, (ts.ones(3),)),
    ("return_in_while_negative", return_in_while, (-ts.ones(3),)),
    ("early_return_chain", early_return_chain, (5,)),
    ("early_return_chain_large", early_return_chain, (500,)),
    ("implicit_none", implicit_none, (T(2), False)),
    ("implicit_none_tensor", implicit_none, (T(2), True)),
    ("no_return", no_return, ([1, 2],)),
    ("unrolled_break", unrolled_break, (ts.ones(3) * 2,)),
    ("loop_carries_many", loop_carries_many, (5,)),
    ("unrolled_continue_return", unrolled_continue_return, (ts.ones(3),)),
    ("unrolled_continue_return_early", unrolled_continue_return, (ts.ones(3) * 20,)),
    ("inner_unrolled_break", inner_unrolled_break, (5,)),
    ("while_continue", while_continue, (9,)),
    ("carry_tuple", carry_tuple, (T(2), 4)),
    ("loop_return_tuple", loop_return_tuple, ([3, 4, -5, 6],)),
    ("tuple_unpacking", tuple_unpacking, (T(3, 4),)),
    ("augmented_assignment", augmented_assignment, (T(3), 4)),
    ("list_ops", list_ops, (8,)),
    ("list_of_tensors", list_of_tensors, (T(3),)),
    ("comprehensions", comprehensions, (5, T(3, 2))),
    ("nested_comprehension", nested_comprehension, (4,)),
    ("dicts", dicts, (["x", "yy"],)),
    ("dict_comprehension", dict_comprehension, (5,)),
    ("dict_of_tensors", dict_of_tensors, (T(2),)),
    ("optional_none", optional_refinement, (T(3),)),
    ("optional_given", optional_refinement, (T(3), T(3, seed=1))),
    ("optional_early_exit", optional_early_exit, (T(3), None)),
    ("optional_early_exit_given", optional_early_exit, (T(3), T(3, seed=2))),
    ("optional_and", optional_and, (T(3), ts.ones(3))),
    ("optional_and_none", optional_and, (T(3), None)),
    ("optional_ternary", optional_ternary, (T(2),)),
    ("optional_ternary_given", optional_ternary, (T(2), 3)),
    ("optional_assert", optional_assert, (T(2), T(2, seed=4))),
    ("optional_merge", optional_merge, (T(2), True)),
    ("optional_merge_last", optional_merge, (T(2), False)),
    ("isinstance_checks", isinstance_checks, (T(2), 3, None)),
    ("isinstance_checks_given", isinstance_checks, (T(2), 3, T(1))),
    ("tensor_methods", tensor_methods, (T(3, 2),)),
    ("reductions", reductions, (T(3, 4),)),
    ("creation", creation, (3,)),
    ("indexing", indexing, (T(4, 3),)),
    ("advanced_indexing", advanced_indexing, (T(3, 3), I(2, 0))),
    ("setitem", setitem, (T(3, 3), T(3, seed=1))),
    ("inplace_ops", inplace_ops, (T(4),)),
    ("where_masks", where_masks, (T(5),)),
    ("matmuls", matmuls, (T(2, 3), T(3, 4, seed=1))),
    ("tensor_not", tensor_not, (T(3),)),
    ("functional", functional, (T(2, 4),)),
    ("conv_pool", conv_pool, (T(1, 2, 6, 6), T(3, 2, 3, 3, seed=1))),
    ("assert_and_raise", assert_and_raise, (T(2), 3)),
    ("calls", calls, (T(3),)),
    ("calls_scripted", calls_scripted, (T(3),)),
    ("recursive_helper_user", recursive_helper_user, (6,)),
]

MODULES = [
    ("mlp", lambda: MLP(), (T(5, 8),)),
    ("cnn", lambda: CNN().eval(), (T(2, 1, 8, 8),)),
    ("lstm_time_loop", lambda: LSTMCellLoop(), (T(6, 2, 3),)),
    ("lstm_time_loop_state", lambda: LSTMCellLoop(), (T(4, 2, 3), (T(2, 5, seed=1), T(2, 5, seed=2)))),
    ("beam_decoder", lambda: BeamDecoder(), (ts.tensor([1, 2, 3]),)),
    ("residual", lambda: Residual(), (T(3, 6),)),
    ("tower", lambda: Tower(), (T(2, 6),)),
    ("flags_default", lambda: Flags(), (T(2, 4),)),
    ("flags_other", lambda: Flags(use_bias=True, extra=False), (T(2, 4),)),
    ("counter", lambda: Counter(), (T(2, 3),)),
    ("attention", lambda: Attention(), (T(2, 3, 4),)),
    ("attention_masked", lambda: Attention(), (T(2, 3, 4), ts.tensor([[False, True, False]] * 3))),
    ("dict_out", lambda: DictOut(), (T(2, 3),)),
    ("global_call", lambda: GlobalCall(), (T(3),)),
    ("embedder", lambda: Embedder(), (ts.tensor([[1, 2, 0], [4, 0, 9]]),)),
    ("stateless", lambda: Stateless(), (T(3), T(3, seed=1))),
    ("conv_list", lambda: UsesRangeSequence(), (T(1, 2, 5),)),
]
