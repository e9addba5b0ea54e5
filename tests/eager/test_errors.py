"""The error cases issue 2 names: PyTorch's exception type and wording, naming the op and values."""
import pytest

import tscript as ts

CASES = [
    (lambda: ts.ones(2, 3) + ts.ones(4), RuntimeError,
     r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton dimension 1"),
    (lambda: ts.ones(2, 3).sum(dim=5), IndexError,
     r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)"),
    (lambda: ts.cat([]), ValueError, "expected a non-empty list of Tensors"),  # ValueError, as PyTorch
    (lambda: ts.ones(6).view(7), RuntimeError, r"shape '\[7\]' is invalid for input of size 6"),
    (lambda: ts.tensor([[1, 2], [3]]), ValueError, r"expected sequence of length 2 at dim 1 \(got 1\)"),
    (lambda: ts.zeros(3, dtype="floaty"), TypeError, "unknown dtype 'floaty'"),
    (lambda: ts.ones(2).to("cuda"), RuntimeError, "CPU only"),
    (lambda: ts.matmul(ts.ones(2, 3), ts.ones(4, 5)), RuntimeError, r"\(2x3 and 4x5\)"),
    (lambda: ts.ones(3)[5], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: ts.exp("x"), TypeError, "exp\\(\\): argument 'self' \\(position 1\\) must be Tensor, not str"),
    (lambda: ts.ones(2, 3).mean(dim=(0, 0)), RuntimeError, "appears multiple times"),
    (lambda: ts.tensor([1, 2]).mean(), RuntimeError, "mean"),
]


@pytest.mark.parametrize("call, exc, msg", CASES, ids=[str(i) for i in range(len(CASES))])
def test_clear_errors(call, exc, msg):
    with pytest.raises(exc, match=msg) as info:
        call()
    assert "numpy" not in type(info.value).__module__


PAIRED = [  # the same bad call in tscript and in PyTorch: same exception class
    (lambda m: m.ones(2, 3) + m.ones(4)), (lambda m: m.ones(2, 3).sum(dim=5)), (lambda m: m.cat([])),
    (lambda m: m.ones(6).view(7)), (lambda m: m.tensor([[1, 2], [3]])), (lambda m: m.ones(3)[5]),
    (lambda m: m.exp("x")),
]


@pytest.mark.parametrize("call", PAIRED, ids=[str(i) for i in range(len(PAIRED))])
def test_same_exception_class_as_pytorch(call, oracle):
    with pytest.raises(Exception) as ours:
        call(ts)
    with pytest.raises(Exception) as theirs:
        call(oracle)
    builtin = next(c for c in type(theirs.value).__mro__ if c.__module__ == "builtins")
    assert isinstance(ours.value, builtin), f"{type(ours.value)} is not a {builtin}"
